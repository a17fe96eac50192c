"""The Franka arm and gripper through franka_ros2: taught motions on a FollowJointTrajectory controller, and the
franka_gripper Grasp / Move / Homing actions, all on configurable action names.

Every call has its own deadline (a taught motion: its duration plus `arm_timeout_s`; a gripper command:
`gripper_timeout_s`): past it the goal is canceled and the primitive ends `timeout` (a robot fault when the server
never confirms the cancel). What the hand holds is read back from franka_gripper's `~/joint_states` (the finger
width; see sayplan_franka_omron.motions); `~/stop` (std_srvs/Trigger) stops the fingers on shutdown.

The message packages are imported when the arm is made, so the rest of the stack never
needs them; their absence is one clear error naming the package.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.primitives import Grasp, Outcome, Trajectory
from sayplan_franka_omron.motions import gripper_outcome, gripper_width, trajectory_outcome
from sayplan_ros.clocks import steady_timer
from sayplan_ros.navigation.action_call import CANCEL_GRACE_S, ActionCall, LatestGoal, wait_for

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
        self,
        node: Node,
        arm_action: str,
        grasp_action: str,
        move_action: str,
        homing_action: str,
        group: Any,
        state_topic: str = "/franka_gripper/joint_states",
        stop_service: str = "/franka_gripper/stop",
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
        self._latest = LatestGoal()  # the latest goal's call, kept after it returned (it may live on)
        #: how long a server may take to confirm a cancel (the node's `arm_cancel_timeout_s`)
        self.cancel_timeout_s = CANCEL_GRACE_S
        self._gripper_busy = False
        self._idle = threading.Event()
        self._idle.set()
        self._lock = threading.Lock()
        self._width: tuple[float, float] | None = None  # (finger width m, monotonic time it arrived)
        self._width_waiters: list[tuple[float, Future]] = []
        self._bad_states = 0
        self.state_topic = state_topic
        self._state_sub = node.create_subscription(JointState, state_topic, self._on_state, 10, callback_group=group)
        self._stop_client = node.create_client(Trigger, stop_service, callback_group=group)

    async def follow(
        self,
        trajectory: Trajectory,
        time_tolerance_s: float,
        wait_s: float,
        sleep: Sleep,
        canceled: Callable[[], bool],
        deadline_s: float = 10.0,
    ) -> Outcome:
        """Replay a taught motion; its deadline is its duration, the settle tolerance and `deadline_s` more."""
        goal = self._fjt.Goal()
        goal.trajectory.joint_names = list(trajectory.joint_names)
        goal.trajectory.points = [
            self._point_t(positions=[float(p) for p in point.positions], time_from_start=_duration(point.time_s))
            for point in trajectory.points
        ]
        goal.goal_time_tolerance = _duration(time_tolerance_s)
        what = f"arm motion '{trajectory.describe()}'"
        deadline = trajectory.duration_s + time_tolerance_s + deadline_s
        ended = await self._run(self._arm, goal, what, wait_s, sleep, canceled, deadline)
        if isinstance(ended, Outcome):
            return ended
        status, result = ended
        return trajectory_outcome(status, int(result.error_code), str(result.error_string), what)

    async def grasp(
        self, grasp: Grasp, wait_s: float, sleep: Sleep, canceled: Callable[[], bool], deadline_s: float = 15.0
    ) -> Outcome:
        goal = self._grasp_t.Goal()
        goal.width, goal.speed, goal.force = float(grasp.width), float(grasp.speed), float(grasp.force)
        goal.epsilon.inner, goal.epsilon.outer = float(grasp.epsilon_inner), float(grasp.epsilon_outer)
        what = f"grasping {grasp.node} ({grasp.width * 1000:.0f} mm, {grasp.force:g} N)"
        return await self._gripper(self._grasp, goal, what, wait_s, sleep, canceled, deadline_s, grasp=True)

    async def open(
        self,
        width: float,
        speed: float,
        wait_s: float,
        sleep: Sleep,
        canceled: Callable[[], bool],
        deadline_s: float = 15.0,
    ) -> Outcome:
        goal = self._move_t.Goal()
        goal.width, goal.speed = float(width), float(speed)
        what = f"opening the gripper to {width * 1000:.0f} mm"
        return await self._gripper(self._move, goal, what, wait_s, sleep, canceled, deadline_s, grasp=False)

    async def home(
        self, wait_s: float, sleep: Sleep, canceled: Callable[[], bool], deadline_s: float = 15.0
    ) -> Outcome:
        return await self._gripper(
            self._homing, self._homing_t.Goal(), "homing the gripper", wait_s, sleep, canceled, deadline_s, grasp=False
        )

    def cancel(self) -> None:
        call = self._call
        if call is not None:
            call.cancel()

    @property
    def gripper_busy(self) -> bool:
        """Whether a gripper command runs now."""
        return self._gripper_busy

    @property
    def moving(self) -> bool:
        """Whether a goal this node sent to the arm or gripper may still move it (its end never came, e.g. a cancel
        the server never confirmed)."""
        return self._latest.moving

    def cancel_again(self) -> None:
        """Send the latest goal's cancel once more (a cancel request may have been lost)."""
        self._latest.cancel_again()

    def servers_ready(self) -> list[str]:
        """The arm and gripper action servers that are not there (empty: all are)."""
        clients = (self._arm, self._grasp, self._move, self._homing)
        return [c._action_name for c in clients if not c.server_is_ready()]

    # ------------------------------------------------------------------ the hand, read back
    def _on_state(self, msg: JointState) -> None:
        try:
            width = gripper_width(list(msg.name), [float(p) for p in msg.position])
        except (ValueError, TypeError) as exc:
            self._bad_states += 1
            if self._bad_states in (1, 100, 10_000):  # bounded logging of a hostile or misconfigured publisher
                self._node.get_logger().warning(f"ignoring a message on {self.state_topic}: {exc}")
            return
        now = time.monotonic()
        with self._lock:
            self._width = (width, now)
            ready = [f for since, f in self._width_waiters if now >= since]
            self._width_waiters = [(since, f) for since, f in self._width_waiters if now < since]
        for future in ready:
            if not future.done():
                future.set_result(width)

    async def width_after(self, since: float, timeout_s: float) -> float | None:
        """The finger width from a gripper state that arrived after `since` (monotonic), waited for at most
        `timeout_s`; None when none came (the hand cannot be read)."""
        with self._lock:
            latest = self._width
            if latest is not None and latest[1] >= since:
                return latest[0]
            future: Future = Future()
            self._width_waiters.append((since, future))
        if not await wait_for(self._node, future, timeout_s, self._group):
            with self._lock:
                self._width_waiters = [(s, f) for s, f in self._width_waiters if f is not future]
            return None
        value = future.result()
        return float(value) if value is not None else None

    # ------------------------------------------------------------------ stopping
    def stop_and_wait(self, timeout_s: float, gripper_was_busy: bool = False) -> bool:
        """Shutdown (a plain thread, the executor spinning): cancel the running arm or gripper goal (again, for a
        goal whose cancel was never confirmed) and wait for it to end; a gripper command that was running (now,
        or when the shutdown began: `gripper_was_busy`, since the shutdown's cancel ends the skill first) also gets
        franka_gripper's `~/stop`. Not sent to an idle gripper: libfranka's stop releases the grasping force, and a
        held object could slip. True when nothing the node commanded still moves."""
        deadline = time.monotonic() + timeout_s
        gripper = self._gripper_busy or gripper_was_busy
        self.cancel()
        ended = self._idle.wait(max(0.0, deadline - time.monotonic()))
        if self._latest.moving:
            ended = self._latest.stop_and_wait(max(0.0, deadline - time.monotonic())) and ended
        if gripper:
            ended = self._stop_gripper(max(0.0, deadline - time.monotonic())) and ended
        return ended

    def _stop_gripper(self, timeout_s: float) -> bool:
        if not self._stop_client.service_is_ready():
            self._node.get_logger().error(f"no gripper stop service on {self._stop_client.srv_name}")
            return False
        answered = threading.Event()
        future = self._stop_client.call_async(Trigger.Request())
        future.add_done_callback(lambda _f: answered.set())
        if not answered.wait(timeout_s):
            return False
        response = future.result()
        return bool(response is not None and response.success)

    def destroy(self) -> None:
        """Best effort, no waiting: a running goal is canceled, a running gripper command stopped."""
        if self._call is not None or self.moving:
            self.cancel()
            self.cancel_again()
            if self._gripper_busy and self._stop_client.service_is_ready():
                self._stop_client.call_async(Trigger.Request())
        for client in (self._arm, self._grasp, self._move, self._homing):
            client.destroy()
        self._node.destroy_subscription(self._state_sub)
        self._node.destroy_client(self._stop_client)

    # ------------------------------------------------------------------ helpers
    async def _gripper(
        self,
        client: ActionClient,
        goal: Any,
        what: str,
        wait_s: float,
        sleep: Sleep,
        canceled: Callable[[], bool],
        deadline_s: float,
        grasp: bool,
    ) -> Outcome:
        self._gripper_busy = True
        try:
            ended = await self._run(client, goal, what, wait_s, sleep, canceled, deadline_s)
        finally:
            self._gripper_busy = False
        if isinstance(ended, Outcome):
            return ended
        status, result = ended
        return gripper_outcome(status, bool(result.success), str(result.error), what, grasp)

    async def _run(
        self,
        client: ActionClient,
        goal: Any,
        what: str,
        wait_s: float,
        sleep: Sleep,
        canceled: Callable[[], bool],
        deadline_s: float,
    ) -> Outcome | tuple[int, Any]:
        """The goal's (status, result), or the Outcome that says why there is none. Past `deadline_s` (from the
        goal being sent) the goal is canceled: the primitive ends `timeout`."""
        call = ActionCall(self._node, client, what, self._group)
        self._call = self._latest.call = call
        self._idle.clear()
        expired: list[bool] = []

        def expire() -> None:
            timer.cancel()
            if not expired:
                expired.append(True)
                call.cancel()

        timer = steady_timer(self._node, max(deadline_s + wait_s, 0.001), expire, self._group)
        if canceled():
            call.cancel()
        try:
            ended = await call.run(goal, wait_s, sleep, cancel_timeout_s=self.cancel_timeout_s)
        finally:
            self._node.destroy_timer(timer)
            self._call = None
            self._idle.set()
        if ended.lost:  # the server went away mid-goal: what the arm or gripper did is not known
            return Outcome(SkillCode.SERVER_UNAVAILABLE, f"{what}: {ended.problem}")
        if expired:
            if ended.problem and ended.status == GoalStatus.STATUS_CANCELED:  # the server never confirmed the cancel
                return Outcome(SkillCode.ROBOT_FAULT, f"{what}: past its deadline, and {ended.problem}")
            if ended.problem or ended.status == GoalStatus.STATUS_CANCELED:
                return Outcome(SkillCode.TIMEOUT, f"{what} did not finish within {deadline_s:g} s: it was stopped")
        if ended.problem:
            code = SkillCode.CANCELED if call.cancel_requested else SkillCode.ROBOT_FAULT
            if code is SkillCode.CANCELED and ended.status == GoalStatus.STATUS_CANCELED:
                code = SkillCode.ROBOT_FAULT  # a cancel the server never confirmed: it may still move
            return Outcome(code, f"{what}: {ended.problem}")
        if ended.result is None:
            return Outcome(SkillCode.ROBOT_FAULT, f"{what}: the server sent no result")
        return ended.status, ended.result
