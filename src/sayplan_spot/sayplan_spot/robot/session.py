"""Spot's session: log in (credentials from the environment, never logged), time sync, acquire the body lease and
keep it alive, check the e-stop, power the motors on, stand; at the end sit, power off and return the lease. Also
what every concern reads through it: the robot's state, the GraphNav map and where the robot is on it, and the
stop command a cancel sends while a primitive runs."""

from __future__ import annotations

import math
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bosdyn.client
from bosdyn.api.basic_command_pb2 import RobotCommandFeedbackStatus, SitCommand, StandCommand
from bosdyn.api.robot_state_pb2 import EStopState, PowerState
from bosdyn.client import frame_helpers, math_helpers
from bosdyn.client.auth import InvalidLoginError
from bosdyn.client.estop import EstopClient
from bosdyn.client.exceptions import LeaseUseError, RpcError
from bosdyn.client.graph_nav import GraphNavClient
from bosdyn.client.image import ImageClient
from bosdyn.client.lease import Error as LeaseWalletError
from bosdyn.client.lease import LeaseClient, LeaseKeepAlive, ResourceAlreadyClaimedError
from bosdyn.client.manipulation_api_client import ManipulationApiClient
from bosdyn.client.power import PowerClient
from bosdyn.client.robot_command import RobotCommandBuilder, RobotCommandClient
from bosdyn.client.robot_state import RobotStateClient
from bosdyn.client.world_object import WorldObjectClient

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.navigation import TargetError
from sayplan_spot import failures as sf
from sayplan_spot.programs import RobotPose, resolve_waypoint
from sayplan_spot.robot.commands import Limits, Reading, finished, read, wait
from sayplan_spot.robot.errors import SpotError, behaviour_faults, fault_from
from sayplan_spot.robot.seen import SpotSeen

#: A body slower than this (m/s, robot state velocity_of_body_in_odom) counts as stopped.
STILL_MPS = 0.05


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


class Session:
    def __init__(self, config: SpotConfig, info: Callable[[str], None], warn: Callable[[str], None]) -> None:
        self.config = config
        self.info, self.warn = info, warn
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
        self.serial = ""
        #: Appended to `not_powered` messages: how the operator powers the robot on (set by the skill server).
        self.power_hint = ""
        #: Set when the node stops (a signal, destroy_node): a power-on under way is not followed by a stand.
        self.shutting_down = threading.Event()
        self._stand_gate = threading.Lock()  # held from the last shutting_down check until the stand is sent
        self._stood = False  # this node sent a stand that completed (else there is nothing to sit down from)
        self.seen = SpotSeen()  # what the robot last said of its e-stop, motors and gripper (for diagnostics)

    @property
    def connected(self) -> bool:
        return self.robot is not None

    @property
    def lease_problem(self) -> str:
        """What the keep-alive last found wrong with the lease ('' while nothing), read without asking the robot."""
        with self._lock:
            return self._lease_problem

    @property
    def keeping_lease(self) -> bool:
        """The keep-alive runs (the lease was acquired in this session and not yet returned)."""
        return self._keepalive is not None

    # ------------------------------------------------------------------ connecting
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
                self.info(f"connected to Spot {self.serial} at {cfg.hostname}: session only (no lease)")
                return
            if self.seen.note("estopped", robot.is_estopped(timeout=rpc)):
                raise SpotError(SkillCode.ESTOPPED, f"{doing}: the robot is e-stopped; release the e-stop first")
            lease_client = self.client(LeaseClient)
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
        self.info(f"connected to Spot {self.serial} at {cfg.hostname}: lease held, {done}")

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
            self.warn(f"lease check-in failed ({type(exc).__name__}); retrying")

    def client(self, kind: Any) -> Any:
        return self.robot.ensure_client(kind.default_service_name)

    def command(
        self,
        command: Any,
        doing: str,
        limits: Limits,
        stop: threading.Event,
        timeout_s: float,
        done: Callable[[Any], Reading],
        gate: threading.Lock | None = None,
    ) -> bool:
        """Issue a robot command and follow its feedback until `done` says NONE (or a failure). With `gate`, the
        command is sent under that lock, and not at all when `stop` is set by then (returns False)."""
        client = self.client(RobotCommandClient)
        rpc = self.config.rpc_timeout_s
        try:
            if gate is None:
                command_id = client.robot_command(command, end_time_secs=None, timeout=rpc)
            else:
                with gate:
                    if stop.is_set():
                        return False
                    command_id = client.robot_command(command, end_time_secs=None, timeout=rpc)
        except Exception as exc:
            raise fault_from(exc, doing) from None
        deadline = time.monotonic() + timeout_s
        while True:
            response = client.robot_command_feedback(command_id, timeout=rpc)
            if finished(response.feedback, done, stop, doing):
                return True
            wait(stop, limits, deadline, doing)

    def refresh_map(self) -> None:
        graph = self.client(GraphNavClient).download_graph(timeout=self.config.rpc_timeout_s)
        self.waypoints = {w.id: w.annotations.name for w in graph.waypoints}

    def waypoint_id(self, name: str) -> str:
        try:
            return resolve_waypoint(name, self.waypoints)
        except TargetError:
            self.refresh_map()  # a map uploaded since we connected
            return resolve_waypoint(name, self.waypoints)

    # ------------------------------------------------------------------ power, readiness, faults
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
            sent = self.command(RobotCommandBuilder.synchro_stand_command(), "standing up", limits,
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
            faults = behaviour_faults(state)
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
            self.warn(f"{lease_problem}; connecting again")
            self.disconnect()
        if not self.connected:
            self.connect(limits, stand=False)

    def robot_state(self) -> Any:
        return self.client(RobotStateClient).get_robot_state(timeout=self.config.rpc_timeout_s)

    def stand_up(self, limits: Limits) -> str:
        """The operator's explicit step after a fault was cleared: check the robot as `ready` does (but motors
        may be off), then power on and stand. Raises SpotError."""
        self._reconnect_if_lease_lost(limits)
        try:
            if self.robot.is_estopped(timeout=self.config.rpc_timeout_s):
                raise SpotError(SkillCode.ESTOPPED, "the robot is e-stopped; release the e-stop first")
            faults = behaviour_faults(self.robot_state())
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
            faults = behaviour_faults(state)
            ok = ok and not faults
            found.append(f"behaviour faults: {faults}" if faults else "behaviour faults: none")
            powered = self.seen.note("powered", state.power_state.motor_power_state == state.power_state.STATE_ON)
            found.append("motors: on" if powered else f"motors: off (skills will not power them on{self.power_hint})")
            holding = self.seen.note("holding", bool(state.manipulator_state.is_gripper_holding_item))
            found.append(f"gripper: {'holding something' if holding else 'empty'}")
            speed = body_speed(state)
            ok = ok and speed < STILL_MPS  # a stop never confirmed: the body must be seen still before anything moves
            found.append("body: still" if speed < STILL_MPS else f"body: moving at {speed:.2f} m/s (stop it first)")
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
            self.client(LeaseClient).retain_lease(keepalive.lease_wallet.get_lease(), timeout=self.config.rpc_timeout_s)
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
            return behaviour_faults(self.robot_state())
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

    # ------------------------------------------------------------------ stopping
    def stop(self, timeout_s: float | None = None) -> int | None:
        """Stop all motion now (cancel). Safe to call from another thread while a primitive runs. Returns the
        stop command's id (None when it could not be sent)."""
        timeout = min(self.config.rpc_timeout_s, timeout_s) if timeout_s is not None else self.config.rpc_timeout_s
        sent: int | None = None
        try:
            if self.robot is not None:
                sent = int(
                    self.client(RobotCommandClient).robot_command(
                        RobotCommandBuilder.stop_command(), timeout=max(timeout, 0.05)
                    )
                )
        except Exception as exc:
            self.warn(f"the stop command failed: {fault_from(exc, 'stopping').message}")
        finally:
            self.stop_sent.set()
        return sent

    def stop_and_confirm(self, timeout_s: float) -> bool:
        """Send the stop command and wait, at most `timeout_s`, until the robot confirms it stands still
        (`confirm_still`). True too when there is no session (nothing to stop), and when the robot refuses the stop
        because it is e-stopped (motor power cut: it takes no command) and reports itself still."""
        if self.robot is None:
            return True
        deadline = time.monotonic() + timeout_s
        command_id = self.stop(timeout_s)
        problem = self.confirm_still(command_id, deadline - time.monotonic())
        if problem:
            self.warn(f"the stop was not confirmed: {problem}")
        return not problem

    def confirm_still(self, command_id: int | None, timeout_s: float) -> str:
        """Ask the robot, until it answers that it stands still or `timeout_s` has passed (at least once): '' when
        it did, else why not. Still means the body slower than STILL_MPS (robot state velocity_of_body_in_odom) and
        the stop command `command_id` still in force (its feedback STATUS_PROCESSING, not overridden by another
        command), or the robot e-stopped or its motors off (robot state estop_states, power_state: nothing drives
        the legs; a robot e-stopped refuses the stop command itself, STATUS_NOT_POWERED_ON). `command_id` None: the
        robot did not accept a stop, so only the e-stop or the motors being off can show it stopped. Blocks: from
        the worker or a plain thread, never a callback."""
        deadline = time.monotonic() + timeout_s
        seen = "the robot did not answer"
        while True:
            left = deadline - time.monotonic()
            rpc = max(min(self.config.rpc_timeout_s, left), 0.05)
            try:
                in_force = False
                if command_id is not None:
                    feedback = self.client(RobotCommandClient).robot_command_feedback(command_id, timeout=rpc).feedback
                    in_force = feedback.full_body_feedback.status == RobotCommandFeedbackStatus.STATUS_PROCESSING
                state = self.client(RobotStateClient).get_robot_state(timeout=rpc)
                speed = body_speed(state)
                cut = estop_cut(state)
                if speed < STILL_MPS and (in_force or cut):
                    return ""
                seen = f"the body at {speed:.2f} m/s" + (
                    "" if command_id is None or in_force else ", the stop command no longer in force"
                )
            except Exception as exc:
                seen = fault_from(exc, "confirming the stop").message
            if time.monotonic() >= deadline:
                break
            time.sleep(min(0.05, max(deadline - time.monotonic(), 0.0)))  # the worker or a plain thread
        if command_id is None:
            return f"the robot did not accept the stop command ({seen}): it may still be moving"
        return (
            f"the robot did not report that it stands still within {timeout_s:g} s of the stop command ({seen}): "
            "it may still be moving"
        )

    def stopped(self, stop: threading.Event, timeout_s: float) -> str:
        """After a cancel or a deadline, before anything else is sent to the robot: '' once it was told to stop and
        reports it stands still, else why not (a robot fault: it may still be moving). The cancel's own stop
        command is waited for first (the clean-up that follows must not land before it and be overridden by it);
        then one more stop is sent, the last command the robot gets even if a command crossed the cancel's stop,
        and confirmed (`confirm_still`, at most `timeout_s`, the per-goal `stop_timeout_s`)."""
        if stop.is_set():
            self.stop_sent.wait(timeout=3.0)
        return self.confirm_still(self.stop(), timeout_s)

    # ------------------------------------------------------------------ ending
    def disconnect(self) -> None:
        """Stop the keep-alive (it returns the lease if it is still ours) and close the SDK's threads and channels."""
        keepalive, self._keepalive = self._keepalive, None
        if keepalive is not None:
            try:
                keepalive.shutdown()
            except Exception as exc:
                self.warn(f"returning the lease failed: {type(exc).__name__}")
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
        if power_off and lease_ok and self.estopped():
            self.info("the robot is e-stopped: its motors are off, nothing to sit down or power off")
        elif power_off and lease_ok:
            try:
                if self._stood:  # else nothing to sit from; the safe power-off below sits a standing robot anyway
                    self.command(RobotCommandBuilder.synchro_sit_command(), "sitting down", limits,
                                 threading.Event(), self.config.connect_timeout_s, _sit_done)  # fmt: skip
                self.robot.power_off(cut_immediately=False, timeout_sec=self.config.connect_timeout_s,
                                     update_frequency=1.0 / limits.feedback_period_s,
                                     timeout=self.config.rpc_timeout_s)  # fmt: skip
                self.info("sat down and powered the motors off")
            except Exception as exc:
                self.warn(f"sitting and powering off failed: {fault_from(exc, 'shutting down').message}")
        self.disconnect()

    # ------------------------------------------------------------------ what the robot knows
    def pose(self) -> RobotPose | None:
        """The robot's GraphNav localization in the map (seed) frame; None when it is not localized."""
        try:
            loc = self.client(GraphNavClient).get_localization_state(timeout=self.config.rpc_timeout_s).localization
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
        state = self.client(GraphNavClient).get_localization_state(timeout=self.config.rpc_timeout_s)
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


def _stand_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.mobility_command_feedback.stand_feedback.status
    return read(sf.STAND_FEEDBACK, StandCommand.Feedback.Status, status)


def _sit_done(fb: Any) -> Reading:
    status = fb.synchronized_feedback.mobility_command_feedback.sit_feedback.status
    return read(sf.SIT_FEEDBACK, SitCommand.Feedback.Status, status)


def body_speed(state: Any) -> float:
    """How fast the body moves over the ground (robot state kinematic_state.velocity_of_body_in_odom), m/s."""
    linear = state.kinematic_state.velocity_of_body_in_odom.linear
    return math.hypot(linear.x, linear.y)


def estop_cut(state: Any) -> bool:
    """Nothing drives the legs: an e-stop reports STATE_ESTOPPED (robot_state.proto EStopState), or the motors are
    off (PowerState STATE_OFF)."""
    if any(estop.state == EStopState.STATE_ESTOPPED for estop in state.estop_states):
        return True
    return bool(state.power_state.motor_power_state == PowerState.STATE_OFF)
