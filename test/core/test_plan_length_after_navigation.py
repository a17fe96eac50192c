"""A plan within the step limit whose navigation, once filled in, takes it over the limit is feedback for the
model like any plan that fails, not an exception: the planner goes on, and the calls made are counted.
(Found as a hostile user: a verified 999-step plan of gotos ended "internal error" with its call count lost.)"""

from __future__ import annotations

from transcripts import say, transcript

from sayplan_core.envs import load_env
from sayplan_core.graph import limits
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, make_planner

#: far-apart rooms: each goto between them is several steps once the path planner fills in the poses
BACK_AND_FORTH = [("goto", "kitchen"), ("goto", "printing_zone2")] * 400 + [("done", "")]


def test_a_plan_that_grows_past_the_limit_is_refused_as_feedback_and_the_next_one_runs() -> None:
    assert len(BACK_AND_FORTH) <= limits.MAX_PLAN_STEPS
    backend = transcript(
        say("expand", "kitchen"),
        say("plan", plan=BACK_AND_FORTH, answer=["carrot"]),
        say("plan", plan=[("done", "")], answer=["carrot"]),
    )
    result = make_planner("sayplan", backend, PlannerOptions()).plan(load_env("office"), "Find me a carrot.")
    assert result.success, result.message
    assert len(result.calls) == 3 and result.replanning_rounds >= 1


def test_when_no_shorter_plan_comes_the_run_ends_typed_with_its_calls_counted() -> None:
    backend = transcript(say("expand", "kitchen"), *[say("plan", plan=BACK_AND_FORTH, answer=["carrot"])] * 3)
    options = PlannerOptions(max_replans=2)
    result = make_planner("sayplan", backend, options).plan(load_env("office"), "Find me a carrot.")
    assert not result.success and result.failure is PlanCode.REPLANS_EXHAUSTED, result.message
    assert len(result.calls) == 4
    assert f"over the limit of {limits.MAX_PLAN_STEPS}" in result.message
