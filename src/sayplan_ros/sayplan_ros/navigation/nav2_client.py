"""Drive any robot's base through Nav2's NavigateToPose action (ROS 2 Jazzy wire type), one leg per goto.

A plain rclpy ActionClient inside the skill server's executor (not nav2_simple_commander's
BasicNavigator, which spins a node of its own): the goal is sent and awaited without
blocking, Nav2's feedback becomes skill feedback, its error codes become SkillOutcome
codes (sayplan_core.robots.nav2), and a cancel of the skill cancels the Nav2 goal.
`nav2_msgs` is imported only when a Nav2 client is made, so a stack without Nav2 never
needs it.

Every call has its own deadline: `driver_wait_s` for the navigator to appear and accept
the goal, `nav2_leg_timeout_s` for the leg (then it is canceled: TIMEOUT), and
`nav2_cancel_timeout_s` for Nav2 to confirm a cancel (else a robot fault, which the skill
server latches: the base may still be moving). The two Nav2 deadlines are read from the
node's parameters when it declares them (the shared settings), else their defaults.
Stopping: `stop_and_wait` (shutdown, from a plain thread) cancels the running goal and
waits for Nav2 to end it; `destroy` cancels it without waiting. A NavigateToPose goal
has no expiry of its own: a client that dies without sending its cancel leaves the base
driving to the goal (docs/howto/franka_omron.md, "Navigation through Nav2").
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.node import Node

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.nav2 import (
    nav2_outcome,
    progress,
    quaternion_to_yaw,
    yaw_to_quaternion,
)
from sayplan_core.robots.navigation import Pose2D
from sayplan_core.robots.primitives import Outcome
from sayplan_ros.navigation.action_call import ActionCall, LatestGoal

Feedback = Callable[[str, float], None]
Sleep = Callable[[float], Awaitable[None]]


def load_navigate_to_pose() -> Any:
    """The NavigateToPose type, or a ValueError that says how to get it."""
    try:
        from nav2_msgs.action import NavigateToPose
    except ImportError:
        raise ValueError(
            "navigation_backend nav2 needs the nav2_msgs package (on a ROS install: apt install ros-jazzy-nav2-msgs)"
        ) from None
    return NavigateToPose


class Nav2Client:
    """NavigateToPose legs for one node; `last_pose` is the robot's map pose from the current (or last) leg's latest
    feedback, None until that leg sent any."""

    def __init__(self, node: Node, action_name: str, frame: str, behavior_tree: str = "", group: Any = None) -> None:
        self._type = load_navigate_to_pose()
        self._node = node
        self._group = group
        self._frame = frame
        self._behavior_tree = behavior_tree
        self._client = ActionClient(node, self._type, action_name, callback_group=group)
        self.action_name = action_name
        self._call: ActionCall | None = None  # the running leg's call
        self._latest = LatestGoal()  # the latest leg's call, kept after it returned (its goal may live on)
        self.last_pose: Pose2D | None = None

    async def drive(
        self,
        pose: Pose2D,
        where: str,
        server_wait_s: float,
        sleep: Sleep,
        feedback: Feedback,
        cancel_requested: Callable[[], bool],
        leg_s: float,
        cancel_s: float,
    ) -> Outcome:
        """One leg to `pose` (map frame of the site file); the outcome says how it ended.
        `cancel_requested` closes the gap between a cancel and this leg's start. `last_pose` is forgotten first:
        after a leg that sent no feedback it is None (unknown), never where an earlier leg left the robot.
        The deadlines are the robot's `nav2_leg_timeout_s` (`leg_s`) and `nav2_cancel_timeout_s` (`cancel_s`)."""
        self.last_pose = None
        x, y, yaw = pose
        goal = self._type.Goal()
        goal.pose.header.frame_id = self._frame
        goal.pose.pose.position.x = float(x)
        goal.pose.pose.position.y = float(y)
        qx, qy, qz, qw = yaw_to_quaternion(float(yaw))
        goal.pose.pose.orientation.x, goal.pose.pose.orientation.y = qx, qy
        goal.pose.pose.orientation.z, goal.pose.pose.orientation.w = qz, qw
        goal.behavior_tree = self._behavior_tree
        initial: list[float] = []

        def on_feedback(msg: Any) -> None:
            p = msg.current_pose.pose
            self.last_pose = (
                float(p.position.x),
                float(p.position.y),
                quaternion_to_yaw(p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w),
            )
            remaining = float(msg.distance_remaining)
            if not initial and math.isfinite(remaining) and remaining > 0.0:
                initial.append(remaining)
            feedback(
                f"driving to {where}: {remaining:.1f} m left", progress(remaining, initial[0] if initial else None)
            )

        call = ActionCall(self._node, self._client, "Nav2 NavigateToPose", self._group)
        self._call = self._latest.call = call
        if cancel_requested():
            call.cancel()
        try:
            ended = await call.run(goal, server_wait_s, sleep, on_feedback, leg_s, cancel_s)
        finally:
            self._call = None
        if ended.lost:
            return Outcome(
                SkillCode.SERVER_UNAVAILABLE,
                f"driving to {where}: {ended.problem}; where the base stopped is not known",
            )
        if ended.unconfirmed:
            return Outcome(
                SkillCode.ROBOT_FAULT,
                f"driving to {where}: Nav2 did not confirm the cancel within {cancel_s:g} s "
                "(nav2_cancel_timeout_s): the base may still be moving",
            )
        if ended.problem:
            code = SkillCode.CANCELED if call.cancel_requested else SkillCode.ROBOT_FAULT
            return Outcome(code, f"driving to {where}: {ended.problem}")
        if ended.timed_out and ended.status == GoalStatus.STATUS_CANCELED:
            return Outcome(
                SkillCode.TIMEOUT,
                f"driving to {where} took longer than {leg_s:g} s (nav2_leg_timeout_s); Nav2 canceled the leg",
            )
        result = ended.result  # Humble's result has neither field: every failure then reads as code 0
        error_code, error_msg = getattr(result, "error_code", 0), getattr(result, "error_msg", "")
        return nav2_outcome(ended.status, int(error_code), str(error_msg), where)

    def cancel(self) -> None:
        """Cancel the running leg (from the skill server's cancel callback); never waits."""
        call = self._call
        if call is not None:
            call.cancel()

    @property
    def moving(self) -> bool:
        """Whether a goal this client sent may still be driving the base (sent, and Nav2 has not ended it)."""
        return self._latest.moving

    def cancel_again(self) -> None:
        """Send the latest goal's cancel once more (a cancel request may be lost; Nav2 never ended that goal)."""
        self._latest.cancel_again()

    def server_ready(self) -> bool:
        return bool(self._client.server_is_ready())

    def stop_and_wait(self, timeout_s: float) -> bool:
        """Cancel the running NavigateToPose goal, if any, and wait at most `timeout_s` for Nav2 to end it (status
        CANCELED, or the goal ended otherwise). For a plain thread while the executor spins (it completes the
        result); never from an executor callback. True when nothing this client sent is moving the base."""
        return self._latest.stop_and_wait(timeout_s)

    def destroy(self) -> None:
        """Cancel a goal still under way (best effort: the request is sent, its answer not awaited; DDS may be going
        down with the node), then destroy the client."""
        self._latest.cancel_quietly()
        self._client.destroy()
