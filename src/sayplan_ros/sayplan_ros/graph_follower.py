"""Keep a node's copy of the live scene graph in step with the latched `scene_graph` topic."""

from __future__ import annotations

import threading
from typing import Any

from rclpy.node import Node

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_ros.conversions import msg_to_graph
from sayplan_ros.qos import LATCHED_STATE_QOS


class GraphFollower:
    """Subscribes for `node`; `latest()` returns the newest valid graph and its version."""

    def __init__(self, node: Node, callback_group: Any = None) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._graph: SceneGraph | None = None
        self._version = 0
        self._first = threading.Event()
        node.create_subscription(
            SceneGraphMsg, "scene_graph", self._on_graph, LATCHED_STATE_QOS, callback_group=callback_group
        )

    def _on_graph(self, msg: SceneGraphMsg) -> None:
        try:
            graph = msg_to_graph(msg)
        except (GraphError, ValueError) as exc:
            self._node.get_logger().error(f"ignoring scene graph version {msg.version}: {exc}")
            return
        with self._lock:
            self._graph, self._version = graph, int(msg.version)
        self._first.set()

    def wait(self, timeout: float) -> bool:
        """Block the calling thread (an action's execute thread, never the executor) until a graph arrived."""
        return self._first.wait(timeout)

    def latest(self) -> tuple[SceneGraph | None, int]:
        with self._lock:
            return self._graph, self._version
