"""The closed loop: plan, run the plan skill by skill, and replan from the current state on failure.

The loop knows nothing about ROS: it calls three functions the caller provides
(plan, run a skill, report progress). The ROS executor node wires them to the
plan_task and execute_skill actions; tests wire them to the core directly.

What a failed skill means is read off its typed code (sayplan_core.outcomes):
a mismatch with the world is replanned, a refusal, a stop or a robot fault ends
the task with that reason, because no new plan can fix it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sayplan_core.execution.skills import SkillResult
from sayplan_core.outcomes import PlanCode, SkillCode, Stage, Status, TaskCode
from sayplan_core.sim.plan import PlanStep

if TYPE_CHECKING:  # a plan is what a planner returns; the loop never imports the planners themselves
    from sayplan_core.planners.base import PlanResult


@dataclass
class StepReport:
    stage: Stage
    step_index: int
    step_count: int
    step: PlanStep | None
    status: Status
    replans: int
    message: str = ""
    code: int = 0  # a SkillCode on a failed step, a TaskCode when the task ends


@dataclass
class ExecutionResult:
    success: bool
    message: str
    code: TaskCode = TaskCode.NONE
    executed: list[PlanStep] = field(default_factory=list)
    replans: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def canceled(self) -> bool:
        return self.code is TaskCode.CANCELED


PlanFn = Callable[[str, str], "PlanResult"]  # (instruction, context) -> plan (success, message, full_plan, action_set)
SkillFn = Callable[[PlanStep, str], SkillResult]  # (step, action set) -> result
ReportFn = Callable[[StepReport], None]


#: Planner outcomes that end the task with the stack's state rather than as a failed plan.
_PLAN_STOPS = {PlanCode.PAUSED: TaskCode.PAUSED, PlanCode.NOT_ACTIVE: TaskCode.NOT_ACTIVE}


def _task_code(code: SkillCode) -> TaskCode:
    """How a skill failure that no new plan can fix ends the task."""
    if code is SkillCode.CANCELED:
        return TaskCode.CANCELED
    if code is SkillCode.PAUSED:
        return TaskCode.PAUSED
    if code is SkillCode.NOT_ACTIVE:
        return TaskCode.NOT_ACTIVE
    if code.refused:
        return TaskCode.SKILL_REFUSED
    if code.stopped:
        return TaskCode.TIMEOUT
    return TaskCode.ROBOT_FAULT


def run_closed_loop(
    instruction: str,
    plan: PlanFn,
    run_skill: SkillFn,
    report: ReportFn = lambda _: None,
    canceled: Callable[[], bool] = lambda: False,
    max_replans: int = 3,
    check_plan: Callable[[PlanResult], str | None] = lambda _plan: None,
) -> ExecutionResult:
    """Plan, execute, replan; `check_plan` may refuse a plan the robot cannot run before it moves."""
    result = ExecutionResult(False, "")

    def end(code: TaskCode, message: str, stage: Stage = Stage.FAILED) -> ExecutionResult:
        result.code, result.message = code, message
        report(StepReport(stage, 0, 0, None, Status.FAILED, result.replans, message, int(code)))
        return result

    context = ""
    while True:
        stage = Stage.REPLANNING if result.replans else Stage.PLANNING
        report(StepReport(stage, 0, 0, None, Status.PROGRESS, result.replans, context or "asking the planner"))
        outcome = plan(instruction, context)
        if canceled():
            return end(TaskCode.CANCELED, "canceled", Stage.CANCELED)
        if not outcome.success:
            if outcome.failure in _PLAN_STOPS:  # the planner was paused, or is not active: no plan failed
                return end(_PLAN_STOPS[outcome.failure], outcome.message)
            return end(TaskCode.PLANNING_FAILED, f"planning failed: {outcome.message}")
        refusal = check_plan(outcome)
        if refusal is not None:
            return end(TaskCode.ACTION_SET_MISMATCH, f"the robot cannot run this plan: {refusal}")
        steps = outcome.full_plan
        failed = False
        for index, step in enumerate(steps):
            if canceled():
                return end(TaskCode.CANCELED, "canceled", Stage.CANCELED)
            report(StepReport(Stage.EXECUTING, index, len(steps), step, Status.RUNNING, result.replans))
            skill = run_skill(step, outcome.action_set)
            if canceled() or skill.code is SkillCode.CANCELED:
                return end(TaskCode.CANCELED, "canceled", Stage.CANCELED)
            if skill.success:
                result.executed.append(step)
                report(StepReport(Stage.EXECUTING, index, len(steps), step, Status.SUCCEEDED, result.replans))
                if step.action == "done":
                    break
                continue
            failure = f"step {index} {step} failed ({skill.code.label}): {skill.message}"
            result.failures.append(failure)
            report(
                StepReport(
                    Stage.EXECUTING, index, len(steps), step, Status.FAILED, result.replans, skill.message, skill.code
                )
            )
            if not skill.code.replannable:
                return end(_task_code(skill.code), failure)
            if result.replans >= max_replans:
                return end(
                    TaskCode.REPLANS_EXHAUSTED, f"gave up after {result.replans} replan(s); last failure: {failure}"
                )
            result.replans += 1
            context = (
                f"Execution of the previous plan stopped: {failure}. The scene graph now shows the current "
                "state of the world; plan again from here."
            )
            failed = True
            break
        if not failed:
            result.success = True
            result.message = f"task done in {len(result.executed)} steps with {result.replans} replan(s)"
            report(
                StepReport(Stage.DONE, len(steps), len(steps), None, Status.SUCCEEDED, result.replans, result.message)
            )
            return result
