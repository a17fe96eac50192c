"""sim_skill_server: the skill server of robot `sim`, acting on a simulated ground-truth world.

The truth is the environment plus `world_changes` (YAML), so it can differ from the
robot's graph; `failures` inject skill failures (any SkillOutcome code, robot faults
included). Each skill takes `skill_delay_s`, waited on with a timer (not a sleep) so
the executor stays free and cancel works. With `navigation_backend: nav2` a goto is
first checked against the simulated world (a goto the world refuses, or one with an
injected failure, ends there and the base never moves), then drives the leg through Nav2
(to the node's site-file pose or graph position), and only then changes the simulated
world; a failed leg leaves the world as it was.

Faults are latched by the skill server base (a robot-fault result, injected or from Nav2).
`check_robot` (the operator's clear_fault) has only Nav2 to look at: its navigator must be
there and no goal of ours may still be under way; it never moves anything. On SIGINT or
SIGTERM `stop_motion` cancels the running Nav2 goal and waits for Nav2 to confirm; a node
destroyed without a signal still sends that cancel, without waiting.
"""

from __future__ import annotations

import threading
from typing import Any

import yaml
from rclpy.task import Future

from sayplan_core import files
from sayplan_core.envs import load_env
from sayplan_core.execution.sim_world import InjectedFailure, SimulatedWorld, apply_world_changes
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import GraphError
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import SiteBinding
from sayplan_core.robots.fault_latch import Check
from sayplan_core.robots.navigation import TargetError, base_target, pose_of
from sayplan_core.robots.sim_robot import SimRobotOptions
from sayplan_core.sim.plan import PlanStep
from sayplan_ros.clocks import steady_timer
from sayplan_ros.navigation.action_call import DISCOVERY_POLL_S, sleep
from sayplan_ros.parameters import current_options
from sayplan_ros.runner import run_nodes
from sayplan_ros.skill_server import SkillContext, SkillServer

#: The largest world_changes_file read.
MAX_CHANGES_FILE_BYTES = 10 * 1024 * 1024
#: Feedback messages per skill: the delay is split into this many timer waits.
_PHASES = 4


def parse_failures(text: str) -> list[InjectedFailure]:
    """Comma-separated `skill:target:code[:times]`."""
    return [InjectedFailure.parse(item) for item in text.split(",") if item.strip()]


class SimSkillServer(SkillServer):
    """Managed: configure reads the world and injected failures (and connects to Nav2's action), activate starts
    serving; deactivate cancels the running Nav2 goal (SkillServer.stop_robot); cleanup lets the world go."""

    def __init__(self, node_name: str = "sim_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_options(SimRobotOptions)
        self._lock = threading.Lock()
        self._nav: Any = None

    def configure(self) -> None:
        options = self.read_options(SimRobotOptions)
        truth = load_env(options.env)
        changes_file = options.world_changes_file
        if changes_file:
            try:
                changes = files.load_yaml(files.read_text(changes_file, MAX_CHANGES_FILE_BYTES, "world_changes_file"))
                changes = changes or []
            except files.FileReadError as exc:
                raise ValueError(str(exc)) from exc
            except yaml.YAMLError as exc:
                raise ValueError(f"cannot read world_changes_file {changes_file}: {exc}") from exc
            if not isinstance(changes, list):
                raise ValueError(f"world_changes_file {changes_file} must hold a list of changes")
            truth = apply_world_changes(truth, changes)
        failures = parse_failures(options.failures)
        self._delay = options.skill_delay_s
        self._wake_phase: Any = None  # ends the running phase wait early (see _phase)
        action_set = options.action_set
        self.world = SimulatedWorld(truth, action_set, failures)
        skills = [name.strip() for name in options.skills.split(",") if name.strip()] or None
        unknown = sorted(set(skills or ()) - set(self.world.actions.names()))
        if unknown:
            raise ValueError(f"skills: {', '.join(unknown)} not in action set '{self.world.actions.name}'")
        if options.navigation_backend == "nav2":
            from sayplan_ros.navigation.nav2_client import Nav2Client

            site_file = options.site_file
            self._site = SiteBinding.load(site_file) if site_file else SiteBinding()
            self._nav = Nav2Client(self, options.nav2_action, self._site.frame, options.nav2_behavior_tree, self._group)
            moves = [n for n, a in self.world.actions.actions.items() if any(c.name == "move_agent" for c in a.effects)]
            self._moves = frozenset(moves)
        self.serve(SkillCatalog.of("sim", [self.world.actions], skills), options.result_timeout_s)
        note = f", {len(failures)} injected failure(s)" if failures else ""
        self.get_logger().info(f"simulated world from '{options.env}' ({action_set}){note}")

    def cleanup(self) -> None:
        if self._nav is not None:
            self._nav.destroy()  # a goal still under way is canceled (not awaited) before the client goes
            self._nav = None
        super().cleanup()

    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        if self._nav is not None and step.action in self._moves:
            with self._lock:
                if not self.world.would_run(step.action, step.target):
                    return self._in_world(step)  # the world's refusal (nothing applied): the base stays put
            try:
                pose = pose_of(base_target(self.world.state.graph, self._site, step.target))
            except TargetError as exc:
                return SkillResult(False, SkillCode.INVALID_TARGET, f"{step}: {exc}")
            options = current_options(self, SimRobotOptions)
            leg = await self._nav.drive(
                pose,
                step.target,
                options.driver_wait_s,
                context.sleep,
                context.feedback,
                context.cancel_requested,
                options.nav2_leg_timeout_s,
                options.nav2_cancel_timeout_s,
            )
            if not leg.ok:  # a fault under a cancel (a stop Nav2 never confirmed) is latched by the base too
                return SkillResult(False, leg.code, leg.message)
        for phase in range(_PHASES):
            if context.cancel_requested():
                return SkillResult(False, SkillCode.CANCELED, f"{step} canceled")
            context.feedback("running", phase / _PHASES)
            await self._phase(context, self._delay / _PHASES)
        with self._lock:
            return self._in_world(step)

    def _in_world(self, step: PlanStep) -> SkillResult:
        """Run `step` on the simulated world (the caller holds the lock)."""
        try:
            return self.world.execute(step.action, step.target)
        except GraphError as exc:
            return SkillResult(False, SkillCode.INTERNAL_ERROR, f"the simulated world refused {step}: {exc}")

    async def _phase(self, context: SkillContext, seconds: float) -> None:
        """One timer wait of a simulated skill that a stop (cancel or shutdown: `on_cancel`) ends at once, as a
        robot stops mid-motion: a long `skill_delay_s` must not hold a cancel for a phase."""
        woken: Future = Future()
        lock = threading.Lock()

        def wake() -> None:
            with lock:
                if not woken.done():
                    woken.set_result(True)

        timer = steady_timer(self, max(seconds, 0.001), wake, context.group)
        self._wake_phase = wake
        try:
            if not context.cancel_requested():  # a stop that came before the wake was set up
                await woken
        finally:
            self._wake_phase = None
            self.destroy_timer(timer)

    def on_cancel(self) -> None:
        wake = self._wake_phase
        if wake is not None:
            wake()
        if self._nav is not None:
            self._nav.cancel()

    async def check_robot(self) -> Check:
        """The simulated world has nothing to re-check; with Nav2, its navigator must answer (waited for up to
        driver_wait_s) and no NavigateToPose goal of ours may still be under way. Nothing is moved."""
        if self._nav is None:
            return Check(True, "the simulated robot has nothing to check (navigation_backend sim)")
        if self._nav.moving:
            return Check(
                False,
                f"a NavigateToPose goal on '{self._nav.action_name}' whose end Nav2 never confirmed may still be "
                "driving the base: stop it on the navigator (or the robot), then clear again",
            )
        wait = current_options(self, SimRobotOptions).driver_wait_s
        waited = 0.0
        while not self._nav.server_ready():
            if waited >= wait:
                return Check(False, f"no Nav2 NavigateToPose action server on '{self._nav.action_name}' ({wait:g} s)")
            await sleep(self, DISCOVERY_POLL_S, self._group)
            waited += DISCOVERY_POLL_S
        return Check(True, f"Nav2's navigator answers on '{self._nav.action_name}'; no goal of ours is under way")

    def stop_motion(self, timeout_s: float) -> bool:
        """Shutdown (a plain thread, executor spinning): cancel the running Nav2 goal and wait for Nav2 to end it."""
        if self._nav is None:
            return True
        stopped = bool(self._nav.stop_and_wait(timeout_s))
        if not stopped:
            self.get_logger().error(
                f"Nav2 did not confirm the cancel of the running NavigateToPose goal within {timeout_s:.1f} s: "
                "the base may still be driving; stop it on the navigator"
            )
        return stopped


def main(args: list[str] | None = None) -> None:
    run_nodes("sim_skill_server", lambda: [SimSkillServer()], args)
