"""Optimal paths for co-safe LTL missions: A* on the product of the navigation graph and the DFA.

Propositions are node ids. A room or pose holds at itself; an asset or object holds at
the room that contains it (the robot reaches it by entering that room).

The heuristic follows Dai et al.'s proposition 1. For a DFA state q and a successor
q' != q, S(q, q') is the set of navigation nodes whose label moves q to q'. Lower bounds
between label sets (minimum straight-line distance, never more than the path cost,
since no edge is cheaper than the straight line) give a cost-to-accept H(q) by
Dijkstra on the automaton; then h(x, q) = min over q' of d(x, S(q, q')) + H(q'). With the
entry set of q' containing every node that can lead into q', h is consistent, so the
first accepting state A* pops is optimal.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from sayplan_core.graph.model import NAV_TYPES, SceneGraph
from sayplan_core.ltl.automaton import Dfa
from sayplan_core.nav.path_planner import PathPlanner


@dataclass
class LtlPath:
    nodes: list[str]
    cost: float
    expansions: int
    elapsed_s: float
    found: bool = True


class NoSatisfyingPathError(RuntimeError):
    """No path through the building satisfies the mission."""


def nav_labels(graph: SceneGraph, atoms: set[str]) -> dict[str, frozenset[str]]:
    """Which of `atoms` hold at each navigation node."""
    labels: dict[str, set[str]] = {n: set() for n in graph.nav.nodes}
    for atom in atoms:
        node = graph.nodes[atom]
        where = atom if node.type in NAV_TYPES else graph.room_of(atom)
        if where in labels:
            labels[where].add(atom)
    return {n: frozenset(v) for n, v in labels.items()}


class ProductSearch:
    def __init__(self, graph: SceneGraph, dfa: Dfa, use_heuristic: bool = True) -> None:
        self.graph = graph
        self.dfa = dfa
        self.planner = PathPlanner(graph)
        self.labels = nav_labels(graph, set(dfa.symbol_of))
        positions = {n: graph.nodes[n].position for n in graph.nav.nodes}
        self.use_heuristic = use_heuristic and all(p is not None for p in positions.values())
        self._pos = {n: np.asarray(p, dtype=float) for n, p in positions.items() if p is not None}
        self._trees: dict[tuple[int, int], cKDTree] = {}

    def _transition_sets(self) -> dict[tuple[int, int], list[str]]:
        by_label: dict[frozenset[str], list[str]] = {}
        for node, label in self.labels.items():
            by_label.setdefault(label, []).append(node)
        sets: dict[tuple[int, int], list[str]] = {}
        for q in self.dfa.states:
            for label, nodes in by_label.items():
                nxt = self.dfa.step(q, label)
                if nxt != q:
                    sets.setdefault((q, nxt), []).extend(nodes)
        return sets

    def _prepare(self, start: str) -> None:
        self.sets = self._transition_sets()
        self.cost_to_accept: dict[int, float] = {
            q: (0.0 if q in self.dfa.accepting else math.inf) for q in self.dfa.states
        }
        if not self.use_heuristic:
            return
        for key, nodes in self.sets.items():
            self._trees[key] = cKDTree(np.stack([self._pos[n] for n in nodes]))
        entry: dict[int, list[str]] = {}
        for (_, q2), nodes in self.sets.items():
            entry.setdefault(q2, []).extend(nodes)
        entry.setdefault(self.dfa.step(self.dfa.initial, self.labels[start]), []).append(start)
        # Dijkstra backwards from the accepting states over w(q, q') = dmin(entry(q), S(q, q')).
        weights: dict[tuple[int, int], float] = {}
        for q, q2 in self.sets:
            sources = entry.get(q)
            if sources:
                dists, _ = self._trees[(q, q2)].query(np.stack([self._pos[n] for n in sources]))
                weights[(q, q2)] = float(np.min(dists))
        queue = [(0.0, q) for q in self.dfa.accepting]
        done: set[int] = set()
        while queue:
            cost, q2 = heapq.heappop(queue)
            if q2 in done:
                continue
            done.add(q2)
            for (q, target), w in weights.items():
                if target == q2 and q not in done and cost + w < self.cost_to_accept[q]:
                    self.cost_to_accept[q] = cost + w
                    heapq.heappush(queue, (cost + w, q))
        self._tabulate()

    def _tabulate(self) -> None:
        """h(x, q) for every navigation node at once: one vectorised KD-tree query per DFA transition."""
        order = list(self._pos)
        self._index = {n: i for i, n in enumerate(order)}
        points = np.stack([self._pos[n] for n in order])
        self._table: dict[int, np.ndarray] = {}
        for q in self.dfa.states:
            best = np.full(len(order), math.inf)
            if q in self.dfa.accepting:
                best[:] = 0.0
            for (q1, q2), tree in self._trees.items():
                if q1 == q and self.cost_to_accept[q2] < math.inf:
                    dists, _ = tree.query(points)
                    np.minimum(best, dists + self.cost_to_accept[q2], out=best)
            self._table[q] = best

    def heuristic(self, node: str, q: int) -> float:
        if not self.use_heuristic:
            return 0.0
        return float(self._table[q][self._index[node]])

    def search(self, start: str, weight: float = 1.0) -> LtlPath:
        """A* from `start`; weight > 1 gives a faster, w-suboptimal path (weighted A*)."""
        began = time.perf_counter()
        self._prepare(start)
        q0 = self.dfa.step(self.dfa.initial, self.labels[start])
        h: Callable[[str, int], float] = self.heuristic
        frontier = [(weight * h(start, q0), 0.0, 0, start, q0)]
        best_g = {(start, q0): 0.0}
        parent: dict[tuple[str, int], tuple[str, int] | None] = {(start, q0): None}
        closed: set[tuple[str, int]] = set()
        counter = expansions = 0
        while frontier:
            _, g, _, node, q = heapq.heappop(frontier)
            if (node, q) in closed:
                continue
            closed.add((node, q))
            expansions += 1
            if q in self.dfa.accepting:
                path = [node]
                back = parent[(node, q)]
                while back is not None:
                    path.append(back[0])
                    back = parent[back]
                return LtlPath(path[::-1], g, expansions, time.perf_counter() - began)
            for nxt in self.graph.nav.neighbors(node):
                q2 = self.dfa.step(q, self.labels[nxt])
                if self.cost_to_accept.get(q2, math.inf) == math.inf and self.use_heuristic:
                    continue  # a dead automaton state: acceptance is unreachable from there
                g2 = g + self.planner.edge_cost(node, nxt)
                if g2 < best_g.get((nxt, q2), math.inf):
                    best_g[(nxt, q2)] = g2
                    parent[(nxt, q2)] = (node, q)
                    counter += 1
                    h2 = h(nxt, q2)
                    if h2 < math.inf:
                        heapq.heappush(frontier, (g2 + weight * h2, g2, counter, nxt, q2))
        raise NoSatisfyingPathError("no path through the navigation graph satisfies the mission")


def dijkstra_to_each_goal(graph: SceneGraph, start: str, goals: list[str]) -> LtlPath:
    """Baseline: visit the goals in the order given, each by a shortest path (ignores other constraints)."""
    began = time.perf_counter()
    planner = PathPlanner(graph)
    here, nodes, cost = start, [start], 0.0
    for goal in goals:
        node = graph.nodes[goal]
        target = goal if node.type in NAV_TYPES else graph.room_of(goal)
        assert target is not None
        leg = planner.shortest_path(here, target)
        nodes.extend(leg.nodes[1:])
        cost += leg.cost
        here = target
    return LtlPath(nodes, cost, 0, time.perf_counter() - began)
