"""The Franka arm and gripper through franka_ros2: taught motions on a FollowJointTrajectory controller, and the
franka_gripper Grasp / Move / Homing actions, all on configurable action names.

The message packages are imported when the arm is made, so the rest of the stack never
needs them; their absence is one clear error naming the package.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from builtin_interfaces.msg import Duration
from rclpy.action import ActionClient
from rclpy.node import Node

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.franka import gripper_outcome, trajectory_outcome
from sayplan_core.robots.primitives import Grasp, Outcome, Trajectory
from sayplan_ros.navigation.action_call import ActionCall

Sleep = Callable[[float], Awaitable[None]]


def _duration(seconds: float) -> Duration:
    whole = int(seconds)
    return Duration(sec=whole, nanosec=round((seconds - whole) * 1e9) % 1_000_000_000)


def _load(package: str, names: tuple[str, ...]) -> list[Any]:
    try:
        module = __import__(f"{package}.action", fromlist=list(names))
    except ImportError:
        hint = {"control_msgs": "ros-jazzy-control-msgs", "franka_msgs": "franka_ros2 (franka_msgs)"}[package]
        raise ValueError(f"the Franka arm needs the {package} package ({hint})") from None
    return [getattr(module, n) for n in names]


class FrankaArm:
    """Arm trajectories and gripper commands, one at a time; `cancel()` stops the running one."""

    def __init__(
        self, node: Node, arm_action: str, grasp_action: str, move_action: str, homing_action: str, group: Any
    ) -> None:
        (self._fjt,) = _load("control_msgs", ("FollowJointTrajectory",))
        self._grasp_t, self._move_t, self._homing_t = _load("franka_msgs", ("Grasp", "Move", "Homing"))
        from trajectory_msgs.msg import JointTrajectoryPoint

        self._point_t = JointTrajectoryPoint
        self._node = node
        self._group = group
        self._arm = ActionClient(node, self._fjt, arm_action, callback_group=group)
        self._grasp = ActionClient(node, self._grasp_t, grasp_action, callback_group=group)
        self._move = ActionClient(node, self._move_t, move_action, callback_group=group)
        self._homing = ActionClient(node, self._homing_t, homing_action, callback_group=group)
        self._call: ActionCall | None = None

    async def follow(
        self, trajectory: Trajectory, time_tolerance_s: float, wait_s: float, sleep: Sleep, canceled: Callable[[], bool]
    ) -> Outcome:
        goal = self._fjt.Goal()
        goal.trajectory.joint_names = list(trajectory.joint_names)
        goal.trajectory.points = [
            self._point_t(positions=[float(p) for p in point.positions], time_from_start=_duration(point.time_s))
            for point in trajectory.points
        ]
        goal.goal_time_tolerance = _duration(time_tolerance_s)
        what = f"arm motion '{trajectory.describe()}'"
        ended = await self._run(self._arm, goal, what, wait_s, sleep, canceled)
        if isinstance(ended, Outcome):
            return ended
        status, result = ended
        return trajectory_outcome(status, int(result.error_code), str(result.error_string), what)

    async def grasp(self, grasp: Grasp, wait_s: float, sleep: Sleep, canceled: Callable[[], bool]) -> Outcome:
        goal = self._grasp_t.Goal()
        goal.width, goal.speed, goal.force = float(grasp.width), float(grasp.speed), float(grasp.force)
        goal.epsilon.inner, goal.epsilon.outer = float(grasp.epsilon_inner), float(grasp.epsilon_outer)
        what = f"grasping {grasp.node} ({grasp.width * 1000:.0f} mm, {grasp.force:g} N)"
        return await self._gripper(self._grasp, goal, what, wait_s, sleep, canceled, grasp=True)

    async def open(
        self, width: float, speed: float, wait_s: float, sleep: Sleep, canceled: Callable[[], bool]
    ) -> Outcome:
        goal = self._move_t.Goal()
        goal.width, goal.speed = float(width), float(speed)
        what = f"opening the gripper to {width * 1000:.0f} mm"
        return await self._gripper(self._move, goal, what, wait_s, sleep, canceled, grasp=False)

    async def home(self, wait_s: float, sleep: Sleep, canceled: Callable[[], bool]) -> Outcome:
        return await self._gripper(
            self._homing, self._homing_t.Goal(), "homing the gripper", wait_s, sleep, canceled, grasp=False
        )

    def cancel(self) -> None:
        call = self._call
        if call is not None:
            call.cancel()

    def destroy(self) -> None:
        for client in (self._arm, self._grasp, self._move, self._homing):
            client.destroy()

    # ------------------------------------------------------------------ helpers
    async def _gripper(
        self,
        client: ActionClient,
        goal: Any,
        what: str,
        wait_s: float,
        sleep: Sleep,
        canceled: Callable[[], bool],
        grasp: bool,
    ) -> Outcome:
        ended = await self._run(client, goal, what, wait_s, sleep, canceled)
        if isinstance(ended, Outcome):
            return ended
        status, result = ended
        return gripper_outcome(status, bool(result.success), str(result.error), what, grasp)

    async def _run(
        self, client: ActionClient, goal: Any, what: str, wait_s: float, sleep: Sleep, canceled: Callable[[], bool]
    ) -> Outcome | tuple[int, Any]:
        """The goal's (status, result), or the Outcome that says why there is none."""
        call = ActionCall(self._node, client, what, self._group)
        self._call = call
        if canceled():
            call.cancel()
        try:
            ended = await call.run(goal, wait_s, sleep)
        finally:
            self._call = None
        if ended.problem:
            code = SkillCode.CANCELED if call.cancel_requested else SkillCode.ROBOT_FAULT
            return Outcome(code, f"{what}: {ended.problem}")
        if ended.result is None:
            return Outcome(SkillCode.ROBOT_FAULT, f"{what}: the server sent no result")
        return ended.status, ended.result
