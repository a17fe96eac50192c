"""franka_omron_skill_server: SayPlan's skills on a Franka arm mounted on an Omron LD base.

Each execute_skill goal becomes a program of primitives (sayplan_franka_omron.programs),
checked against the robot's live scene graph, the site file and the taught motions
before anything moves. The base is driven over ARCL (`navigation_backend: arcl`) or
through Nav2 (`nav2`); the arm replays taught motions on a FollowJointTrajectory
controller and the gripper takes franka_gripper's Grasp / Move / Homing goals. A cancel
stops whatever runs (ARCL `stop`, or a cancel of the running action goal). The result
carries the scene-graph update: the action set's effects after a success (or after a
failure that came once the skill's change was made: a pickup whose retreat is blocked
still holds the object), the agent's location from the base's localisation after a
failed drive. A failure or cancel with a handle in the fingers opens them before the
skill ends; if they will not open the skill ends robot_fault.

Fail-safe (issue 23): the hand is read back (franka_gripper's finger width) before a skill that closes the
fingers (pickup, open: refused before anything moves when something is between them) and after every
skill but `done` (a goto too: a held object may slip on the way), and the update says what the fingers
really hold (sayplan_core.robots.belief.reconcile_hand).
Every robot fault is latched by the base class (also one under a cancel); over ARCL, an e-stop, motors-disabled or
error broadcast between skills is latched by ArclBase, and a skill that moves the arm asks queryMotors first.
`check_robot` re-reads the hand against the graph, the base (ARCL queryMotors and status, after a `stop` confirmed
when a drive may still run; or the Nav2 server and its last goal ended) and the arm's servers and last goal; it
sends only stops and cancels. Every robot call has its own deadline (settings
`drive_timeout_s`, `arm_timeout_s`, `gripper_timeout_s`, `stop_timeout_s`, `arcl_timeout_s`). On SIGINT/SIGTERM
`stop_motion` sends ARCL `stop` and waits for `Stopped`, cancels the Nav2 goal and waits, and cancels the arm's
or gripper's goal (plus franka_gripper's stop while a gripper command runs), and so does a lifecycle deactivate;
`cleanup` (and `destroy_node`) sends them without waiting.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from sayplan_core.diagnostics import Status, link_status
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.belief import location_update, reconcile_hand, success_update
from sayplan_core.robots.binding import SiteBinding, Target
from sayplan_core.robots.fault_latch import Check
from sayplan_core.robots.navigation import Pose2D, TargetError, base_target, nearest_place, pose_of
from sayplan_core.robots.primitives import (
    Arm,
    Drive,
    DriveLimits,
    Grasp,
    HomeGripper,
    OpenGripper,
    Outcome,
    Primitive,
)
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_franka_omron.arcl_link import ArclBase
from sayplan_franka_omron.arm import FrankaArm
from sayplan_franka_omron.motions import TaughtMotions, hand_holds
from sayplan_franka_omron.plugin import FrankaOmronOptions
from sayplan_franka_omron.programs import (
    EMPTY_HAND_ROLES,
    FRANKA_ROLES,
    GripperSettings,
    ProgramError,
    RobotState,
    available_skills,
    effect_done,
    plan_skill,
    release_owed,
)
from sayplan_ros.clocks import steady_timer
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.navigation.action_call import sleep
from sayplan_ros.parameters import current_options
from sayplan_ros.runner import run_nodes
from sayplan_ros.skill_server import SkillContext, SkillServer

ROBOT = "franka_omron"


class Base(Protocol):
    def check(self, target: Target) -> None: ...
    async def drive(
        self,
        target: Target,
        feedback: Callable[[str, float], None],
        cancel_requested: Callable[[], bool],
        limits: DriveLimits | None = None,
    ) -> Outcome: ...
    async def locate(self) -> Pose2D | None: ...
    async def check_robot(self) -> tuple[bool, str]: ...
    async def motors_problem(self) -> Outcome | None: ...
    def cancel(self) -> None: ...
    def stop_and_wait(self, timeout_s: float) -> bool: ...
    def destroy(self) -> None: ...
    def health(self) -> list[Status]: ...


class Nav2Base:
    """The base through Nav2's NavigateToPose (any robot whose base runs Nav2). Each leg has its own deadline
    (`drive_s`): past it the goal is canceled and the leg ends `timeout`."""

    def __init__(self, server: FrankaOmronSkillServer, action: str, frame: str, behavior_tree: str) -> None:
        from sayplan_ros.navigation.nav2_client import Nav2Client

        self._server = server
        self._action = action
        self._client = Nav2Client(server, action, frame, behavior_tree, server.callback_group)
        self._idle = threading.Event()
        self._idle.set()

    def check(self, target: Target) -> None:
        pose_of(target)

    async def drive(
        self,
        target: Target,
        feedback: Callable[[str, float], None],
        cancel_requested: Callable[[], bool],
        limits: DriveLimits | None = None,
    ) -> Outcome:
        limits = limits or DriveLimits()
        options = self._server.options
        wait = options.driver_wait_s
        expired: list[bool] = []

        def expire() -> None:
            timer.cancel()
            if not expired:
                expired.append(True)
                self._client.cancel()

        timer = steady_timer(self._server, limits.drive_s + wait, expire, self._server.callback_group)
        self._idle.clear()
        try:
            outcome = await self._client.drive(
                pose_of(target),
                target.node,
                wait,
                self._server.sleep,
                feedback,
                cancel_requested,
                options.nav2_leg_timeout_s,
                options.nav2_cancel_timeout_s,
            )
        finally:
            self._server.destroy_timer(timer)
            self._idle.set()
        if expired and outcome.code is SkillCode.CANCELED:
            return Outcome(
                SkillCode.TIMEOUT, f"driving to {target.node} took longer than {limits.drive_s:g} s: Nav2 was canceled"
            )
        return outcome

    async def locate(self) -> Pose2D | None:
        return self._client.last_pose

    async def check_robot(self) -> tuple[bool, str]:
        """The navigator is up, and no goal this node sent may still drive the base (one whose cancel was never
        confirmed gets its cancel again, and the check fails until Nav2 ended it)."""
        ready = self._client.server_ready()
        found = f"base: Nav2's {self._action} server is {'up' if ready else 'not there'}"
        if self._client.moving:
            self._client.cancel_again()
            return False, f"{found}; a NavigateToPose goal it was sent has not ended (its cancel was sent again)"
        return ready, found

    async def motors_problem(self) -> Outcome | None:
        return None  # a Nav2 base reports its state through the navigator's results

    def health(self) -> list[Status]:
        ready = self._client.server_ready()
        return [link_status("base link", ready, f"Nav2's {self._action} server is {'up' if ready else 'not there'}")]

    def cancel(self) -> None:
        self._client.cancel()

    def stop_and_wait(self, timeout_s: float) -> bool:
        """Cancel the running NavigateToPose goal and wait, bounded, for the navigator to confirm (the shared client's
        `stop_and_wait`), then for this node's leg to end."""
        deadline = time.monotonic() + timeout_s
        stopped = self._client.stop_and_wait(timeout_s)
        return self._idle.wait(max(deadline - time.monotonic(), 0.0)) and stopped

    def destroy(self) -> None:
        if not self._idle.is_set():
            self._client.cancel()  # best effort: the node goes away while a leg runs
        self._client.destroy()


class FrankaOmronSkillServer(SkillServer):
    """Managed (sayplan_ros.lifecycle): configure checks the settings and files and connects (the ARCL link to the
    base, or the Nav2 client; the arm's and gripper's action clients); activate starts serving (nothing is
    powered or enabled: an ARCL base reports its motors before every arm skill); deactivate stops the base, arm
    and gripper (SkillServer.stop_robot); cleanup closes the ARCL link and destroys the clients."""

    def __init__(self, node_name: str = "franka_omron_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_options(FrankaOmronOptions)
        self._state = RobotState()
        self._canceling = False
        self._gripper_at_shutdown = False
        self._checked_graph = False
        self._base: Base | None = None
        self._arm: FrankaArm | None = None
        self._graph = GraphFollower(self, self.callback_group)

    def configure(self) -> None:
        options = self.read_options(FrankaOmronOptions)
        site_file, motions_file = options.site_file, options.motions_file
        self._site = SiteBinding.load(site_file) if site_file else SiteBinding()
        self._motions = TaughtMotions.load(motions_file) if motions_file else TaughtMotions()
        self._actions = load_action_set(options.action_set)
        missing = self._actions.without_program(FRANKA_ROLES)
        if missing:
            raise ValueError(f"{ROBOT} has no program for {', '.join(missing)} of the action set {options.action_set}")
        self._state = RobotState()
        self._checked_graph = False
        self._base = self._make_base(options)
        if isinstance(self._base, ArclBase):  # configure connects: a base that is not there stops the start-up here
            problem = self._base.connect_now(options.arcl_timeout_s + 1.0)
            if problem:
                raise RuntimeError(f"the Omron base: {problem}")
        if self._motions.nodes:
            self._arm = FrankaArm(
                self,
                options.arm_action,
                options.gripper_grasp_action,
                options.gripper_move_action,
                options.gripper_homing_action,
                self.callback_group,
                options.gripper_state_topic,
                options.gripper_stop_service,
            )
            self._arm.cancel_timeout_s = options.arm_cancel_timeout_s
        skills = available_skills(self._motions, self._actions)
        self.serve(SkillCatalog.of(ROBOT, [self._actions], skills))
        self.get_logger().info(
            f"{ROBOT}: base through {options.navigation_backend}, skills {', '.join(skills)}"
            + ("" if self._arm else " (no motions_file: the arm is not used)")
        )

    def cleanup(self) -> None:
        """Without waiting on DDS: whatever may still move is sent its stop, then the link and the clients go."""
        base, arm, self._base, self._arm = self._base, self._arm, None, None
        if base is not None:
            base.destroy()
        if arm is not None:
            arm.destroy()
        super().cleanup()

    @property
    def options(self) -> FrankaOmronOptions:
        """The options now (per-goal ones may have changed since configure; every change was checked)."""
        return current_options(self, FrankaOmronOptions)

    @property
    def base(self) -> Base:
        assert self._base is not None, "configured: the base exists from configure to cleanup"
        return self._base

    @property
    def callback_group(self) -> Any:
        return self._group

    async def sleep(self, seconds: float) -> None:
        await sleep(self, seconds, self._group)

    def _make_base(self, options: FrankaOmronOptions) -> Base:
        if options.navigation_backend == "nav2":
            return Nav2Base(self, options.nav2_action, self._site.frame, options.nav2_behavior_tree)
        host = options.arcl_host.strip()
        if not host:
            raise ValueError("arcl_host must name the Omron base when navigation_backend is arcl")
        env = options.arcl_password_env
        password = os.environ.get(env)
        if password is None:
            raise ValueError(f"the ARCL password is read from the environment variable {env}, which is not set")
        return ArclBase(
            self,
            host,
            options.arcl_port,
            password,
            options.arcl_timeout_s,
            self._group,
            lambda code, cause: self.fault_latch.latch(code, cause, "between skills"),
        )

    # ------------------------------------------------------------------ one skill
    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        # a fault under a cancel (a stop that did not confirm, fingers that did not let go) is latched by the base
        # class: never here as well
        self._canceling = False
        return await self._run_program(step, context)

    async def _run_program(self, step: PlanStep, context: SkillContext) -> SkillResult:
        options = self.options
        graph = await self.graph_for_step(self._graph, context, options.graph_wait_s)
        if isinstance(graph, SkillResult):
            return graph
        self._check_files(graph)
        gripper = GripperSettings(
            grasp_width=options.grasp_width,
            grasp_force=options.grasp_force,
            grasp_speed=options.grasp_speed,
            epsilon_inner=options.grasp_epsilon,
            epsilon_outer=options.grasp_epsilon,
            open_width=options.open_width,
            speed=options.gripper_speed,
            home_first=options.home_gripper,
        )
        role = self._actions.role(step.action)
        try:
            program = plan_skill(step, role, graph, self._motions, gripper, self._state)
            targets = {p.node: base_target(graph, self._site, p.node) for p in program if isinstance(p, Drive)}
            for target in targets.values():
                self.base.check(target)
        except ProgramError as exc:
            return SkillResult(False, exc.code, str(exc))
        except TargetError as exc:
            return SkillResult(False, SkillCode.INVALID_TARGET, f"{step}: {exc}")
        if self._arm is not None and any(not isinstance(p, Drive) for p in program):
            stopped = await self.base.motors_problem()  # an e-stop between skills stops the arm too
            if stopped is not None:
                return SkillResult(False, stopped.code, f"{step} refused before the robot moved: {stopped.message}")
        if role in EMPTY_HAND_ROLES and self._arm is not None:
            refusal = await self._hand_must_be_empty(step, options)
            if refusal is not None:
                return refusal
        result = await self._run_primitives(step, program, targets, graph, options, context)
        if self._arm is None or role == "finish":  # a goto too: a held object may slip on the way
            return result
        return await self._read_hand_back(step, graph, result, options)

    async def _run_primitives(
        self,
        step: PlanStep,
        program: list[Primitive],
        targets: dict[str, Target],
        graph: SceneGraph,
        options: FrankaOmronOptions,
        context: SkillContext,
    ) -> SkillResult:
        for index, primitive in enumerate(program):
            if self._canceled(context):
                canceled = Outcome(SkillCode.CANCELED, f"canceled before {primitive.describe()}")
                return await self._stopped(step, program, index, False, canceled, graph, options)
            context.feedback(f"{step}: {primitive.describe()}", index / max(len(program), 1))
            outcome = await self._run_primitive(primitive, targets, options, context)
            self._state.after(primitive, outcome.ok)
            if not outcome.ok:
                return await self._stopped(step, program, index, True, outcome, graph, options)
        location = step.target if self._actions.role(step.action) == "navigate" else graph.agent_location()
        return SkillResult(True, SkillCode.NONE, f"{step} done", self._effect_update(step, graph, location))

    async def _hand(self, options: FrankaOmronOptions) -> tuple[bool, float] | str:
        """(holding, width) from a gripper state that arrived from now on, or why the hand cannot be read."""
        assert self._arm is not None
        wait = options.hand_readback_s
        width = await self._arm.width_after(time.monotonic(), wait)
        if width is None:
            return f"no gripper state on {self._arm.state_topic} within {wait:g} s: what the hand holds is unknown"
        return hand_holds(width, self._state.fingers_sent_to, options.gripper_width_tolerance), width

    async def _hand_must_be_empty(self, step: PlanStep, options: FrankaOmronOptions) -> SkillResult | None:
        """A skill that closes the fingers is refused before anything moves when they already hold something (the
        graph's held object is refused by the program itself; this is what the graph does not know of)."""
        hand = await self._hand(options)
        if isinstance(hand, str):
            return SkillResult(False, SkillCode.ROBOT_FAULT, f"{step} refused before the robot moved: {hand}")
        holding, width = hand
        if holding:
            return SkillResult(
                False,
                SkillCode.ROBOT_FAULT,
                f"{step} refused before the robot moved: the fingers are closed on something the scene graph does "
                f"not know of (they read {width * 1000:.0f} mm); free the hand, then clear the fault",
            )
        return None

    async def _read_hand_back(
        self, step: PlanStep, graph: SceneGraph, result: SkillResult, options: FrankaOmronOptions
    ) -> SkillResult:
        """The hand after the skill: the update must say what the fingers really hold (see belief.reconcile_hand)."""
        hand = await self._hand(options)
        if isinstance(hand, str):  # a fault the skill already latches keeps its code (a dead gripper server is
            code = result.code if result.code.latches else SkillCode.ROBOT_FAULT  # still server_unavailable)
            return SkillResult(False, code, f"{result.message}; then {hand}", result.update)
        holding, width = hand
        mismatch = reconcile_hand(graph, result.code, result.update, holding, width, ROBOT)
        if mismatch is None:
            return result
        self.get_logger().warning(f"{step}: {mismatch.message}")
        note = mismatch.message if result.success else f"{result.message}; {mismatch.message}"
        return SkillResult(False, mismatch.code, f"{step}: {note}" if result.success else note, mismatch.update)

    def _effect_update(self, step: PlanStep, graph: SceneGraph, location: str | None) -> GraphUpdate:
        """The step's change to the world as a graph update (what the action set says it does)."""
        update, warning = success_update(graph, step, self._actions, self._state.accessed(graph), location, ROBOT)
        if warning:
            self.get_logger().warning(warning)
        return update

    async def _stopped(
        self,
        step: PlanStep,
        program: list[Primitive],
        index: int,
        ran: bool,
        outcome: Outcome,
        graph: SceneGraph,
        options: FrankaOmronOptions,
    ) -> SkillResult:
        """The skill stopped at primitive `index` (it failed, or with `ran` False a cancel came before it): let go
        of a handle, and report where the agent is, plus the skill's change to the world when it already happened
        (a pickup whose retreat was blocked holds the object: the update says so)."""
        primitive = program[index]
        outcome = await self._let_go_if_owed(step, program, index, ran, outcome, options)
        location = graph.agent_location()
        if ran and isinstance(primitive, Drive):
            location = await self._where(graph) or location
        update = location_update(graph, location, ROBOT)
        if effect_done(self._actions.role(step.action), program, index):
            update = self._effect_update(step, graph, location)
        return SkillResult(False, outcome.code, f"{step}: {outcome.message}", update)

    async def _let_go_if_owed(
        self,
        step: PlanStep,
        program: list[Primitive],
        index: int,
        ran: bool,
        outcome: Outcome,
        options: FrankaOmronOptions,
    ) -> Outcome:
        """After a failure or cancel with a handle in the fingers, open them (a cancel cannot stop this); if they
        will not open, the robot is stuck to the furniture: a fault the planner cannot fix."""
        owed = release_owed(self._actions.role(step.action), program, index, ran)
        if owed is None:
            return outcome
        released = await self._run_primitive(owed, {}, options, None)
        self._state.after(owed, released.ok)
        if released.ok:
            return outcome
        return Outcome(
            SkillCode.ROBOT_FAULT,
            f"{outcome.message}; then the gripper did not let go of '{step.target}' ({released.message}): "
            "free it by hand before the robot moves",
        )

    async def _run_primitive(
        self,
        primitive: Primitive,
        targets: dict[str, Target],
        options: FrankaOmronOptions,
        context: SkillContext | None,
    ) -> Outcome:
        """Run one primitive; with no context (a clean-up owed after a failure) it cannot be canceled."""
        canceled = (lambda: False) if context is None else (lambda: self._canceled(context))
        feedback = (lambda _text, _progress: None) if context is None else context.feedback
        wait = options.driver_wait_s
        if isinstance(primitive, Drive):
            limits = DriveLimits(
                options.drive_timeout_s,
                options.stop_timeout_s,
                options.arcl_status_period_s,
                options.arcl_silence_s,
            )
            return await self.base.drive(targets[primitive.node], feedback, canceled, limits)
        arm = self._arm
        if arm is None:  # programs only use the arm when motions were taught, which creates it
            return Outcome(SkillCode.INTERNAL_ERROR, f"{primitive.describe()}: no arm configured")
        gripper_s = options.gripper_timeout_s
        arm.cancel_timeout_s = options.arm_cancel_timeout_s
        if isinstance(primitive, Arm):
            tolerance = options.arm_time_tolerance_s
            arm_s = options.arm_timeout_s
            return await arm.follow(primitive.trajectory, tolerance, wait, self.sleep, canceled, arm_s)
        if isinstance(primitive, Grasp):
            return await arm.grasp(primitive, wait, self.sleep, canceled, gripper_s)
        if isinstance(primitive, OpenGripper):
            return await arm.open(primitive.width, primitive.speed, wait, self.sleep, canceled, gripper_s)
        if isinstance(primitive, HomeGripper):
            return await arm.home(wait, self.sleep, canceled, gripper_s)
        return Outcome(SkillCode.INTERNAL_ERROR, f"unknown primitive {primitive!r}")

    def _canceled(self, context: SkillContext) -> bool:
        return self._canceling or context.cancel_requested()

    async def _where(self, graph: SceneGraph) -> str | None:
        """The room or pose node nearest to where the base says it is."""
        pose = await self.base.locate()
        return None if pose is None else nearest_place(graph, self._site, pose[0], pose[1])

    def _check_files(self, graph: SceneGraph) -> None:
        """Warn once about site or motion entries for nodes this building does not have."""
        if self._checked_graph:
            return
        self._checked_graph = True
        for what, missing in (
            ("site file", self._site.check_against(graph)),
            ("motions file", self._motions.check_against(graph)),
        ):
            if missing:
                self.get_logger().warning(f"the {what} names nodes the scene graph lacks: {', '.join(missing[:10])}")

    def robot_health(self) -> list[Status]:
        """/diagnostics: the base (ARCL link and motors, or the Nav2 server) and the arm's action servers."""
        base, arm = self._base, self._arm  # None before configure and after cleanup
        statuses = [] if base is None else base.health()
        if arm is not None:
            missing = arm.servers_ready()
            found = f"no action server on {', '.join(missing)}" if missing else "every arm and gripper server is up"
            statuses.append(link_status("arm", not missing, found))
        return statuses

    def on_cancel(self) -> None:
        self._canceling = True
        if self._base is not None:
            self._base.cancel()
        if self._arm is not None:
            self._arm.cancel()

    async def check_robot(self) -> Check:
        """For an operator's clear_fault: the hand read back against the graph, the base (ARCL motors, status and
        localisation, or the Nav2 server) and the arm's servers. Nothing is moved, powered or enabled."""
        found: list[str] = []
        ok = True
        graph, _version = self._graph.latest()
        if self._arm is not None:
            hand = await self._hand(self.options)
            held = graph.held_object() if graph is not None else None
            if isinstance(hand, str):
                ok, text = False, f"hand: {hand}"
            elif graph is None:
                ok, text = False, "hand: no scene graph to compare it with"
            else:
                holding, width = hand
                agrees = holding == (held is not None)
                ok = ok and agrees
                says = f"'{held}' in the hand" if held else "the hand empty"
                text = f"hand: the fingers read {width * 1000:.0f} mm ({'holding something' if holding else 'empty'})"
                text += f", the scene graph says {says}" + ("" if agrees else ": free the hand or fix the graph")
            found.append(text)
            missing = self._arm.servers_ready()
            if missing:
                ok = False
                found.append(f"arm: no action server on {', '.join(missing)}")
            if self._arm.moving:
                self._arm.cancel_again()
                ok = False
                found.append("arm: a goal it was sent has not ended (its cancel was sent again): check the arm")
        base_ok, base_found = await self.base.check_robot()
        found.append(base_found)
        return Check(ok and base_ok, "; ".join(found))

    def stop_motion(self, timeout_s: float) -> bool:
        """Shutdown (a plain thread; the executor still spins): the base's stop (ARCL `stop` until `Stopped`, or the
        Nav2 goal canceled), then the arm's or gripper's running goal canceled, all within `timeout_s`."""
        if self._base is None:  # not configured: nothing was sent anything
            return True
        deadline = time.monotonic() + timeout_s
        base = self._base.stop_and_wait(timeout_s)
        if not base:
            self.get_logger().error("the base did not confirm its stop before the node exits: check the robot")
        arm = True
        if self._arm is not None:
            gripper = self._gripper_at_shutdown
            self._gripper_at_shutdown = False
            arm = self._arm.stop_and_wait(max(0.1, deadline - time.monotonic()), gripper)
            if not arm:
                self.get_logger().error("the arm or gripper did not confirm its stop before the node exits")
        return base and arm

    def stop_for_shutdown(self, timeout_s: float) -> bool:
        """As the base class's, noting first whether a gripper command runs: the shutdown's cancel ends the skill
        (and the command) before `stop_motion`, which still owes franka_gripper's `~/stop`."""
        self._gripper_at_shutdown = self._arm is not None and self._arm.gripper_busy
        return super().stop_for_shutdown(timeout_s)


def main(args: list[str] | None = None) -> None:
    run_nodes("franka_omron_skill_server", lambda: [FrankaOmronSkillServer()], args)
