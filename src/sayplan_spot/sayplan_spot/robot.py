"""Spot through bosdyn-client: the session and the primitives of sayplan_spot.programs.

Session: log in (credentials from the environment, never logged), time sync, acquire the body lease and keep
it alive, check the e-stop, power the motors on, stand; at the end sit, power off and return the lease.
Primitives: GraphNav navigate_to, body trajectories, grasps through the Manipulation API (ray in world),
placing with the arm, handle pulls by constrained manipulation, camera images. Every status the robot
reports is translated by sayplan_spot.failures; a failure raises SpotError with the typed code
and the robot's own words.

Everything here blocks: the skill server runs it on one worker thread and polls it from its coroutine, so
the ROS executor never waits on the robot. `stop()` is the exception: it is called from the cancel callback
while a primitive runs, sends one stop command, and wakes the worker through the shared stop event.
"""

from __future__ import annotations

import math
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import bosdyn.client
from bosdyn.api import geometry_pb2, manipulation_api_pb2
from bosdyn.api.arm_command_pb2 import ArmCartesianCommand, NamedArmPositionsCommand
from bosdyn.api.basic_command_pb2 import (
    ConstrainedManipulationCommand,
    RobotCommandFeedbackStatus,
    SE2TrajectoryCommand,
    SitCommand,
    StandCommand,
)
from bosdyn.api.graph_nav.graph_nav_pb2 import NavigationFeedbackResponse
from bosdyn.api.gripper_command_pb2 import ClawGripperCommand
from bosdyn.api.image_pb2 import ImageResponse
from bosdyn.api.lease_pb2 import LeaseUseResult
from bosdyn.api.manipulation_api_pb2 import ManipulationFeedbackState
from bosdyn.api.robot_state_pb2 import BehaviorFault
from bosdyn.client import frame_helpers, math_helpers
from bosdyn.client.auth import InvalidLoginError
from bosdyn.client.estop import EstopClient
from bosdyn.client.exceptions import Error as SdkError
from bosdyn.client.exceptions import LeaseUseError, ResponseError, RpcError
from bosdyn.client.graph_nav import GraphNavClient
from bosdyn.client.image import ImageClient
from bosdyn.client.lease import Error as LeaseWalletError
from bosdyn.client.lease import LeaseClient, LeaseKeepAlive, ResourceAlreadyClaimedError
from bosdyn.client.manipulation_api_client import ManipulationApiClient
from bosdyn.client.power import PowerClient
from bosdyn.client.robot_command import RobotCommandBuilder, RobotCommandClient
from bosdyn.client.robot_state import RobotStateClient
from bosdyn.client.time_sync import TimeSyncError
from bosdyn.client.world_object import WorldObjectClient

from sayplan_core.diagnostics import Level, Status, age_text, link_status
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.navigation import TargetError
from sayplan_spot import failures as sf
from sayplan_spot.programs import (
    Approach,
    Articulate,
    Capture,
    Grasp,
    Handle,
    Navigate,
    Place,
    Primitive,
    RobotPose,
    Walk,
    WorldObjectRef,
    approach_pose,
    resolve_waypoint,
)

#: Hand pointing straight down (pitch +90 deg about y) when putting things down.
HAND_DOWN = math_helpers.Quat(w=math.cos(math.pi / 4), x=0.0, y=math.sin(math.pi / 4), z=0.0)
#: The grasp ray starts this far back (horizontally) and up from the target, and ends this far past it.
RAY_BACK_M, RAY_UP_M, RAY_PAST = 0.6, 0.5, 0.3
HANDLE_SPEED = 0.25  # m/s along the handle's path while pulling or pushing it
HANDLE_FORCE_N, HANDLE_TORQUE_NM = 40.0, 5.0
#: How long each GraphNav navigate_to request runs; it is re-issued (same command id) at half that while the
#: robot walks (spot-sdk python/examples/graph_nav_command_line: 1 s commands, re-issued twice a second).
NAV_COMMAND_S = 1.0
#: How long each body-trajectory command of a walk runs (its end_time); the walk re-sends the same goal with a
#: fresh end time at half that, so a node that dies leaves the robot standing within about this long
#: (basic_command.proto SE2TrajectoryCommand.Request.end_time: "used to prevent runaway commands").
WALK_COMMAND_S = 1.0
#: A body slower than this (m/s, robot state velocity_of_body_in_odom) counts as stopped.
STILL_MPS = 0.05


class SpotError(Exception):
    """A primitive or the session failed: the typed code and the robot's own message."""

    def __init__(self, code: SkillCode, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.missing = missing  # a grasp where the object should be found nothing there (it is not there)


@dataclass(frozen=True)
class SpotConfig:
    hostname: str
    port: int
    ca_cert_file: str
    username: str = ""
    password: str = ""
    take_lease: bool = False
    lease_check_in_s: float = 1.0
    connect_timeout_s: float = 30.0
    rpc_timeout_s: float = 5.0  # the deadline of every single call to the robot (the SDK's own default is 30 s)

    def __repr__(self) -> str:  # never print the login
        return f"SpotConfig(hostname={self.hostname!r}, port={self.port})"


@dataclass(frozen=True)
class Limits:
    """Per-goal limits (the node's per-goal settings when the skill started)."""

    feedback_period_s: float = 0.1
    navigate_timeout_s: float = 120.0
    arm_timeout_s: float = 30.0
    max_walk_m: float = 15.0
    handle_pull_s: float = 3.0


Report = Callable[[str], None]


def fault_from(exc: BaseException, doing: str) -> SpotError:
    """The typed fault for an SDK exception raised while `doing` something."""
    if isinstance(exc, SpotError):
        return exc
    if isinstance(exc, ResourceAlreadyClaimedError):
        owner = exc.response.lease_owner.client_name or "another client"
        return SpotError(
            SkillCode.LEASE_LOST,
            f"{doing}: the body lease is held by {owner}; release it (tablet: release control) or set take_lease",
        )
    if isinstance(exc, LeaseUseError):
        result = exc.lease_use_result
        status = LeaseUseResult.Status.Name(result.status)
        owner = result.owner.client_name or "another client"
        return SpotError(sf.LEASE_USE.get(status, SkillCode.LEASE_LOST), f"{doing}: lease lost to {owner} ({status})")
    if isinstance(exc, LeaseWalletError):
        return SpotError(SkillCode.LEASE_LOST, f"{doing}: the lease is no longer ours ({exc})")
    refused = _response_status(exc)
    if refused is not None:
        kind, status = refused
        text = str(getattr(exc, "error_message", "") or "")
        words = f": {text}" if text else ""
        return SpotError(sf.refusal(kind, status), f"{doing}: the robot refused ({kind} {sf.explain(status)}){words}")
    if isinstance(exc, RpcError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: no answer from the robot ({exc})")
    if isinstance(exc, TimeSyncError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: no time sync with the robot ({type(exc).__name__})")
    if isinstance(exc, SdkError):
        return SpotError(SkillCode.ROBOT_FAULT, f"{doing}: {type(exc).__name__}: {exc}")
    return SpotError(SkillCode.INTERNAL_ERROR, f"{doing}: {type(exc).__name__}: {exc}")


def _response_status(exc: BaseException) -> tuple[str, str] | None:
    """(response type, `status` enum value name) of a refused response, when the exception carries one."""
    response: Any = getattr(exc, "response", None) if isinstance(exc, ResponseError) else None
    if response is None:
        return None
    field = response.DESCRIPTOR.fields_by_name.get("status")
    if field is None or field.enum_type is None:
        return None
    value = field.enum_type.values_by_number.get(response.status)
    return (str(response.DESCRIPTOR.name), str(value.name)) if value is not None else None


def _name(enum: Any, value: int) -> str:
    return str(enum.Name(value))


# ---------------------------------------------------------------------------------------------- diagnostics
class SpotSeen:
    """What the robot last said of its e-stop, motors and gripper, with the steady time: read by `health` (for
    /diagnostics), which must not ask the robot (every call here blocks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[bool, float]] = {}
        self._check_in: tuple[str, float] | None = None

    def note(self, what: str, value: bool) -> bool:
        with self._lock:
            self._seen[what] = (value, time.monotonic())
        return value

    def check_in_failed(self, why: str) -> None:
        """A lease check-in did not reach the robot (the keep-alive retries): the link may be down."""
        with self._lock:
            self._check_in = (why, time.monotonic())

    def check_in_failure(self) -> tuple[str, float] | None:
        """(why, age in seconds) of the last failed lease check-in, or None."""
        with self._lock:
            failed = self._check_in
        return None if failed is None else (failed[0], time.monotonic() - failed[1])

    def get(self, what: str) -> tuple[bool, float] | None:
        """(value, age in seconds), or None when never seen."""
        with self._lock:
            seen = self._seen.get(what)
        return None if seen is None else (seen[0], time.monotonic() - seen[1])


class SpotRobot:
    def __init__(self, config: SpotConfig, info: Callable[[str], None], warn: Callable[[str], None]) -> None:
        self.config = config
        self._info, self._warn = info, warn
        self._sdk: Any = None
        self.robot: Any = None
        self._keepalive: Any = None
        self._lease_problem = ""
        self._lease_held = False  # the lease has been ours in this session: never take it again after that
        self._lock = threading.Lock()
        self.waypoints: dict[str, str] = {}  # GraphNav waypoint id -> recorded name
        #: Set once stop() has sent its stop command (cleared by the skill server before each skill): clean-up
        #: after a cancel waits for it, so the stop cannot land after (and override) the stow.
        self.stop_sent = threading.Event()
        self.stop_accepted = False  # whether the robot accepted the last stop command sent (set with stop_sent)
        self.serial = ""
        #: Appended to `not_powered` messages: how the operator powers the robot on (set by the skill server).
        self.power_hint = ""
        #: Set when the node stops (a signal, destroy_node): a power-on under way is not followed by a stand.
        self.shutting_down = threading.Event()
        self._stand_gate = threading.Lock()  # held from the last shutting_down check until the stand is sent
        self._stood = False  # this node sent a stand that completed (else there is nothing to sit down from)
        self.seen = SpotSeen()  # what the robot last said of its e-stop, motors and gripper (for diagnostics)

    # ------------------------------------------------------------------ session
    @property
    def connected(self) -> bool:
        return self.robot is not None

    def health(self, hardware_id: str = "") -> list[Status]:
        """Spot's session (connected, time-synced), the body lease, and the e-stop, motors and gripper as last seen;
        from state the session already holds (no RPC: the robot may not answer, and this runs in a timer)."""
        sdk_robot = self.robot
        statuses: list[Status] = []
        where = self.config.hostname
        if sdk_robot is None:
            statuses.append(link_status("robot link", False, f"no session with Spot at {where}", {"host": where}))
        else:
            try:
                synced = bool(sdk_robot.time_sync.has_established_time_sync)
            except Exception:  # the SDK's time-sync thread is gone
                synced = False
            values = {"host": where, "serial": self.serial, "time sync": "established" if synced else "not established"}
            detail = f"session with Spot {self.serial} at {where}" + ("" if synced else ": time sync not established")
            failed = self.seen.check_in_failure()
            # the keep-alive checks in every lease_check_in_s: a failure within three of them is a link that is down
            recent = failed is not None and failed[1] < 3 * self.config.lease_check_in_s + self.config.rpc_timeout_s
            if failed is not None and recent:
                detail = f"lease check-ins do not reach Spot at {where} ({failed[0]}, {age_text(failed[1])})"
            statuses.append(link_status("robot link", synced and not recent, detail, values))
        with self._lock:
            problem = self._lease_problem
        held = sdk_robot is not None and self._keepalive is not None and not problem
        if problem:  # lost: another client took it, or it was revoked
            statuses.append(link_status("lease", False, problem, {"held": "false"}))
        else:  # not held before activation: WARN only
            lease = "held by this node" if held else "not held (the node takes it when activated)"
            statuses.append(link_status("lease", held, lease, {"held": str(held).lower()}, down_level=Level.WARN))
        for what, name, if_true, if_false, error_if in (
            ("estopped", "e-stop", "pressed: release it, then clear the fault", "released", True),
            ("powered", "motors", "on", "off (skills never power them on)", False),
            ("holding", "gripper", "holding something", "empty", None),  # reported, judged by the skill server
        ):
            seen = self.seen.get(what)
            if seen is None:
                statuses.append(Status(name, Level.OK, "not read yet", {"last read": "never"}))
                continue
            value, age = seen
            level = Level.ERROR if value is error_if else Level.OK
            statuses.append(Status(name, level, if_true if value else if_false, {"last read": age_text(age)}))
        return [replace(s, hardware_id=hardware_id) for s in statuses]

    def connect(self, limits: Limits, stand: bool = False, lease: bool = True) -> None:
        """Log in, time-sync, acquire (or with take_lease, take) the lease, check the e-stop; with `stand` (the
        operator's stand_up) also power on and stand. Without `lease` only the session (log in, time sync, the
        map): what a node configuring checks before it is activated and takes the robot.

        `take_lease` takes the lease only until it has been ours once: after another client took it, connecting
        again only acquires it, which fails with lease_lost while that client holds it (the node never takes the
        robot back from an operator who took control)."""
        self.disconnect()
        cfg = self.config
        doing = f"connecting to {cfg.hostname}"
        rpc = cfg.rpc_timeout_s
        try:
            sdk = bosdyn.client.create_standard_sdk("sayplan_spot", cert_resource_glob=cfg.ca_cert_file or None)
            robot = sdk.create_robot(cfg.hostname)
            if cfg.port:
                robot.update_secure_channel_port(cfg.port)
            self._sdk, self.robot = sdk, robot
            robot.authenticate(cfg.username, cfg.password, timeout=cfg.connect_timeout_s)
            self.serial = robot.get_cached_robot_id(timeout=rpc).serial_number
            robot.time_sync.wait_for_sync(timeout_sec=cfg.connect_timeout_s)
            for name in (
                LeaseClient.default_service_name, EstopClient.default_service_name, PowerClient.default_service_name,
                RobotStateClient.default_service_name, RobotCommandClient.default_service_name,
                ManipulationApiClient.default_service_name, GraphNavClient.default_service_name,
                WorldObjectClient.default_service_name, ImageClient.default_service_name,
            ):  # fmt: skip
                robot.ensure_client(name)
            if not lease:
                self.refresh_map()
                self._info(f"connected to Spot {self.serial} at {cfg.hostname}: session only (no lease)")
                return
            if self.seen.note("estopped", robot.is_estopped(timeout=rpc)):
                raise SpotError(SkillCode.ESTOPPED, f"{doing}: the robot is e-stopped; release the e-stop first")
            lease_client = self._client(LeaseClient)
            if cfg.take_lease and not self._lease_held:
                lease_client.take(timeout=rpc)
            self._lease_problem = ""
            self._keepalive = LeaseKeepAlive(
                lease_client, must_acquire=True, return_at_exit=True, rpc_interval_seconds=cfg.lease_check_in_s,
                on_failure_callback=self._on_lease_failure, warnings=False,
            )  # fmt: skip
            self._lease_held = True
            self.refresh_map()
            skipped = self.power_on_and_stand(limits) if stand else ""
        except InvalidLoginError:
            self.disconnect()
            raise SpotError(
                SkillCode.ROBOT_FAULT, f"{doing}: the robot refused the login (user name or password)"
            ) from None
        except ResourceAlreadyClaimedError as exc:
            self.disconnect()
            owner = exc.response.lease_owner.client_name or "another client"
            advice = (
                "it took control from this node, which does not take it back; release control there, then retry"
                if self._lease_held
                else "release it (tablet: release control) or set take_lease"
            )
            raise SpotError(SkillCode.LEASE_LOST, f"{doing}: the body lease is held by {owner}; {advice}") from None
        except Exception as exc:
            tls = self._tls_problem() if isinstance(exc, RpcError) else ""
            self.disconnect()
            if tls:
                raise SpotError(SkillCode.ROBOT_FAULT, f"{doing}: {tls}") from None
            raise fault_from(exc, doing) from None
        done = "powered on, standing" if stand else "not powered on or stood up by this connection"
        done = skipped or done
        self._info(f"connected to Spot {self.serial} at {cfg.hostname}: lease held, {done}")

    def _tls_problem(self) -> str:
        """Why the robot's TLS certificate is refused, or '' (then the robot is really unreachable). The SDK
        reports both as "the robot may be offline" (bosdyn.client.exceptions.UnableToConnectToRobotError), which
        sends people looking at the network when the certificate is wrong (`ca_cert_file`, or a robot whose
        certificate is not signed by the root the SDK bundles). The handshake names the authority the SDK's first
        channel asks for (auth.spot.robot), as gRPC checks it."""
        cfg = self.config
        cert = getattr(self._sdk, "cert", None)
        if not cert:
            return ""
        context = ssl.create_default_context(cadata=cert.decode("ascii", "replace"))
        try:
            address = (cfg.hostname, cfg.port or 443)
            with (
                socket.create_connection(address, timeout=cfg.rpc_timeout_s) as sock,
                context.wrap_socket(sock, server_hostname="auth.spot.robot"),
            ):
                return ""
        except ssl.SSLCertVerificationError as exc:
            source = cfg.ca_cert_file or "the root certificate bundled with bosdyn-client"
            return (
                f"the robot answered, but its TLS certificate does not match {source} ({exc.verify_message}); "
                "this is not a network problem: set ca_cert_file to the robot's root certificate"
            )
        except (OSError, ValueError):
            return ""

    def _on_lease_failure(self, exc: Exception) -> None:
        """Called by the SDK's keep-alive thread after a failed check-in."""
        if isinstance(exc, (LeaseUseError, LeaseWalletError)):
            with self._lock:
                self._lease_problem = fault_from(exc, "keeping the lease").message
        else:
            self.seen.check_in_failed(type(exc).__name__)
            self._warn(f"lease check-in failed ({type(exc).__name__}); retrying")

    def _client(self, kind: Any) -> Any:
        return self.robot.ensure_client(kind.default_service_name)

    def refresh_map(self) -> None:
        graph = self._client(GraphNavClient).download_graph(timeout=self.config.rpc_timeout_s)
        self.waypoints = {w.id: w.annotations.name for w in graph.waypoints}

    def waypoint_id(self, name: str) -> str:
        try:
            return resolve_waypoint(name, self.waypoints)
        except TargetError:
            self.refresh_map()  # a map uploaded since we connected
            return resolve_waypoint(name, self.waypoints)

    def request_shutdown(self) -> None:
        """The node is stopping: no stand is sent after this returns (one already sent is overridden by the stop
        that follows). Safe from any thread."""
        with self._stand_gate:
            self.shutting_down.set()

    def power_on_and_stand(self, limits: Limits) -> str:
        """Power the motors on and stand; returns '' or, when the node is stopping (`shutting_down`, checked before
        the power-on and again before the stand is sent), what was skipped: a robot told to stop never stands up
        afterwards."""
        robot = self.robot
        if self.shutting_down.is_set():
            return "the node is stopping: not powered on, not stood up"
        if not robot.is_powered_on():
            try:
                robot.power_on(
                    timeout_sec=self.config.connect_timeout_s,
                    update_frequency=1.0 / limits.feedback_period_s,
                    timeout=self.config.rpc_timeout_s,
                )
            except Exception as exc:
                if self.estopped():
                    raise SpotError(SkillCode.ESTOPPED, "powering on: the robot is e-stopped") from None
                fault = fault_from(exc, "powering on")
                if fault.code in (SkillCode.LEASE_LOST, SkillCode.ESTOPPED):  # refused for who holds the robot
                    raise fault from None
                raise SpotError(SkillCode.NOT_POWERED, f"powering on failed: {fault.message}") from None
        try:
            sent = self._command(RobotCommandBuilder.synchro_stand_command(), "standing up", limits,
                                 self.shutting_down, self.config.connect_timeout_s, _stand_done,
                                 gate=self._stand_gate)  # fmt: skip
        except SpotError:
            if not self.shutting_down.is_set():
                raise
            self._stood = True  # sent, then stopped by the node's stop: sit before powering off
            return "the node is stopping: the stand was stopped"
        if not sent:
            return "the node is stopping: powered on, but not stood up"
        self._stood = True
        self.seen.note("powered", True)
        return ""

    def ready(self, limits: Limits) -> None:
        """Before a skill: connected, lease ours, not e-stopped, no behaviour fault, motors on.

        A skill never powers the motors on or stands the robot: motors found off (after an e-stop, even one
        released since, a power cut, a fault) are `not_powered`, which the skill server latches; powering on is
        the operator's step (`power_hint`)."""
        self._reconnect_if_lease_lost(limits)
        try:
            if self.seen.note("estopped", self.robot.is_estopped(timeout=self.config.rpc_timeout_s)):
                raise SpotError(SkillCode.ESTOPPED, "the robot is e-stopped; release the e-stop, then retry")
            state = self.robot_state()
            self.seen.note("powered", state.power_state.motor_power_state == state.power_state.STATE_ON)
            faults = _behaviour_faults(state)
            if faults:
                raise SpotError(SkillCode.ROBOT_FAULT, faults)
            if state.power_state.motor_power_state != state.power_state.STATE_ON:
                raise SpotError(
                    SkillCode.NOT_POWERED,
                    f"the motors are off and a skill never powers the robot on{self.power_hint}",
                )
        except Exception as exc:
            raise fault_from(exc, "checking the robot") from None

    def _reconnect_if_lease_lost(self, limits: Limits) -> None:
        """Connected with the lease ours (acquired again if it was lost and is free now); never powers on."""
        with self._lock:
            lease_problem = self._lease_problem
        if lease_problem:
            self._warn(f"{lease_problem}; connecting again")
            self.disconnect()
        if not self.connected:
            self.connect(limits, stand=False)

    def robot_state(self) -> Any:
        return self._client(RobotStateClient).get_robot_state(timeout=self.config.rpc_timeout_s)

    def stand_up(self, limits: Limits) -> str:
        """The operator's explicit step after a fault was cleared: check the robot as `ready` does (but motors
        may be off), then power on and stand. Raises SpotError."""
        self._reconnect_if_lease_lost(limits)
        try:
            if self.robot.is_estopped(timeout=self.config.rpc_timeout_s):
                raise SpotError(SkillCode.ESTOPPED, "the robot is e-stopped; release the e-stop first")
            faults = _behaviour_faults(self.robot_state())
            if faults:
                raise SpotError(SkillCode.ROBOT_FAULT, faults)
            skipped = self.power_on_and_stand(limits)
        except Exception as exc:
            raise fault_from(exc, "powering on and standing") from None
        if skipped:
            raise SpotError(SkillCode.CANCELED, skipped)
        return f"Spot {self.serial} is powered on and standing"

    def check(self, limits: Limits) -> tuple[bool, list[str], bool | None]:
        """For the operator's clear_fault: (safe to move, what was found, whether the gripper holds something).
        Connects again (never powering on) when the session or the lease was lost. Never moves the robot."""
        found: list[str] = []
        try:
            self._reconnect_if_lease_lost(limits)
        except SpotError as exc:
            return False, [f"cannot connect: {exc.message}"], None
        ok = True
        try:
            if self.seen.note("estopped", self.robot.is_estopped(timeout=self.config.rpc_timeout_s)):
                ok = False
                found.append("e-stop: pressed (release it)")
            else:
                found.append("e-stop: released")
            lost = self.lease_lost()
            ok = ok and not lost
            found.append(f"lease: {lost}" if lost else "lease: held by this node")
            state = self.robot_state()
            faults = _behaviour_faults(state)
            ok = ok and not faults
            found.append(f"behaviour faults: {faults}" if faults else "behaviour faults: none")
            powered = self.seen.note("powered", state.power_state.motor_power_state == state.power_state.STATE_ON)
            found.append("motors: on" if powered else f"motors: off (skills will not power them on{self.power_hint})")
            holding = self.seen.note("holding", bool(state.manipulator_state.is_gripper_holding_item))
            found.append(f"gripper: {'holding something' if holding else 'empty'}")
        except Exception as exc:
            return False, [*found, f"the robot did not answer: {fault_from(exc, 'checking').message}"], None
        return ok, found, holding

    def estopped(self) -> bool:
        try:
            if self.robot is None:
                return False
            return self.seen.note("estopped", bool(self.robot.is_estopped(timeout=self.config.rpc_timeout_s)))
        except Exception:
            return False

    def lease_lost(self) -> str:
        """'' while the body lease is ours, else why not. Checks in with the robot now (RetainLease) rather
        than waiting for the keep-alive's next check-in; a robot that does not answer is no evidence either way."""
        with self._lock:
            problem = self._lease_problem
        keepalive = self._keepalive
        if problem or self.robot is None or keepalive is None:
            return problem
        try:
            self._client(LeaseClient).retain_lease(
                keepalive.lease_wallet.get_lease(), timeout=self.config.rpc_timeout_s
            )
        except (LeaseUseError, LeaseWalletError) as exc:
            problem = fault_from(exc, "checking the lease").message
            with self._lock:
                self._lease_problem = problem
        except Exception:
            return ""
        return problem

    def powered(self) -> bool:
        """The motors are on (True when the robot does not answer: no evidence they are off)."""
        try:
            if self.robot is None:
                return True
            return self.seen.note("powered", bool(self.robot.is_powered_on(timeout=self.config.rpc_timeout_s)))
        except Exception:
            return True

    def behaviour_faults(self) -> str:
        """'' unless the robot reports behaviour faults (robot state behavior_fault_state.faults), else what they
        are with their causes; '' too when the robot does not answer (no evidence either way). They are only
        reported, never cleared: the README sends the operator to the tablet to clear them."""
        try:
            return _behaviour_faults(self.robot_state())
        except Exception:
            return ""

    def fault_behind(self) -> SpotError | None:
        """After a skill failed: the robot fault that explains it, if any, checked in this order: e-stop,
        the lease gone to another client, a behaviour fault (a fall, a failed command), the motors off. A failure
        with one of these behind it is no difference in the world the planner could plan around."""
        if self.estopped():
            return SpotError(SkillCode.ESTOPPED, "the robot is e-stopped")
        lost = self.lease_lost()
        if lost:
            return SpotError(SkillCode.LEASE_LOST, lost)
        faults = self.behaviour_faults() if self.robot is not None else ""
        if faults:
            return SpotError(SkillCode.ROBOT_FAULT, faults)
        if not self.powered():
            return SpotError(SkillCode.NOT_POWERED, "the motors are off")
        return None

    def stop(self, timeout_s: float | None = None) -> int | None:
        """Stop all motion now (cancel). Safe to call from another thread while a primitive runs. Returns the
        stop command's id (None when it could not be sent)."""
        timeout = min(self.config.rpc_timeout_s, timeout_s) if timeout_s is not None else self.config.rpc_timeout_s
        sent: int | None = None
        try:
            if self.robot is not None:
                sent = int(
                    self._client(RobotCommandClient).robot_command(
                        RobotCommandBuilder.stop_command(), timeout=max(timeout, 0.05)
                    )
                )
        except Exception as exc:
            self._warn(f"the stop command failed: {fault_from(exc, 'stopping').message}")
        finally:
            self.stop_accepted = sent is not None
            self.stop_sent.set()
        return sent

    def stop_and_confirm(self, timeout_s: float) -> bool:
        """Send the stop command and wait, at most `timeout_s`, until the robot confirms it: the stop is still the
        command in force (its feedback STATUS_PROCESSING, not overridden) and the body is still (robot state
        velocity_of_body_in_odom below STILL_MPS). True too when there is no session (nothing to stop)."""
        if self.robot is None:
            return True
        deadline = time.monotonic() + timeout_s
        command_id = self.stop(timeout_s)
        if command_id is None:
            return False
        client = self._client(RobotCommandClient)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                rpc = max(min(self.config.rpc_timeout_s, left), 0.05)
                feedback = client.robot_command_feedback(command_id, timeout=rpc).feedback
                velocity = self._client(RobotStateClient).get_robot_state(timeout=rpc).kinematic_state
                linear = velocity.velocity_of_body_in_odom.linear
                in_force = feedback.full_body_feedback.status == RobotCommandFeedbackStatus.STATUS_PROCESSING
                if in_force and math.hypot(linear.x, linear.y) < STILL_MPS:
                    return True
            except Exception as exc:
                self._warn(f"confirming the stop: {fault_from(exc, 'confirming the stop').message}")
            time.sleep(min(0.05, max(deadline - time.monotonic(), 0.0)))  # a plain thread, never a callback

    def _stopped(self, stop: threading.Event) -> bool:
        """Before cleaning up after a cancel or a timeout: the robot has been sent its stop command (by the
        cancel, which we wait for, or now). False when the robot did not accept it (or it was never sent)."""
        if stop.is_set():
            return self.stop_sent.wait(timeout=3.0) and self.stop_accepted
        return self.stop() is not None

    def _stop_walking(self, stop: threading.Event, exc: SpotError) -> None:
        """A walk or navigation canceled or out of time: stop it, and once more after a cancel (the last command
        the robot gets, even if a re-send crossed the cancel's stop). A stop the robot did not accept leaves it
        possibly moving: a robot fault, which latches (even under a cancel)."""
        accepted = self._stopped(stop)
        if stop.is_set():
            accepted = self.stop() is not None
        if not accepted:
            raise SpotError(
                SkillCode.ROBOT_FAULT,
                f"{exc.message}, but the robot did not accept the stop command: it may still be moving",
            ) from None

    def disconnect(self) -> None:
        """Stop the keep-alive (it returns the lease if it is still ours) and close the SDK's threads and channels."""
        keepalive, self._keepalive = self._keepalive, None
        if keepalive is not None:
            try:
                keepalive.shutdown()
            except Exception as exc:
                self._warn(f"returning the lease failed: {type(exc).__name__}")
        sdk, robot = self._sdk, self.robot
        self._sdk = self.robot = None
        if sdk is not None:
            sdk.clear_robots()  # stops the SDK's time-sync and token threads
        if robot is not None:
            robot.shutdown()

    def shutdown(self, power_off: bool, limits: Limits) -> None:
        """Sit and power off (when asked and the lease is still ours), then return the lease."""
        if self.robot is None:
            return
        with self._lock:
            lease_ok = not self._lease_problem
        if power_off and lease_ok:
            try:
                if self._stood:  # else nothing to sit from; the safe power-off below sits a standing robot anyway
                    self._command(RobotCommandBuilder.synchro_sit_command(), "sitting down", limits,
                                  threading.Event(), self.config.connect_timeout_s, _sit_done)  # fmt: skip
                self.robot.power_off(cut_immediately=False, timeout_sec=self.config.connect_timeout_s,
                                     update_frequency=1.0 / limits.feedback_period_s,
                                     timeout=self.config.rpc_timeout_s)  # fmt: skip
                self._info("sat down and powered the motors off")
            except Exception as exc:
                self._warn(f"sitting and powering off failed: {fault_from(exc, 'shutting down').message}")
        self.disconnect()

    # ------------------------------------------------------------------ what the robot knows
    def pose(self) -> RobotPose | None:
        """The robot's GraphNav localization in the map (seed) frame; None when it is not localized."""
        try:
            loc = self._client(GraphNavClient).get_localization_state(timeout=self.config.rpc_timeout_s).localization
        except Exception:
            return None
        if not loc.waypoint_id:
            return None
        seed_tform_body = math_helpers.SE3Pose.from_proto(loc.seed_tform_body)
        yaw = seed_tform_body.rot.to_yaw()
        return RobotPose(seed_tform_body.x, seed_tform_body.y, yaw, seed_tform_body.z, loc.waypoint_id)

    def holding(self) -> bool:
        return self.seen.note("holding", bool(self.robot_state().manipulator_state.is_gripper_holding_item))

    def frames(self) -> tuple[Any, Any, Any]:
        """(odom_tform_seed, vision_tform_seed, seed_tform_body) from one localization and the kinematics taken
        with it, so the map -> odom/vision transforms are consistent."""
        state = self._client(GraphNavClient).get_localization_state(timeout=self.config.rpc_timeout_s)
        loc = state.localization
        if not loc.waypoint_id:
            raise SpotError(SkillCode.ROBOT_FAULT, "the robot is not localized on its GraphNav map: localize it first")
        snapshot = state.robot_kinematics.transforms_snapshot
        if not snapshot.child_to_parent_edge_map:
            snapshot = self.robot_state().kinematic_state.transforms_snapshot
        seed_tform_body = math_helpers.SE3Pose.from_proto(loc.seed_tform_body)
        body_tform_seed = seed_tform_body.inverse()
        odom = frame_helpers.get_a_tform_b(snapshot, frame_helpers.ODOM_FRAME_NAME, frame_helpers.BODY_FRAME_NAME)
        vision = frame_helpers.get_a_tform_b(snapshot, frame_helpers.VISION_FRAME_NAME, frame_helpers.BODY_FRAME_NAME)
        return odom * body_tform_seed, vision * body_tform_seed, seed_tform_body

    # ------------------------------------------------------------------ primitives
    def run(self, primitive: Primitive, stop: threading.Event, limits: Limits, report: Report) -> bytes | None:
        """Carry out one primitive; returns the image for Capture. Raises SpotError."""
        try:
            if isinstance(primitive, Navigate):
                self._navigate(primitive, stop, limits, report)
            elif isinstance(primitive, Walk):
                self._walk(primitive.node, primitive.pose, stop, limits, report)
            elif isinstance(primitive, Approach):
                here = self.frames()[2]
                pose = approach_pose((here.x, here.y), primitive.point, primitive.standoff)
                self._walk(primitive.node, pose, stop, limits, report)
            elif isinstance(primitive, Grasp):
                self._grasp(primitive, stop, limits, report)
            elif isinstance(primitive, Place):
                self._place(primitive, stop, limits, report)
            elif isinstance(primitive, Articulate):
                self._articulate(primitive, stop, limits, report)
            else:
                return self._capture(primitive)
        except TargetError as exc:
            raise SpotError(SkillCode.INVALID_TARGET, str(exc)) from None
        except SpotError:
            raise
        except Exception as exc:
            raise fault_from(exc, type(primitive).__name__.lower()) from None
        return None

    def _navigate(self, prim: Navigate, stop: threading.Event, limits: Limits, report: Report) -> None:
        """GraphNav navigate_to as Boston Dynamics' graph_nav_command_line example drives it: each request runs
        for a short time (NAV_COMMAND_S) and is re-issued with the same command id while the robot follows the
        route, so the robot stops by itself within about a second if this client dies or loses the network."""
        waypoint = self.waypoint_id(prim.waypoint)
        client = self._client(GraphNavClient)
        doing = f"navigating to waypoint '{prim.waypoint}'"
        duration = max(NAV_COMMAND_S, 3.0 * limits.feedback_period_s)
        deadline = time.monotonic() + limits.navigate_timeout_s
        command_id: int | None = None
        issued = -math.inf
        try:
            while True:
                if time.monotonic() - issued >= duration / 2 and not stop.is_set():
                    try:
                        command_id = client.navigate_to(
                            waypoint, duration, command_id=command_id, timeout=self.config.rpc_timeout_s
                        )
                    except Exception as exc:
                        raise fault_from(exc, doing) from None
                    issued = time.monotonic()
                if command_id is None:  # canceled before the first request went out
                    raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")
                feedback = client.navigation_feedback(command_id, timeout=self.config.rpc_timeout_s)
                status = _name(NavigationFeedbackResponse.Status, feedback.status)
                code = sf.verdict(sf.NAVIGATION_FEEDBACK, status)
                if code is SkillCode.NONE:
                    return
                if code is not None:
                    _canceled(stop, doing)
                    raise SpotError(code, f"{doing}: GraphNav reports {sf.explain(status)}")
                report(f"{doing}: {feedback.remaining_route_length:.1f} m to go")
                self._wait(stop, limits, deadline, doing)
        except SpotError as exc:
            if exc.code in (SkillCode.CANCELED, SkillCode.TIMEOUT):
                self._stop_walking(stop, exc)
            raise

    def _walk(
        self, node: str, pose: tuple[float, float, float], stop: threading.Event, limits: Limits, report: Report
    ) -> None:
        odom_tform_seed, _, seed_tform_body = self.frames()
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
        self._renewed_walk(goal, doing, limits, stop)

    def _renewed_walk(self, goal: Any, doing: str, limits: Limits, stop: threading.Event) -> None:
        """A body trajectory to an odom-frame goal, sent as commands that each end WALK_COMMAND_S after they
        are sent and are re-sent (same goal, fresh end time) at half that while the robot walks, as GraphNav
        legs are: the robot stops by itself within about a second if this node dies or the network drops,
        instead of walking on for the whole walk. Each re-send replaces the previous command, so only the
        latest one's feedback is followed."""
        client = self._client(RobotCommandClient)
        rpc = self.config.rpc_timeout_s
        duration = max(WALK_COMMAND_S, 3.0 * limits.feedback_period_s)
        deadline = time.monotonic() + limits.navigate_timeout_s
        command_id: int | None = None
        issued = -math.inf
        try:
            while True:
                if time.monotonic() - issued >= duration / 2 and not stop.is_set():
                    command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
                        goal.x, goal.y, goal.rot.to_yaw(), frame_helpers.ODOM_FRAME_NAME
                    )
                    try:
                        command_id = client.robot_command(command, end_time_secs=time.time() + duration, timeout=rpc)
                    except Exception as exc:
                        raise fault_from(exc, doing) from None
                    issued = time.monotonic()
                if command_id is None:  # canceled before the first command went out
                    raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")
                feedback = client.robot_command_feedback(command_id, timeout=rpc).feedback
                status, verdict = _command_status(feedback)
                if verdict is not None and verdict is not SkillCode.NONE:
                    _canceled(stop, doing)
                    raise SpotError(verdict, f"{doing}: the command ended with {sf.explain(status)}")
                code, name = _walk_done(feedback)
                if code is SkillCode.NONE:
                    return
                if code is not None:
                    _canceled(stop, doing)
                    raise SpotError(code, f"{doing}: {sf.explain(name)}")
                self._wait(stop, limits, deadline, doing)
        except SpotError as exc:
            if exc.code in (SkillCode.CANCELED, SkillCode.TIMEOUT):
                self._stop_walking(stop, exc)
            raise

    def _ray(self, target_seed: tuple[float, float, float]) -> tuple[Any, Any]:
        """Start and end of a grasp ray (vision frame) through a map point, from above and in front of it."""
        _, vision_tform_seed, seed_tform_body = self.frames()
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
        objects = self._client(WorldObjectClient).list_world_objects(timeout=self.config.rpc_timeout_s).world_objects
        if ref.fiducial is not None:
            tagged = [o for o in objects if o.HasField("apriltag_properties")]
            found = [o for o in tagged if o.apriltag_properties.tag_id == ref.fiducial]
        else:
            found = [o for o in objects if o.name == ref.name]
        found.sort(key=lambda o: (o.acquisition_time.seconds, o.acquisition_time.nanos), reverse=True)
        for obj in found:  # the latest detection first
            for frame in _object_frames(obj):
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
        canceled or runs out of time stops the arm and stows it (`let_go`: opens the gripper first, for a
        handle), so the robot is not left with its arm out."""
        request = manipulation_api_pb2.ManipulationApiRequest(
            pick_object_ray_in_world=manipulation_api_pb2.PickObjectRayInWorld(
                ray_start_rt_frame=geometry_pb2.Vec3(x=start[0], y=start[1], z=start[2]),
                ray_end_rt_frame=geometry_pb2.Vec3(x=end[0], y=end[1], z=end[2]),
                frame_name=frame_helpers.VISION_FRAME_NAME,
                walk_gaze_mode=manipulation_api_pb2.PICK_AUTO_WALK_AND_GAZE,
            )
        )
        client = self._client(ManipulationApiClient)
        doing = f"grasping {node}"
        rpc = self.config.rpc_timeout_s
        command_id = client.manipulation_api_command(request, timeout=rpc).manipulation_cmd_id
        deadline = time.monotonic() + limits.arm_timeout_s
        while True:
            feedback = client.manipulation_api_feedback_command(
                manipulation_api_pb2.ManipulationApiFeedbackRequest(manipulation_cmd_id=command_id), timeout=rpc
            )
            state = _name(ManipulationFeedbackState, feedback.current_state)
            code = sf.verdict(sf.MANIPULATION_FEEDBACK, state)
            if code is SkillCode.NONE:
                break
            if code is not None:
                if let_go:
                    self._let_go(node, limits)  # a robot fault instead, when the claw stays on the handle
                else:
                    self._stow_quietly(limits)
                _canceled(stop, doing)
                nothing = state == "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP"
                raise SpotError(code, f"{doing}: the Manipulation API reports {sf.explain(state)}", missing=nothing)
            report(f"{doing}: {state.removeprefix('MANIP_STATE_').lower().replace('_', ' ')}")
            try:
                self._wait(stop, limits, deadline, doing)
            except SpotError:
                self._stopped(stop)
                if let_go:
                    self._let_go(node, limits)  # a robot fault instead, when the claw stays on the handle
                else:
                    self._stow_quietly(limits)
                raise
        if not self.holding():
            self._stow_quietly(limits)
            raise SpotError(SkillCode.GRASP_FAILED, f"{doing}: the grasp ended but the gripper holds nothing")

    def _grasp(self, prim: Grasp, stop: threading.Event, limits: Limits, report: Report) -> None:
        seen = self._world_object(prim.world_object) if prim.world_object is not None else None
        if seen is not None:
            _, vision_tform_seed, _ = self.frames()
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

    def _place(self, prim: Place, stop: threading.Event, limits: Limits, report: Report) -> None:
        """Hand to the place, open, stow. A move that stalls (the arm stopped part way), fails or is canceled
        leaves the arm out: once the robot has been stopped it goes back to carry when the gripper still holds
        the object, else it stows (`_tidy_arm`)."""
        _, vision_tform_seed, _ = self.frames()
        x, y, z = vision_tform_seed.transform_point(*prim.point)
        doing = f"putting down at {prim.node}"
        report(doing)
        move = RobotCommandBuilder.arm_pose_command(x, y, z, HAND_DOWN.w, HAND_DOWN.x, HAND_DOWN.y, HAND_DOWN.z,
                                                    frame_helpers.VISION_FRAME_NAME, seconds=2.0)  # fmt: skip
        try:
            self._command(move, doing, limits, stop, limits.arm_timeout_s, _arm_cartesian_done)
            self._command(RobotCommandBuilder.claw_gripper_open_command(), f"{doing}: opening the gripper", limits,
                          stop, limits.arm_timeout_s, _gripper_done)  # fmt: skip
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
        self._command(RobotCommandBuilder.arm_carry_command(), f"carrying {node}", limits, stop,
                      limits.arm_timeout_s, _arm_named_done)  # fmt: skip

    def _tidy_arm(self, stop: threading.Event, limits: Limits, exc: SpotError) -> None:
        """After an arm command failed or was canceled: wait for the stop (a canceled or timed-out command is
        stopped first, so the stop cannot land after the clean-up and undo it), then fold the arm in: the carry
        pose when the gripper still holds something, else stowed. The clean-up itself cannot be canceled."""
        if stop.is_set() or exc.code in (SkillCode.CANCELED, SkillCode.TIMEOUT):
            self._stopped(stop)
        try:
            holding = self.holding()
        except Exception as read:
            self._warn(f"reading the gripper failed: {fault_from(read, 'reading the gripper').message}")
            holding = True  # carry is safe either way: it does not open the gripper
        if not holding:
            self._stow_quietly(limits)
            return
        try:
            self._carry("what it holds", limits, threading.Event())
        except Exception as failed:
            self._warn(f"folding the arm to carry failed: {fault_from(failed, 'carrying').message}")

    def _articulate(self, prim: Articulate, stop: threading.Event, limits: Limits, report: Report) -> None:
        handle = prim.handle
        verb = "opening" if prim.opening else "closing"
        start, end = self._ray(handle.position)
        self._pick(f"the handle of {prim.node}", start, end, stop, limits, report, let_go=True)
        odom_tform_seed, _, _ = self.frames()
        sign = 1.0 if prim.opening else -1.0
        direction = odom_tform_seed.rot.transform_point(sign * handle.pull[0], sign * handle.pull[1], 0.0)
        command = _handle_command(handle, direction)
        request = command.full_body_command.constrained_manipulation_request
        request.end_time.CopyFrom(
            self.robot.time_sync.robot_timestamp_from_local_secs(time.time() + limits.handle_pull_s + 1.0)
        )
        doing = f"{verb} {prim.node}"
        report(doing)
        ends = time.monotonic() + limits.handle_pull_s
        failed: SpotError | None = None
        try:
            self._command(command, doing, limits, stop, limits.handle_pull_s + limits.arm_timeout_s,
                          _pull_done(ends))  # fmt: skip
        except SpotError as exc:
            failed = exc
        if stop.is_set():
            self._stopped(stop)
        if failed is None and not self.read_gripper(f"after {verb} {prim.node}"):
            # the pull ran its time but the claw no longer holds the handle: where the door is, is not known
            failed = SpotError(SkillCode.SKILL_FAILED, f"{doing}: the gripper lost the handle during the pull")
        self._let_go(f"the handle of {prim.node}", limits)  # raises a robot fault when the claw stays on it
        if failed is not None:
            raise failed

    def read_gripper(self, when: str) -> bool:
        """Read the gripper back (robot state is_gripper_holding_item); a gripper that cannot be read is a robot
        fault: nothing may move while what it holds is unknown."""
        try:
            return self.holding()
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
            self._command(RobotCommandBuilder.claw_gripper_open_command(), f"letting go of {what}", limits,
                          threading.Event(), limits.arm_timeout_s, _gripper_done)  # fmt: skip
        except Exception as exc:
            self._warn(f"opening the gripper failed: {fault_from(exc, 'opening the gripper').message}")
        if self.read_gripper(f"letting go of {what}"):
            raise SpotError(
                SkillCode.ROBOT_FAULT,
                f"the gripper will not let go of {what}: it still holds it after opening; the arm was left where "
                "it is (not stowed, the claw not closed on it): free the gripper by hand",
            )
        self._stow_quietly(limits)

    def _capture(self, prim: Capture) -> bytes:
        responses = self._client(ImageClient).get_image_from_sources([prim.source], timeout=self.config.rpc_timeout_s)
        if not responses:
            raise SpotError(SkillCode.ROBOT_FAULT, f"camera {prim.source} returned nothing")
        status = _name(ImageResponse.Status, responses[0].status)
        code = sf.IMAGE_STATUS.get(status, SkillCode.ROBOT_FAULT)
        if code is not SkillCode.NONE:
            raise SpotError(code, f"capturing {prim.source}: {status}")
        return bytes(responses[0].shot.image.data)

    # ------------------------------------------------------------------ robot commands
    def _command(
        self,
        command: Any,
        doing: str,
        limits: Limits,
        stop: threading.Event,
        timeout_s: float,
        done: Callable[[Any], Reading],
        end_time_secs: float | None = None,
        gate: threading.Lock | None = None,
    ) -> bool:
        """Issue a robot command and follow its feedback until `done` says NONE (or a failure). With `gate`, the
        command is sent under that lock, and not at all when `stop` is set by then (returns False)."""
        client = self._client(RobotCommandClient)
        try:
            if gate is None:
                command_id = client.robot_command(
                    command, end_time_secs=end_time_secs, timeout=self.config.rpc_timeout_s
                )
            else:
                with gate:
                    if stop.is_set():
                        return False
                    command_id = client.robot_command(
                        command, end_time_secs=end_time_secs, timeout=self.config.rpc_timeout_s
                    )
        except Exception as exc:
            raise fault_from(exc, doing) from None
        deadline = time.monotonic() + timeout_s
        while True:
            response = client.robot_command_feedback(command_id, timeout=self.config.rpc_timeout_s)
            status, verdict = _command_status(response.feedback)
            if verdict is not None and verdict is not SkillCode.NONE:
                _canceled(stop, doing)
                raise SpotError(verdict, f"{doing}: the command ended with {sf.explain(status)}")
            code, name = done(response.feedback)
            if code is SkillCode.NONE:
                return True
            if code is not None:
                _canceled(stop, doing)
                raise SpotError(code, f"{doing}: {sf.explain(name)}")
            self._wait(stop, limits, deadline, doing)

    def _stow(self, limits: Limits, stop: threading.Event) -> None:
        stow = RobotCommandBuilder.arm_stow_command(build_on_command=RobotCommandBuilder.claw_gripper_close_command())
        self._command(stow, "stowing the arm", limits, stop, limits.arm_timeout_s, _arm_named_done)

    def _stow_quietly(self, limits: Limits) -> None:
        try:
            self._stow(limits, threading.Event())
        except Exception as exc:
            self._warn(f"stowing the arm failed: {exc}")

    @staticmethod
    def _wait(stop: threading.Event, limits: Limits, deadline: float, doing: str) -> None:
        if stop.wait(limits.feedback_period_s):
            raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")
        if time.monotonic() > deadline:
            raise SpotError(SkillCode.TIMEOUT, f"{doing}: no result in time")


def _behaviour_faults(state: Any) -> str:
    """The robot's behaviour faults in words ('' when there are none): id, cause and whether it can be cleared
    (robot_state.proto BehaviorFault)."""
    faults = list(state.behavior_fault_state.faults)
    if not faults:
        return ""
    described = ", ".join(
        f"{f.behavior_fault_id} ({_name(BehaviorFault.Cause, f.cause)}, {_name(BehaviorFault.Status, f.status)})"
        for f in faults
    )
    return f"the robot has behaviour fault(s) {described}: clear them on the tablet"


def _object_frames(obj: Any) -> list[str]:
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


def _canceled(stop: threading.Event, doing: str) -> None:
    """A command that ends badly after we were asked to stop ended because we stopped it: canceled (a stop
    command overrides the command it stops)."""
    if stop.is_set():
        raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")


# ----------------------------------------------------------------------------- feedback readers
def _command_status(feedback: Any) -> tuple[str, SkillCode | None]:
    """The overall status of a command's feedback (full body, or the worst synchronized part)."""
    names = []
    if feedback.HasField("full_body_feedback"):
        names.append(_name(RobotCommandFeedbackStatus.Status, feedback.full_body_feedback.status))
    else:
        synchro = feedback.synchronized_feedback
        for part in ("mobility_command_feedback", "arm_command_feedback", "gripper_command_feedback"):
            if synchro.HasField(part):
                names.append(_name(RobotCommandFeedbackStatus.Status, getattr(synchro, part).status))
    for name in names:
        code = sf.verdict(sf.COMMAND_FEEDBACK, name)
        if code is not None:
            return name, code
    return (names[0] if names else "STATUS_UNKNOWN"), None


Reading = tuple["SkillCode | None", str]  # the verdict on one part's feedback, and its status name


def _read(table: sf.Feedback, enum: Any, value: int) -> Reading:
    name = _name(enum, value)
    return sf.verdict(table, name), name


def _stand_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.mobility_command_feedback.stand_feedback.status
    return _read(sf.STAND_FEEDBACK, StandCommand.Feedback.Status, status)


def _sit_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.mobility_command_feedback.sit_feedback.status
    return _read(sf.SIT_FEEDBACK, SitCommand.Feedback.Status, status)


def _walk_done(fb: Any) -> Reading:
    traj = fb.synchronized_feedback.mobility_command_feedback.se2_trajectory_feedback
    blocked = _read(sf.TRAJECTORY_GOAL, SE2TrajectoryCommand.Feedback.FinalGoalStatus, traj.final_goal_status)
    if blocked[0] is not None:
        return blocked
    return _read(sf.TRAJECTORY_FEEDBACK, SE2TrajectoryCommand.Feedback.Status, traj.status)


def _arm_named_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.arm_command_feedback.named_arm_position_feedback.status
    return _read(sf.ARM_STOW_FEEDBACK, NamedArmPositionsCommand.Feedback.Status, status)


def _arm_cartesian_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.arm_command_feedback.arm_cartesian_feedback.status
    return _read(sf.ARM_CARTESIAN_FEEDBACK, ArmCartesianCommand.Feedback.Status, status)


def _gripper_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.gripper_command_feedback.claw_gripper_feedback.status
    return _read(sf.GRIPPER_FEEDBACK, ClawGripperCommand.Feedback.Status, status)


def _pull_done(ends: float) -> Callable[[Any], Reading]:
    """A position-controlled pull has no 'done' status: it has worked when it ran until `ends` without the arm
    getting stuck or the grasp slipping."""

    def read(fb: Any) -> Reading:
        status = fb.full_body_feedback.constrained_manipulation_feedback.status
        code, name = _read(sf.CONSTRAINED_MANIPULATION_FEEDBACK, ConstrainedManipulationCommand.Feedback.Status, status)
        if code is None and time.monotonic() >= ends:
            return SkillCode.NONE, name
        return code, name

    return read


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


def waypoint_nodes(entries: Mapping[str, str], waypoints: Mapping[str, str]) -> dict[str, str]:
    """GraphNav waypoint id -> the node bound to it (entries: node -> the site file's waypoint name)."""
    out: dict[str, str] = {}
    for node, name in sorted(entries.items()):
        try:
            out.setdefault(resolve_waypoint(name, waypoints), node)
        except TargetError:
            continue
    return out
