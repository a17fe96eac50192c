"""Review of issue 29's LookPlanGraph and ltl changes (WorldState.commit, state-aware visibility, nav_edge_costs).

LookPlanGraph now writes each step into its memory graph instead of copying it to show the step: these tests run
the planner on one truth graph object several times (a finished plan, an aborted one, a replan) and check that the
caller's graph is never changed and that a second run sees exactly what the first saw. The prompts are read back
from the recorded LLM calls (the real RecordingBackend), the oracle being the truth graph's own serialisation and
where the scripted moves put things.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from transcripts import transcript

from sayplan_core.envs import load_env
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.native_format import dumps
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.nav.path_planner import PathPlanner, nav_edge_costs
from sayplan_core.planners import make_planner
from sayplan_core.planners.base import PlanResult


def move(name: str, target: str) -> str:
    return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})


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


@pytest.mark.parametrize("weight", [None, 0.0, 2.5, 1e9])
@pytest.mark.parametrize("positions", [(None, None), ((0, 0, 0), (3, 4, 0)), ((0, 0, 0), (0, 0, 0)), ((0, 0, 0), None)])
def test_nav_edge_costs_agree_with_the_path_planner_between_floors(
    weight: float | None, positions: tuple[Any, Any]
) -> None:
    graph = SceneGraph("two floors")
    graph.add_node(Node("b", "building"))
    for floor in ("f1", "f2"):
        graph.add_node(Node(floor, "floor"))
        graph.set_parent(floor, "b", "in")
    graph.add_node(Node("stairs_low", "pose", position=positions[0]))
    graph.add_node(Node("stairs_high", "pose", position=positions[1]))
    graph.set_parent("stairs_low", "f1", "in")
    graph.set_parent("stairs_high", "f2", "in")
    graph.connect("stairs_low", "stairs_high", weight)
    [(a, b, cost)] = list(nav_edge_costs(graph))
    assert {a, b} == {"stairs_low", "stairs_high"}
    assert cost == PathPlanner(graph).edge_cost(a, b)
    if None in positions:  # no geometry: the stored weight, else the default
        assert cost == (weight if weight is not None else 1.0)
    else:
        straight = math.dist(positions[0], positions[1])
        assert cost == (max(straight, weight) if weight is not None else max(straight, 1e-6))
