"""Moving Spot's body: GraphNav navigate_to a waypoint, and body-trajectory walks to a map pose. Both are sent as
short commands renewed while the robot moves (one loop, `_renewed`), so a node that dies or loses the network
leaves the robot standing within about a second instead of walking on."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from bosdyn.api.basic_command_pb2 import SE2TrajectoryCommand
from bosdyn.api.graph_nav.graph_nav_pb2 import NavigationFeedbackResponse
from bosdyn.client import frame_helpers, math_helpers
from bosdyn.client.graph_nav import GraphNavClient
from bosdyn.client.robot_command import RobotCommandBuilder, RobotCommandClient

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.navigation import TargetError
from sayplan_spot import failures as sf
from sayplan_spot.programs import Approach, Navigate, approach_pose, resolve_waypoint
from sayplan_spot.robot.commands import Limits, Reading, Report, canceled, finished, read, wait
from sayplan_spot.robot.errors import SpotError, enum_name, fault_from
from sayplan_spot.robot.session import Session

#: How long each GraphNav navigate_to request runs; it is re-issued (same command id) at half that while the
#: robot walks (spot-sdk python/examples/graph_nav_command_line: 1 s commands, re-issued twice a second).
NAV_COMMAND_S = 1.0
#: How long each body-trajectory command of a walk runs (its end_time); the walk re-sends the same goal with a
#: fresh end time at half that, so a node that dies leaves the robot standing within about this long
#: (basic_command.proto SE2TrajectoryCommand.Request.end_time: "used to prevent runaway commands").
WALK_COMMAND_S = 1.0

#: Sends one command of a renewed motion: (the previous command's id or None, how long it runs) -> its id.
Send = Callable[[int | None, float], int]
#: Reads one feedback of the command with this id: True when the motion is done (SpotError when it failed).
Progress = Callable[[int], bool]


class Navigation:
    def __init__(self, session: Session) -> None:
        self.session = session

    def navigate(self, prim: Navigate, stop: threading.Event, limits: Limits, report: Report) -> None:
        """GraphNav navigate_to as Boston Dynamics' graph_nav_command_line example drives it: each request runs
        for a short time (NAV_COMMAND_S) and is re-issued with the same command id while the robot follows the
        route, so the robot stops by itself within about a second if this client dies or loses the network."""
        waypoint = self.session.waypoint_id(prim.waypoint)
        client = self.session.client(GraphNavClient)
        rpc = self.session.config.rpc_timeout_s
        doing = f"navigating to waypoint '{prim.waypoint}'"

        def send(command_id: int | None, duration: float) -> int:
            return int(client.navigate_to(waypoint, duration, command_id=command_id, timeout=rpc))

        def progress(command_id: int) -> bool:
            feedback = client.navigation_feedback(command_id, timeout=rpc)
            status = enum_name(NavigationFeedbackResponse.Status, feedback.status)
            code = sf.verdict(sf.NAVIGATION_FEEDBACK, status)
            if code is SkillCode.NONE:
                return True
            if code is not None:
                canceled(stop, doing)
                raise SpotError(code, f"{doing}: GraphNav reports {sf.explain(status)}")
            report(f"{doing}: {feedback.remaining_route_length:.1f} m to go")
            return False

        self._renewed(doing, NAV_COMMAND_S, send, progress, stop, limits)

    def approach(self, prim: Approach, stop: threading.Event, limits: Limits, report: Report) -> None:
        """Walk to stand `standoff` in front of a map point, facing it, from where the robot is now."""
        here = self.session.frames()[2]
        pose = approach_pose((here.x, here.y), prim.point, prim.standoff)
        self.walk(prim.node, pose, stop, limits, report)

    def walk(
        self, node: str, pose: tuple[float, float, float], stop: threading.Event, limits: Limits, report: Report
    ) -> None:
        """A body trajectory to a map pose, sent as commands that each end WALK_COMMAND_S after they are sent and
        are re-sent (same goal, fresh end time) at half that while the robot walks, as GraphNav legs are: the
        robot stops by itself within about a second if this node dies or the network drops, instead of walking on
        for the whole walk. Each re-send replaces the previous command, so only the latest one's feedback is
        followed."""
        odom_tform_seed, _, seed_tform_body = self.session.frames()
        distance = math.hypot(pose[0] - seed_tform_body.x, pose[1] - seed_tform_body.y)
        if distance > limits.max_walk_m:
            raise SpotError(
                SkillCode.UNREACHABLE,
                f"{node} is {distance:.1f} m away and has no GraphNav waypoint in the site file "
                f"(walks without one are limited to max_walk_m = {limits.max_walk_m:g} m)",
            )
        goal = odom_tform_seed * math_helpers.SE3Pose(pose[0], pose[1], 0.0, math_helpers.Quat.from_yaw(pose[2]))
        doing = f"walking to {node}"
        report(doing)
        client = self.session.client(RobotCommandClient)
        rpc = self.session.config.rpc_timeout_s

        def send(_previous: int | None, duration: float) -> int:
            command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
                goal.x, goal.y, goal.rot.to_yaw(), frame_helpers.ODOM_FRAME_NAME
            )
            return int(client.robot_command(command, end_time_secs=time.time() + duration, timeout=rpc))

        def progress(command_id: int) -> bool:
            return finished(client.robot_command_feedback(command_id, timeout=rpc).feedback, _walk_done, stop, doing)

        self._renewed(doing, WALK_COMMAND_S, send, progress, stop, limits)

    def _renewed(
        self, doing: str, command_s: float, send: Send, progress: Progress, stop: threading.Event, limits: Limits
    ) -> None:
        """Run a motion as short commands (each `command_s`, at least three feedback periods) renewed at half
        their length until `progress` says done, within navigate_timeout_s. A canceled or timed-out motion is
        stopped and seen still (`_stop_walking`)."""
        duration = max(command_s, 3.0 * limits.feedback_period_s)
        deadline = time.monotonic() + limits.navigate_timeout_s
        command_id: int | None = None
        issued = -math.inf
        try:
            while True:
                if time.monotonic() - issued >= duration / 2 and not stop.is_set():
                    try:
                        command_id = send(command_id, duration)
                    except Exception as exc:
                        raise fault_from(exc, doing) from None
                    issued = time.monotonic()
                if command_id is None:  # canceled before the first command went out
                    raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")
                if progress(command_id):
                    return
                wait(stop, limits, deadline, doing)
        except SpotError as exc:
            if exc.code in (SkillCode.CANCELED, SkillCode.TIMEOUT):
                self._stop_walking(stop, limits, exc)
            raise

    def _stop_walking(self, stop: threading.Event, limits: Limits, exc: SpotError) -> None:
        """A walk or navigation canceled or out of time: stop it (after the cancel's own stop, once more: the last
        command the robot gets, even if a re-send crossed the cancel's stop) and wait, at most `stop_timeout_s`,
        for the robot to report it stands still. A stop the robot did not accept, or after which it does not
        report still, leaves it possibly moving: a robot fault, which latches (even under a cancel)."""
        problem = self.session.stopped(stop, limits.stop_timeout_s)
        if problem:
            raise SpotError(SkillCode.ROBOT_FAULT, f"{exc.message}, but {problem}") from None


def _walk_done(fb: Any) -> Reading:
    traj = fb.synchronized_feedback.mobility_command_feedback.se2_trajectory_feedback
    blocked = read(sf.TRAJECTORY_GOAL, SE2TrajectoryCommand.Feedback.FinalGoalStatus, traj.final_goal_status)
    if blocked[0] is not None:
        return blocked
    return read(sf.TRAJECTORY_FEEDBACK, SE2TrajectoryCommand.Feedback.Status, traj.status)


def waypoint_nodes(entries: Mapping[str, str], waypoints: Mapping[str, str]) -> dict[str, str]:
    """GraphNav waypoint id -> the node bound to it (entries: node -> the site file's waypoint name)."""
    out: dict[str, str] = {}
    for node, name in sorted(entries.items()):
        try:
            out.setdefault(resolve_waypoint(name, waypoints), node)
        except TargetError:
            continue
    return out
