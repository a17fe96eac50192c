"""Classical path planning over the navigation layer (rooms and pose nodes).

Edge costs are metric: the Euclidean distance between node positions, or the
stored weight when it is larger (a door, stairs). Because no edge is cheaper than
the straight line, the Euclidean heuristic is consistent and A* stays optimal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import networkx as nx

from sayplan_core.graph.model import NAV_TYPES, GraphError, SceneGraph
from sayplan_core.sim.plan import PlanStep

DEFAULT_EDGE_COST = 1.0


class NoPathError(GraphError):
    """Target exists but cannot be reached from the start."""


@dataclass(frozen=True)
class PathResult:
    nodes: list[str]
    cost: float


def _distance(graph: SceneGraph, a: str, b: str) -> float | None:
    pa, pb = graph.nodes[a].position, graph.nodes[b].position
    if pa is None or pb is None:
        return None
    return math.dist(pa, pb)


class PathPlanner:
    """Dijkstra and A* between room/pose nodes; expands `goto(room)` into pose hops."""

    def __init__(self, graph: SceneGraph, goto_action: str = "goto") -> None:
        self.graph = graph
        self.goto_action = goto_action
        self._all_positioned = all(graph.nodes[n].position is not None for n in graph.nav.nodes)

    def edge_cost(self, a: str, b: str, data: dict[str, float]) -> float:
        straight = _distance(self.graph, a, b)
        stored = data.get("weight")
        if straight is None:
            return float(stored) if stored is not None else DEFAULT_EDGE_COST
        return max(straight, float(stored)) if stored is not None else max(straight, 1e-6)

    def _heuristic(self, goal: str) -> object:
        if not self._all_positioned:
            return None
        graph = self.graph

        def h(u: str, _v: str) -> float:
            return _distance(graph, u, goal) or 0.0

        return h

    def _check(self, node_id: str, role: str) -> None:
        node = self.graph.node(node_id)
        if node.type not in NAV_TYPES:
            raise GraphError(f"{role} '{node_id}' is a {node.type}; paths join room and pose nodes", node_id)

    def shortest_path(self, start: str, goal: str, method: str = "dijkstra") -> PathResult:
        self._check(start, "start")
        self._check(goal, "goal")
        if start == goal:
            return PathResult([start], 0.0)
        if self.graph.nav_component(start) != self.graph.nav_component(goal):
            raise NoPathError(f"'{goal}' is unreachable from '{start}': no navigation path joins them", goal)
        weight = self.edge_cost
        try:
            if method == "dijkstra":
                cost, nodes = nx.bidirectional_dijkstra(self.graph.nav, start, goal, weight=weight)
            elif method == "astar":
                heuristic = self._heuristic(goal)
                nodes = nx.astar_path(self.graph.nav, start, goal, heuristic=heuristic, weight=weight)
                cost = self._cost(nodes)
            else:
                raise ValueError(f"unknown path method '{method}' (dijkstra or astar)")
        except nx.NetworkXNoPath:
            raise NoPathError(f"'{goal}' is unreachable from '{start}'", goal) from None
        return PathResult([str(n) for n in nodes], float(cost))

    def _cost(self, nodes: list[str]) -> float:
        return sum(self.edge_cost(a, b, self.graph.nav.edges[a, b]) for a, b in pairwise(nodes))

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


def path_positions(graph: SceneGraph, nodes: Iterable[str]) -> list[tuple[float, float, float] | None]:
    return [graph.nodes[n].position for n in nodes]
