"""Whether the action server that accepted a goal is still there: the one liveness check of the stack's clients.

A goal's status publisher identifies its server: the endpoints publishing the action's status topic when the goal
was accepted. When none of them is left, the server died (its DDS participant's lease ran out: 20 s with Fast
DDS's defaults, see README "Contracts"; at once when its node or process ends cleanly) or was restarted (a new
server has other endpoints and knows nothing of the goal): the goal is lost and no result will come. The executor
watches its planner and skill server with it; a robot's skill server its navigator, arm and gripper servers
(sayplan_ros.navigation.action_call).
"""

from __future__ import annotations

import threading

from rclpy.node import Node

from sayplan_ros.names import absolute_name

#: How often a client looks whether the server running its goal is still there, seconds.
SERVER_CHECK_S = 0.5


class ServerWatch:
    """Notices that the action server running a goal is gone (see the module docstring). `check()` from a timer or
    a goal's wait loop; `lost` then says what happened and `done` is set (for a thread waiting on it)."""

    def __init__(self, node: Node, action: str, what: str) -> None:
        self.node = node
        self.what = what
        self.topic = absolute_name(node, action) + "/_action/status"
        self.servers = self._endpoints()
        self.done = threading.Event()
        self.lost = ""

    def _endpoints(self) -> frozenset[bytes]:
        return frozenset(bytes(info.endpoint_gid) for info in self.node.get_publishers_info_by_topic(self.topic))

    def check(self) -> bool:
        """Look once; True when the server that had the goal is gone."""
        if self.lost:
            return True
        if not self.servers:  # accepted before this node's graph cache listed the status publisher: learn it now
            self.servers = self._endpoints()
        elif not (self.servers & self._endpoints()):
            self.lost = (
                f"the {self.what} server that had the goal is gone (it stopped, died or was restarted); "
                "the goal is lost"
            )
            self.done.set()
        return bool(self.lost)
