"""The `execute_skill` action and `describe_skills` service every robot serves, whatever drives the robot.

A robot backend (the simulated world, Spot, Franka on an Omron base) subclasses
`SkillServer` and implements `run_skill`; this class owns the contract: one skill
at a time, the request checked against the robot's catalog before the robot moves
(a typed refusal, never a half-run), cancel forwarded, any exception turned into an
INTERNAL_ERROR result instead of a dead node, and finished goals expired.

Cancel: each accepted goal gets its own stop event (`SkillContext.stop`), set by the cancel callback before
`on_cancel` runs, so a cancel that arrives before the skill starts its robot work is not lost. A goal whose
cancel was accepted always ends CANCELED (README: "An accepted cancel always ends as CANCELED"), even when the
skill finished anyway; its result still carries the skill's graph update, so what the robot did is applied.

Faults: a skill that ends with a robot fault (SkillCode.latches) latches it (sayplan_core.robots.fault_latch);
every later skill is refused before the robot moves, until an operator calls `~/clear_fault` (std_srvs/Trigger),
which asks the backend to re-check the robot (`check_robot`) and clears only when the check passes. A backend
latches conditions it sees outside a skill's result itself (`self.fault_latch.latch`).

Lifecycle (sayplan_ros.lifecycle): a skill server is a managed node. A backend's `configure` reads its settings,
connects and calls `serve` (the action server and `describe_skills` exist from then on); `activate` takes the
robot as the backend needs; a goal while the node is not active ends NOT_ACTIVE before the robot moves.
`deactivate` stops the robot through `stop_robot`, the same path as a shutdown, then the backend releases what it
took; `cleanup` stops serving. The fault latch belongs to the node, not to a transition: only `~/clear_fault`
clears it, whatever the node went through.

Shutdown: `stop_for_shutdown` (called by `sayplan_ros.runner` on SIGINT/SIGTERM while the executor still spins)
is `stop_robot`: it stops the running skill as a cancel does, waits for it to end, then calls the backend's
`stop_motion`; both are bounded, and a stop that is not confirmed is logged as an error.
"""

from __future__ import annotations

import threading
import time
import traceback
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.service import Service
from std_srvs.srv import Trigger

from sayplan_core.diagnostics import Status, fault_latch_status
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import SceneGraph
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.fault_latch import Check, FaultLatch
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import ActionSetInfo
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.clocks import warn_without_clock
from sayplan_ros.conversions import skill_result_to_msg, step_from_msg
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.goals import CancelMarks, StopEvent, Wakeup, finish_goal
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.lifecycle import ManagedNode
from sayplan_ros.runner import RESULT_GRACE_S, SHUTDOWN_STOP_S, result_sent
from sayplan_ros.single_goal import SingleGoal

STOP_SLICE_S = 0.05  # what a skill's wait (SkillContext.sleep) lasts at most once its goal was stopped


@dataclass
class SkillContext:
    """What a running skill may use: progress feedback, the cancel flag, and a timer-driven sleep. `stop` is this
    goal's stop event: set once its cancel is accepted (or the node stops), never cleared. `graph_version` is the
    scene-graph version the step follows (ExecuteSkill.Goal; 0 = any)."""

    node: Node
    handle: ServerGoalHandle
    action_set: str
    parameters: dict[str, str] = field(default_factory=dict)
    group: Any = None
    stop: StopEvent = field(default_factory=StopEvent)
    graph_version: int = 0

    def feedback(self, status: str, progress: float) -> None:
        self.handle.publish_feedback(ExecuteSkill.Feedback(status=status, progress=float(progress)))

    def cancel_requested(self) -> bool:
        return self.stop.is_set() or bool(self.handle.is_cancel_requested)

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` without blocking an executor thread, or less: the goal's stop (a cancel, a deactivate, a
        shutdown) ends the wait at once. Once stopped it still waits up to STOP_SLICE_S, so a caller looping on
        it never spins."""
        wakeup = Wakeup(self.node, self.group)
        if self.stop.is_set():
            await wakeup.wait(min(seconds, STOP_SLICE_S))
            return
        forget = self.stop.on_set(wakeup.set)
        try:
            await wakeup.wait(seconds)
        finally:
            forget()


class SkillServer(ManagedNode):
    """Base class of the robots' skill servers (see the module docstring)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._group = ReentrantCallbackGroup()
        self._single = SingleGoal(self.get_logger(), "execute_skill")
        self._catalog: SkillCatalog | None = None
        self._server: ActionServer | None = None
        self._describe: Service | None = None
        #: The stop event of the goal accepted last (one goal runs at a time): made at acceptance.
        self._goal_stop = StopEvent()
        self._goal_cancel = threading.Event()  # this goal's cancel was accepted (the stop event also means node stop)
        self._goal_paused = threading.Event()  # this goal was stopped by a deactivate (a lifecycle PAUSE)
        self._goal_ended = threading.Event()  # this goal has its end state (what a stop waits for)
        self._goal_ended.set()
        self._handle: ServerGoalHandle | None = None
        self._cancel_marks = CancelMarks(self, "execute_skill", self._group)
        self.clear_fault_service = f"{self.get_fully_qualified_name()}/clear_fault"
        self.fault_latch = FaultLatch(f"ros2 service call {self.clear_fault_service} std_srvs/srv/Trigger")
        self.create_service(Trigger, "~/clear_fault", self._on_clear_fault, callback_group=self._group)
        self.diagnostics_publisher = DiagnosticsPublisher(self, self.diagnostics)
        warn_without_clock(self)

    def serve(self, catalog: SkillCatalog, result_timeout_s: float = 10.0) -> None:
        """Serve (in `configure`, once the subclass knows what its robot can do); a finished goal's result is kept
        `result_timeout_s` for its client, then forgotten (a long run holds no finished goals)."""
        self._unserve()
        self._catalog = catalog
        self._server = ActionServer(
            self,
            ExecuteSkill,
            "execute_skill",
            execute_callback=self._execute,
            goal_callback=self._accept,
            cancel_callback=self._on_cancel_request,
            callback_group=self._group,
            result_timeout=max(1, round(result_timeout_s)),
        )
        self._describe = self.create_service(
            DescribeSkills, "describe_skills", self._on_describe, callback_group=self._group
        )

    def _unserve(self) -> None:
        if self._server is not None:
            self._server.destroy()
            self._server = None
        if self._describe is not None:
            self.destroy_service(self._describe)
            self._describe = None
        self._catalog = None

    @property
    def catalog(self) -> SkillCatalog:
        assert self._catalog is not None, "call serve() in the subclass's configure()"
        return self._catalog

    def deactivate(self) -> None:
        """Stop the robot as a shutdown does (a backend then releases what it took); a skill it stops ends PAUSED."""
        self._goal_paused.set()  # before the stop: the skill that sees it knows why
        self.stop_robot(SHUTDOWN_STOP_S, "as the node is deactivated")

    def cleanup(self) -> None:
        """Stop serving (a backend disconnects first, then calls this)."""
        self._unserve()

    @abstractmethod
    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        """Drive the robot through one skill; return how it ended (never raise for an expected failure)."""

    def on_cancel(self) -> None:
        """Called as soon as a cancel request for the running skill is accepted: stop the robot here.
        `run_skill` then sees `context.cancel_requested()` and returns."""

    async def check_robot(self) -> Check:
        """Re-check the robot before an operator's `clear_fault` clears a latched fault: `ok` only when it is safe
        to move (e-stop released, motors and lease as needed, nothing unexpected in the gripper). Never moves,
        powers or stands the robot. The simulated robot has nothing to check."""
        return Check(True, "nothing to check on this robot")

    def diagnostics(self) -> list[Status]:
        """What this skill server reports on /diagnostics: its fault latch, then the backend's `robot_health`."""
        return [fault_latch_status(self.fault_latch), *self.robot_health()]

    def robot_health(self) -> list[Status]:
        """The backend's statuses (robot link, lease, e-stop, ...) from state it holds: never waits on the robot."""
        return []

    def stop_motion(self, timeout_s: float) -> bool:
        """Stop whatever the robot may still be doing and wait (at most `timeout_s`) for the robot to confirm;
        True when it did (or nothing moves). Called from a plain thread while the executor spins."""
        return True

    @property
    def goal_stop(self) -> StopEvent:
        """The stop event of the current (or last) goal."""
        return self._goal_stop

    def _accept(self, goal: Any) -> GoalResponse:
        response = self._single.accept(goal)
        if response == GoalResponse.ACCEPT:
            self._goal_stop = StopEvent()  # this goal's own: nothing an earlier goal did can clear it
            self._goal_cancel = threading.Event()
            self._goal_paused = threading.Event()
            self._goal_ended = threading.Event()
        return response

    def _on_cancel_request(self, _goal: Any) -> CancelResponse:
        self._goal_cancel.set()
        self._goal_stop.set()
        try:
            self.on_cancel()
        except Exception as exc:  # the cancel is still accepted; the skill ends as soon as it looks
            self.get_logger().error(f"stopping the robot on cancel failed: {exc!r}")
        return CancelResponse.ACCEPT

    def _on_describe(self, _request: Any, response: DescribeSkills.Response) -> DescribeSkills.Response:
        catalog = self.catalog
        response.robot = catalog.robot
        response.default_action_set = catalog.default
        response.action_sets = [ActionSetInfo(name=n, skills=sorted(s)) for n, s in sorted(catalog.sets.items())]
        fault = self.fault_latch.fault
        if fault is not None:
            response.fault = f"{fault.describe()}; {self.fault_latch.note()}"
        response.lifecycle_state = "active" if self.is_active else self.not_active()
        return response

    async def _execute(self, handle: ServerGoalHandle) -> ExecuteSkill.Result:
        canceled = self._goal_cancel  # this goal's (made in _accept, before execution starts)
        paused = self._goal_paused
        ended = self._goal_ended
        self._handle = handle  # the running goal, whose end stop_for_shutdown waits for
        try:
            try:
                try:
                    result = await self._run(handle)
                except Exception as exc:  # a bug in a backend must not take the process down
                    self.get_logger().error(f"execute_skill failed: {exc!r}\n{traceback.format_exc()}")
                    result = SkillResult(
                        False, SkillCode.INTERNAL_ERROR, f"internal error in the skill server: {exc!r}"
                    )
                if result.code.latches:  # before the slot is free: no next goal may start ahead of the latch
                    result = self._latch(result, handle)
                if result.code is SkillCode.CANCELED and paused.is_set() and not canceled.is_set():
                    result = self._paused(result, handle)
            finally:
                self._single.release()
            if result.code is SkillCode.CANCELED and canceled.is_set() and not handle.is_cancel_requested:
                # the cancel callback ran and the skill saw its stop event before rclpy marked the goal CANCELING
                await self._cancel_marks.until(self, self._group, handle)
            finish_goal(handle, result.success, result.code is SkillCode.CANCELED)
            return ExecuteSkill.Result(outcome=skill_result_to_msg(result))
        finally:
            ended.set()

    def _paused(self, result: SkillResult, handle: ServerGoalHandle) -> SkillResult:
        """A skill the node's deactivate stopped (nobody canceled it): PAUSED, saying so; what it did still counts."""
        step = str(step_from_msg(handle.request.step))
        message = (
            f"{step} stopped: {self.get_name()} was paused (lifecycle deactivate) and stopped the robot; "
            "resume the stack (the lifecycle manager's RESUME), then send it again"
        )
        self.get_logger().warning(message)
        return SkillResult(False, SkillCode.PAUSED, message, result.update)

    def _latch(self, result: SkillResult, handle: ServerGoalHandle) -> SkillResult:
        """Latch the fault a skill ended with; its message then says so and how to clear it."""
        goal: ExecuteSkill.Goal = handle.request
        step = str(step_from_msg(goal.step))
        self.fault_latch.latch(result.code, result.message, step)
        self.get_logger().error(f"{step} ended {result.code.label}: {result.message}; {self.fault_latch.note()}")
        return SkillResult(False, result.code, f"{result.message}; {self.fault_latch.note()}", result.update)

    async def _on_clear_fault(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """The operator's clear: refused while a skill runs; the robot is re-checked first, and only a check
        that passes clears the latch. Every fault latched before the check began is cleared by it (one event often
        latches two: a skill ended `estopped`, then the base's e-stop broadcast); a fault latched while the robot was
        being checked keeps the latch (nobody has looked at it yet). The answer names the faults and what the check
        found."""
        if self.fault_latch.fault is None:
            response.success, response.message = True, "no fault latched"
            return response
        if self._single.busy:
            response.success, response.message = False, "a skill is running; cancel it, then clear the fault"
            return response
        mark = self.fault_latch.mark()  # every fault up to here is one this check looks at
        try:
            check = await self.check_robot()
        except Exception as exc:  # a check that cannot run is a check that did not pass
            check = Check(False, f"the robot check failed: {exc!r}")
        if not check.ok:
            response.success = False
            response.message = f"still latched: {self._faults()}; the robot check found: {check.found}"
            self.get_logger().warning(f"clear_fault refused: {response.message}")
            return response
        cleared = self.fault_latch.clear(mark)
        if cleared is None:
            came = self._faults(since=mark) or "more faults than the latch keeps"
            response.success = False
            response.message = (
                f"still latched: another fault came while the robot was checked: {came}; "
                f"the robot check found: {check.found}; check the robot again and call clear_fault again"
            )
            self.get_logger().warning(f"clear_fault refused: {response.message}")
            return response
        response.success = True
        what = "; ".join(f.describe() for f in cleared) or "no fault latched"
        response.message = f"cleared: {what}; the robot check found: {check.found}"
        self.get_logger().info(f"clear_fault by the operator: {response.message}")
        return response

    def _faults(self, since: int = 0) -> str:
        return "; ".join(f.describe() for f in self.fault_latch.faults(since))

    def stop_for_shutdown(self, timeout_s: float) -> bool:
        """Stop the robot before the process exits (`stop_robot`); nothing to stop before configure."""
        return self.stop_robot(timeout_s) if self.configured else True

    def stop_robot(self, timeout_s: float, when: str = "before the node exits") -> bool:
        """The one stop path (shutdown and deactivate): the running skill is stopped as a cancel stops it and
        waited for, then the backend's `stop_motion` runs, all within about `timeout_s`. True when the stop
        confirmed. Called from a plain thread or a lifecycle transition, never from the skill's own group."""
        deadline = time.monotonic() + timeout_s
        ended = True
        handle = self._handle
        # registered before the goal can end; a goal that already ended before the stop needs no wait
        sent = result_sent(self._server, handle.goal_id) if handle is not None and handle.is_active else None
        if self._single.busy:
            self.get_logger().warning(f"stopping: the running skill is stopped {when}")
            self._goal_stop.set()
            try:
                self.on_cancel()
            except Exception as exc:
                self.get_logger().error(f"stopping the robot on shutdown failed: {exc!r}")
            ended = self._single.wait_idle(deadline - time.monotonic())  # a plain thread, never a callback
        try:
            stopped = self.stop_motion(max(0.1, deadline - time.monotonic()))
        except Exception as exc:
            self.get_logger().error(f"stopping the robot on shutdown failed: {exc!r}")
            stopped = False
        if not (ended and stopped):
            self.get_logger().error("the robot's stop was not confirmed: check the robot")
        if sent is not None:  # the goal's end state and result must still go out
            # the final status array is published synchronously when the goal ends; the result response from a
            # done callback after it: once that was handed to the middleware, a bounded grace for delivery of both
            self._goal_ended.wait(max(0.0, deadline - time.monotonic()))
            if sent.wait(max(0.0, deadline - time.monotonic())):
                time.sleep(min(RESULT_GRACE_S, max(0.0, deadline - time.monotonic())))
        return ended and stopped

    async def _run(self, handle: ServerGoalHandle) -> SkillResult:
        goal: ExecuteSkill.Goal = handle.request
        step = step_from_msg(goal.step)
        if not self.is_active:
            message = f"{step} refused before the robot moved: {self.not_active()}"
            self.get_logger().warning(message)
            return SkillResult(False, SkillCode.NOT_ACTIVE, message)
        latched = self.fault_latch.refusal(str(step))
        if latched is not None:
            self.get_logger().warning(latched.message)
            return latched
        action_set = goal.action_set.strip() or self.catalog.default
        refusal = self.catalog.check(step.action, action_set)
        if refusal is not None:
            self.get_logger().warning(f"refusing {step}: {refusal.message}")
            return refusal
        parameters = {kv.key: kv.value for kv in goal.parameters}
        context = SkillContext(
            self, handle, action_set, parameters, self._group, self._goal_stop, int(goal.graph_version)
        )
        if context.cancel_requested():  # canceled before it started: the robot is not moved
            return SkillResult(False, SkillCode.CANCELED, f"{step} canceled before it started")
        result = await self.run_skill(step, context)
        if context.cancel_requested() and result.code.latches:
            # ends CANCELED below, which does not latch; a fault under the cancel (a stop the robot never
            # confirmed) must still hold the robot until an operator looked
            result = self._latch(result, handle)
        if context.cancel_requested() and result.code is not SkillCode.CANCELED:
            # an accepted cancel ends CANCELED; a skill that finished anyway still reports what it changed
            note = f"{step} canceled" + (" (it had finished: the update says what it did)" if result.success else "")
            return SkillResult(False, SkillCode.CANCELED, note, result.update)
        return result

    async def graph_for_step(
        self, follower: GraphFollower, context: SkillContext, wait_s: float
    ) -> SceneGraph | SkillResult:
        """The follower's copy once it holds the version the step follows and is in sync; else the refusal.

        The executor applies each step's update before it sends the next step, but this copy hears of it over a
        topic: a step judged on the copy before (where the agent is, what is open, what the hand holds) would
        report an update that undoes the previous step.
        """
        deadline = time.monotonic() + wait_s
        while (graph := follower.graph_at(context.graph_version)) is None:
            if context.cancel_requested():
                return SkillResult(False, SkillCode.CANCELED, "canceled while waiting for the scene graph")
            left = deadline - time.monotonic()
            if left <= 0:
                copy, version = follower.latest()
                problem = follower.problem()
                if copy is None:
                    why = "no scene graph received yet on 'scene_graph'"
                elif problem:
                    why = f"this skill server's copy of the scene graph is out of sync: {problem}"
                else:
                    why = f"this skill server's scene graph is at version {version}"
                    why += f"; the step follows version {context.graph_version}"
                return SkillResult(False, SkillCode.SCENE_GRAPH_OUT_OF_SYNC, f"{why} (waited {wait_s:g} s)")
            # woken by the follower (the version arrived), the goal's stop, or the deadline
            wakeup = Wakeup(self, self._group)
            forget_version = follower.when_ready(context.graph_version, wakeup.set)
            forget_stop = context.stop.on_set(wakeup.set)
            try:
                await wakeup.wait(left)
            finally:
                forget_version()
                forget_stop()
        return graph
