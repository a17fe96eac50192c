"""Fake robot-side ROS action servers with the exact Jazzy wire types (from test/overlay): Nav2's NavigateToPose,
franka_gripper's Grasp / Move / Homing, and a joint_trajectory_controller's FollowJointTrajectory.

Each is a real rclpy node reached over DDS, programmable per test, and ends goals the
way its upstream does:
- FakeNav2 follows bt_navigator (navigation2, branch jazzy: nav2_bt_navigator and
  nav2_behavior_tree's bt_action_server_impl.hpp): accepts while active, publishes
  feedback (current_pose, distance_remaining, navigation_time), SUCCEEDED with
  error_code 0, ABORTED with the error code of the tree node that failed, CANCELED
  after a cancel; an inactive navigator rejects goals.
- FakeGripper follows franka_gripper's gripper_action_server (franka_ros2, branch
  jazzy): node `franka_gripper` with `~/grasp`, `~/move`, `~/homing`; every goal is
  accepted; a grasp succeeds when the fingers stop within width -/+ epsilon (libfranka's
  rule), else ABORTED with success=false and empty error; a libfranka exception is
  success=false with its text; a cancel stops the fingers and ends CANCELED. Like
  gripper_action_server.cpp it publishes `~/joint_states` (the two finger joints, each
  at width / 2) on a timer and serves `~/stop` (std_srvs/Trigger). The fingers are a
  small physical model: a grasp that meets something holds it (`holding`) at its width;
  an opening that succeeds lets go; `stuck` fingers refuse every opening (libfranka then
  throws, the text in `error`), as fingers jammed on a handle would.
- FakeTrajectoryController follows joint_trajectory_controller (ros2_controllers,
  branch jazzy): `<controller>/follow_joint_trajectory`; REJECTS a goal when inactive or
  when the trajectory's joints are not its own or times do not increase; SUCCEEDED with
  SUCCESSFUL and "Goal successfully reached!"; ABORTED with PATH_TOLERANCE_VIOLATED
  ("Aborted due to path tolerance violation") when scripted; CANCELED with an empty
  result after a cancel.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

# Third-party messages must be checked field by field (an int in a float64 field is sent as garbage otherwise).
os.environ.setdefault("ROS_PYTHON_CHECK_FIELDS", "1")

import itertools
import time

from control_msgs.action import FollowJointTrajectory
from franka_msgs.action import Grasp, Homing, Move
from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

FR3_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))


async def _sleep(node: Node, seconds: float, group: Any) -> None:
    future: Future = Future()

    def fire() -> None:
        timer.cancel()
        if not future.done():
            future.set_result(True)

    timer = node.create_timer(max(seconds, 0.001), fire, callback_group=group)
    try:
        await future
    finally:
        node.destroy_timer(timer)


class _Scripted:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Any] = deque()

    def script(self, *items: Any) -> None:
        with self._lock:
            self._script.extend(items)

    def unscript(self) -> None:
        """Drop whatever is still scripted: the faults stop (a property test's last phase)."""
        with self._lock:
            self._script.clear()

    def _next(self, default: Any) -> Any:
        with self._lock:
            return self._script.popleft() if self._script else default


# ----------------------------------------------------------------------------- Nav2
@dataclass
class Leg:
    """What the next NavigateToPose goal does: succeed, abort (with a Jazzy error code) or hold until canceled.
    `feedback` 0: the goal ends before any feedback (an abort then leaves the base where it was)."""

    outcome: str = "succeed"
    error_code: int = 0
    error_msg: str = ""
    duration_s: float = 0.04
    feedback: int = 3


class FakeNav2(Node, _Scripted):
    def __init__(
        self, action: str = "navigate_to_pose", start: tuple[float, float] = (0.0, 0.0), **kwargs: Any
    ) -> None:
        Node.__init__(self, "bt_navigator", **kwargs)
        _Scripted.__init__(self)
        self.active = True
        self.pose = (start[0], start[1], 0.0)
        self.goals: list[tuple[str, float, float, float, str]] = []  # frame, x, y, yaw, behavior_tree
        self.canceled = 0
        self.canceled_at: list[float] = []  # monotonic times the base stood still after a cancel
        self.running = 0
        self._group = ReentrantCallbackGroup()
        self._server = ActionServer(
            self,
            NavigateToPose,
            action,
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT if self.active else GoalResponse.REJECT,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=self._group,
        )

    async def _execute(self, handle: Any) -> Any:
        goal = handle.request
        q = goal.pose.pose.orientation
        yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
        target = (goal.pose.pose.position.x, goal.pose.pose.position.y, yaw)
        self.goals.append((goal.pose.header.frame_id, *target, goal.behavior_tree))
        leg: Leg = self._next(Leg())
        self.running += 1
        try:
            return await self._drive(handle, goal, target, yaw, leg)
        finally:
            self.running -= 1

    async def _drive(self, handle: Any, goal: Any, target: tuple[float, float, float], yaw: float, leg: Leg) -> Any:
        start = self.pose
        total = math.hypot(target[0] - start[0], target[1] - start[1])
        steps = max(leg.feedback, 1)
        step = 0 if leg.feedback > 0 or leg.outcome == "hold" else steps
        while True:
            if handle.is_cancel_requested:
                self.canceled += 1
                self.canceled_at.append(time.monotonic())
                handle.canceled()
                return NavigateToPose.Result()
            if leg.outcome != "hold" and step >= steps:
                break
            fraction = min(1.0, (step + 1) / steps) if leg.outcome != "hold" else 0.5
            if leg.outcome == "abort":
                fraction *= 0.5
            self.pose = (
                start[0] + (target[0] - start[0]) * fraction,
                start[1] + (target[1] - start[1]) * fraction,
                yaw,
            )
            feedback = NavigateToPose.Feedback()
            feedback.current_pose.header.frame_id = goal.pose.header.frame_id
            feedback.current_pose.pose.position.x = float(self.pose[0])
            feedback.current_pose.pose.position.y = float(self.pose[1])
            feedback.current_pose.pose.orientation = goal.pose.pose.orientation
            feedback.distance_remaining = float(total * (1.0 - fraction))
            # builtin_interfaces/Duration: whole seconds plus nanoseconds under one second (a held leg outlives 4.3 s,
            # where nanoseconds alone overflow uint32, the feedback raises and rclpy aborts the goal)
            elapsed_ns = int(step * leg.duration_s / steps * 1e9)
            feedback.navigation_time.sec, feedback.navigation_time.nanosec = divmod(elapsed_ns, 1_000_000_000)
            handle.publish_feedback(feedback)
            step += 1
            await _sleep(self, leg.duration_s / steps, self._group)
        if leg.outcome == "succeed":
            self.pose = target
        result = NavigateToPose.Result()
        if leg.outcome == "abort":
            result.error_code = int(leg.error_code)
            result.error_msg = leg.error_msg
            handle.abort()
            return result
        handle.succeed()
        return result

    def destroy_node(self) -> None:
        self._server.destroy()
        super().destroy_node()


# ----------------------------------------------------------------------------- franka_gripper
@dataclass
class GraspTry:
    """The next grasp: the object width the fingers meet (None: nothing there), a libfranka exception, or hold."""

    object_width: float | None = None
    exception: str = ""
    hold: bool = False
    slip: bool = False  # the grasp holds, then the object slides out of the fingers (they close on nothing)


class FakeGripper(Node, _Scripted):
    MAX_WIDTH = 0.08

    def __init__(
        self, node_name: str = "franka_gripper", default_object_width: float | None = None, **kwargs: Any
    ) -> None:
        Node.__init__(self, node_name, **kwargs)
        _Scripted.__init__(self)
        self.default_object_width = default_object_width  # None: the grasp meets exactly the commanded width
        self.width = 0.0
        self.holding = False  # something is between the fingers
        self.stuck = ""  # a libfranka exception text: every opening fails (fingers jammed on a handle)
        self.publishing = True  # False: no ~/joint_states (the read-back has nothing to read)
        self.stop_calls = 0
        self.commands = 0  # grasp, move and homing goals received (finger motions)
        self.homed = 0
        self.grasps: list[tuple[float, float, float, float, float]] = []  # width, speed, force, inner, outer
        self.moves: list[tuple[float, float]] = []
        self.stopped = 0
        self.delay_s = 0.01
        self.fail_next_move = ""  # a libfranka exception text for the next Move
        self.move_errors: deque[str] = deque()  # per Move in turn: "" succeeds, a text fails with that exception
        self._group = ReentrantCallbackGroup()
        accept = lambda _goal: GoalResponse.ACCEPT  # noqa: E731 - franka_gripper accepts every goal
        cancel = lambda _goal: CancelResponse.ACCEPT  # noqa: E731
        self._servers = [
            ActionServer(self, Grasp, "~/grasp", self._grasp, goal_callback=accept, cancel_callback=cancel, callback_group=self._group),
            ActionServer(self, Move, "~/move", self._move, goal_callback=accept, cancel_callback=cancel, callback_group=self._group),
            ActionServer(self, Homing, "~/homing", self._homing, goal_callback=accept, cancel_callback=cancel, callback_group=self._group),
        ]  # fmt: skip
        self._states = self.create_publisher(JointState, "~/joint_states", 1)
        self._timer = self.create_timer(0.03, self._publish_state, callback_group=self._group)
        self._stop = self.create_service(Trigger, "~/stop", self._on_stop, callback_group=self._group)

    def _publish_state(self) -> None:
        if not self.publishing:
            return
        state = JointState()
        state.header.stamp = self.get_clock().now().to_msg()
        state.name = ["fr3_finger_joint1", "fr3_finger_joint2"]
        state.position = [float(self.width / 2.0), float(self.width / 2.0)]
        state.velocity = [0.0, 0.0]
        state.effort = [0.0, 0.0]
        self._states.publish(state)

    def _on_stop(self, _request: Any, response: Any) -> Any:
        self.stop_calls += 1
        response.success = True
        return response

    def let_go(self) -> None:
        """A person freed the hand (or the object slipped out): the fingers are open and hold nothing."""
        self.stuck = ""
        self.holding = False
        self.width = self.MAX_WIDTH

    async def _grasp(self, handle: Any) -> Any:
        goal = handle.request
        self.commands += 1
        self.grasps.append((goal.width, goal.speed, goal.force, goal.epsilon.inner, goal.epsilon.outer))
        attempt: GraspTry = self._next(
            GraspTry(object_width=self.default_object_width if self.default_object_width is not None else goal.width)
        )
        result = Grasp.Result()
        while attempt.hold:
            if handle.is_cancel_requested:
                self.stopped += 1
                handle.canceled()
                return result
            await _sleep(self, 0.01, self._group)
        await _sleep(self, self.delay_s, self._group)
        if handle.is_cancel_requested:
            self.stopped += 1
            handle.canceled()
            return result
        if attempt.exception:
            result.success, result.error = False, attempt.exception
            handle.abort()
            return result
        self.width = attempt.object_width if attempt.object_width is not None else 0.0
        self.holding = attempt.object_width is not None and attempt.object_width > 0.0
        # libfranka: the grasp holds when the fingers stopped within [width - inner, width + outer]
        result.success = goal.width - goal.epsilon.inner <= self.width <= goal.width + goal.epsilon.outer
        feedback = Grasp.Feedback()
        feedback.current_width = float(self.width)
        handle.publish_feedback(feedback)
        if result.success:
            handle.succeed()
        else:
            handle.abort()
        if attempt.slip:
            self.width, self.holding = 0.0, False
        return result

    async def _move(self, handle: Any) -> Any:
        goal = handle.request
        self.commands += 1
        self.moves.append((goal.width, goal.speed))
        await _sleep(self, self.delay_s, self._group)
        result = Move.Result()
        if handle.is_cancel_requested:
            self.stopped += 1
            handle.canceled()
            return result
        scripted = self.move_errors.popleft() if self.move_errors else ""
        if not 0.0 <= goal.width <= self.MAX_WIDTH or self.fail_next_move or scripted or self.stuck:
            result.success = False
            result.error = (
                self.fail_next_move or scripted or self.stuck or "libfranka gripper: command failed: width out of range"
            )
            self.fail_next_move = ""
            handle.abort()
            return result
        self.width = goal.width
        self.holding = False
        result.success = True
        handle.succeed()
        return result

    async def _homing(self, handle: Any) -> Any:
        self.commands += 1
        await _sleep(self, self.delay_s, self._group)
        self.homed += 1
        self.width = self.MAX_WIDTH
        self.holding = False
        result = Homing.Result()
        result.success = True
        handle.succeed()
        return result

    def destroy_node(self) -> None:
        for server in self._servers:
            server.destroy()
        self.destroy_timer(self._timer)
        super().destroy_node()


# ----------------------------------------------------------------------------- joint_trajectory_controller
class FakeTrajectoryController(Node, _Scripted):
    """`outcome` script items: "succeed", "path_violation", "hold" (until canceled)."""

    def __init__(
        self,
        controller: str = "fr3_arm_controller",
        joints: tuple[str, ...] = FR3_JOINTS,
        time_scale: float = 0.01,
        **kwargs: Any,
    ) -> None:
        Node.__init__(self, controller, **kwargs)
        _Scripted.__init__(self)
        self.joints = joints
        self.active = True
        self.time_scale = time_scale
        self.executed: list[tuple[tuple[str, ...], tuple[float, ...]]] = []  # joint names, final positions
        self.rejected = 0
        self.canceled = 0
        self.started = 0  # goals that began to move the arm
        self._group = ReentrantCallbackGroup()
        self._server = ActionServer(
            self,
            FollowJointTrajectory,
            "~/follow_joint_trajectory",
            execute_callback=self._execute,
            goal_callback=self._accept,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=self._group,
        )

    def _accept(self, goal: Any) -> GoalResponse:
        trajectory = goal.trajectory
        times = [p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in trajectory.points]
        valid = (
            self.active
            and set(trajectory.joint_names) == set(self.joints)
            and bool(trajectory.points)
            and all(len(p.positions) == len(trajectory.joint_names) for p in trajectory.points)
            and all(b > a for a, b in itertools.pairwise(times))
        )
        if not valid:
            self.rejected += 1
        return GoalResponse.ACCEPT if valid else GoalResponse.REJECT

    async def _execute(self, handle: Any) -> Any:
        trajectory = handle.request.trajectory
        self.started += 1
        outcome = self._next("succeed")
        last = trajectory.points[-1].time_from_start
        duration = (last.sec + last.nanosec * 1e-9) * self.time_scale
        result = FollowJointTrajectory.Result()
        waited = 0.0
        while outcome == "hold" or waited < duration:
            if handle.is_cancel_requested:
                self.canceled += 1
                handle.canceled()
                return result
            await _sleep(self, 0.01, self._group)
            waited += 0.01
        if outcome == "path_violation":
            result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
            result.error_string = "Aborted due to path tolerance violation"
            handle.abort()
            return result
        self.executed.append((tuple(trajectory.joint_names), tuple(trajectory.points[-1].positions)))
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        result.error_string = "Goal successfully reached!"
        handle.succeed()
        return result

    def destroy_node(self) -> None:
        self._server.destroy()
        super().destroy_node()
