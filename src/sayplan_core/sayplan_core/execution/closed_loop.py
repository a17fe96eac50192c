"""The closed loop: plan, run the plan skill by skill, and replan from the current state on failure.

The loop knows nothing about ROS: it calls three functions the caller provides
(plan, run a skill, report progress). The ROS executor node wires them to the
plan_task and execute_skill actions; tests wire them to the core directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sayplan_core.sim.plan import PlanStep


@dataclass
class PlanOutcome:
    success: bool
    full_plan: list[PlanStep] = field(default_factory=list)
    message: str = ""


@dataclass
class StepReport:
    stage: str  # planning | executing | replanning | done | failed | cancelled
    step_index: int
    step_count: int
    step: PlanStep | None
    status: str
    replans: int


@dataclass
class ExecutionResult:
    success: bool
    message: str
    executed: list[PlanStep] = field(default_factory=list)
    replans: int = 0
    failures: list[str] = field(default_factory=list)
    cancelled: bool = False


@dataclass
class SkillResult:
    success: bool
    failure_code: str = ""
    message: str = ""


PlanFn = Callable[[str, str], PlanOutcome]  # (instruction, context) -> plan
SkillFn = Callable[[PlanStep], SkillResult]
ReportFn = Callable[[StepReport], None]


def run_closed_loop(
    instruction: str,
    plan: PlanFn,
    run_skill: SkillFn,
    report: ReportFn = lambda _: None,
    cancelled: Callable[[], bool] = lambda: False,
    max_replans: int = 3,
) -> ExecutionResult:
    result = ExecutionResult(False, "")
    context = ""
    while True:
        stage = "replanning" if result.replans else "planning"
        report(StepReport(stage, 0, 0, None, context or "asking the planner", result.replans))
        outcome = plan(instruction, context)
        if cancelled():
            return _cancel(result, report)
        if not outcome.success:
            result.message = f"planning failed: {outcome.message}"
            report(StepReport("failed", 0, 0, None, result.message, result.replans))
            return result
        steps = outcome.full_plan
        failed = False
        for index, step in enumerate(steps):
            if cancelled():
                return _cancel(result, report)
            report(StepReport("executing", index, len(steps), step, "running", result.replans))
            skill = run_skill(step)
            if cancelled():
                return _cancel(result, report)
            if skill.success:
                result.executed.append(step)
                report(StepReport("executing", index, len(steps), step, "succeeded", result.replans))
                if step.action == "done":
                    break
                continue
            failure = f"step {index} {step} failed ({skill.failure_code}): {skill.message}"
            result.failures.append(failure)
            report(StepReport("executing", index, len(steps), step, f"failed: {skill.failure_code}", result.replans))
            if result.replans >= max_replans:
                result.message = f"gave up after {result.replans} replan(s); last failure: {failure}"
                report(StepReport("failed", index, len(steps), step, result.message, result.replans))
                return result
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
            report(StepReport("done", len(steps), len(steps), None, result.message, result.replans))
            return result


def _cancel(result: ExecutionResult, report: ReportFn) -> ExecutionResult:
    result.cancelled = True
    result.message = "cancelled"
    report(StepReport("cancelled", 0, 0, None, "cancelled", result.replans))
    return result
