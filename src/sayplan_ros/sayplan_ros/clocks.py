"""Timers the stack's waits and deadlines run on: the steady clock, never ROS time.

With `use_sim_time:=true` and nothing publishing /clock, ROS time stands still, so a timer on the node's clock
never fires: a skill waiting on one hung until the executor's skill timeout (issue 24 item 5). Waits and deadlines
here measure real elapsed time; `warn_without_clock` reports a node started with sim time and no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.timer import Timer

#: How long after start-up a node with use_sim_time looks whether anything publishes /clock, seconds.
CLOCK_CHECK_S = 3.0


def steady_timer(node: Node, period_s: float, callback: Callable[[], Any], group: Any = None) -> Timer:
    """`node.create_timer` on the steady clock."""
    return node.create_timer(period_s, callback, callback_group=group, clock=Clock(clock_type=ClockType.STEADY_TIME))


def warn_without_clock(node: Node) -> None:
    """With use_sim_time, say once (at error) if nothing publishes /clock a few seconds after start-up."""
    if not node.get_parameter("use_sim_time").value:
        return
    holder: list[Timer] = []

    def check() -> None:
        holder[0].cancel()
        if node.count_publishers("/clock") == 0:
            node.get_logger().error(
                "use_sim_time is true but nothing publishes /clock: ROS time stands still (stamps stay at 0); "
                "this node's waits and deadlines run on the steady clock and are not affected"
            )

    holder.append(steady_timer(node, CLOCK_CHECK_S, check))
