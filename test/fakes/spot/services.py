"""The fake Spot's gRPC services, built on bosdyn-api's own servicer stubs.

Request and response shapes follow the protos of boston-dynamics/spot-sdk (protos/bosdyn/api/): header.proto
(response headers carry the request header, robot-clock receive/send times and CODE_OK), auth.proto,
robot_id.proto, directory.proto, time_sync.proto (round trips -> clock skew), lease.proto (resource "body",
epoch + sequence, LeaseUseResult on every leased request), estop.proto, power.proto, robot_state.proto
(frame tree rooted at "body"), robot_command.proto / basic_command.proto / arm_command.proto /
gripper_command.proto (command ids and per-part feedback), manipulation_api.proto (pick_object_ray_in_world,
ManipulationFeedbackState), graph_nav/graph_nav.proto (NavigateTo, NavigationFeedback, GetLocalizationState,
DownloadGraph), world_object.proto and image.proto. What each service checks (lease, time sync, power,
frames) is what the SDK's clients and the protos' comments say the robot checks; the fake's answers are
written here, not taken from the SDK.
"""

from __future__ import annotations

import hashlib
import io
import math
import secrets
import time
from typing import Any

from bosdyn.api import (
    arm_command_pb2,
    auth_pb2,
    auth_service_pb2_grpc,
    basic_command_pb2,
    directory_pb2,
    directory_service_pb2_grpc,
    estop_pb2,
    estop_service_pb2_grpc,
    geometry_pb2,
    gripper_command_pb2,
    header_pb2,
    image_pb2,
    image_service_pb2_grpc,
    lease_pb2,
    lease_service_pb2_grpc,
    manipulation_api_pb2,
    manipulation_api_service_pb2_grpc,
    power_pb2,
    power_service_pb2_grpc,
    robot_command_pb2,
    robot_command_service_pb2_grpc,
    robot_id_pb2,
    robot_id_service_pb2_grpc,
    robot_state_pb2,
    robot_state_service_pb2_grpc,
    time_sync_pb2,
    time_sync_service_pb2_grpc,
    world_object_pb2,
    world_object_service_pb2_grpc,
)
from bosdyn.api.graph_nav import graph_nav_pb2, graph_nav_service_pb2_grpc, map_pb2, nav_pb2
from google.protobuf import timestamp_pb2

from .world import Command, FakeHandle, FakeWorld, Point, Se2

#: (service name, type, authority) as the directory lists them; auth and robot-id are the SDK's bootstraps.
DIRECTORY = [
    ("auth", "bosdyn.api.AuthService", "auth.spot.robot"),
    ("robot-id", "bosdyn.api.RobotIdService", "id.spot.robot"),
    ("directory", "bosdyn.api.DirectoryService", "api.spot.robot"),
    ("time-sync", "bosdyn.api.TimeSyncService", "api.spot.robot"),
    ("lease", "bosdyn.api.LeaseService", "api.spot.robot"),
    ("estop", "bosdyn.api.EstopService", "api.spot.robot"),
    ("power", "bosdyn.api.PowerService", "api.spot.robot"),
    ("robot-state", "bosdyn.api.RobotStateService", "api.spot.robot"),
    ("robot-command", "bosdyn.api.RobotCommandService", "api.spot.robot"),
    ("manipulation", "bosdyn.api.ManipulationApiService", "api.spot.robot"),
    ("graph-nav-service", "bosdyn.api.graph_nav.GraphNavService", "api.spot.robot"),
    ("world-objects", "bosdyn.api.WorldObjectService", "api.spot.robot"),
    ("image", "bosdyn.api.ImageService", "api.spot.robot"),
]
AUTHORITIES = sorted({a for _, _, a in DIRECTORY} | {"payload-registration.spot.robot"})
CAMERAS = ("hand_color_image", "frontleft_fisheye_image", "frontright_fisheye_image")
OPEN_ANGLE = -1.0  # claw gripper angles below this are "open" (the SDK's open command sends about -1.57)

RC = robot_command_pb2.RobotCommandResponse
CMD = basic_command_pb2.RobotCommandFeedbackStatus


def stamp(t: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(t * 1e9))
    return ts


def seconds(ts: timestamp_pb2.Timestamp) -> float:
    return float(ts.seconds) + ts.nanos * 1e-9


def se3(pose: Se2, z: float = 0.0) -> geometry_pb2.SE3Pose:
    return geometry_pb2.SE3Pose(
        position=geometry_pb2.Vec3(x=pose.x, y=pose.y, z=z),
        rotation=geometry_pb2.Quaternion(w=math.cos(pose.yaw / 2), x=0.0, y=0.0, z=math.sin(pose.yaw / 2)),
    )


def se2_from_se3(pose: geometry_pb2.SE3Pose) -> tuple[Se2, float]:
    q = pose.rotation
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return Se2(pose.position.x, pose.position.y, yaw), pose.position.z


class Base:
    """Shared by every servicer: the world, and the response header the SDK expects."""

    def __init__(self, world: FakeWorld) -> None:
        self.w = world

    def header(self, response: Any, request: Any, received: float, error: str = "", code: int = 0) -> None:
        h = response.header
        h.request_header.CopyFrom(request.header)
        h.request_received_timestamp.CopyFrom(stamp(received))
        h.response_timestamp.CopyFrom(stamp(self.w.robot_now()))
        h.error.code = code or header_pb2.CommonError.CODE_OK
        h.error.message = error

    def lease_result(self, lease: lease_pb2.Lease) -> lease_pb2.LeaseUseResult:
        status = self.w.lease_check(lease.resource, lease.epoch, list(lease.sequence))
        result = lease_pb2.LeaseUseResult(status=lease_pb2.LeaseUseResult.Status.Value(status))
        result.attempted_lease.CopyFrom(lease)
        result.latest_known_lease.CopyFrom(self.current_lease())
        result.owner.client_name = self.w.lease_owner
        return result

    def current_lease(self) -> lease_pb2.Lease:
        return lease_pb2.Lease(resource="body", epoch=self.w.lease_epoch, sequence=[self.w.lease_root])

    def time_problem(self, clock_identifier: str, end_time: timestamp_pb2.Timestamp | None) -> str:
        """'' when the request's time fields are right for this robot's clock, else the status suffix."""
        if clock_identifier != self.w.clock_id:
            return "NO_TIMESYNC"
        if end_time is not None:
            end = seconds(end_time)
            now = self.w.robot_now()
            if end <= now:
                return "EXPIRED"
            if end > now + 7200:
                return "TOO_DISTANT"
        return ""


def snapshot(w: FakeWorld) -> geometry_pb2.FrameTreeSnapshot:
    """The robot's frame tree, rooted at "body" as Spot's robot state reports it."""
    snap = geometry_pb2.FrameTreeSnapshot()
    edges = snap.child_to_parent_edge_map
    edges["body"].parent_frame_name = ""
    body_tform_odom = w.body.inverse() * w.seed_tform_odom
    body_tform_vision = w.body.inverse() * w.seed_tform_vision
    for name, pose in (("odom", body_tform_odom), ("vision", body_tform_vision), ("flat_body", Se2())):
        edges[name].parent_frame_name = "body"
        edges[name].parent_tform_child.CopyFrom(se3(pose))
    return snap


# ----------------------------------------------------------------------------- login, identity, directory, time
class Auth(Base, auth_service_pb2_grpc.AuthServiceServicer):
    def __init__(self, world: FakeWorld) -> None:
        super().__init__(world)
        self.token = secrets.token_hex(16)

    def GetAuthToken(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = auth_pb2.GetAuthTokenResponse()
        login = request.username == self.w.username and request.password == self.w.password
        if login or (request.token and request.token == self.token):
            response.status = auth_pb2.GetAuthTokenResponse.STATUS_OK
            response.token = self.token
        elif request.token:
            response.status = auth_pb2.GetAuthTokenResponse.STATUS_INVALID_TOKEN
        else:
            response.status = auth_pb2.GetAuthTokenResponse.STATUS_INVALID_LOGIN
        self.header(response, request, received)
        return response


class RobotId(Base, robot_id_service_pb2_grpc.RobotIdServiceServicer):
    def GetRobotId(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = robot_id_pb2.RobotIdResponse()
        rid = response.robot_id
        rid.serial_number, rid.species, rid.version, rid.nickname = "fake-spot-0001", "spot", "V3", "fakey"
        rid.software_release.version.major_version = 5
        rid.software_release.version.minor_version = 2
        self.header(response, request, received)
        return response


class Directory(Base, directory_service_pb2_grpc.DirectoryServiceServicer):
    def entry(self, name: str, kind: str, authority: str) -> directory_pb2.ServiceEntry:
        return directory_pb2.ServiceEntry(name=name, type=kind, authority=authority, user_token_required=True)

    def ListServiceEntries(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = directory_pb2.ListServiceEntriesResponse()
        response.service_entries.extend(self.entry(*row) for row in DIRECTORY)
        self.header(response, request, received)
        return response

    def GetServiceEntry(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = directory_pb2.GetServiceEntryResponse(
            status=directory_pb2.GetServiceEntryResponse.STATUS_NONEXISTENT_SERVICE
        )
        for row in DIRECTORY:
            if row[0] == request.service_name:
                response.status = directory_pb2.GetServiceEntryResponse.STATUS_OK
                response.service_entry.CopyFrom(self.entry(*row))
        self.header(response, request, received)
        return response


class TimeSync(Base, time_sync_service_pb2_grpc.TimeSyncServiceServicer):
    """Clock skew from the client's last round trip: ((rx - tx_client) + (tx - rx_client)) / 2."""

    def TimeSyncUpdate(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = time_sync_pb2.TimeSyncUpdateResponse(clock_identifier=self.w.clock_id)
        trip = request.previous_round_trip
        if request.clock_identifier == self.w.clock_id and trip.HasField("client_rx"):
            tx, rx = seconds(trip.client_tx), seconds(trip.client_rx)
            srx, stx = seconds(trip.server_rx), seconds(trip.server_tx)
            skew = ((srx - tx) + (stx - rx)) / 2
            rtt = (rx - tx) - (stx - srx)
            estimate = response.state.best_estimate
            estimate.clock_skew.FromNanoseconds(int(skew * 1e9))
            estimate.round_trip_time.FromNanoseconds(int(max(rtt, 0.0) * 1e9))
            response.previous_estimate.CopyFrom(estimate)
            response.state.status = time_sync_pb2.TimeSyncState.STATUS_OK
            response.state.measurement_time.CopyFrom(stamp(received))
        else:
            response.state.status = time_sync_pb2.TimeSyncState.STATUS_MORE_SAMPLES_NEEDED
        self.header(response, request, received)
        return response


# ----------------------------------------------------------------------------- lease, e-stop, power, state
class Lease(Base, lease_service_pb2_grpc.LeaseServiceServicer):
    def AcquireLease(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = lease_pb2.AcquireLeaseResponse()
        with self.w.lock:
            client = request.header.client_name
            if request.resource != "body":
                response.status = lease_pb2.AcquireLeaseResponse.STATUS_INVALID_RESOURCE
            elif self.w.lease_owner and self.w.lease_owner != client:
                response.status = lease_pb2.AcquireLeaseResponse.STATUS_RESOURCE_ALREADY_CLAIMED
                response.lease_owner.client_name = self.w.lease_owner
            else:
                self.w.lease_root += 1
                self.w.lease_owner = client
                response.status = lease_pb2.AcquireLeaseResponse.STATUS_OK
                response.lease.CopyFrom(self.current_lease())
                response.lease_owner.client_name = client
        self.header(response, request, received)
        return response

    def TakeLease(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = lease_pb2.TakeLeaseResponse()
        with self.w.lock:
            if request.resource != "body":
                response.status = lease_pb2.TakeLeaseResponse.STATUS_INVALID_RESOURCE
            else:
                self.w.stop_motion("lease")
                self.w.lease_root += 1
                self.w.lease_owner = request.header.client_name
                response.status = lease_pb2.TakeLeaseResponse.STATUS_OK
                response.lease.CopyFrom(self.current_lease())
                response.lease_owner.client_name = self.w.lease_owner
        self.header(response, request, received)
        return response

    def ReturnLease(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = lease_pb2.ReturnLeaseResponse()
        with self.w.lock:
            ok = self.w.lease_check(request.lease.resource, request.lease.epoch, list(request.lease.sequence))
            if ok == "STATUS_OK":
                self.w.lease_owner = ""
                response.status = lease_pb2.ReturnLeaseResponse.STATUS_OK
            else:
                response.status = lease_pb2.ReturnLeaseResponse.STATUS_NOT_ACTIVE_LEASE
        self.header(response, request, received)
        return response

    def RetainLease(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = lease_pb2.RetainLeaseResponse()
        with self.w.lock:
            response.lease_use_result.CopyFrom(self.lease_result(request.lease))
        self.header(response, request, received)
        return response

    def ListLeases(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = lease_pb2.ListLeasesResponse()
        with self.w.lock:
            resource = response.resources.add(resource="body")
            if self.w.lease_owner:
                resource.lease.CopyFrom(self.current_lease())
                resource.lease_owner.client_name = self.w.lease_owner
        self.header(response, request, received)
        return response


class Estop(Base, estop_service_pb2_grpc.EstopServiceServicer):
    def GetEstopSystemStatus(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = estop_pb2.GetEstopSystemStatusResponse()
        response.status.stop_level = estop_pb2.ESTOP_LEVEL_CUT if self.w.estopped else estop_pb2.ESTOP_LEVEL_NONE
        response.status.stop_level_details = "hardware e-stop pressed" if self.w.estopped else ""
        self.header(response, request, received)
        return response


class Power(Base, power_service_pb2_grpc.PowerServiceServicer):
    def PowerCommand(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = power_pb2.PowerCommandResponse()
        with self.w.lock:
            result = self.lease_result(request.lease)
            response.lease_use_result.CopyFrom(result)
            if result.status == lease_pb2.LeaseUseResult.STATUS_OK:
                if request.request in (
                    power_pb2.PowerCommandRequest.REQUEST_ON_MOTORS,
                    power_pb2.PowerCommandRequest.REQUEST_ON,
                ):
                    if self.w.estopped:
                        response.status = power_pb2.STATUS_ESTOPPED
                    elif self.w.power_fault:
                        response.status = power_pb2.PowerCommandStatus.Value(self.w.power_fault)
                    else:
                        response.status = power_pb2.STATUS_IN_PROGRESS
                        self.w.moved("power_on")
                        response.power_command_id = self.w.new_id()
                        self.w.power_commands[response.power_command_id] = ("on", time.time())
                elif request.request in (
                    power_pb2.PowerCommandRequest.REQUEST_OFF_MOTORS,
                    power_pb2.PowerCommandRequest.REQUEST_OFF,
                ):
                    self.w.stop_motion("stop")
                    self.w.motors_on = self.w.standing = False
                    response.status = power_pb2.STATUS_SUCCESS
                else:
                    response.status = power_pb2.STATUS_INTERNAL_ERROR
        self.header(response, request, received)
        return response

    def PowerCommandFeedback(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = power_pb2.PowerCommandFeedbackResponse(status=power_pb2.STATUS_UNKNOWN)
        with self.w.lock:
            command = self.w.power_commands.get(request.power_command_id)
            if command is not None:
                if self.w.estopped:
                    response.status = power_pb2.STATUS_ESTOPPED
                elif time.time() - command[1] >= self.w.action_s:
                    self.w.motors_on = True
                    response.status = power_pb2.STATUS_SUCCESS
                else:
                    response.status = power_pb2.STATUS_IN_PROGRESS
        self.header(response, request, received)
        return response


class RobotState(Base, robot_state_service_pb2_grpc.RobotStateServiceServicer):
    def GetRobotState(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = robot_state_pb2.RobotStateResponse()
        with self.w.lock:
            self.w.advance()
            state = response.robot_state
            power = robot_state_pb2.PowerState
            state.power_state.motor_power_state = power.STATE_ON if self.w.motors_on else power.STATE_OFF
            state.kinematic_state.transforms_snapshot.CopyFrom(snapshot(self.w))
            state.kinematic_state.acquisition_timestamp.CopyFrom(stamp(received))
            motion = self.w.motion
            if motion is not None and motion.length > 1e-9:  # robot_state.proto KinematicState
                vx = (motion.goal.x - motion.start.x) / motion.length * motion.speed
                vy = (motion.goal.y - motion.start.y) / motion.length * motion.speed
                ox, oy = self.w.seed_tform_odom.inverse().vector((vx, vy))
                linear = state.kinematic_state.velocity_of_body_in_odom.linear
                linear.x, linear.y = ox, oy
            state.manipulator_state.is_gripper_holding_item = self.w.holding_item()
            state.manipulator_state.gripper_open_percentage = 100.0 if self.w.gripper_open else 0.0
            stop = robot_state_pb2.EStopState
            state.estop_states.add(
                name="hardware_estop", type=stop.TYPE_HARDWARE,
                state=stop.STATE_ESTOPPED if self.w.estopped else stop.STATE_NOT_ESTOPPED,
            )  # fmt: skip
            if self.w.behavior_fault:
                fault = robot_state_pb2.BehaviorFault
                state.behavior_fault_state.faults.add(
                    behavior_fault_id=17,
                    cause=fault.Cause.Value(self.w.behavior_fault_cause),
                    status=fault.STATUS_CLEARABLE,
                )
        self.header(response, request, received)
        return response


# ----------------------------------------------------------------------------- robot commands
class RobotCommand(Base, robot_command_service_pb2_grpc.RobotCommandServiceServicer):
    """Commands by part (full body, mobility, arm, gripper); a newer command overrides the parts it shares."""

    def RobotCommand(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = robot_command_pb2.RobotCommandResponse()
        with self.w.lock:
            self.w.advance()
            result = self.lease_result(request.lease)
            response.lease_use_result.CopyFrom(result)
            if result.status == lease_pb2.LeaseUseResult.STATUS_OK:
                status, message = self.issue(request)
                response.status, response.message = status, message
                if status == RC.STATUS_OK:
                    response.robot_command_id = self.last_id
        self.header(response, request, received)
        return response

    def issue(self, request: Any) -> tuple[int, str]:
        w = self.w
        problem = self.time_problem(request.clock_identifier, None)
        if problem:
            return RC.Status.Value(f"STATUS_{problem}"), "clock identifier unknown: time-sync first"
        if w.estopped:
            # estop.proto ESTOP_LEVEL_CUT: "Immediately cut power to the actuators"; robot_command.proto
            # RobotCommandResponse STATUS_NOT_POWERED_ON: "The robot must be powered on to accept a command". The
            # fake refuses a stop too while the e-stop is pressed (a robot powered off otherwise still takes one)
            return RC.STATUS_NOT_POWERED_ON, "the robot is e-stopped: motor power is cut"
        command = request.command
        if command.HasField("full_body_command"):
            which = command.full_body_command.WhichOneof("command")
            if which == "stop_request":
                w.stop_commanded()
                w.abort_grasps()
                w.stop_count += 1
                return self.record({"full"}, kind="stop")
            if which == "safe_power_off_request":
                w.stop_motion("stop")
                w.standing = w.motors_on = False
                return self.record({"full"}, kind="safe_power_off")
            if which != "constrained_manipulation_request":
                return RC.STATUS_UNSUPPORTED, f"the fake does not do {which}"
        if not w.motors_on:
            return RC.STATUS_NOT_POWERED_ON, "motors are off"
        if w.behavior_fault:
            return RC.STATUS_BEHAVIOR_FAULT, w.behavior_fault
        if command.HasField("full_body_command"):
            return self.constrained(command.full_body_command.constrained_manipulation_request)
        synchro = command.synchronized_command
        parts: set[str] = set()
        data: dict[str, object] = {}
        if synchro.HasField("mobility_command"):
            status, message = self.mobility(synchro.mobility_command, data)
            if status != RC.STATUS_OK:
                return status, message
            parts.add("mobility")
        if synchro.HasField("arm_command"):
            status, message = self.arm(synchro.arm_command, data)
            if status != RC.STATUS_OK:
                return status, message
            parts.add("arm")
        if synchro.HasField("gripper_command"):
            self.gripper(synchro.gripper_command, data)
            parts.add("gripper")
        if not parts:
            return RC.STATUS_INVALID_REQUEST, "empty command"
        return self.record(parts, **data)

    def record(self, parts: set[str], **data: object) -> tuple[int, str]:
        w = self.w
        for older in w.commands.values():
            if parts & older.parts or "full" in parts or "full" in older.parts:
                older.overridden = True
        self.last_id = w.new_id()
        w.commands[self.last_id] = Command(self.last_id, set(parts), time.time(), dict(data))
        return RC.STATUS_OK, ""

    def mobility(self, mobility: Any, data: dict[str, object]) -> tuple[int, str]:
        w = self.w
        which = mobility.WhichOneof("command")
        if which == "stand_request":
            w.standing = True
            w.moved("stand")
            data["kind"] = "stand"
        elif which == "sit_request":
            w.stop_motion("stop")
            w.standing = False
            data["kind"] = "sit"
        elif which == "stop_request":
            w.stop_commanded()
            w.stop_count += 1
            data["kind"] = "mobility_stop"
        elif which == "se2_trajectory_request":
            req = mobility.se2_trajectory_request
            problem = self.time_problem(w.clock_id, req.end_time)
            if problem:
                return RC.Status.Value(f"STATUS_{problem}"), f"trajectory end_time: {problem}"
            frame = w.frame_to_seed(req.se2_frame_name)
            if frame is None or req.se2_frame_name in ("body", "flat_body"):
                return RC.STATUS_UNKNOWN_FRAME, f"unknown frame '{req.se2_frame_name}'"
            if not req.trajectory.points:
                return RC.STATUS_INVALID_REQUEST, "empty trajectory"
            goal_pose = req.trajectory.points[-1].pose
            goal = frame * Se2(goal_pose.position.x, goal_pose.position.y, goal_pose.angle)
            w.standing = True
            w.moved("walk")
            motion = w.start_motion("trajectory", goal, seconds(req.end_time), 0.5 if w.walk_blocked else 1.0)
            data["kind"] = "trajectory"
            data["motion"] = motion.command_id
        else:
            return RC.STATUS_UNSUPPORTED, f"the fake does not do {which}"
        return RC.STATUS_OK, ""

    def arm(self, arm: Any, data: dict[str, object]) -> tuple[int, str]:
        w = self.w
        which = arm.WhichOneof("command")
        if which == "named_arm_position_command":
            named = arm_command_pb2.NamedArmPositionsCommand
            position = arm.named_arm_position_command.position
            w.arm = {named.POSITIONS_STOW: "stowed", named.POSITIONS_CARRY: "carry"}.get(position, "out")
            w.moved(f"arm_{w.arm}")
            data["arm"] = "named"
            data["arm_ok"] = True
        elif which == "arm_cartesian_command":
            req = arm.arm_cartesian_command
            frame = w.frame_to_seed(req.root_frame_name)
            if frame is None or not req.pose_trajectory_in_task.points:
                return RC.STATUS_UNKNOWN_FRAME, f"unknown frame '{req.root_frame_name}'"
            p = req.pose_trajectory_in_task.points[-1].pose.position
            target = frame.point((p.x, p.y, p.z))
            reach = math.hypot(target[0] - w.body.x, target[1] - w.body.y)
            data["arm"] = "cartesian"
            data["arm_ok"] = reach <= w.arm_reach_m
            data["hand_target"] = target
            if reach > w.arm_reach_m:
                # arm_command.proto, ArmCartesianCommand.Feedback: STATUS_TRAJECTORY_STALLED "the arm has stopped
                # making progress to the goal": it stopped part way, here at the edge of its reach
                scale = w.arm_reach_m / reach
                target = (
                    w.body.x + (target[0] - w.body.x) * scale,
                    w.body.y + (target[1] - w.body.y) * scale,
                    target[2],
                )
            w.hand = target
            w.arm = "out"
            w.moved("arm_move")
        else:
            return RC.STATUS_UNSUPPORTED, f"the fake does not do {which}"
        return RC.STATUS_OK, ""

    def gripper(self, gripper: Any, data: dict[str, object]) -> None:
        w = self.w
        points = gripper.claw_gripper_command.trajectory.points
        angle = points[-1].point if points else 0.0
        w.moved("gripper")
        if angle < OPEN_ANGLE:
            w.release()
            # a claw that could not open still grips: gripper_command.proto STATUS_APPLYING_FORCE
            data["gripper"] = "force" if w.holding_item() else "open"
        else:
            w.gripper_open = False
            data["gripper"] = "force" if w.holding_item() else "closed"

    def constrained(self, req: Any) -> tuple[int, str]:
        w = self.w
        problem = self.time_problem(w.clock_id, req.end_time)
        if problem:
            return RC.Status.Value(f"STATUS_{problem}"), f"constrained manipulation end_time: {problem}"
        frame = w.frame_to_seed(req.frame_name)
        if frame is None:
            return RC.STATUS_UNKNOWN_FRAME, f"unknown frame '{req.frame_name}'"
        force = req.init_wrench_direction_in_frame_name.force
        fx, fy = frame.vector((force.x, force.y))
        norm = math.hypot(fx, fy)
        outcome = "STATUS_RUNNING"
        held = w.holding or ""
        handle: FakeHandle | None = w.handles.get(held.removeprefix("handle:")) if held.startswith("handle:") else None
        opening = None
        if handle is None:
            outcome = "STATUS_GRASP_IS_LOST"
        elif norm < 1e-9 or handle.locked:
            outcome = "STATUS_ARM_IS_STUCK"
        else:
            along = (fx * handle.pull[0] + fy * handle.pull[1]) / norm
            if along > 0.7:
                opening = True
            elif along < -0.7:
                opening = False
            else:
                outcome = "STATUS_ARM_IS_STUCK"  # pulling sideways: the door does not move
            if opening is not None:
                handle.opened = opening
        w.moved("handle")
        return self.record({"full"}, kind="constrained", outcome=outcome, end=seconds(req.end_time))

    def RobotCommandFeedback(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = robot_command_pb2.RobotCommandFeedbackResponse()
        with self.w.lock:
            self.w.advance()
            command = self.w.commands.get(request.robot_command_id)
            if command is None:
                self.header(
                    response, request, received, "unknown command id", header_pb2.CommonError.CODE_INVALID_REQUEST
                )
                return response
            self.feedback(command, response.feedback)
        self.header(response, request, received)
        return response

    def feedback(self, command: Any, fb: Any) -> None:
        w = self.w
        elapsed = time.time() - command.t0
        done = elapsed >= w.action_s
        kind = command.data.get("kind")
        status = CMD.STATUS_COMMAND_OVERRIDDEN if command.overridden else CMD.STATUS_PROCESSING
        if "full" in command.parts:
            full = fb.full_body_feedback
            full.status = status
            if kind == "stop":
                full.stop_feedback.SetInParent()
            elif kind == "safe_power_off":
                full.safe_power_off_feedback.status = basic_command_pb2.SafePowerOffCommand.Feedback.STATUS_POWERED_OFF
            else:
                if w.robot_now() > float(command.data["end"]) and not command.overridden:
                    full.status = CMD.STATUS_COMMAND_TIMED_OUT
                outcome = str(command.data["outcome"]) if done else "STATUS_RUNNING"
                full.constrained_manipulation_feedback.status = (
                    basic_command_pb2.ConstrainedManipulationCommand.Feedback.Status.Value(outcome)
                )
            return
        synchro = fb.synchronized_feedback
        if "mobility" in command.parts:
            mob = synchro.mobility_command_feedback
            mob.status = status
            if kind == "stand":
                stand = basic_command_pb2.StandCommand.Feedback
                mob.stand_feedback.status = (
                    stand.STATUS_IS_STANDING if done and w.standing else stand.STATUS_IN_PROGRESS
                )
            elif kind == "sit":
                sit = basic_command_pb2.SitCommand.Feedback
                mob.sit_feedback.status = sit.STATUS_IS_SITTING if done else sit.STATUS_IN_PROGRESS
            elif kind == "mobility_stop":
                mob.stop_feedback.SetInParent()
            elif kind == "trajectory":
                motion = w.motions[int(command.data["motion"])]  # type: ignore[call-overload]
                traj = basic_command_pb2.SE2TrajectoryCommand.Feedback
                moving = not motion.halted and not motion.arrived(time.time())
                mob.se2_trajectory_feedback.status = traj.STATUS_IN_PROGRESS if moving else traj.STATUS_STOPPED
                mob.se2_trajectory_feedback.body_movement_status = (
                    traj.BODY_STATUS_MOVING if moving else traj.BODY_STATUS_SETTLED
                )
                if motion.halted == "blocked":
                    mob.se2_trajectory_feedback.final_goal_status = traj.FINAL_GOAL_STATUS_BLOCKED
                else:
                    mob.se2_trajectory_feedback.final_goal_status = traj.FINAL_GOAL_STATUS_ACHIEVABLE
                if motion.halted in ("stop", "lease", "replaced"):
                    mob.status = CMD.STATUS_COMMAND_OVERRIDDEN
                elif motion.halted in ("estop", "power", "fault"):
                    mob.status = CMD.STATUS_ROBOT_FROZEN
                elif motion.halted == "timeout":  # the end time passed before the goal: the robot stopped
                    mob.status = CMD.STATUS_COMMAND_TIMED_OUT
        if "arm" in command.parts:
            arm = synchro.arm_command_feedback
            arm.status = status
            if command.data.get("arm") == "named":
                named = arm_command_pb2.NamedArmPositionsCommand.Feedback
                arm.named_arm_position_feedback.status = named.STATUS_COMPLETE if done else named.STATUS_IN_PROGRESS
            else:
                cart = arm_command_pb2.ArmCartesianCommand.Feedback
                if not done:
                    arm.arm_cartesian_feedback.status = cart.STATUS_IN_PROGRESS
                else:
                    arm.arm_cartesian_feedback.status = (
                        cart.STATUS_TRAJECTORY_COMPLETE
                        if command.data.get("arm_ok")
                        else cart.STATUS_TRAJECTORY_STALLED
                    )
        if "gripper" in command.parts:
            grip = synchro.gripper_command_feedback
            grip.status = status
            claw = gripper_command_pb2.ClawGripperCommand.Feedback
            if not done:
                grip.claw_gripper_feedback.status = claw.STATUS_IN_PROGRESS
            else:
                grip.claw_gripper_feedback.status = (
                    claw.STATUS_APPLYING_FORCE if command.data.get("gripper") == "force" else claw.STATUS_AT_GOAL
                )

    def ClearBehaviorFault(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = robot_command_pb2.ClearBehaviorFaultResponse()
        with self.w.lock:
            response.lease_use_result.CopyFrom(self.lease_result(request.lease))
            self.w.behavior_fault = ""
            response.status = robot_command_pb2.ClearBehaviorFaultResponse.STATUS_CLEARED
        self.header(response, request, received)
        return response


# ----------------------------------------------------------------------------- manipulation
class Manipulation(Base, manipulation_api_service_pb2_grpc.ManipulationApiServiceServicer):
    """pick_object_ray_in_world: whatever lies within `grasp_tolerance_m` of the ray is grasped (walking up
    to it first when it is out of reach); nothing there is MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP."""

    def ManipulationApi(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = manipulation_api_pb2.ManipulationApiResponse()
        w = self.w
        with w.lock:
            w.advance()
            result = self.lease_result(request.lease)
            response.lease_use_result.CopyFrom(result)
            if result.status != lease_pb2.LeaseUseResult.STATUS_OK:
                self.header(response, request, received)
                return response
            which = request.WhichOneof("manipulation_cmd")
            if which != "pick_object_ray_in_world":
                self.header(
                    response,
                    request,
                    received,
                    f"the fake does not do {which}",
                    header_pb2.CommonError.CODE_INVALID_REQUEST,
                )
                return response
            pick = request.pick_object_ray_in_world
            frame = w.frame_to_seed(pick.frame_name)
            if frame is None:
                self.header(
                    response,
                    request,
                    received,
                    f"unknown frame '{pick.frame_name}'",
                    header_pb2.CommonError.CODE_INVALID_REQUEST,
                )
                return response
            start = frame.point((pick.ray_start_rt_frame.x, pick.ray_start_rt_frame.y, pick.ray_start_rt_frame.z))
            end = frame.point((pick.ray_end_rt_frame.x, pick.ray_end_rt_frame.y, pick.ray_end_rt_frame.z))
            final, item = self.grasp(start, end, pick.walk_gaze_mode)
            w.moved("grasp")
            command_id = w.new_id()
            w.manipulations[command_id] = {
                "t0": time.time(), "phase": w.action_s, "final": final, "item": item, "ray": (start, end),
            }  # fmt: skip
            response.manipulation_cmd_id = command_id
        self.header(response, request, received)
        return response

    def grasp(self, start: Point, end: Point, mode: int) -> tuple[str, str]:
        w = self.w
        if not w.motors_on or not w.standing:
            return "MANIP_STATE_GRASP_FAILED", ""
        if w.holding is not None:
            return "MANIP_STATE_GRASP_FAILED", ""
        hit = w.nearest_to_ray(start, end)
        if hit is None or hit[1] > w.grasp_tolerance_m:
            return "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP", ""
        item = hit[0]
        where = w.handles[item[7:]].position if item.startswith("handle:") else w.objects[item].position
        distance = math.hypot(where[0] - w.body.x, where[1] - w.body.y)
        if distance > w.arm_reach_m:
            walks = mode in (manipulation_api_pb2.PICK_AUTO_WALK_AND_GAZE, manipulation_api_pb2.PICK_WALK_GAZE_UNKNOWN)
            if not walks or distance > 4.0:
                return "MANIP_STATE_GRASP_PLANNING_NO_SOLUTION", item
            heading = math.atan2(where[1] - w.body.y, where[0] - w.body.x)
            w.body = Se2(where[0] - 0.7 * math.cos(heading), where[1] - 0.7 * math.sin(heading), heading)
        if w.grasp_failures.get(item, 0) > 0:
            w.grasp_failures[item] -= 1
            if item in w.grasp_caught:  # reported failed, but the claw closed on it
                w.holding, w.gripper_open, w.arm_stowed, w.hand = item, False, False, where
            return "MANIP_STATE_GRASP_FAILED", item
        w.holding = item
        w.gripper_open = False
        w.arm_stowed = False
        w.hand = where
        return "MANIP_STATE_GRASP_SUCCEEDED", item

    def ManipulationApiFeedback(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = manipulation_api_pb2.ManipulationApiFeedbackResponse(manipulation_cmd_id=request.manipulation_cmd_id)
        with self.w.lock:
            record = self.w.manipulations.get(request.manipulation_cmd_id)
            if record is None:
                self.header(
                    response, request, received, "unknown manipulation id", header_pb2.CommonError.CODE_INVALID_REQUEST
                )
                return response
            elapsed = time.time() - float(record["t0"])  # type: ignore[arg-type]
            phase = float(record["phase"])  # type: ignore[arg-type]  # action_s when the grasp was asked for
            if elapsed < phase:
                state = "MANIP_STATE_WALKING_TO_OBJECT"
            elif elapsed < 2 * phase:
                state = "MANIP_STATE_GRASPING_OBJECT"
            else:
                state = str(record["final"])
            response.current_state = manipulation_api_pb2.ManipulationFeedbackState.Value(state)
        self.header(response, request, received)
        return response


# ----------------------------------------------------------------------------- GraphNav
class GraphNav(Base, graph_nav_service_pb2_grpc.GraphNavServiceServicer):
    NAV = graph_nav_pb2.NavigateToResponse
    FB = graph_nav_pb2.NavigationFeedbackResponse

    def NavigateTo(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = graph_nav_pb2.NavigateToResponse()
        w = self.w
        with w.lock:
            w.advance()
            results = [self.lease_result(lease) for lease in request.leases] or [self.lease_result(lease_pb2.Lease())]
            response.lease_use_results.extend(results)
            if all(r.status == lease_pb2.LeaseUseResult.STATUS_OK for r in results):
                response.status = self.navigate(request, response)
        self.header(response, request, received)
        return response

    def navigate(self, request: Any, response: Any) -> int:
        w = self.w
        problem = self.time_problem(request.clock_identifier, request.end_time)
        if problem:
            return self.NAV.Status.Value(f"STATUS_{problem}")
        if not w.motors_on or not w.standing or w.behavior_fault or w.estopped:
            return self.NAV.STATUS_ROBOT_IMPAIRED
        if w.lost:
            return self.NAV.STATUS_LOST
        if not w.localized:
            return self.NAV.STATUS_NOT_LOCALIZED_TO_MAP
        waypoint = w.waypoints.get(request.destination_waypoint_id)
        if waypoint is None:
            response.error_waypoint_ids.append(request.destination_waypoint_id)
            return self.NAV.STATUS_UNKNOWN_WAYPOINT
        current = w.motion
        if (
            request.command_id
            and current is not None
            and current.command_id == request.command_id
            and current.kind == "navigate"
            and current.target == waypoint.id
            and not current.halted
        ):
            # NavigateToRequest.command_id set: the request continues that navigate_to command (bosdyn-client's
            # GraphNavClient.navigate_to: "this continues an existing navigate_to command with the given ID"),
            # with the new end_time; spot-sdk's graph_nav_command_line re-issues 1 s commands this way
            current.end_time = seconds(request.end_time)
            w.moved("navigate")
            response.command_id = current.command_id
            return self.NAV.STATUS_OK
        goal = Se2(waypoint.x, waypoint.y, waypoint.yaw)
        w.moved("navigate")
        motion = w.start_motion("navigate", goal, seconds(request.end_time), w.stuck.get(waypoint.id, 1.0), waypoint.id)
        response.command_id = motion.command_id
        return self.NAV.STATUS_OK

    def NavigationFeedback(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = graph_nav_pb2.NavigationFeedbackResponse()
        w = self.w
        with w.lock:
            w.advance()
            motion = w.motions.get(request.command_id) if request.command_id else w.motion
            if motion is None or motion.kind != "navigate":
                response.status = self.FB.STATUS_NO_ROUTE
            else:
                response.command_id = motion.command_id
                halted = {
                    "stop": self.FB.STATUS_COMMAND_OVERRIDDEN, "replaced": self.FB.STATUS_COMMAND_OVERRIDDEN,
                    "stuck": self.FB.STATUS_STUCK, "estop": self.FB.STATUS_ROBOT_IMPAIRED,
                    "power": self.FB.STATUS_ROBOT_IMPAIRED, "fault": self.FB.STATUS_ROBOT_IMPAIRED,
                    "lease": self.FB.STATUS_LEASE_ERROR, "timeout": self.FB.STATUS_COMMAND_TIMED_OUT,
                }  # fmt: skip
                if motion.halted:
                    response.status = halted[motion.halted]
                elif motion.arrived(time.time()):
                    response.status = self.FB.STATUS_REACHED_GOAL
                else:
                    response.status = self.FB.STATUS_FOLLOWING_ROUTE
                here = w.body
                response.remaining_route_length = math.hypot(motion.goal.x - here.x, motion.goal.y - here.y)
                if motion.halted == "stuck":
                    response.stuck_reason = self.FB.STUCK_REASON_OBSTACLE
        self.header(response, request, received)
        return response

    def GetLocalizationState(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = graph_nav_pb2.GetLocalizationStateResponse()
        w = self.w
        with w.lock:
            w.advance()
            waypoint = w.nearest_waypoint()
            if waypoint is not None:
                loc: nav_pb2.Localization = response.localization
                loc.waypoint_id = waypoint.id
                loc.waypoint_tform_body.CopyFrom(se3(Se2(waypoint.x, waypoint.y, waypoint.yaw).inverse() * w.body))
                loc.seed_tform_body.CopyFrom(se3(w.body))
                loc.timestamp.CopyFrom(stamp(received))
            response.lost_detector_state.is_lost = w.lost
            response.robot_kinematics.transforms_snapshot.CopyFrom(snapshot(w))
        self.header(response, request, received)
        return response

    def DownloadGraph(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = graph_nav_pb2.DownloadGraphResponse()
        with self.w.lock:
            for waypoint in self.w.waypoints.values():
                wp: map_pb2.Waypoint = response.graph.waypoints.add(id=waypoint.id)
                wp.annotations.name = waypoint.name
        self.header(response, request, received)
        return response

    def DownloadGraphStreaming(self, request: Any, context: Any) -> Any:
        """The graph as one serialized DownloadGraphResponse, sent in chunks (what SDK 5 asks for first)."""
        data = self.DownloadGraph(request, context).SerializeToString()
        size = 4096
        for offset in range(0, max(len(data), 1), size):
            chunk = graph_nav_pb2.DownloadGraphStreamingResponse()
            chunk.chunk.total_size = len(data)
            chunk.chunk.data = data[offset : offset + size]
            self.header(chunk, request, self.w.robot_now())
            yield chunk


# ----------------------------------------------------------------------------- perception
class WorldObjects(Base, world_object_service_pb2_grpc.WorldObjectServiceServicer):
    """The objects the robot sees (world_object.proto). A world object's `name` is not a frame name: its frames
    are named in its properties and held in its transforms_snapshot. An AprilTag is listed as the robot lists
    fiducials: name "world_obj_apriltag_<id>", AprilTagProperties with tag_id, frame_name_fiducial "fiducial_<id>"
    (the raw detection) and frame_name_fiducial_filtered "filtered_fiducial_<id>" (as in spot-sdk's
    python/examples/world_object_mutations and the AprilTag world objects spot_ros tests with); a detection added
    by another client carries a drawable whose frame_name_drawable is in the snapshot. Frames hang off "vision",
    and the snapshot also holds the robot's body, odom and vision frames, as the proto's comment says."""

    def ListWorldObjects(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = world_object_pb2.ListWorldObjectResponse()
        w = self.w
        wanted = set(request.object_type)
        with w.lock:
            w.advance()
            vision_tform_seed = w.seed_tform_vision.inverse()
            for index, obj in enumerate(sorted(w.objects.values(), key=lambda o: o.id)):
                if obj.id == w.holding or (obj.fiducial is None and not obj.detection):
                    continue
                tagged = obj.fiducial is not None
                kind = world_object_pb2.WORLD_OBJECT_APRILTAG if tagged else world_object_pb2.WORLD_OBJECT_DRAWABLE
                if wanted and kind not in wanted:
                    continue
                item = response.world_objects.add(id=index + 1)
                item.acquisition_time.CopyFrom(stamp(received))
                item.transforms_snapshot.CopyFrom(snapshot(w))
                frames: list[tuple[str, Point]] = []
                if obj.fiducial is not None:
                    tag = item.apriltag_properties
                    item.name = f"world_obj_apriltag_{obj.fiducial}"
                    tag.tag_id = obj.fiducial
                    tag.dimensions.x = tag.dimensions.y = 0.146
                    tag.frame_name_fiducial = f"fiducial_{obj.fiducial}"
                    tag.frame_name_fiducial_filtered = f"filtered_fiducial_{obj.fiducial}"
                    tag.fiducial_pose_status = tag.fiducial_filtered_pose_status = tag.STATUS_OK
                    (px, py, pz), (ex, ey, ez) = obj.position, obj.raw_error
                    frames.append((tag.frame_name_fiducial, (px + ex, py + ey, pz + ez)))
                    frames.append((tag.frame_name_fiducial_filtered, obj.position))
                else:
                    item.name = obj.detection
                    drawable = item.drawable_properties.add(label=obj.detection)
                    drawable.sphere.radius = 0.05
                    drawable.frame_name_drawable = f"{obj.detection}_center"
                    frames.append((drawable.frame_name_drawable, obj.position))
                edges = item.transforms_snapshot.child_to_parent_edge_map
                for frame, where in frames:
                    x, y, z = vision_tform_seed.point(where)
                    edges[frame].parent_frame_name = "vision"
                    edges[frame].parent_tform_child.CopyFrom(se3(Se2(x, y, 0.0), z))
        self.header(response, request, received)
        return response


def camera_image(quality: int = 75) -> bytes:
    """What every fake camera shows: a small orange JPEG (the same bytes every time)."""
    from PIL import Image as PilImage

    buffer = io.BytesIO()
    PilImage.new("RGB", (64, 48), (200, 120, 40)).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


class Image(Base, image_service_pb2_grpc.ImageServiceServicer):
    def ListImageSources(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = image_pb2.ListImageSourcesResponse()
        for name in CAMERAS:
            response.image_sources.add(name=name, cols=64, rows=48)
        self.header(response, request, received)
        return response

    def GetImage(self, request: Any, context: Any) -> Any:
        received = self.w.robot_now()
        response = image_pb2.GetImageResponse()
        for wanted in request.image_requests:
            item = response.image_responses.add()
            item.source.name = wanted.image_source_name
            if wanted.image_source_name not in CAMERAS:
                item.status = image_pb2.ImageResponse.STATUS_UNKNOWN_CAMERA
                continue
            shot = item.shot
            shot.image.data = camera_image(int(wanted.quality_percent or 75))
            shot.image.format = image_pb2.Image.FORMAT_JPEG
            shot.image.cols, shot.image.rows = 64, 48
            shot.acquisition_time.CopyFrom(stamp(received))
            shot.frame_name_image_sensor = wanted.image_source_name + "_sensor"
            item.status = image_pb2.ImageResponse.STATUS_OK
            with self.w.lock:
                self.w.captures.append((wanted.image_source_name, hashlib.sha256(shot.image.data).hexdigest()))
        self.header(response, request, received)
        return response
