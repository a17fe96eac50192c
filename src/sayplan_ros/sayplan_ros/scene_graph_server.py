"""scene_graph_server: owns the live 3D scene graph and serves it over ROS 2.

Publishes the graph latched on `scene_graph` with a version counter, and RViz
markers latched on `scene_graph_markers` (layers, labels, edges, the agent and the
path of the plan on `active_plan`). Services: `get_scene_graph`,
`apply_graph_update` (atomic; a refused update keeps the graph), `verify_plan`
and `graph_view` (collapse / expand / contract).
"""

from __future__ import annotations

import threading
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from sayplan_core.envs import load_env
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.updates import apply_update
from sayplan_core.graph.views import GraphView as CoreView
from sayplan_core.sim.action_set import ActionSetError
from sayplan_core.sim.simulator import verify_plan
from sayplan_core.viz.markers import remaining_path
from sayplan_interfaces.msg import Plan
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import ApplyGraphUpdate, GetSceneGraph, GraphView, VerifyPlan
from sayplan_ros.conversions import graph_to_msg, markers_to_msg, msg_to_update, steps_from_msgs
from sayplan_ros.qos import LATCHED_STATE_QOS
from sayplan_ros.runner import run_nodes


class SceneGraphServer(Node):
    """Holds one SceneGraph; every change goes through apply_update and bumps the version."""

    def __init__(self, node_name: str = "scene_graph_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_parameter(
            "env",
            "office",
            ParameterDescriptor(description="Bundled environment name (office, home) or a graph file path"),
        )
        self.declare_parameter("frame_id", "map", ParameterDescriptor(description="Frame of node positions"))
        env = str(self.get_parameter("env").value)
        self._frame_id = str(self.get_parameter("frame_id").value)
        if not env:
            raise ValueError("parameter 'env' must name a bundled environment or a graph file")
        self._lock = threading.Lock()
        self._graph: SceneGraph = load_env(env)
        self._version = 1
        self._publisher = self.create_publisher(SceneGraphMsg, "scene_graph", LATCHED_STATE_QOS)
        self._marker_pub = self.create_publisher(MarkerArray, "scene_graph_markers", LATCHED_STATE_QOS)
        self._plan_nodes: list[str] = []
        self.create_subscription(Plan, "active_plan", self._on_plan, LATCHED_STATE_QOS)
        self.create_service(GraphView, "graph_view", self._on_view)
        self.create_service(GetSceneGraph, "get_scene_graph", self._on_get)
        self.create_service(ApplyGraphUpdate, "apply_graph_update", self._on_update)
        self.create_service(VerifyPlan, "verify_plan", self._on_verify)
        self._publish()
        self.get_logger().info(
            f"serving '{self._graph.name}' ({len(self._graph)} nodes) from {env} as version {self._version}"
        )

    @property
    def graph(self) -> SceneGraph:
        return self._graph

    @property
    def version(self) -> int:
        return self._version

    def _publish(self) -> None:
        msg = graph_to_msg(self._graph, self._version)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        self._publisher.publish(msg)
        self._publish_markers()

    def _publish_markers(self) -> None:
        stamp = self.get_clock().now().to_msg()
        self._marker_pub.publish(markers_to_msg(self._graph, self._plan_nodes, self._frame_id, stamp))

    def _on_plan(self, msg: Plan) -> None:
        """Highlight the remaining navigation of the active plan."""
        with self._lock:
            steps = [(s.action, s.target) for s in msg.steps]
            self._plan_nodes = remaining_path(self._graph, steps, msg.current_step)
            self._publish_markers()

    def _on_view(self, request: GraphView.Request, response: GraphView.Response) -> GraphView.Response:
        with self._lock:
            graph = self._graph
        view = CoreView(graph)
        try:
            for node_id in request.expanded:
                view.expand(node_id)
            if request.operation == "collapse":
                view.collapse()
            elif request.operation == "expand":
                view.expand(request.node_id)
            elif request.operation == "contract":
                view.contract(request.node_id)
            else:
                raise GraphError(f"unknown operation '{request.operation}' (collapse, expand or contract)")
        except GraphError as exc:
            response.success, response.message = False, str(exc)
            response.expanded = list(request.expanded)
            return response
        response.success, response.message = True, f"{len(view.visible_ids())} nodes visible"
        response.expanded = list(view.expanded)
        response.visible_ids = sorted(view.visible_ids())
        response.text = view.text()
        return response

    def _on_get(self, request: GetSceneGraph.Request, response: GetSceneGraph.Response) -> GetSceneGraph.Response:
        with self._lock:
            graph, version = self._graph, self._version
        try:
            view = graph.subgraph(request.node_ids) if request.node_ids else graph
        except GraphError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.graph = graph_to_msg(view, version)
        response.graph.header.frame_id = self._frame_id
        response.success, response.message = True, f"{len(view)} nodes"
        return response

    def _on_update(
        self, request: ApplyGraphUpdate.Request, response: ApplyGraphUpdate.Response
    ) -> ApplyGraphUpdate.Response:
        with self._lock:
            base = request.update.base_version
            if base and base != self._version:
                response.success = False
                response.message = f"stale update: computed against version {base}, graph is at {self._version}"
                response.version = self._version
                return response
            try:
                self._graph = apply_update(self._graph, msg_to_update(request.update))
            except (GraphError, ValueError) as exc:
                response.success, response.message, response.version = False, f"update refused: {exc}", self._version
                self.get_logger().warning(response.message)
                return response
            self._version += 1
            response.success, response.version = True, self._version
            response.message = f"applied update from {request.update.source or 'unknown'}"
            self._publish()
        return response

    def _on_verify(self, request: VerifyPlan.Request, response: VerifyPlan.Response) -> VerifyPlan.Response:
        with self._lock:
            graph = self._graph
        try:
            result = verify_plan(graph, steps_from_msgs(request.plan), request.action_set or "sayplan")
        except ActionSetError as exc:
            response.success, response.failed_step, response.feedback = False, -1, str(exc)
            return response
        response.success = result.success
        response.failed_step = -1 if result.failed_step is None else result.failed_step
        response.feedback = result.feedback
        return response


def main(args: list[str] | None = None) -> None:
    run_nodes("scene_graph_server", lambda: [SceneGraphServer()], args)
