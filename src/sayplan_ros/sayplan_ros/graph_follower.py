"""Keep a node's copy of the live scene graph in step: full graphs on `scene_graph`, patches on
`scene_graph_updates`, and a `get_scene_graph` fetch when an update went missing.

The bookkeeping (versions, buffering, gaps) is sayplan_core.graph.replica; this class
only connects it to the topics and the service. A version that cannot be taken is
logged at error and kept as `problem()`, so the owner refuses to plan on a stale copy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.replica import GraphReplica
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import GetSceneGraph
from sayplan_ros.conversions import msg_to_graph, msg_to_update
from sayplan_ros.guard import guarded
from sayplan_ros.qos import GRAPH_UPDATES_QOS, LATCHED_STATE_QOS

STOP_CHECK_S = 0.1  # how often a blocked wait_for_version looks at its stop condition


class GraphFollower:
    """Subscribes for `node`; `latest()` returns the newest graph taken and its version."""

    def __init__(self, node: Node, callback_group: Any = None) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified whenever the copy changes
        self._replica = GraphReplica()
        self._fetching = False
        self._fetch = node.create_client(GetSceneGraph, "get_scene_graph", callback_group=callback_group)
        node.create_subscription(
            SceneGraphMsg,
            "scene_graph",
            guarded(node, "scene_graph", self._on_graph),
            LATCHED_STATE_QOS,
            callback_group=callback_group,
        )
        node.create_subscription(
            GraphUpdateMsg,
            "scene_graph_updates",
            guarded(node, "scene_graph_updates", self._on_update),
            GRAPH_UPDATES_QOS,
            callback_group=callback_group,
        )

    # ------------------------------------------------------------------ incoming
    def _on_graph(self, msg: SceneGraphMsg) -> None:
        self._take_full(msg, "scene_graph")

    def _take_full(self, msg: SceneGraphMsg, where: str) -> None:
        version = int(msg.version)
        try:
            graph = msg_to_graph(msg, require_agent=False)  # the server's rules; planners check the agent
        except Exception as exc:  # untrusted input: anything the loader cannot take (deep JSON included)
            with self._lock:
                self._replica.refuse_full(version, str(exc) or repr(exc))
                problem = self._replica.problem
            self._node.get_logger().error(f"{problem} (from {where})")
            return
        with self._lock:
            fetch = self._replica.take_full(graph, version)
            self._changed.notify_all()
        if fetch:
            self._request_full()

    def _on_update(self, msg: GraphUpdateMsg) -> None:
        try:
            update = msg_to_update(msg)
        except Exception as exc:  # untrusted input
            self._node.get_logger().error(f"cannot read scene graph update {msg.version}: {exc!r}")
            self._request_full()
            return
        with self._lock:
            fetch = self._replica.take_update(update, int(msg.version))
            problem = self._replica.problem
            self._changed.notify_all()
        if fetch:
            self._node.get_logger().warning(f"{problem}; fetching the full scene graph")
            self._request_full()

    def _request_full(self) -> None:
        """One get_scene_graph call in flight at a time; its answer is taken like a latched full graph."""
        with self._lock:
            if self._fetching:
                return
            self._fetching = True
        if not self._fetch.service_is_ready():
            self._node.get_logger().error("get_scene_graph is not available; the scene graph copy stays out of sync")
            with self._lock:
                self._fetching = False
            return
        future = self._fetch.call_async(GetSceneGraph.Request())
        future.add_done_callback(guarded(self._node, "get_scene_graph answer", self._on_fetched))

    def _on_fetched(self, future: Future) -> None:
        with self._lock:
            self._fetching = False
        response = future.result()
        if response is None or not response.success:
            self._node.get_logger().error("get_scene_graph failed; the scene graph copy stays out of sync")
            return
        self._take_full(response.graph, "get_scene_graph")

    # ------------------------------------------------------------------ for the owner
    def wait_for_version(
        self, version: int, timeout: float, stop: Callable[[], bool] = lambda: False
    ) -> tuple[SceneGraph | None, int]:
        """Block the calling thread (an action's execute callback, on a multi-threaded executor) until the copy
        holds `version` or a newer one and is in sync, `timeout` passed or `stop()` holds; then `latest()`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self._ready_for(version) and not stop():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, STOP_CHECK_S))
            return self._replica.graph, self._replica.version

    def graph_at(self, version: int) -> SceneGraph | None:
        """The copy if it holds `version` or a newer one and knows of no gap, else None (what an async waiter polls)."""
        with self._lock:
            return self._replica.graph if self._ready_for(version) else None

    def _ready_for(self, version: int) -> bool:
        return self._replica.graph is not None and self._replica.version >= version and not self._replica.problem

    def latest(self) -> tuple[SceneGraph | None, int]:
        with self._lock:
            return self._replica.graph, self._replica.version

    def problem(self) -> str:
        """Why the copy is out of sync with the server, or '' when it is not (as far as it knows)."""
        with self._lock:
            return self._replica.problem

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._replica.stats)
