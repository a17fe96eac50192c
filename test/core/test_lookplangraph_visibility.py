"""LookPlanGraph shows the nodes around the robot where they are now, not where its memory graph first had them.

The visible set (`visible_nodes`) is the agent's room with what is in it, the nodes the robot has touched with the
assets and objects they rest on or in, the agent and what it holds. An object that was moved is shown where the
state has it: the asset it was found on is no longer shown because of it, and an object set down in a room is
part of that room.

The planner writes each step into its own memory graph (`WorldState.commit`), never into the caller's: runs on one
truth graph object (a finished plan, an aborted one, a replan) leave it unchanged and a second run sees exactly the
prompts the first saw. The prompts are read back from the recorded LLM calls (the real RecordingBackend), the
oracle being the truth graph's own serialisation and where the scripted moves put things.
"""

from __future__ import annotations

import json
from typing import Any

from transcripts import transcript

from sayplan_core.envs import load_env
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.native_format import dumps
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.types import LlmRequest, LlmResponse
from sayplan_core.planners import make_planner
from sayplan_core.planners.base import PlanResult
from sayplan_core.planners.lookplangraph import memory_graph, truth_reveal_hook, visible_nodes
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState


def walk(state: WorldState, *steps: tuple[str, str]) -> None:
    actions = load_action_set("lookplangraph")
    for name, target in steps:
        outcome = apply_step(state, PlanStep(name, target), actions)
        assert outcome.ok, outcome.feedback


def test_a_carried_object_no_longer_shows_the_asset_it_was_found_on() -> None:
    truth = load_env("office")
    assert truth.parent("apple1") == "fruit_bowl_table" and truth.room_of("fruit_bowl_table") == "cafeteria"
    state = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
    walk(state, ("go_to", "cafeteria"), ("look_on", "fruit_bowl_table"), ("pick_up", "apple1"), ("go_to", "kitchen"))
    shown = visible_nodes(state, ["apple1"])
    assert "apple1" in shown
    assert "fruit_bowl_table" not in shown  # the apple is in the hand, in the kitchen
    walk(state, ("put_on", "fridge"))
    shown = visible_nodes(state, ["apple1"])
    assert "fridge" in shown and "fruit_bowl_table" not in shown  # the apple rests on the fridge now


def holding(graph: SceneGraph, obj: str) -> SceneGraph:
    """The office with the agent holding `obj` from the start (its memory graph keeps what the agent holds)."""
    out = graph.copy()
    assert out.agent_id is not None
    out.set_parent(obj, out.agent_id, "inside_hand")
    return out


def move(name: str, target: str) -> str:
    return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})


def test_an_object_set_down_is_shown_in_its_new_room() -> None:
    """The robot starts with the banana in hand, puts it on the kitchen's fridge, leaves and comes back: the
    banana is in the kitchen, so each prompt in the kitchen shows it and the model may name it."""
    truth = holding(load_env("office"), "banana1")
    answers = [
        move("go_to", "kitchen"),
        move("put_on", "fridge"),
        move("go_to", "cafeteria"),
        move("go_to", "kitchen"),
        move("pick_up", "banana1"),
        move("done", ""),
    ]
    recorder = RecordingBackend(transcript(*answers))
    schemas: list[dict[str, Any]] = []
    inner = recorder.complete

    def spy(request: LlmRequest) -> LlmResponse:
        schemas.append(request.schema or {})
        return inner(request)

    recorder.complete = spy  # type: ignore[method-assign]
    result = make_planner("lookplangraph", recorder).plan(truth, "bring the banana back")
    assert result.success, result.message
    assert [str(s) for s in result.plan][:5] == [
        "go_to(kitchen)",
        "put_on(fridge)",
        "go_to(cafeteria)",
        "go_to(kitchen)",
        "pick_up(banana1)",
    ]

    def targets(call: int) -> list[str]:
        enum: list[str] = schemas[call]["properties"]["next_move"]["properties"]["function_target"]["enum"]
        return enum

    def prompt(call: int) -> str:
        content: str = recorder.calls[call]["messages"][1]["content"]
        return content

    assert "banana1" in targets(1)  # in the hand
    for call in (2, 4):  # just put down in the kitchen; back in the kitchen
        assert "banana1" in targets(call), call
        assert '"id":"banana1"' in prompt(call) and "ontop_of(fridge)" in prompt(call), call
    assert "banana1" not in targets(3)  # in the cafeteria it is out of sight


CARRY = [
    move("go_to", "admin"),
    move("look_on", "admin_desk"),
    move("pick_up", "scissors"),
    move("go_to", "reception"),
    move("put_on", "reception_desk"),
    move("go_to", "admin"),
    move("done", ""),
]


def run(graph: SceneGraph, answers: list[str]) -> tuple[PlanResult, list[str]]:
    recorder = RecordingBackend(transcript(*answers))
    result = make_planner("lookplangraph", recorder).plan(graph, "put the scissors on the reception desk")
    return result, [call["messages"][1]["content"] for call in recorder.calls]


def shown(prompt: str) -> dict[str, dict[str, Any]]:
    """The prompt's graph records by node id (the JSON after "3D scene graph:")."""
    graph, _ = json.JSONDecoder().raw_decode(prompt[prompt.index("{") :])
    return {record["id"]: record for records in graph["nodes"].values() for record in records}


def test_two_runs_on_one_graph_object_see_the_same_prompts_and_leave_it_unchanged() -> None:
    truth = load_env("office")
    before = dumps(truth)
    first, prompts1 = run(truth, CARRY)
    assert first.success, first.message
    assert dumps(truth) == before  # the caller's graph is not the planner's memory graph
    second, prompts2 = run(truth, CARRY)
    assert second.success and prompts2 == prompts1
    assert dumps(truth) == before


def test_an_aborted_run_leaves_nothing_behind_for_the_next_one() -> None:
    truth = load_env("office")
    before = dumps(truth)
    _, clean = run(truth, CARRY)
    refused = [move("pick_up", "reception_desk")] * 6  # an asset cannot be picked: refused until the run gives up
    aborted, _ = run(truth, [*CARRY[:3], *refused])
    assert not aborted.success and "no feasible move" in aborted.message
    assert dumps(truth) == before
    again, prompts = run(truth, CARRY)
    assert again.success and prompts == clean


def test_a_moved_object_is_shown_where_it_was_put_not_where_it_was_found() -> None:
    truth = load_env("office")
    _, prompts = run(truth, CARRY)
    assert len(prompts) == len(CARRY)
    # prompt 5 is asked after put_on(reception_desk): the agent is in reception with the scissors on its desk
    after_put = shown(prompts[5])
    assert after_put["scissors"]["state"] == "ontop_of(reception_desk)", after_put["scissors"]
    assert "undergraduate_thesis" not in after_put  # left on the admin desk, another room
    # prompt 6, back in admin: the scissors are still shown (touched) on the reception desk, not where found
    back = shown(prompts[6])
    assert back["scissors"]["state"] == "ontop_of(reception_desk)", back["scissors"]
    assert back["undergraduate_thesis"]["state"] == "ontop_of(admin_desk)"
    assert truth.parent("scissors") == "admin_desk"  # the truth graph still has them where they were found
