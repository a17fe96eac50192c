"""sayplan_core.viz.planning: a plan_task goal's steps and LLM calls as the monitor's rows, and what each search
step did, read from the very feedback texts the planners produce."""

from __future__ import annotations

from sayplan_core.envs import load_env
from sayplan_core.graph.views import collapse
from sayplan_core.planners.sayplan import SayPlanPlanner
from sayplan_core.viz.planning import REFUSED, PlanningLog, search_action


def test_a_search_step_says_what_it_expanded_contracted_or_was_refused() -> None:
    view, observed = collapse(load_env("office")), set[str]()
    named = SayPlanPlanner.search_step(collapse(view.graph), "expand", "kitchen", observed, True)
    assert search_action("search", "kitchen", named) == "expand", named  # reveal_names: it lists what appeared
    expanded = SayPlanPlanner.search_step(view, "expand", "kitchen", observed)
    assert search_action("search", "kitchen", expanded) == "expand", expanded
    contracted = SayPlanPlanner.search_step(view, "contract", "kitchen", observed)
    assert search_action("search", "kitchen", contracted) == "contract", contracted
    unknown = SayPlanPlanner.search_step(view, "expand", "no_such_room", observed)
    assert search_action("search", "no_such_room", unknown) == REFUSED, unknown
    # a node named like the start of another's feedback is not taken for it
    assert search_action("search", "kitchen", "expanded kitchen_cupboard: 2 nodes revealed") == REFUSED
    assert search_action("verify", "", "plan verified") == ""
    assert search_action("search", "", "pre-retrieval: [mug]") == ""


def test_each_report_is_a_numbered_goal_and_the_history_is_bounded() -> None:
    log = PlanningLog(history=3)
    step = {"stage": "search", "node": "kitchen", "step": 0, "replanning_round": 0, "tokens_used": 1704}
    call = {"stage": "search", "model": "replay", "prompt_tokens": 1500, "completion_tokens": 204}
    steps, calls = log.add(
        "make coffee",
        "sayplan",
        True,
        [{**step, "message": "expanded kitchen: 34 nodes revealed"}, {**step, "message": "unknown node kitchen"}],
        [{**call, "latency_s": 0.25, "outcome": "ok"}],
    )
    assert [(s["goal"], s["sequence"], s["search"]) for s in steps] == [(1, 0, "expand"), (1, 1, REFUSED)]
    assert calls == [
        {"goal": 1, "instruction": "make coffee", "planner": "sayplan", "goal_success": True, "index": 0,
         "stage": "search", "model": "replay", "prompt_tokens": 1500, "completion_tokens": 204, "latency_s": 0.25,
         "outcome": "ok"}
    ]  # fmt: skip
    again, _ = log.add("make coffee", "sayplan", False, [{**step, "message": "contracted kitchen"}] * 2, [])
    assert [(s["goal"], s["search"], s["goal_success"]) for s in again] == [(2, "contract", False)] * 2
    assert [(s["goal"], s["sequence"]) for s in log.steps] == [(1, 1), (2, 0), (2, 1)]  # the last 3 kept
