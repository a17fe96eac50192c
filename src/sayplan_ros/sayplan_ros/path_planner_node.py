"""path_planner: shortest paths between scene-graph nodes over the navigation layer.

Follows the latched `scene_graph` topic and answers `plan_path` with the node
sequence, the metric positions and the cost. A Nav2 `navigate_to_pose` bridge
consumes `positions`; it lives with the robot backends.
"""

from __future__ import annotations

from typing import Any

from geometry_msgs.msg import Point
from rclpy.node import Node

from sayplan_core.diagnostics import Status as DiagnosticStatus
from sayplan_core.diagnostics import follower_status
from sayplan_core.graph import limits
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.node_options import PathPlannerOptions
from sayplan_interfaces.srv import PlanPath
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.parameters import current_options, declare_options
from sayplan_ros.runner import run_nodes


class PathPlannerNode(Node):
    def __init__(self, node_name: str = "path_planner", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        declare_options(self, PathPlannerOptions)
        self.follower = GraphFollower(self)
        self._answered = self._refused = 0  # written by the service callback, read by the diagnostics one
        self.create_service(PlanPath, "plan_path", self._on_plan_path)
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)

    def _diagnostics(self) -> list[DiagnosticStatus]:
        return [follower_status(self.follower.version(), self.follower.problem(), self._answered, self._refused)]

    @property
    def version(self) -> int:
        return self.follower.version()

    def _on_plan_path(self, request: PlanPath.Request, response: PlanPath.Response) -> PlanPath.Response:
        problem = self.follower.problem()
        with self.follower.reading() as graph:  # a short read of the live copy: no snapshot per request
            answer = self._plan_path(graph, problem, request, response)
        if answer.success:
            self._answered += 1
        else:
            self._refused += 1
        return answer

    def _plan_path(
        self, graph: SceneGraph | None, problem: str, request: PlanPath.Request, response: PlanPath.Response
    ) -> PlanPath.Response:
        try:
            limits.check_ids([request.start, request.goal], "PlanPath start or goal")
        except limits.InputLimitError as exc:
            response.success, response.message = False, str(exc)
            return response
        if problem:  # first: a copy that never came may be held back by a rival server, which is the reason to give
            response.success, response.message = False, f"the path planner's scene graph is out of sync: {problem}"
            return response
        if graph is None:
            response.success, response.message = False, "no scene graph received yet on 'scene_graph'"
            return response
        start = request.start or graph.agent_location()
        if not start:
            response.success, response.message = False, "no start given and the agent has no location"
            return response
        try:
            result = PathPlanner(graph).shortest_path(
                start, request.goal, current_options(self, PathPlannerOptions).method
            )
        except GraphError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.node_ids = result.nodes
        response.cost = result.cost
        response.positions = [
            Point(x=p[0], y=p[1], z=p[2]) if p is not None else Point()
            for p in (graph.nodes[n].position for n in result.nodes)
        ]
        response.message = f"{len(result.nodes)} nodes, {result.cost:.2f} m"
        return response


def main(args: list[str] | None = None) -> None:
    run_nodes("path_planner", lambda: [PathPlannerNode()], args)
