"""Classical path planning over the navigation layer (rooms and pose nodes).

Edge costs are metric: the Euclidean distance between node positions, or the
stored weight when it is larger (a door, stairs). Because no edge is cheaper than
the straight line, the Euclidean heuristic is consistent and A* stays optimal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import count, pairwise

import networkx as nx

from sayplan_core.graph.model import NAV_TYPES, GraphError, Position, SceneGraph, a_or_an
from sayplan_core.sim.plan import PlanStep

DEFAULT_EDGE_COST = 1.0


class NoPathError(GraphError):
    """Target exists but cannot be reached from the start."""


@dataclass(frozen=True)
class PathResult:
    nodes: list[str]
    cost: float


def link_cost(pa: Position | None, pb: Position | None, stored: float | None) -> float:
    """The cost of a navigation edge between nodes at `pa` and `pb` with weight `stored` (the module docstring)."""
    if pa is None or pb is None:
        return float(stored) if stored is not None else DEFAULT_EDGE_COST
    straight = math.dist(pa, pb)
    return max(straight, float(stored)) if stored is not None else max(straight, 1e-6)


def nav_edge_costs(graph: SceneGraph) -> Iterator[tuple[str, str, float]]:
    """Every navigation edge once, with its cost, in `graph.nav.edges` order: for a consumer that needs them all
    (the ltl planner's search domain), without PathPlanner's per-edge lookups through networkx's views."""
    nodes = graph.nodes
    done: set[str] = set()
    for a, around in graph.nav._adj.items():  # how networkx's EdgeView walks an undirected graph
        pa = nodes[a].position
        for b, data in around.items():
            if b not in done:
                yield a, b, link_cost(pa, nodes[b].position, data.get("weight"))
        done.add(a)


class PathPlanner:
    """Dijkstra and A* between room/pose nodes; expands `goto(room)` into pose hops."""

    def __init__(self, graph: SceneGraph, goto_action: str = "goto") -> None:
        self.graph = graph
        self.goto_action = goto_action
        # Each edge's cost is computed once, when a search first relaxes it (a plan's searches touch a part of
        # a large building: computing every edge up front was most of a verification at 1,000 rooms).
        self._costs: dict[tuple[str, str], float] = {}
        self._positions_cache: dict[str, tuple[float, float, float] | None] | None = None
        #: shortest paths found so far, by (start, goal, method): the graph does not change under a planner
        self._paths: dict[tuple[str, str, str], PathResult] = {}

    @property
    def _positions(self) -> dict[str, tuple[float, float, float] | None]:
        if self._positions_cache is None:
            graph = self.graph
            self._positions_cache = {n: graph.nodes[n].position for n in graph.nav.nodes}
        return self._positions_cache

    def _edge_cost(self, a: str, b: str, data: dict[str, float]) -> float:
        return link_cost(self.graph.nodes[a].position, self.graph.nodes[b].position, data.get("weight"))

    def edge_cost(self, a: str, b: str, _data: object = None) -> float:
        cost = self._costs.get((a, b))
        if cost is None:
            cost = self._edge_cost(a, b, self.graph.nav.adj[a][b])
            self._costs[(a, b)] = self._costs[(b, a)] = cost
        return cost

    def _heuristic(self, goal: str) -> Callable[[str, str], float] | None:
        positions = self._positions
        if not all(p is not None for p in positions.values()):
            return None
        target = positions[goal]
        assert target is not None
        gx, gy, gz = target

        def h(u: str, _v: str) -> float:
            ux, uy, uz = positions[u]  # type: ignore[misc]
            return math.sqrt((ux - gx) ** 2 + (uy - gy) ** 2 + (uz - gz) ** 2)

        return h

    def _check(self, node_id: str, role: str) -> None:
        node = self.graph.node(node_id)
        if node.type not in NAV_TYPES:
            raise GraphError(f"{role} '{node_id}' is {a_or_an(node.type)}; paths join room and pose nodes", node_id)

    def shortest_path(self, start: str, goal: str, method: str = "dijkstra") -> PathResult:
        known = self._paths.get((start, goal, method))
        if known is not None:
            return known
        found = self._search(start, goal, method)
        self._paths[(start, goal, method)] = found
        return found

    def _search(self, start: str, goal: str, method: str) -> PathResult:
        self._check(start, "start")
        self._check(goal, "goal")
        if start == goal:
            return PathResult([start], 0.0)
        unreachable = f"'{goal}' is unreachable from '{start}': no navigation path joins them"
        nav = self.graph.nav
        if method not in ("dijkstra", "astar") or start not in nav or goal not in nav:
            # cases the graph's own mutators never make (a room outside the nav graph) or a bad method: the
            # checks in their first order, so each fails as it did
            if self.graph.nav_component(start) != self.graph.nav_component(goal):
                raise NoPathError(unreachable, goal)
            return self._search_in(start, goal, method)
        # Two nodes of the undirected nav graph have no path exactly when they lie in different components, so the
        # search says it itself: the components (a walk over the whole building, once per snapshot) are not
        # computed first. The same error with the same text.
        try:
            return self._search_in(start, goal, method)
        except NoPathError:
            raise NoPathError(unreachable, goal) from None

    def _search_in(self, start: str, goal: str, method: str) -> PathResult:
        weight = self.edge_cost
        try:
            if method == "dijkstra":
                cost, nodes = self._bidirectional_dijkstra(start, goal)
            elif method == "astar":
                heuristic = self._heuristic(goal)
                nodes = nx.astar_path(self.graph.nav, start, goal, heuristic=heuristic, weight=weight)
                cost = self._cost(nodes)
            else:
                raise ValueError(f"unknown path method '{method}' (dijkstra or astar)")
        except nx.NetworkXNoPath:
            raise NoPathError(f"'{goal}' is unreachable from '{start}'", goal) from None
        return PathResult([str(n) for n in nodes], float(cost))

    def _bidirectional_dijkstra(self, source: str, target: str) -> tuple[float, list[str]]:
        """networkx's `bidirectional_dijkstra` (3.x), step for step (the same heap order, ties broken the same,
        so the same path), with the edge costs read from this planner's table inline instead of through a
        weight function per edge. test_planning_speed_equiv checks it against networkx on random graphs with ties.
        """
        adj = self.graph.nav._adj  # networkx's dicts: no view per lookup
        costs = self._costs
        dists: tuple[dict[str, float], dict[str, float]] = ({}, {})
        preds: tuple[dict[str, str | None], dict[str, str | None]] = ({source: None}, {target: None})
        fringe: tuple[list[tuple[float, int, str]], list[tuple[float, int, str]]] = ([], [])
        seen: tuple[dict[str, float], dict[str, float]] = ({source: 0}, {target: 0})
        tick = count()
        heappush(fringe[0], (0, next(tick), source))
        heappush(fringe[1], (0, next(tick), target))
        finaldist: float | None = None
        meetnode: str | None = None
        direction = 1
        while fringe[0] and fringe[1]:
            direction = 1 - direction
            dist, _, v = heappop(fringe[direction])
            done = dists[direction]
            if v in done:
                continue
            done[v] = dist
            if v in dists[1 - direction]:
                assert finaldist is not None and meetnode is not None
                return finaldist, _joined(preds, meetnode)
            reached, other, back = seen[direction], seen[1 - direction], preds[direction]
            queue = fringe[direction]
            for w, data in adj[v].items():
                cost = costs.get((v, w))
                if cost is None:
                    cost = self._edge_cost(v, w, data)
                    costs[(v, w)] = costs[(w, v)] = cost
                length = dist + cost
                if w in done:
                    if length < done[w]:
                        raise ValueError("Contradictory paths found: negative weights?")
                elif w not in reached or length < reached[w]:
                    reached[w] = length
                    heappush(queue, (length, next(tick), w))
                    back[w] = v
                    if w in other:
                        through = length + other[w]
                        if finaldist is None or finaldist > through:
                            finaldist, meetnode = through, w
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.")

    def _cost(self, nodes: list[str]) -> float:
        return sum(self.edge_cost(a, b) for a, b in pairwise(nodes))

    def expand_plan(
        self, plan: Iterable[PlanStep], start: str | None = None, method: str = "dijkstra"
    ) -> list[PlanStep]:
        """Replace each goto(target) by the hops of the shortest path from the current location."""
        here = start if start is not None else self.graph.agent_location()
        out: list[PlanStep] = []
        for step in plan:
            if step.action != self.goto_action or step.target not in self.graph.nodes:
                out.append(step)
                continue
            if self.graph.nodes[step.target].type not in NAV_TYPES:
                out.append(step)  # the simulator will name the mistake
                continue
            if here is None:
                out.append(step)
            else:
                path = self.shortest_path(here, step.target, method)
                out.extend(PlanStep(self.goto_action, hop) for hop in path.nodes[1:])
            here = step.target
        return out

    def farthest_pair(self, sample: int = 64) -> tuple[str, str]:
        """Two rooms far apart (exact on small graphs, a double sweep on large ones)."""
        rooms = self.graph.ids_of_type("room")
        if len(rooms) < 2:
            raise GraphError("need at least two rooms")
        seed = rooms[0]
        dist = nx.single_source_dijkstra_path_length(self.graph.nav, seed, weight=self.edge_cost)
        a = max((r for r in rooms if r in dist), key=lambda r: dist[r])
        dist = nx.single_source_dijkstra_path_length(self.graph.nav, a, weight=self.edge_cost)
        b = max((r for r in rooms if r in dist), key=lambda r: dist[r])
        return a, b


def _joined(preds: tuple[dict[str, str | None], dict[str, str | None]], meet: str) -> list[str]:
    """The path through `meet`: back to the source by the forward predecessors, on to the target by the backward
    ones (networkx's `path(meetnode, 0) + path(preds[1][meetnode], 1)`)."""
    forward: list[str] = []
    current: str | None = meet
    while current is not None:
        forward.append(current)
        current = preds[0][current]
    forward.reverse()
    current = preds[1][meet]
    while current is not None:
        forward.append(current)
        current = preds[1][current]
    return forward
