"""Optimal paths for LTLf missions: A* on the product of the planning domain (domain.py) and the DFA.

A path's trace is the labels of the locations it visits, starting with the start
location; the search stops at the first product state whose automaton state is
accepting, so the path satisfies the formula on exactly that finite trace.

The heuristic follows Dai et al.'s proposition 1. For a DFA state q and a successor
q' != q, S(q, q') is the set of locations whose label moves q to q'. Lower bounds
between location sets give a cost-to-accept H(q) by Dijkstra on the automaton; then
h(x, q) = min over q' of d(x, S(q, q')) + H(q'). The paper bounds d by the straight
line; here d is the shortest-path distance over the domain's own moves (one
multi-source Dijkstra per distinct set, in scipy), the tightest lower bound there is,
and one that needs no positions. On a building of many floors the straight line
let A* expand 15 times the path's length (a mission to the top floor and back);
the path's own distance expands about the path. With the entry set of q' containing
every location that can lead into q', h is consistent (d obeys the triangle
inequality over the moves), so the first accepting state A* pops is optimal.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from sayplan_core.graph.model import SceneGraph
from sayplan_core.ltl.automaton import Dfa
from sayplan_core.ltl.domain import DEFAULT_REACH_DISTANCE, SearchDomain
from sayplan_core.sim.plan import PlanStep


@dataclass
class LtlPath:
    nodes: list[str]  # location names: navigation node ids, and the asset/object ids of stops
    cost: float
    expansions: int
    elapsed_s: float
    trace: list[frozenset[str]] = field(default_factory=list)  # the label of every location visited
    steps: list[PlanStep] = field(default_factory=list)  # sayplan actions that walk the path


class NoSatisfyingPathError(RuntimeError):
    """No path through the building satisfies the mission; the message says why, as far as it is known."""


class ProductSearch:
    def __init__(
        self,
        graph: SceneGraph,
        dfa: Dfa,
        use_heuristic: bool = True,
        reach_distance: float = DEFAULT_REACH_DISTANCE,
        domain: SearchDomain | None = None,
    ) -> None:
        self.graph = graph
        self.dfa = dfa
        self.domain = domain if domain is not None else SearchDomain(graph, dfa.atoms, reach_distance)
        self.labels = self.domain.labels
        self.use_heuristic = use_heuristic
        self.live = dfa.live_states

    def _transition_sets(self) -> dict[tuple[int, int], list[int]]:
        by_label: dict[frozenset[str], list[int]] = {}
        for i, label in enumerate(self.labels):
            by_label.setdefault(label, []).append(i)
        sets: dict[tuple[int, int], list[int]] = {}
        for q in self.dfa.states:
            for label, locations in by_label.items():
                nxt = self.dfa.step(q, label)
                if nxt != q and nxt in self.live:
                    sets.setdefault((q, nxt), []).extend(locations)
        return sets

    def _prepare(self, start: int) -> None:
        """H(q) by Dijkstra on the automaton over the distances between location sets (one multi-source Dijkstra
        over the moves per distinct set); the rows h(., q) are filled on first use."""
        self.cost_to_accept = {q: (0.0 if q in self.dfa.accepting else math.inf) for q in self.dfa.states}
        self._table: dict[int, np.ndarray] = {}
        if not self.use_heuristic:
            return
        distance = self._distances()
        # distance from every location to each distinct target set S(q, q')
        self._dist: dict[tuple[int, ...], np.ndarray] = {}
        self._out: dict[int, list[tuple[tuple[int, ...], int]]] = {}
        entry: dict[int, set[int]] = {self.dfa.step(self.dfa.initial, self.labels[start]): {start}}
        for (q, q2), locations in self._transition_sets().items():
            key = tuple(sorted(set(locations)))
            if key not in self._dist:
                self._dist[key] = distance(key)
            self._out.setdefault(q, []).append((key, q2))
            entry.setdefault(q2, set()).update(key)
        into: dict[int, list[tuple[int, float]]] = {}  # q' -> [(q, lower bound on a move from q into q')]
        for q, moves in self._out.items():
            sources = entry.get(q)
            if sources:
                index = np.fromiter(sources, dtype=np.intp)
                for key, q2 in moves:
                    into.setdefault(q2, []).append((q, float(self._dist[key][index].min())))
        queue = [(0.0, q) for q in self.dfa.accepting]
        done: set[int] = set()
        while queue:
            cost, q2 = heapq.heappop(queue)
            if q2 in done:
                continue
            done.add(q2)
            for q, w in into.get(q2, ()):
                if q not in done and cost + w < self.cost_to_accept[q]:
                    self.cost_to_accept[q] = cost + w
                    heapq.heappush(queue, (cost + w, q))

    def _distances(self) -> Callable[[tuple[int, ...]], np.ndarray]:
        """d(., S): the shortest-path distance over the domain's moves from every location to the nearest of S (inf
        where none is reachable). The moves go both ways with the same cost, so a search out of S gives it."""
        # here: scipy costs every program half a second to import, `--help` too
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import dijkstra

        size = len(self.domain.locations)
        froms, tos, costs = self.domain.edge_arrays()
        graph = csr_array((costs, (froms, tos)), shape=(size, size))  # an explicit 0.0 stays a move of cost 0
        if graph.nnz != len(costs):  # a pair listed twice would have its costs summed: an overestimate
            raise RuntimeError("internal error: the search domain lists a move twice")

        def distance(targets: tuple[int, ...]) -> np.ndarray:
            found: np.ndarray = dijkstra(graph, directed=True, indices=list(targets), min_only=True)
            return found

        return distance

    def heuristic(self, location: int, q: int) -> float:
        """h(x, q) = min over q' of d(x, S(q, q')) + H(q'): 0 at accepting states, inf where acceptance is out of
        reach."""
        if not self.use_heuristic:
            return 0.0
        return float(self._row(q)[location])

    def _row(self, q: int) -> np.ndarray:
        row = self._table.get(q)
        if row is None:
            row = np.full(len(self.labels), 0.0 if q in self.dfa.accepting else math.inf)
            if q not in self.dfa.accepting:
                for key, q2 in self._out.get(q, ()):
                    if self.cost_to_accept[q2] < math.inf:
                        np.minimum(row, self._dist[key] + self.cost_to_accept[q2], out=row)
            self._table[q] = row
        return row

    def _rows(self) -> Callable[[int], list[float]]:
        """h(., q) as a list of floats per automaton state (`heuristic`'s values: the search reads one per move,
        and a list read costs less than a method call and a numpy scalar)."""
        rows: dict[int, list[float]] = {}
        zeros = [0.0] * len(self.labels)

        def row(q: int) -> list[float]:
            found = rows.get(q)
            if found is None:
                found = rows[q] = self._row(q).tolist() if self.use_heuristic else zeros
            return found

        return row

    def _successors(self) -> Callable[[int], list[int]]:
        """The automaton state after each location's label, per state (`dfa.step` once per distinct label)."""
        ids: dict[frozenset[str], int] = {}
        label_id = [ids.setdefault(label, len(ids)) for label in self.labels]
        rows: dict[int, list[int]] = {}

        def row(q: int) -> list[int]:
            found = rows.get(q)
            if found is None:
                by_label = [self.dfa.step(q, label) for label in ids]
                found = rows[q] = [by_label[i] for i in label_id]
            return found

        return row

    def search(self, start: str, weight: float = 1.0) -> LtlPath:
        """A* from the navigation node `start`; weight > 1 gives a faster, w-suboptimal path (weighted A*)."""
        began = time.perf_counter()
        s = self.domain.location_of(start)
        self._prepare(s)
        q0 = self.dfa.step(self.dfa.initial, self.labels[s])
        if q0 not in self.live:
            raise NoSatisfyingPathError(
                f"no path through the navigation graph satisfies the mission: the start position {start} "
                f"(where {_listing(self.labels[s])} hold) already violates it"
            )
        row = self._rows()
        frontier = [(weight * row(q0)[s], 0.0, 0, s, q0)]
        best_g = {(s, q0): 0.0}
        parent: dict[tuple[int, int], tuple[int, int] | None] = {(s, q0): None}
        closed: set[tuple[int, int]] = set()
        counter = expansions = 0
        # read once: the loop below runs once per product state
        accepting, live, moves, after = self.dfa.accepting, self.live, self.domain.moves, self._successors()
        best, push, pop, inf = best_g.get, heapq.heappush, heapq.heappop, math.inf
        while frontier:
            _, g, _, x, q = pop(frontier)
            if (x, q) in closed:
                continue
            closed.add((x, q))
            expansions += 1
            if q in accepting:
                path = [x]
                back = parent[(x, q)]
                while back is not None:
                    path.append(back[0])
                    back = parent[back]
                path.reverse()
                return LtlPath(
                    self.domain.names(path),
                    g,
                    expansions,
                    time.perf_counter() - began,
                    [self.labels[i] for i in path],
                    self.domain.plan_steps(path),
                )
            next_state = after(q)
            for y, cost in moves[x]:
                q2 = next_state[y]
                if q2 not in live:
                    continue  # acceptance is unreachable from there
                g2 = g + cost
                if g2 < best((y, q2), inf):
                    h2 = row(q2)[y]
                    if h2 == inf:
                        continue
                    best_g[(y, q2)] = g2
                    parent[(y, q2)] = (x, q)
                    counter += 1
                    push(frontier, (g2 + weight * h2, g2, counter, y, q2))
        raise NoSatisfyingPathError(
            f"no path through the navigation graph satisfies the mission: {self._why_not(s, expansions)}"
        )

    def _why_not(self, start: int, expansions: int) -> str:
        seen, stack = {start}, [start]
        while stack:
            for y, _ in self.domain.moves[stack.pop()]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        nowhere = sorted(a for a in self.dfa.atoms if not any(a in self.labels[i] for i in seen))
        if nowhere:
            never = [a for a in nowhere if not self.domain.where(a)]
            if never:
                return "; ".join(self.domain.explain_unreachable(a) for a in never)
            return f"{', '.join(nowhere)} hold(s) nowhere the robot can go from {self.domain.locations[start].name}"
        return f"its constraints rule out every way through this building ({expansions} product states explored)"


def _listing(atoms: Iterable[str]) -> str:
    items = sorted(atoms)
    return ", ".join(items) if items else "no propositions"


def dijkstra_to_each_goal(
    graph: SceneGraph,
    start: str,
    goals: list[str],
    reach_distance: float = DEFAULT_REACH_DISTANCE,
    label_atoms: Iterable[str] = (),
) -> LtlPath:
    """Baseline: visit the goals in the order given, each at its nearest location where it holds (ignores the
    rest of the mission). Same domain, so the same cost model as the product search; the trace labels the goals
    and `label_atoms` (a stop in front of another object is never a shortcut, so they do not change the path)."""
    began = time.perf_counter()
    domain = SearchDomain(graph, {*goals, *label_atoms}, reach_distance)
    here = domain.location_of(start)
    path, cost = [here], 0.0
    for goal in goals:
        targets = set(domain.where(goal))
        dist = {here: 0.0}
        back: dict[int, int] = {}
        queue = [(0.0, here)]
        reached = None
        while queue:
            d, x = heapq.heappop(queue)
            if d > dist[x]:
                continue
            if x in targets:
                reached = x
                break
            for y, c in domain.moves[x]:
                if d + c < dist.get(y, math.inf):
                    dist[y] = d + c
                    back[y] = x
                    heapq.heappush(queue, (d + c, y))
        if reached is None:
            why = domain.explain_unreachable(goal) if not targets else ""
            raise NoSatisfyingPathError(
                why or f"{goal} holds nowhere the robot can go from {domain.locations[here].name}"
            )
        leg = [reached]
        while leg[-1] != here:
            leg.append(back[leg[-1]])
        path.extend(reversed(leg[:-1]))
        cost += dist[reached]
        here = reached
    return LtlPath(
        domain.names(path),
        cost,
        0,
        time.perf_counter() - began,
        [domain.labels[i] for i in path],
        domain.plan_steps(path),
    )
