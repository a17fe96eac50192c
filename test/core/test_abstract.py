"""Abstract commands (Kwon et al.) on replayed transcripts, scored with the real MiniLM model."""

from __future__ import annotations

import json
from typing import Any

from transcripts import FAST, transcript

from sayplan_core.envs import load_env
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.abstract import AbstractOptions, MoveStep, compile_moves, workspace_dictionary
from sayplan_core.sim import verify_plan

COMMAND = "Put all the fruit together in one place."


def plans(*candidates: list[tuple[str, str, str]]) -> str:
    return json.dumps(
        {"plans": [{"steps": [{"sentence": s, "object": o, "workspace": w} for s, o, w in c]} for c in candidates]}
    )


FRUIT_PLAN = [
    ("put the orange in the fruit bowl with the other fruit", "orange", "fruit_bowl_table"),
    ("move the fresh apple to the fruit bowl so the fruit is together", "apple3", "fruit_bowl_table"),
    ("move the stapler to the kitchen bench", "stapler", "kitchen_bench"),  # off-topic: dropped
]
OFF_TOPIC_PLAN = [("move the stapler to the kitchen bench", "stapler", "kitchen_bench")]


def run(*answers: str, **options: Any) -> Any:
    config = AbstractOptions(**options)  # the planner's own options (step_threshold, ...)
    planner = make_planner("abstract", transcript(*answers), PlannerOptions(budget=FAST), config)
    return planner.plan(load_env("office"), COMMAND)


def test_the_most_relevant_candidate_is_compiled_and_verified() -> None:
    result = run(plans(OFF_TOPIC_PLAN, FRUIT_PLAN))
    assert result.success and result.verified, result.message
    assert result.message.startswith("candidate 2 of 2") and "1 step(s) below 0.5" in result.message
    final = verify_plan(load_env("office"), result.full_plan, strict_navigation=True).final_graph()
    assert final.parent("orange") == "fruit_bowl_table" and final.parent("apple3") == "fruit_bowl_table"
    assert final.parent("stapler") == load_env("office").parent("stapler")  # the low-relevance step was dropped
    assert {s.action for s in result.plan} <= {"goto", "access", "open", "pickup", "release", "done"}


def test_falls_back_to_the_next_candidate_when_nothing_is_relevant_or_it_fails() -> None:
    result = run(plans(OFF_TOPIC_PLAN), step_threshold=0.5)
    assert not result.success and result.failure is PlanCode.NOT_EXECUTABLE
    assert "candidate 1: no step reaches the relevance threshold" in result.message
    # with the cut-off at 0, the off-topic plan is kept and compiles
    assert run(plans(OFF_TOPIC_PLAN), step_threshold=0.0).success


def test_compiler_opens_containers_and_reports_what_it_cannot_do() -> None:
    office = load_env("office")
    plan, problem = compile_moves(office, [MoveStep("mug to the desk", "coffee_mug", "nikos_desk")])
    assert problem == ""
    assert [str(s) for s in plan[:4]] == [
        "goto(kitchen)",
        "access(kitchen_cupboard)",
        "open(kitchen_cupboard)",
        "pickup(coffee_mug)",
    ]
    assert verify_plan(office, plan).success
    _, problem = compile_moves(
        office, [MoveStep("x", "coffee_mug", "nikos_desk"), MoveStep("y", "orange", "nikos_desk")]
    )
    assert problem == ""
    assert workspace_dictionary(office)["fruit_bowl_table (cafeteria)"] == ["apple1", "banana1", "banana2"]


def test_bad_candidate_answers_are_fed_back() -> None:
    result = run(
        json.dumps({"plans": []}),
        plans([("move the kiwi", "kiwi", "fruit_bowl_table")]),
        plans(FRUIT_PLAN),
    )
    assert result.success
    assert [c.detail for c in result.calls if c.outcome == "bad_answer"] == [
        "the answer needs a non-empty 'plans' list",
        "plan 1: 'kiwi' is not an object id",
    ]
