"""spot_skill_server: the skill server of robot `spot`, a Boston Dynamics Spot with an arm, through bosdyn-client.

It serves the same `execute_skill` action and `describe_skills` service as the simulated robot (SkillServer).
A request becomes a program of robot primitives (sayplan_spot.programs, checked against the live scene
graph and the site file before the robot moves); the program runs on one worker thread that owns every
blocking SDK call, while the skill's coroutine awaits the worker's end (its future wakes the executor through a
guard condition, as each progress report does to be relayed as feedback), so no executor thread ever blocks on
the robot and nothing polls. Cancel sends a stop command at once and wakes the worker through
the goal's own stop event (made when the goal is accepted, never cleared), so a cancel that arrives before the
program starts ends the goal `canceled` with no motion. A motion it stopped ends only once the robot reports it
stands still (`stop_timeout_s`; else a latched robot fault, Session.stopped), as the ARCL and Nav2 paths confirm
theirs.

The robot login comes from the environment variables named by `username_env` / `password_env` (as in Boston
Dynamics' own examples: BOSDYN_CLIENT_USERNAME, BOSDYN_CLIENT_PASSWORD); it is never a parameter and never
logged. The node is managed (see the class): configure opens the session, activate takes the lease (e-stop
checked), and nothing powers the robot on or stands it but the operator's `~/stand_up`; deactivate (and a
signal) stops a skill under way (a stop command, as a cancel sends), then it sits, powers off and returns the
lease.

Faults (SkillServer's latch): a robot fault latches, and no skill powers the motors on or stands the robot,
ever: motors found off are `not_powered` (latched). The operator clears the fault (`~/clear_fault`: e-stop,
lease, behaviour faults, motors and the gripper are re-checked, nothing moves), then powers on and stands the
robot with `~/stand_up` (std_srvs/Trigger), a separate, explicit step. A skill that closes the claw on
something (pickup, open, close) is refused before any motion unless both the scene graph and the gripper say
the hand is empty; a claw that will not let go of a handle is a robot fault and the arm is left where it is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future as ThreadFuture
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError  # not the builtin before Python 3.11 (Humble)
from dataclasses import dataclass, field
from typing import Any

from std_srvs.srv import Trigger

from sayplan_core.diagnostics import Status
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.llm.selection import LlmConfig, make_backend
from sayplan_core.llm.types import LlmError
from sayplan_core.outcomes import SkillCode
from sayplan_core.perception.vlm import VlmAugmenter
from sayplan_core.robots.fault_latch import Check
from sayplan_core.robots.navigation import TargetError
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_ros.goals import StopEvent, Wakeup
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.parameters import current_options
from sayplan_ros.runner import run_nodes
from sayplan_ros.skill_server import SkillContext, SkillServer
from sayplan_spot.plugin import SpotRobotOptions
from sayplan_spot.programs import (
    GRASPING_ROLES,
    SPOT_ROLES,
    Articulate,
    Capture,
    Grasp,
    Place,
    SpotBelief,
    SpotOptions,
    SpotProgram,
    SpotSite,
    compile_skill,
    describe,
    hand_refusal,
    skill_update,
)

#: How long stopping the node waits for the worker (a connection under way, then sitting and powering off), on top
#: of connect_timeout_s (the bound of the power-off's own wait), seconds.
SHUTDOWN_MARGIN_S = 5.0


@dataclass
class _Progress:
    """What the worker is doing, for the skill's feedback (written by the worker, read by the coroutine)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    status: str = ""
    value: float = 0.0
    version: int = 0
    changed: Callable[[], None] = lambda: None  # wakes the relay (a guard condition's trigger)

    def set(self, status: str, value: float | None = None) -> None:
        with self.lock:
            self.status = status
            if value is not None:
                self.value = value
            self.version += 1
        self.changed()

    def read(self) -> tuple[int, str, float]:
        with self.lock:
            return self.version, self.status, self.value


@dataclass
class _Outcome:
    code: SkillCode
    message: str
    pose: Any = None
    off_course: bool = False
    revealed: GraphUpdate | None = None
    held: bool | None = None  # the gripper holds something at the end (None: not read, or not relevant)
    missing: bool = False  # a grasp where the object should be found nothing there
    hand_used: bool = False  # a grasp, put-down or handle pull started: only then can the gripper show its change


class SpotSkillServer(SkillServer):
    """Managed (sayplan_ros.lifecycle): configure checks the settings and the login and opens an SDK session (log
    in, time sync, the map; no lease); activate takes the robot: the e-stop checked and the body lease acquired
    (never powered on or stood up: `~/stand_up` is the operator's step); deactivate stops the robot
    (SkillServer.stop_robot), sits and powers off (`power_off_on_exit`) and returns the lease; cleanup closes
    the session and the worker threads."""

    def __init__(self, node_name: str = "spot_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_options(SpotRobotOptions)
        self.stand_up_service = f"{self.get_fully_qualified_name()}/stand_up"
        self.robot: Any = None
        self._running: ThreadFuture[_Outcome] | None = None  # the program on the worker, while a skill runs
        self._destroyed = False
        self._worker: ThreadPoolExecutor | None = None
        #: The VLM call of a look runs here, so a cancel does not wait for the VLM's answer (which is dropped).
        self._vlm_pool: ThreadPoolExecutor | None = None
        self._follower = GraphFollower(self, self._group)
        self._checked_site = False
        self.waypoint_to_node: dict[str, str] = {}
        self.create_service(Trigger, "~/stand_up", self._on_stand_up, callback_group=self._group)

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        opts = self.read_options(SpotRobotOptions)
        try:
            from sayplan_spot.robot import Limits, SpotConfig, SpotRobot, waypoint_nodes
        except ImportError as exc:
            raise ValueError(
                f"robot spot needs the Spot SDK (pip install -r requirements/spot.txt: bosdyn-client 5.2.0): {exc}"
            ) from None
        self._limits_class, self._waypoint_nodes = Limits, waypoint_nodes
        user_env, password_env = opts.username_env, opts.password_env
        username, password = os.environ.get(user_env, ""), os.environ.get(password_env, "")
        if not username or not password:
            raise ValueError(f"set {user_env} and {password_env} to the robot's login (they are never logged)")
        site_file = opts.site_file
        self.site = SpotSite.load(site_file) if site_file else SpotSite()
        self.actions = load_action_set(opts.action_set)
        missing = self.actions.without_program(SPOT_ROLES)
        if missing:
            raise ValueError(
                f"robot spot has no program for {', '.join(missing)} of the action set {opts.action_set}: use "
                "spot, spot_lookplangraph, or a set that extends one of them"
            )
        self.belief = SpotBelief()
        self.vlm = self._vlm(opts)
        config = SpotConfig(
            hostname=opts.hostname,
            port=opts.port,
            ca_cert_file=opts.ca_cert_file,
            username=username,
            password=password,
            take_lease=opts.take_lease,
            lease_check_in_s=opts.lease_check_in_s,
            connect_timeout_s=opts.connect_timeout_s,
            rpc_timeout_s=opts.rpc_timeout_s,
        )
        log = self.get_logger()
        self.robot = SpotRobot(config, log.info, log.warning)
        self.robot.power_hint = (
            f"; an operator powers it on: clear the fault ({self.fault_latch.clear_hint}), then "
            f"ros2 service call {self.stand_up_service} std_srvs/srv/Trigger"
        )
        self._power_off = opts.power_off_on_exit
        self._destroyed = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spot")
        self._vlm_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spot-vlm")
        self._connect(lease=False)
        self.serve(SkillCatalog.of("spot", [self.actions]))

    def activate(self) -> None:
        """Take the robot: e-stop checked, lease acquired; the motors stay as they are (no power-on, no stand)."""
        self.robot.shutting_down.clear()
        self._connect(lease=True)

    def deactivate(self) -> None:
        """Stop (the shutdown's path), then sit, power off (`power_off_on_exit`) and return the lease."""
        self.robot.request_shutdown()  # a stand under way is not followed by another one
        super().deactivate()
        self._release()

    @property
    def teardown_bound_s(self) -> float:
        """How long destroying this node may take (sayplan_ros.runner): the sit, power-off and lease return."""
        return self.robot.config.connect_timeout_s + SHUTDOWN_MARGIN_S if self.robot is not None else 0.0

    def cleanup(self) -> None:
        self._destroyed = True
        self.goal_stop.set()  # a skill still waiting to start does not start
        if self.robot is not None and self.robot.connected:
            self._release()  # a node cleaned up without a deactivate (destroyed) returns the lease here
        for pool in (self._worker, self._vlm_pool):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._worker = self._vlm_pool = None
        super().cleanup()

    def _connect(self, lease: bool) -> None:
        """On the worker, bounded: the session (configure) or the session and the lease (activate)."""
        assert self._worker is not None
        job = self._worker.submit(self.robot.connect, self._limits(), False, lease)
        try:
            job.result(timeout=self.robot.config.connect_timeout_s + SHUTDOWN_MARGIN_S)
        except FutureTimeoutError:
            raise RuntimeError(
                f"Spot at {self.robot.config.hostname} did not answer within "
                f"{self.robot.config.connect_timeout_s + SHUTDOWN_MARGIN_S:g} s"
            ) from None
        except Exception as exc:
            raise RuntimeError(f"Spot is not ready: {getattr(exc, 'message', exc)}") from None
        if lease:
            self._bind_waypoints()

    def _release(self) -> None:
        """Sit, power off (as set) and return the lease, bounded; the session closes with it."""
        if self._worker is None or self.robot is None:
            return
        self.robot.request_shutdown()
        if self.robot.connected:  # best effort, whatever may still move
            self.robot.stop()
        wait_s = self.robot.config.connect_timeout_s + SHUTDOWN_MARGIN_S
        try:
            self._worker.submit(self.robot.shutdown, self._power_off, self._limits()).result(timeout=wait_s)
        except FutureTimeoutError:
            self.get_logger().error(
                f"Spot did not sit, power off and return the lease within {wait_s:g} s: check the robot"
            )
        except Exception as exc:
            self.get_logger().error(f"shutting Spot down failed: {exc}")

    # ------------------------------------------------------------------ setup
    def _vlm(self, opts: SpotRobotOptions) -> VlmAugmenter | None:
        backend_name = opts.vlm_llm
        replay = opts.vlm_replay_transcript
        if not backend_name and not replay:
            return None
        config = LlmConfig(
            backend="replay" if replay else backend_name,
            model=opts.vlm_model,
            base_url=opts.vlm_base_url,
            api_key_env=opts.vlm_api_key_env,
            replay_path=replay,
        )
        try:
            backend, note = make_backend(config)
        except LlmError as exc:
            raise ValueError(f"vlm_llm: {exc}") from None
        self.get_logger().info(f"look_on / look_inside images go to the VLM: {note}")
        return VlmAugmenter(backend)

    def _limits(self) -> Any:
        opts = current_options(self, SpotRobotOptions)
        return self._limits_class(
            feedback_period_s=opts.feedback_period_s,
            navigate_timeout_s=opts.navigate_timeout_s,
            arm_timeout_s=opts.arm_timeout_s,
            max_walk_m=opts.max_walk_m,
            handle_pull_s=opts.handle_pull_s,
            stop_timeout_s=opts.stop_timeout_s,
        )

    def _bind_waypoints(self) -> None:
        entries = {node: t.name for node, t in self.site.binding.entries.items() if t.name}
        self.waypoint_to_node = self._waypoint_nodes(entries, self.robot.waypoints)
        unknown = sorted(set(entries) - set(self.waypoint_to_node.values()))
        if unknown:
            self.get_logger().warning(
                f"site file: no waypoint in the robot's map for {', '.join(unknown)}; those nodes are refused"
            )

    # ------------------------------------------------------------------ skills
    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        opts = current_options(self, SpotRobotOptions)
        graph = await self.graph_for_step(self._follower, context, opts.graph_wait_s)
        if isinstance(graph, SkillResult):
            return graph
        if not self._checked_site:
            self._checked_site = True
            for node in self.site.check_against(graph):
                self.get_logger().warning(f"site file names '{node}', which is not in the scene graph")
        options = SpotOptions(
            standoff_m=opts.standoff_m,
            place_height_m=opts.place_height_m,
            image_source=opts.image_source,
        )
        try:
            program = compile_skill(step, graph, self.site, self.belief.accessed, options, self.actions)
        except TargetError as exc:
            return SkillResult(False, SkillCode.INVALID_TARGET, f"{step}: {exc}")
        full_hand = hand_refusal(step, graph, self.actions)
        if full_hand:
            return SkillResult(False, SkillCode.INVALID_TARGET, full_hand)
        self.get_logger().info(f"{step}: {program.describe()}")
        self.robot.stop_sent.clear()  # before the check below: a cancel after it sets it again
        if context.cancel_requested() or self._destroyed or self._worker is None:
            return SkillResult(False, SkillCode.CANCELED, f"{step} canceled before the robot moved")
        seen = [-1]
        relaying = [True]  # until the program ended: no feedback after it

        def relay() -> None:  # on an executor thread, woken by the worker's progress
            version, status, value = progress.read()
            if relaying[0] and version != seen[0] and status:
                seen[0] = version
                context.feedback(status, value)

        guard = self.create_guard_condition(relay, callback_group=self._group)
        progress = _Progress(changed=guard.trigger)
        limits = self._limits()
        finished = Wakeup(self, self._group)
        try:
            job = self._worker.submit(self._run_program, program, graph, limits, progress, context.stop)
            self._running = job
            job.add_done_callback(lambda _job: finished.set())
            await finished.wait(None)  # the worker's program is bounded by the robot's own timeouts
        finally:
            relaying[0] = False
            finished.close()
            self.destroy_guard_condition(guard)
        outcome = job.result()
        self._running = None
        places = [p.point for p in program.primitives if isinstance(p, Place)]
        update = skill_update(
            graph, step, self.actions, self.belief, outcome.code, outcome.pose, outcome.off_course,
            dict(self.waypoint_to_node), places[-1] if places else None, held=outcome.held, missing=outcome.missing,
            hand_acted=outcome.hand_used,
        )  # fmt: skip
        if outcome.revealed is not None:
            update.upsert.extend(outcome.revealed.upsert)
        if outcome.code is SkillCode.NONE:
            self.get_logger().info(outcome.message)
        else:
            self.get_logger().warning(outcome.message)
        return SkillResult(outcome.code is SkillCode.NONE, outcome.code, outcome.message, update)

    def _run_program(
        self, program: SpotProgram, graph: SceneGraph, limits: Any, progress: _Progress, stop: StopEvent
    ) -> _Outcome:
        """On the worker: make the robot ready, run the primitives, then read where it is."""
        from sayplan_spot.robot import SpotError

        step = program.step
        code, message = SkillCode.NONE, f"{step} done"
        revealed: GraphUpdate | None = None
        missing = False
        hand_used = False  # a grasp or put-down started: what the gripper holds at the end is worth reading
        total = max(len(program.primitives), 1)
        try:
            if program.primitives:
                progress.set("checking the robot", 0.0)
                self.robot.ready(limits)  # never powers on or stands: motors off is not_powered
                if not self.waypoint_to_node and self.site.binding.entries:
                    self._bind_waypoints()
                if program.kind in GRASPING_ROLES and self.robot.read_gripper(f"before {step}"):
                    raise SpotError(
                        SkillCode.ROBOT_FAULT,
                        "refused before the robot moved: the gripper holds something the scene graph says it "
                        "does not hold; free the gripper",
                    )
            for index, primitive in enumerate(program.primitives):
                if stop.is_set():
                    raise SpotError(SkillCode.CANCELED, "canceled")
                progress.set(describe(primitive), index / total)
                hand_used = hand_used or isinstance(primitive, (Grasp, Place, Articulate))
                image = self.robot.run(primitive, stop, limits, progress.set)
                if isinstance(primitive, Capture) and image is not None:
                    revealed, note = self._look(graph, primitive, image, stop)
                    message = f"{step} done: {note}"
        except SpotError as fault:
            code, message, missing = fault.code, f"{step} failed: {fault.message}", fault.missing
        except LlmError as exc:
            code, message = SkillCode.SKILL_FAILED, f"{step} failed: the VLM could not describe the image: {exc}"
        except Exception as exc:  # a bug here must not leave the robot's state unread
            code, message = SkillCode.INTERNAL_ERROR, f"{step} failed: {type(exc).__name__}: {exc}"
        if code is not SkillCode.NONE and self.robot.connected:
            # e-stop, lease lost, motors off: a robot fault, not a replan; under a cancel too (the operator who hits
            # the e-stop and cancels the task): the goal still ends CANCELED, but the fault latches (the base class)
            behind = self.robot.fault_behind()
            if behind is not None:
                code, message = behind.code, f"{step} failed: {behind.message} ({message})"
        pose = self.robot.pose() if self.robot.connected else None
        off_course = program.kind == "navigate" and code is not SkillCode.NONE
        # what the gripper holds after every skill that ran on the robot (it can also slip out on a walk); after a
        # grasp, put-down or handle pull a gripper that cannot be read is a robot fault: what it holds is unknown
        held: bool | None = None
        if hand_used and self.robot.connected:
            try:
                held = self.robot.read_gripper(f"after {step}")
            except SpotError as unread:
                if not code.latches:
                    after = "" if code is SkillCode.NONE else f" ({message})"
                    code, message = unread.code, f"{step} failed: {unread.message}{after}"
        elif program.primitives:
            held = self._holding()
        return _Outcome(code, message, pose, off_course, revealed, held, missing, hand_used)

    def _holding(self) -> bool | None:
        """What the gripper says now (manipulator_state.is_gripper_holding_item); None when it cannot be read."""
        if not self.robot.connected:
            return None
        try:
            return bool(self.robot.holding())
        except Exception as exc:
            self.get_logger().warning(f"could not read the gripper: {exc}")
            return None

    def _look(
        self, graph: SceneGraph, capture: Capture, image: bytes, stop: StopEvent
    ) -> tuple[GraphUpdate | None, str]:
        """On the worker: hand the image to the VLM (on its own thread) and wait for the answer or the goal's stop,
        whichever comes first; a canceled look ends at once and the VLM's late answer is dropped."""
        from sayplan_spot.robot import SpotError

        vlm = self.vlm
        if vlm is None:
            return (
                None,
                f"captured {len(image)} bytes from {capture.source}; no VLM configured (vlm_llm), nothing named",
            )
        assert self._vlm_pool is not None  # configured: a skill runs only then
        job = self._vlm_pool.submit(vlm.look, graph, capture.node, capture.relation, image)
        woken = threading.Event()  # by the VLM's answer or the goal's stop (the VLM call is bounded itself)
        job.add_done_callback(lambda _job: woken.set())
        forget = stop.on_set(woken.set)
        try:
            woken.wait()
        finally:
            forget()
        if not job.done():
            job.cancel()
            raise SpotError(SkillCode.CANCELED, "canceled while the VLM described the image (its answer is dropped)")
        update = job.result()
        names = ", ".join(u.node.id for u in update.upsert) or "nothing new"
        return update, f"the VLM sees {names}"

    def on_cancel(self) -> None:
        self.robot.stop()  # the goal's stop event is already set (SkillServer)

    # ------------------------------------------------------------------ operator and shutdown
    async def _on_worker(self, call: Any, *args: Any) -> Any:
        """Run a blocking robot call on the worker (after any skill) and wait for it on ROS timers."""
        if self._worker is None:
            raise RuntimeError(f"{self.get_name()} is not configured")
        job = self._worker.submit(call, *args)
        finished = Wakeup(self, self._group)
        job.add_done_callback(lambda _job: finished.set())
        await finished.wait(None)  # every robot call is bounded by the SDK's own timeouts
        return job.result()

    def robot_health(self) -> list[Status]:
        """/diagnostics: the session, lease, e-stop, motors and gripper as the robot last told (no RPC)."""
        robot = self.robot  # None before configure
        return [] if robot is None else list(robot.health())

    async def check_robot(self) -> Check:
        """For the operator's clear_fault: e-stop, lease, behaviour faults, motors, and whether the gripper holds
        what the scene graph says. Motors off pass (a skill never powers on; `~/stand_up` does, after the clear);
        anything in the gripper the graph does not hold fails. Never moves the robot."""
        ok, found, holding = await self._on_worker(self.robot.check, self._limits())
        graph, _ = self._follower.latest()
        in_hand = graph.held_object() if graph is not None else None
        if holding and in_hand is None:
            ok = False
            found.append("the gripper holds something the scene graph does not: free it by hand")
        elif holding is False and in_hand is not None:
            found.append(
                f"the scene graph has {in_hand} in the hand but the gripper is empty (the next skill reports it)"
            )
        return Check(ok, "; ".join(found))

    async def _on_stand_up(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """The operator's explicit step to power the motors on and stand (after a cleared fault, or when the node
        could not at start-up): refused while a fault is latched or a skill runs."""
        if not self.is_active:
            response.success = False
            response.message = f"{self.get_name()} is not active (lifecycle): it holds no lease to stand with"
            return response
        fault = self.fault_latch.fault
        if fault is not None:
            response.success = False
            response.message = f"a fault is latched ({fault.describe()}); clear it first: {self.fault_latch.clear_hint}"
            return response
        if self._single.busy:
            response.success, response.message = False, "a skill is running; cancel it first"
            return response
        from sayplan_spot.robot import SpotError

        try:
            response.message = await self._on_worker(self.robot.stand_up, self._limits())
            response.success = True
            self.get_logger().info(f"stand_up by the operator: {response.message}")
        except SpotError as exc:
            response.success, response.message = False, exc.message
            self.get_logger().warning(f"stand_up refused: {exc.message}")
        return response

    def stop_for_shutdown(self, timeout_s: float) -> bool:
        """SIGINT/SIGTERM: first tell the robot code the node is stopping (a stand-up under way does not stand up
        afterwards), then stop as the base class does."""
        if self.robot is not None:
            self.robot.request_shutdown()
        return super().stop_for_shutdown(timeout_s)

    def stop_motion(self, timeout_s: float) -> bool:
        """On SIGINT/SIGTERM or deactivate (SkillServer.stop_robot, a plain thread): send Spot's stop and wait for
        the robot to confirm it (the stop in force, the body still), at most `timeout_s`."""
        if self.robot is None or not self.robot.connected:
            return True
        return bool(self.robot.stop_and_confirm(timeout_s))


def main(args: list[str] | None = None) -> None:
    run_nodes("spot_skill_server", lambda: [SpotSkillServer()], args)
