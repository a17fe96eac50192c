"""Spot's arm and gripper: grasps through the Manipulation API (a ray in the world), putting things down, handle
pulls by constrained manipulation, and the clean-up that folds the arm in after a failure or a cancel. What the
gripper holds is always read back from the robot, never assumed."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from bosdyn.api import geometry_pb2, manipulation_api_pb2
from bosdyn.api.arm_command_pb2 import ArmCartesianCommand, NamedArmPositionsCommand
from bosdyn.api.basic_command_pb2 import ConstrainedManipulationCommand
from bosdyn.api.gripper_command_pb2 import ClawGripperCommand
from bosdyn.api.manipulation_api_pb2 import ManipulationFeedbackState
from bosdyn.client import frame_helpers, math_helpers
from bosdyn.client.manipulation_api_client import ManipulationApiClient
from bosdyn.client.robot_command import RobotCommandBuilder
from bosdyn.client.world_object import WorldObjectClient

from sayplan_core.outcomes import SkillCode
from sayplan_spot import failures as sf
from sayplan_spot.programs import Articulate, Grasp, Handle, Place, WorldObjectRef
from sayplan_spot.robot.commands import Limits, Reading, Report, canceled, read, wait
from sayplan_spot.robot.errors import SpotError, enum_name, fault_from
from sayplan_spot.robot.session import Session

#: Hand pointing straight down (pitch +90 deg about y) when putting things down.
HAND_DOWN = math_helpers.Quat(w=math.cos(math.pi / 4), x=0.0, y=math.sin(math.pi / 4), z=0.0)
#: The grasp ray starts this far back (horizontally) and up from the target, and ends this far past it.
RAY_BACK_M, RAY_UP_M, RAY_PAST = 0.6, 0.5, 0.3
HANDLE_SPEED = 0.25  # m/s along the handle's path while pulling or pushing it
HANDLE_FORCE_N, HANDLE_TORQUE_NM = 40.0, 5.0


class Manipulation:
    def __init__(self, session: Session) -> None:
        self.session = session

    def _ray(self, target_seed: tuple[float, float, float]) -> tuple[Any, Any]:
        """Start and end of a grasp ray (vision frame) through a map point, from above and in front of it."""
        _, vision_tform_seed, seed_tform_body = self.session.frames()
        dx, dy = target_seed[0] - seed_tform_body.x, target_seed[1] - seed_tform_body.y
        norm = math.hypot(dx, dy) or 1.0
        start = (
            target_seed[0] - dx / norm * RAY_BACK_M,
            target_seed[1] - dy / norm * RAY_BACK_M,
            target_seed[2] + RAY_UP_M,
        )
        end = tuple(t + (t - s) * RAY_PAST for t, s in zip(target_seed, start, strict=True))
        return vision_tform_seed.transform_point(*start), vision_tform_seed.transform_point(*end)

    def _world_object(self, ref: WorldObjectRef) -> tuple[float, float, float] | None:
        """A live world object's position in the vision frame, or None when the robot does not see it.

        A world object's `name` is not a frame: its frames are named in its properties (world_object.proto). An
        AprilTag is matched by `apriltag_properties.tag_id` and located at `frame_name_fiducial_filtered` (the
        robot's filtered estimate), else at the raw `frame_name_fiducial`; other objects are matched by name and
        located at the first frame their properties name that the transforms snapshot holds."""
        client = self.session.client(WorldObjectClient)
        objects = client.list_world_objects(timeout=self.session.config.rpc_timeout_s).world_objects
        if ref.fiducial is not None:
            tagged = [o for o in objects if o.HasField("apriltag_properties")]
            found = [o for o in tagged if o.apriltag_properties.tag_id == ref.fiducial]
        else:
            found = [o for o in objects if o.name == ref.name]
        found.sort(key=lambda o: (o.acquisition_time.seconds, o.acquisition_time.nanos), reverse=True)
        for obj in found:  # the latest detection first
            for frame in object_frames(obj):
                tform = frame_helpers.get_a_tform_b(obj.transforms_snapshot, frame_helpers.VISION_FRAME_NAME, frame)
                if tform is not None:
                    return (tform.x, tform.y, tform.z)
        return None

    def _pick(
        self,
        node: str,
        start: Any,
        end: Any,
        stop: threading.Event,
        limits: Limits,
        report: Report,
        let_go: bool = False,
    ) -> None:
        """Manipulation API pick along a ray (vision frame); returns once the gripper holds it. A pick that is
        canceled or runs out of time stops the robot and, once it reports it stands still, stows the arm
        (`let_go`: opens the gripper first, for a handle), so the robot is not left with its arm out; a robot
        that does not report still is a robot fault, and nothing more is sent to it."""
        request = manipulation_api_pb2.ManipulationApiRequest(
            pick_object_ray_in_world=manipulation_api_pb2.PickObjectRayInWorld(
                ray_start_rt_frame=geometry_pb2.Vec3(x=start[0], y=start[1], z=start[2]),
                ray_end_rt_frame=geometry_pb2.Vec3(x=end[0], y=end[1], z=end[2]),
                frame_name=frame_helpers.VISION_FRAME_NAME,
                walk_gaze_mode=manipulation_api_pb2.PICK_AUTO_WALK_AND_GAZE,
            )
        )
        client = self.session.client(ManipulationApiClient)
        doing = f"grasping {node}"
        rpc = self.session.config.rpc_timeout_s
        command_id = client.manipulation_api_command(request, timeout=rpc).manipulation_cmd_id
        deadline = time.monotonic() + limits.arm_timeout_s
        while True:
            feedback = client.manipulation_api_feedback_command(
                manipulation_api_pb2.ManipulationApiFeedbackRequest(manipulation_cmd_id=command_id), timeout=rpc
            )
            state = enum_name(ManipulationFeedbackState, feedback.current_state)
            code = sf.verdict(sf.MANIPULATION_FEEDBACK, state)
            if code is SkillCode.NONE:
                break
            if code is not None:
                if stop.is_set():  # our stop ended the grasp: seen still before the clean-up
                    self._confirm_stop(stop, limits, SpotError(SkillCode.CANCELED, f"{doing}: canceled"))
                if let_go:
                    self._let_go(node, limits)  # a robot fault instead, when the claw stays on the handle
                else:
                    self._stow_quietly(limits)
                canceled(stop, doing)
                nothing = state == "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP"
                raise SpotError(code, f"{doing}: the Manipulation API reports {sf.explain(state)}", missing=nothing)
            report(f"{doing}: {state.removeprefix('MANIP_STATE_').lower().replace('_', ' ')}")
            try:
                wait(stop, limits, deadline, doing)
            except SpotError as exc:
                self._confirm_stop(stop, limits, exc)
                if let_go:
                    self._let_go(node, limits)  # a robot fault instead, when the claw stays on the handle
                else:
                    self._stow_quietly(limits)
                raise
        if not self.session.holding():
            self._stow_quietly(limits)
            raise SpotError(SkillCode.GRASP_FAILED, f"{doing}: the grasp ended but the gripper holds nothing")

    def grasp(self, prim: Grasp, stop: threading.Event, limits: Limits, report: Report) -> None:
        seen = self._world_object(prim.world_object) if prim.world_object is not None else None
        if seen is not None:
            _, vision_tform_seed, _ = self.session.frames()
            target = vision_tform_seed.inverse().transform_point(*seen)
        elif prim.world_object is not None and prim.point is None:
            # not in view is not "looked and it is not there": nothing is forgotten (missing stays False)
            raise SpotError(
                SkillCode.NOT_FOUND,
                f"the robot does not see {prim.world_object.describe()} ({prim.node}) and the scene graph gives "
                "no position to grasp at",
            )
        elif prim.point is None:
            raise SpotError(SkillCode.INVALID_TARGET, f"{prim.node} has no position")
        else:
            target = prim.point
        what = prim.node
        if prim.world_object is not None and seen is None:  # said in every feedback and failure of this grasp
            unseen = prim.world_object.describe()
            what = f"{prim.node} at its scene-graph position (the robot does not see {unseen} now)"
        start, end = self._ray(target)
        self._pick(what, start, end, stop, limits, report)
        # carry: the arm folds in with the object so the robot can walk
        try:
            self._carry(prim.node, limits, stop)
        except SpotError as exc:
            self._tidy_arm(stop, limits, exc)
            raise

    def place(self, prim: Place, stop: threading.Event, limits: Limits, report: Report) -> None:
        """Hand to the place, open, stow. A move that stalls (the arm stopped part way), fails or is canceled
        leaves the arm out: once the robot has been stopped it goes back to carry when the gripper still holds
        the object, else it stows (`_tidy_arm`)."""
        _, vision_tform_seed, _ = self.session.frames()
        x, y, z = vision_tform_seed.transform_point(*prim.point)
        doing = f"putting down at {prim.node}"
        report(doing)
        move = RobotCommandBuilder.arm_pose_command(x, y, z, HAND_DOWN.w, HAND_DOWN.x, HAND_DOWN.y, HAND_DOWN.z,
                                                    frame_helpers.VISION_FRAME_NAME, seconds=2.0)  # fmt: skip
        try:
            self.session.command(move, doing, limits, stop, limits.arm_timeout_s, _arm_cartesian_done)
            self.session.command(RobotCommandBuilder.claw_gripper_open_command(), f"{doing}: opening the gripper",
                                 limits, stop, limits.arm_timeout_s, _gripper_done)  # fmt: skip
            if self.read_gripper(f"{doing}: after opening the gripper"):
                # the claw did not open: carry (which keeps it closed), never the stow (which closes it)
                raise SpotError(
                    SkillCode.ROBOT_FAULT,
                    f"{doing}: the gripper will not open: it still holds what it carried after opening",
                )
            self._stow(limits, stop)
        except SpotError as exc:
            self._tidy_arm(stop, limits, exc)
            raise

    def _carry(self, node: str, limits: Limits, stop: threading.Event) -> None:
        self.session.command(RobotCommandBuilder.arm_carry_command(), f"carrying {node}", limits, stop,
                             limits.arm_timeout_s, _arm_named_done)  # fmt: skip

    def _tidy_arm(self, stop: threading.Event, limits: Limits, exc: SpotError) -> None:
        """After an arm command failed or was canceled: wait for the stop (a canceled or timed-out command is
        stopped first and seen still, so the stop cannot land after the clean-up and undo it), then fold the arm
        in: the carry pose when the gripper still holds something, else stowed. The clean-up itself cannot be
        canceled."""
        if stop.is_set() or exc.code in (SkillCode.CANCELED, SkillCode.TIMEOUT):
            self._confirm_stop(stop, limits, exc)
        try:
            holding = self.session.holding()
        except Exception as read:
            self.session.warn(f"reading the gripper failed: {fault_from(read, 'reading the gripper').message}")
            holding = True  # carry is safe either way: it does not open the gripper
        if not holding:
            self._stow_quietly(limits)
            return
        try:
            self._carry("what it holds", limits, threading.Event())
        except Exception as failed:
            self.session.warn(f"folding the arm to carry failed: {fault_from(failed, 'carrying').message}")

    def articulate(self, prim: Articulate, stop: threading.Event, limits: Limits, report: Report) -> None:
        handle = prim.handle
        verb = "opening" if prim.opening else "closing"
        start, end = self._ray(handle.position)
        self._pick(f"the handle of {prim.node}", start, end, stop, limits, report, let_go=True)
        odom_tform_seed, _, _ = self.session.frames()
        sign = 1.0 if prim.opening else -1.0
        direction = odom_tform_seed.rot.transform_point(sign * handle.pull[0], sign * handle.pull[1], 0.0)
        command = _handle_command(handle, direction)
        request = command.full_body_command.constrained_manipulation_request
        request.end_time.CopyFrom(
            self.session.robot.time_sync.robot_timestamp_from_local_secs(time.time() + limits.handle_pull_s + 1.0)
        )
        doing = f"{verb} {prim.node}"
        report(doing)
        ends = time.monotonic() + limits.handle_pull_s
        failed: SpotError | None = None
        try:
            self.session.command(command, doing, limits, stop, limits.handle_pull_s + limits.arm_timeout_s,
                                 _pull_done(ends))  # fmt: skip
        except SpotError as exc:
            failed = exc
        if stop.is_set():
            self._confirm_stop(stop, limits, failed or SpotError(SkillCode.CANCELED, f"{doing}: canceled"))
        if failed is None and not self.read_gripper(f"after {verb} {prim.node}"):
            # the pull ran its time but the claw no longer holds the handle: where the door is, is not known
            failed = SpotError(SkillCode.SKILL_FAILED, f"{doing}: the gripper lost the handle during the pull")
        self._let_go(f"the handle of {prim.node}", limits)  # raises a robot fault when the claw stays on it
        if failed is not None:
            raise failed

    def _confirm_stop(self, stop: threading.Event, limits: Limits, exc: SpotError) -> None:
        """Before the clean-up after a cancel or a deadline: the robot stopped and reports it stands still
        (Session.stopped), else a robot fault (which latches, even under a cancel), and no clean-up is sent to a
        robot that may still be moving."""
        problem = self.session.stopped(stop, limits.stop_timeout_s)
        if problem:
            raise SpotError(SkillCode.ROBOT_FAULT, f"{exc.message}, but {problem}") from None

    def read_gripper(self, when: str) -> bool:
        """Read the gripper back (robot state is_gripper_holding_item); a gripper that cannot be read is a robot
        fault: nothing may move while what it holds is unknown."""
        try:
            return self.session.holding()
        except Exception as exc:
            raise SpotError(
                SkillCode.ROBOT_FAULT,
                f"{when}: the gripper could not be read back ({fault_from(exc, 'reading').message})",
            ) from None

    def _let_go(self, what: str, limits: Limits) -> None:
        """Open the claw on a handle, read the gripper back, and only when it is empty stow the arm (the stow
        closes the claw). A claw that still holds the handle is a robot fault, and the arm is left where it is:
        stowing or walking off would pull on the door with the claw closed on its handle."""
        try:
            self.session.command(RobotCommandBuilder.claw_gripper_open_command(), f"letting go of {what}", limits,
                                 threading.Event(), limits.arm_timeout_s, _gripper_done)  # fmt: skip
        except Exception as exc:
            self.session.warn(f"opening the gripper failed: {fault_from(exc, 'opening the gripper').message}")
        if self.read_gripper(f"letting go of {what}"):
            raise SpotError(
                SkillCode.ROBOT_FAULT,
                f"the gripper will not let go of {what}: it still holds it after opening; the arm was left where "
                "it is (not stowed, the claw not closed on it): free the gripper by hand",
            )
        self._stow_quietly(limits)

    def _stow(self, limits: Limits, stop: threading.Event) -> None:
        stow = RobotCommandBuilder.arm_stow_command(build_on_command=RobotCommandBuilder.claw_gripper_close_command())
        self.session.command(stow, "stowing the arm", limits, stop, limits.arm_timeout_s, _arm_named_done)

    def _stow_quietly(self, limits: Limits) -> None:
        try:
            self._stow(limits, threading.Event())
        except Exception as exc:
            self.session.warn(f"stowing the arm failed: {exc}")


def object_frames(obj: Any) -> list[str]:
    """The frames a world object's properties name for it (world_object.proto), best first: an AprilTag's
    filtered then raw fiducial frame; a dock's frame; a bounding box's frame; the image-coordinates frame; the
    drawables' frames."""
    frames: list[str] = []
    if obj.HasField("apriltag_properties"):
        tag = obj.apriltag_properties
        frames += [tag.frame_name_fiducial_filtered, tag.frame_name_fiducial]
    if obj.HasField("dock_properties"):
        frames.append(obj.dock_properties.frame_name_dock)
    if obj.HasField("bounding_box_properties"):
        frames.append(obj.bounding_box_properties.frame)
    if obj.HasField("image_properties"):
        frames.append(obj.image_properties.frame_name_image_coordinates)
    frames += [d.frame_name_drawable for d in obj.drawable_properties]
    return [f for f in frames if f]


def _arm_named_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.arm_command_feedback.named_arm_position_feedback.status
    return read(sf.ARM_STOW_FEEDBACK, NamedArmPositionsCommand.Feedback.Status, status)


def _arm_cartesian_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.arm_command_feedback.arm_cartesian_feedback.status
    return read(sf.ARM_CARTESIAN_FEEDBACK, ArmCartesianCommand.Feedback.Status, status)


def _gripper_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.gripper_command_feedback.claw_gripper_feedback.status
    return read(sf.GRIPPER_FEEDBACK, ClawGripperCommand.Feedback.Status, status)


def _pull_done(ends: float) -> Callable[[Any], Reading]:
    """A position-controlled pull has no 'done' status: it has worked when it ran until `ends` without the arm
    getting stuck or the grasp slipping."""

    def pulled(fb: Any) -> Reading:
        status = fb.full_body_feedback.constrained_manipulation_feedback.status
        code, name = read(sf.CONSTRAINED_MANIPULATION_FEEDBACK, ConstrainedManipulationCommand.Feedback.Status, status)
        if code is None and time.monotonic() >= ends:
            return SkillCode.NONE, name
        return code, name

    return pulled


def _handle_command(handle: Handle, direction: tuple[float, float, float]) -> Any:
    """Constrained manipulation for a hinge (cabinet door whose grasp may slip) or a drawer, position-controlled
    over the handle's travel, starting with a force along `direction` (odom frame)."""
    request = ConstrainedManipulationCommand.Request
    wrench = geometry_pb2.Wrench(force=geometry_pb2.Vec3(x=direction[0], y=direction[1], z=direction[2]))
    if handle.kind == "drawer":
        task, travel = request.TASK_TYPE_R3_LINEAR_FORCE, {"target_linear_position": handle.opening}
    else:
        task, travel = request.TASK_TYPE_R3_CIRCLE_FORCE, {"target_angle": handle.opening}
    return RobotCommandBuilder.constrained_manipulation_command(
        task_type=task,
        init_wrench_direction_in_frame_name=wrench,
        force_limit=HANDLE_FORCE_N,
        torque_limit=HANDLE_TORQUE_NM,
        frame_name=frame_helpers.ODOM_FRAME_NAME,
        tangential_speed=HANDLE_SPEED,
        control_mode=request.CONTROL_MODE_POSITION,
        **travel,
    )
