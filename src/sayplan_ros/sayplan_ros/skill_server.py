"""The `execute_skill` action and `describe_skills` service every robot serves, whatever drives the robot.

A robot backend (the simulated world, Spot, Franka on an Omron base) subclasses
`SkillServer` and implements `run_skill`; this class owns the contract: one skill
at a time, the request checked against the robot's catalog before the robot moves
(a typed refusal, never a half-run), cancel forwarded, any exception turned into an
INTERNAL_ERROR result instead of a dead node, and finished goals expired.
"""

from __future__ import annotations

import traceback
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any

from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import ActionSetInfo
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.conversions import skill_result_to_msg
from sayplan_ros.single_goal import SingleGoal


@dataclass
class SkillContext:
    """What a running skill may use: progress feedback, the cancel flag, and a timer-driven sleep."""

    node: Node
    handle: ServerGoalHandle
    action_set: str
    parameters: dict[str, str] = field(default_factory=dict)
    group: Any = None

    def feedback(self, status: str, progress: float) -> None:
        self.handle.publish_feedback(ExecuteSkill.Feedback(status=status, progress=float(progress)))

    def cancel_requested(self) -> bool:
        return bool(self.handle.is_cancel_requested)

    async def sleep(self, seconds: float) -> None:
        """Wait without blocking an executor thread; the one-shot timer is destroyed afterwards (no leak)."""
        future: Future = Future()
        timer = self.node.create_timer(max(seconds, 0.001), lambda: _fire(timer, future), callback_group=self.group)
        try:
            await future
        finally:
            self.node.destroy_timer(timer)


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

    def serve(self, catalog: SkillCatalog, result_timeout_s: float = 10.0) -> None:
        """Start serving once the subclass knows what its robot can do; a finished goal's result is kept
        `result_timeout_s` for its client, then forgotten (a long run holds no finished goals)."""
        self._catalog = catalog
        self._server = ActionServer(
            self,
            ExecuteSkill,
            "execute_skill",
            execute_callback=self._execute,
            goal_callback=self._single.accept,
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

    def _on_cancel_request(self, _goal: Any) -> CancelResponse:
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
        try:
            result = await self._run(handle)
        except Exception as exc:  # a bug in a backend must not take the process down
            self.get_logger().error(f"execute_skill failed: {exc!r}\n{traceback.format_exc()}")
            result = SkillResult(False, SkillCode.INTERNAL_ERROR, f"internal error in the skill server: {exc!r}")
        finally:
            self._single.release()
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
        context = SkillContext(self, handle, action_set, {kv.key: kv.value for kv in goal.parameters}, self._group)
        result = await self.run_skill(step, context)
        if handle.is_cancel_requested and not result.success:
            return SkillResult(False, SkillCode.CANCELED, f"{step} canceled", result.update)
        return result

    def destroy_node(self) -> None:
        if self._catalog is not None:
            self._server.destroy()
        super().destroy_node()
