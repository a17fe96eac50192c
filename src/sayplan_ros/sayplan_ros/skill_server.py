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
from rclpy.task import Future

from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.graph.model import SceneGraph
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import ActionSetInfo
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.conversions import skill_result_to_msg
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.single_goal import SingleGoal

GRAPH_POLL_S = 0.02  # how often a skill waiting for the scene graph looks again (a timer, not a blocked thread)
CANCEL_SETTLE_S = 0.01  # how often a canceled goal looks whether rclpy has marked it CANCELING yet
CANCEL_SETTLE_MAX_S = 1.0


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
    stop: threading.Event = field(default_factory=threading.Event)
    graph_version: int = 0

    def feedback(self, status: str, progress: float) -> None:
        self.handle.publish_feedback(ExecuteSkill.Feedback(status=status, progress=float(progress)))

    def cancel_requested(self) -> bool:
        return self.stop.is_set() or bool(self.handle.is_cancel_requested)

    async def sleep(self, seconds: float) -> None:
        await _sleep(self.node, self.group, seconds)


async def _sleep(node: Node, group: Any, seconds: float) -> None:
    """Wait without blocking an executor thread; the one-shot timer is destroyed afterwards (no leak)."""
    future: Future = Future()
    timer = node.create_timer(max(seconds, 0.001), lambda: _fire(timer, future), callback_group=group)
    try:
        await future
    finally:
        node.destroy_timer(timer)


def _fire(timer: Any, future: Future) -> None:
    timer.cancel()
    if not future.done():
        future.set_result(True)


class SkillServer(Node):
    """Base class of the robots' skill servers (see the module docstring)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._group = ReentrantCallbackGroup()
        self._single = SingleGoal(self.get_logger(), "execute_skill")
        self._catalog: SkillCatalog | None = None
        #: The stop event of the goal accepted last (one goal runs at a time): made at acceptance.
        self._goal_stop = threading.Event()
        self._goal_cancel = threading.Event()  # this goal's cancel was accepted (the stop event also means node stop)

    def serve(self, catalog: SkillCatalog, result_timeout_s: float = 10.0) -> None:
        """Start serving once the subclass knows what its robot can do; a finished goal's result is kept
        `result_timeout_s` for its client, then forgotten (a long run holds no finished goals)."""
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
        self.create_service(DescribeSkills, "describe_skills", self._on_describe, callback_group=self._group)

    @property
    def catalog(self) -> SkillCatalog:
        assert self._catalog is not None, "call serve() in the subclass constructor"
        return self._catalog

    @abstractmethod
    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        """Drive the robot through one skill; return how it ended (never raise for an expected failure)."""

    def on_cancel(self) -> None:
        """Called as soon as a cancel request for the running skill is accepted: stop the robot here.
        `run_skill` then sees `context.cancel_requested()` and returns."""

    @property
    def goal_stop(self) -> threading.Event:
        """The stop event of the current (or last) goal."""
        return self._goal_stop

    def _accept(self, goal: Any) -> GoalResponse:
        response = self._single.accept(goal)
        if response == GoalResponse.ACCEPT:
            self._goal_stop = threading.Event()  # this goal's own: nothing an earlier goal did can clear it
            self._goal_cancel = threading.Event()
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
        return response

    async def _execute(self, handle: ServerGoalHandle) -> ExecuteSkill.Result:
        canceled = self._goal_cancel  # this goal's (made in _accept, before execution starts)
        try:
            result = await self._run(handle)
        except Exception as exc:  # a bug in a backend must not take the process down
            self.get_logger().error(f"execute_skill failed: {exc!r}\n{traceback.format_exc()}")
            result = SkillResult(False, SkillCode.INTERNAL_ERROR, f"internal error in the skill server: {exc!r}")
        finally:
            self._single.release()
        settle_until = time.monotonic() + CANCEL_SETTLE_MAX_S
        while result.code is SkillCode.CANCELED and canceled.is_set() and not handle.is_cancel_requested:
            # the cancel callback ran and the skill saw its stop event, but rclpy marks the goal CANCELING only
            # once the callback returned: ending now would abort a goal whose cancel was accepted
            if time.monotonic() >= settle_until:
                break
            await _sleep(self, self._group, CANCEL_SETTLE_S)
        outcome = skill_result_to_msg(result)
        if handle.is_cancel_requested and result.code is SkillCode.CANCELED:
            handle.canceled()
        elif result.success:
            handle.succeed()
        else:
            handle.abort()
        return ExecuteSkill.Result(outcome=outcome)

    async def _run(self, handle: ServerGoalHandle) -> SkillResult:
        goal: ExecuteSkill.Goal = handle.request
        step = PlanStep(goal.skill.strip(), goal.target.strip())
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
            if time.monotonic() >= deadline:
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
            await context.sleep(GRAPH_POLL_S)
        return graph

    def destroy_node(self) -> None:
        if self._catalog is not None:
            self._server.destroy()
        super().destroy_node()
