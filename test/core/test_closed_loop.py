"""The closed loop in the core: planner (replayed), simulated world with failures, graph updates."""

from __future__ import annotations

import json
from typing import Any

import pytest
from transcripts import FAST, GOOD_PLAN, INSTRUCTION, say, transcript

from sayplan_core.envs import load_env
from sayplan_core.execution.closed_loop import SkillResult, StepReport, run_closed_loop
from sayplan_core.execution.sim_world import InjectedFailure, SimulatedWorld, apply_world_changes
from sayplan_core.graph.updates import apply_update
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.outcomes import SkillCode, Stage, TaskCode
from sayplan_core.planners import PlannerOptions, PlanResult, make_planner
from sayplan_core.sim import check_goals, goal_from_dict
from sayplan_core.sim.plan import PlanStep

GOAL = goal_from_dict({"kind": "placed", "node": "coffee_mug", "relation": "ontop_of", "target": "nikos_desk"})
REST_OF_PLAN = GOOD_PLAN[2:]  # from the kitchen, cupboard already open: access, pickup, ... done


class Harness:
    def __init__(self, backend: Any, world: SimulatedWorld, planner: str = "sayplan") -> None:
        self.graph = load_env("office")
        self.world = world
        self.planner = make_planner(planner, backend, PlannerOptions(budget=FAST))
        self.reports: list[StepReport] = []

    def plan(self, instruction: str, context: str) -> PlanResult:
        return self.planner.plan(self.graph, instruction, context=context)

    def run_skill(self, step: PlanStep, action_set: str = "sayplan") -> SkillResult:
        outcome = self.world.execute(step.action, step.target)
        self.graph = apply_update(self.graph, outcome.update)
        return outcome

    def run(self, **kw: Any) -> Any:
        return run_closed_loop(INSTRUCTION, self.plan, self.run_skill, self.reports.append, **kw)


def test_grasp_failure_leads_to_a_replan_and_success() -> None:
    backend = RecordingBackend(
        transcript(
            say("expand", "kitchen"),
            say("expand", "nikos_office"),
            say("plan", plan=GOOD_PLAN),
            say("plan", plan=REST_OF_PLAN),
        )
    )
    world = SimulatedWorld(load_env("office"), failures=[InjectedFailure("pickup", "coffee_mug", "grasp_failed")])
    h = Harness(backend, world)
    result = h.run()
    assert result.success and result.replans == 1, result.message
    assert result.failures == [
        "step 8 pickup(coffee_mug) failed (grasp_failed): pickup(coffee_mug) failed: grasp failed (injected)"
    ]
    assert check_goals(world.truth, [GOAL]).success
    assert check_goals(h.graph, [GOAL]).success  # the robot's graph followed the world
    assert h.graph.agent_location() == "nikos_office"
    replan_prompt = backend.calls[3]["messages"][1]["content"]
    assert (
        "Feedback: Execution of the previous plan stopped: step 8 pickup(coffee_mug) failed (grasp_failed)"
        in replan_prompt
    )
    stages = [r.stage for r in h.reports]
    assert stages[0] == "planning" and "replanning" in stages and stages[-1] == "done"


def test_locked_cupboard_is_learned_and_planned_around() -> None:
    truth = apply_world_changes(
        load_env("office"), [{"kind": "state", "node": "kitchen_cupboard", "states": ["locked"]}]
    )
    other_mug = [
        ("open", "dishwasher"), ("access", "dishwasher"), ("pickup", "clean_cup"), ("goto", "nikos_office"),
        ("access", "nikos_desk"), ("release", "clean_cup"), ("done", ""),
    ]  # fmt: skip
    backend = transcript(say("expand", "kitchen"), say("plan", plan=GOOD_PLAN), say("plan", plan=other_mug))
    h = Harness(backend, SimulatedWorld(truth))
    result = h.run()
    assert result.success and result.replans == 1
    assert "open(kitchen_cupboard) failed (locked)" in result.failures[0]
    assert "locked" in h.graph.nodes["kitchen_cupboard"].states
    assert h.graph.parent("clean_cup") == "nikos_desk"


def test_object_moved_to_another_room_is_forgotten() -> None:
    truth = apply_world_changes(load_env("office"), [{"kind": "move", "node": "coffee_mug", "parent": "lunch_table"}])
    world = SimulatedWorld(truth)
    h = Harness(transcript(), world)
    for step in ("goto(pose8)", "goto(pose9)", "goto(pose10)", "goto(pose11)", "goto(pose12)", "goto(kitchen)"):
        action, target = step[:-1].split("(")
        assert h.run_skill(PlanStep(action, target)).success
    assert h.run_skill(PlanStep("open", "kitchen_cupboard")).success
    assert h.run_skill(PlanStep("access", "kitchen_cupboard")).success
    missing = h.run_skill(PlanStep("pickup", "coffee_mug"))
    assert not missing.success and missing.code is SkillCode.NOT_FOUND
    assert "coffee_mug" not in h.graph  # not here, and the robot cannot see where it went
    assert h.graph.nodes["kitchen_cupboard"].states == ("open",)


def test_replans_are_bounded() -> None:
    failures = [InjectedFailure("goto", "pose8", "unreachable", times=5)]
    answers = [say("plan", plan=GOOD_PLAN)] * 3
    h = Harness(transcript(*answers), SimulatedWorld(load_env("office"), failures=failures))
    result = h.run(max_replans=2)
    assert not result.success and result.replans == 2
    assert result.message.startswith("gave up after 2 replan(s); last failure: step 0 goto(pose8) failed (unreachable)")


def test_planning_failure_and_cancel() -> None:
    h = Harness(
        transcript(say("plan", plan=[("pickup", "coffee_mug"), ("done", "")])), SimulatedWorld(load_env("office"))
    )
    h.planner.options.max_replans = 0
    result = h.run()
    assert not result.success and result.message.startswith("planning failed: no verified plan after 0 replanning")
    h = Harness(transcript(say("expand", "kitchen"), say("plan", plan=GOOD_PLAN)), SimulatedWorld(load_env("office")))
    ticks: list[int] = []

    def canceled() -> bool:
        ticks.append(1)
        return len(ticks) > 4

    result = h.run(canceled=canceled)
    # checks: after planning, before and after each skill; the 5th (after the 2nd skill) cancels,
    # so the interrupted 2nd skill does not count as executed
    assert result.canceled and result.message == "canceled" and [str(s) for s in result.executed] == ["goto(pose8)"]


def test_bad_injected_failures_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown skill outcome 'melted'"):
        InjectedFailure("pickup", "x", "melted")
    with pytest.raises(ValueError, match="times must be a whole number"):
        InjectedFailure.parse("pickup:x:grasp_failed:twice")
    with pytest.raises(ValueError, match="must be skill:target:code"):
        InjectedFailure.parse("pickup:x")


@pytest.mark.parametrize(
    ("code", "task_code"),
    [
        (SkillCode.ESTOPPED, TaskCode.ROBOT_FAULT),
        (SkillCode.LEASE_LOST, TaskCode.ROBOT_FAULT),
        (SkillCode.WRONG_ACTION_SET, TaskCode.SKILL_REFUSED),
        (SkillCode.TIMEOUT, TaskCode.TIMEOUT),
    ],
)
def test_a_failure_no_plan_can_fix_ends_the_task_without_a_replan(code: SkillCode, task_code: TaskCode) -> None:
    failures = [InjectedFailure("goto", "pose9", code)]
    h = Harness(transcript(say("plan", plan=GOOD_PLAN)), SimulatedWorld(load_env("office"), failures=failures))
    result = h.run(max_replans=3)
    assert not result.success and result.replans == 0 and result.code is task_code
    assert f"goto(pose9) failed ({code.label})" in result.message
    assert h.reports[-1].stage is Stage.FAILED and h.reports[-1].code == task_code


def lpg(name: str, target: str = "") -> str:
    return json.dumps({"chain_of_thought": "...", "next_move": {"function_name": name, "function_target": target}})


def test_lookplangraph_plans_run_through_the_closed_loop_and_replan_after_a_failure() -> None:
    first = [("go_to", "kitchen"), ("open", "kitchen_cupboard"), ("look_inside", "kitchen_cupboard"),
             ("pick_up", "coffee_mug"), ("go_to", "nikos_office"), ("put_on", "nikos_desk"), ("done", "")]  # fmt: skip
    # after the failed grasp the robot's graph knows the open cupboard: look again, grasp, deliver
    second = [("look_inside", "kitchen_cupboard"), ("pick_up", "coffee_mug"), ("go_to", "nikos_office"),
              ("put_on", "nikos_desk"), ("done", "")]  # fmt: skip
    backend = transcript(*[lpg(a, t) for a, t in first + second])
    world = SimulatedWorld(
        load_env("office"), "lookplangraph", failures=[InjectedFailure("pick_up", "coffee_mug", "grasp_failed")]
    )
    h = Harness(backend, world, "lookplangraph")
    result = h.run()
    assert result.success and result.replans == 1, result.message
    executed = list(dict.fromkeys((r.replans, r.step_index, str(r.step)) for r in h.reports if r.step is not None))
    assert [step for _, _, step in executed][:4] == ["go_to(kitchen)", "open(kitchen_cupboard)",
        "look_inside(kitchen_cupboard)", "pick_up(coffee_mug)"]  # fmt: skip
    assert check_goals(world.truth, [GOAL]).success and check_goals(h.graph, [GOAL]).success
