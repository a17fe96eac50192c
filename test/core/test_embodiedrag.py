"""EmbodiedRAG on replayed transcripts: pre-retrieval, the ReAct loop on the subgraph, self-query, failure modes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from transcripts import FAST, GOAL, INSTRUCTION, transcript

from sayplan_core.envs import load_env
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.embodiedrag import RetrievalOptions
from sayplan_core.sim import check_goals, verify_plan


def entities(*names: str, attributes: tuple[str, ...] = ("states",)) -> str:
    return json.dumps({"entities": [{"name": n, "attributes": list(attributes)} for n in names]})


def act(name: str, target: str = "", thought: str = "...") -> str:
    return json.dumps({"thought": thought, "action": {"name": name, "target": target}})


def run(planner: str, *answers: str) -> tuple[Any, RecordingBackend]:
    backend = RecordingBackend(transcript(*answers))
    result = make_planner(planner, backend, PlannerOptions(budget=FAST)).plan(load_env("office"), INSTRUCTION)
    return result, backend


def prompts_of(backend: RecordingBackend, schema: str) -> list[str]:
    return [c["messages"][-1]["content"] for c in backend.calls if c["schema_name"] == schema]


def test_feedback_variant_recovers_through_self_query() -> None:
    result, backend = run(
        "embodiedrag",
        entities("coffee mug", "coffee machine", "Niko's desk"),
        act("goto", "kitchen", "the mug is in the kitchen cupboard"),
        entities(),
        act("access", "kitchen_cupboard"),
        entities(),
        act("pickup", "coffee_mug", "take the mug"),  # the cupboard is closed: an observation, not a crash
        entities("kitchen cupboard"),
        act("open", "kitchen_cupboard", "open the cupboard first"),
        entities(),
        act("pickup", "coffee_mug"),
        entities(),
        act("access", "coffee_machine"),
        entities(),
        act("release", "coffee_mug"),
        entities(),
        act("turn_on", "coffee_machine"),
        entities(),
        act("turn_off", "coffee_machine"),
        entities(),
        act("pickup", "coffee_mug"),
        entities(),
        act("goto", "nikos_office"),
        entities(),
        act("access", "nikos_desk"),
        entities(),
        act("release", "coffee_mug"),
        entities(),
        act("done", "", "the coffee is on the desk"),
    )
    assert result.success and result.verified, result.message
    assert result.feedback_history == ["cannot pickup(coffee_mug): it is inside kitchen_cupboard, which is closed"]
    final = verify_plan(load_env("office"), result.full_plan, strict_navigation=True).final_graph()
    assert check_goals(final, [GOAL]).success
    stages = [c.stage for c in result.calls]
    assert stages[0] == "pre_retrieval" and stages.count("self_query") == 13 and stages.count("plan") == 14
    # pre-retrieval is asked without the graph; the planner sees the retrieved subgraph only
    assert "coffee_mug" not in backend.calls[0]["messages"][-1]["content"]
    plan_prompts = prompts_of(backend, "react")
    assert all("stapler" not in p and "wills_printer" not in p for p in plan_prompts)
    assert "coffee_mug" in plan_prompts[0] and "nikos_desk" in plan_prompts[0]
    # after the move, the mug shows up on the desk: the index followed the world state
    assert '"state":"ontop_of(nikos_desk)"' in plan_prompts[-1]
    full = count_tokens(to_prompt_text(load_env("office")))
    assert max(count_tokens(p) for p in plan_prompts) < full / 3


def test_strict_variant_never_self_queries_and_refuses_unretrieved_targets() -> None:
    result, _ = run(
        "embodiedrag_strict",
        entities("coffee mug"),
        act("goto", "kitchen"),
        act("access", "wills_printer"),  # never retrieved: refused and fed back
        act("access", "wills_printer"),
        act("access", "wills_printer"),
        act("access", "wills_printer"),
    )
    assert not result.success and result.failure is PlanCode.BUDGET_EXHAUSTED
    assert "'wills_printer' is not in the retrieved subgraph" in result.message
    assert "self_query" not in {c.stage for c in result.calls}


def test_gives_up_after_repeated_infeasible_actions() -> None:
    result, _ = run("embodiedrag_strict", entities("coffee mug"), *[act("pickup", "coffee_mug")] * 6)
    assert not result.success and result.failure is PlanCode.REPLANS_EXHAUSTED and result.replanning_rounds == 6
    assert result.message.startswith("6 infeasible actions in a row; last feedback: cannot pickup(coffee_mug)")


def test_bad_pre_retrieval_answers_are_fed_back() -> None:
    result, _ = run(
        "embodiedrag_strict",
        json.dumps({"objects": ["mug"]}),
        entities("mug", attributes=("colour",)),
        entities("mug"),
        act("done"),
    )
    assert result.success
    feedback = [c.detail for c in result.calls if c.outcome == "bad_answer"]
    assert feedback == ["the answer needs an 'entities' list", "attributes must be chosen from states, affordances"]


def test_embedding_endpoint_down_fails_the_task_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    config = RetrievalOptions(embedder="openai:text-embedding-3-small")
    planner = make_planner("embodiedrag", transcript(entities("mug")), PlannerOptions(budget=FAST), config)
    result = planner.plan(load_env("office"), INSTRUCTION)
    assert not result.success and result.failure is PlanCode.BACKEND_ERROR
    assert result.message.startswith("embedding error: openai:text-embedding-3-small: embedding request failed")


def test_repeated_queries_merge_their_attributes() -> None:
    from sayplan_core.planners.embodiedrag import EntityQuery, Retrieval
    from sayplan_core.retrieval import EntityIndex, default_embedder

    retrieval = Retrieval(EntityIndex(default_embedder()), top_k=3, threshold=0.45)
    retrieval.add([EntityQuery("coffee mug", ("states",))])
    retrieval.add([EntityQuery("Coffee Mug", ("affordances",)), EntityQuery("desk")])
    assert retrieval.queries == [EntityQuery("coffee mug", ("states", "affordances")), EntityQuery("desk")]
