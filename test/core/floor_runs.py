"""Replaying a floor-level search transcript on the generated 1,000-room building (issue 28), for the SayPlan and
SayPlan Lite tests: the checks both planners' runs must pass, written once."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from transcripts import FAST

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.replay import ReplayBackend
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.sayplan import SayPlanOptions
from sayplan_core.sim import check_goals, goal_from_dict, verify_plan

DATA = Path(__file__).parent / "data"
TASK = re.compile(r"Take the (\S+) from the (\S+) in (\S+) and put it on the (\S+) in (\S+)\.")


@cache
def building() -> SceneGraph:
    return generate_building(BuildingSpec(floors=10, rooms_per_floor=100, seed=0))


def graph_in(prompt: str) -> dict[str, list[dict[str, str]]]:
    """The scene graph JSON a search prompt shows, by node type."""
    line = next(x for x in prompt.splitlines() if x.startswith("3D scene graph: "))
    nodes: dict[str, list[dict[str, str]]] = json.loads(line.removeprefix("3D scene graph: "))["nodes"]
    return nodes


@dataclass
class FloorRun:
    graph: SceneGraph
    calls: list[dict[str, Any]]  # the transcript's calls, as stored
    obj: str
    source_asset: str
    target_asset: str
    source_floor: str
    target_floor: str


def replay_floor_search(planner_id: str, transcript: Path) -> FloorRun:
    """Replay the transcript (prompts checked) and assert what every floor-level run shows: the plan verified and
    reaching the goal by the simulator, the search going floor, room, floor, room, the first prompt listing only the
    floors and the agent, the second the source floor's rooms, and every prompt far below the room-level view."""
    graph = building()
    backend = ReplayBackend.from_file(transcript, check_messages=True)
    assert backend.instruction is not None
    match = TASK.fullmatch(backend.instruction)
    assert match, backend.instruction
    obj, source_asset, source_room, target_asset, target_room = match.groups()
    assert graph.parent(obj) == source_asset and graph.room_of(source_asset) == source_room

    result = make_planner(planner_id, backend, PlannerOptions(budget=FAST)).plan(graph, backend.instruction)
    assert result.success and result.verified, result.message
    assert backend.exhausted

    source_floor, target_floor = graph.parent(source_room), graph.parent(target_room)
    assert source_floor is not None and target_floor is not None and source_floor != target_floor
    assert result.explored_nodes == [source_floor, source_room, target_floor, target_room]
    calls: list[dict[str, Any]] = json.loads(transcript.read_text())["calls"]
    prompts = [c["messages"][1]["content"] for c in calls]
    first = graph_in(prompts[0])
    assert set(first) == {"floor", "agent"} and len(first["floor"]) == graph.count("floor") == 10
    second = graph_in(prompts[1])
    assert {r["id"] for r in second["room"]} == {
        c for c in graph.children(source_floor) if graph.nodes[c].type == "room"
    }
    assert max(c.prompt_tokens for c in result.calls) < 8000  # the room-level view is 24k tokens
    final = verify_plan(graph, result.full_plan, strict_navigation=True).final_graph()
    goal = goal_from_dict({"kind": "placed", "node": obj, "relation": "ontop_of", "target": target_asset})
    assert check_goals(final, [goal]).success
    return FloorRun(graph, calls, obj, source_asset, target_asset, source_floor, target_floor)


def assert_room_level_diverges(planner_id: str, transcript: Path) -> None:
    """With floor_view_rooms above the room count the floor-level prompts are not used: replay refuses the run."""
    backend = ReplayBackend.from_file(transcript, check_messages=True)
    assert backend.instruction is not None
    config = SayPlanOptions(floor_view_rooms=1000)
    planner = make_planner(planner_id, backend, PlannerOptions(budget=FAST), config)
    result = planner.plan(building(), backend.instruction)
    assert not result.success and "diverged from the recording" in result.message
