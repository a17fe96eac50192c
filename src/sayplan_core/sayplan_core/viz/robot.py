"""The robot on the monitor: where the agent is drawn, and the route ahead of it.

The route is what the path planner (sayplan_core.nav.path_planner, the path_planner node's own code) finds over the
navigation layer from the agent's place through every goto target the plan still has ahead (the hops of
`remaining_path`, which the RViz view joins with straight lines). Positions are the scene's drawn ones (the
`anchor` of sayplan_core.viz.scene, floors stacked), so the pose and the route sit on the scene graph's entities in
Foxglove's 3D panel and on the monitor page.

`RouteTracker` keeps the last route so a graph update costs a path search only when the hops change (a step done,
a new plan, the agent moved to another node) or a whole graph arrived; a link that changes alone is seen at the
next of those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.viz.markers import Vec3, remaining_path

Anchor = Callable[[str], Vec3 | None]


@dataclass(frozen=True)
class RobotRoute:
    pose: Vec3 | None = None  # the agent as drawn; None without an agent
    nodes: tuple[str, ...] = ()  # the agent's place, then every node the route passes; () when nothing is ahead
    points: tuple[Vec3, ...] = ()  # those nodes as drawn


def route_nodes(graph: SceneGraph, hops: Sequence[str]) -> list[str]:
    """The path planner's route through `hops` in order; a hop it cannot route (no path, not on the navigation
    layer) is joined by a straight line, as RViz draws it."""
    planner = PathPlanner(graph)
    nodes: list[str] = list(hops[:1])
    for start, goal in pairwise(hops):
        try:
            part = planner.shortest_path(start, goal).nodes
        except GraphError:
            part = [start, goal]
        nodes += part[1:]
    return nodes


class RouteTracker:
    """The robot's pose and route, recomputed as the graph and the plan change (see the module docstring)."""

    def __init__(self) -> None:
        self.route = RobotRoute()
        self._hops: list[str] = []

    def refresh(
        self, graph: SceneGraph, steps: Sequence[tuple[str, str]], current_step: int, anchor: Anchor, whole: bool
    ) -> RobotRoute:
        """The route now (`whole`: the graph was replaced, search again); `current_step` < 0: nothing ahead."""
        hops = remaining_path(graph, steps, current_step)
        nodes = list(self.route.nodes)
        if whole or hops != self._hops or any(n not in graph for n in nodes):
            nodes = route_nodes(graph, hops) if len(hops) > 1 else []
            self._hops = hops
        agent = graph.agent_id
        pose = anchor(agent) if agent is not None else None
        points = tuple(p for p in map(anchor, nodes) if p is not None)
        self.route = RobotRoute(pose, tuple(nodes), points)
        return self.route
