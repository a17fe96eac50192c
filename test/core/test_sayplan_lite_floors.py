"""SayPlan Lite's floor-level search (issue 28) on a generated 1,000-room building, from a stored transcript.

The transcript (test/core/data/sayplan_lite_floors_1000_rooms.json, written by
`scripts/bench_planning_overhead.py --record-floor-transcript PATH --record-planner sayplan_lite`) holds every
prompt of the run, the search agent's and the planner's: replay refuses a run whose prompts differ, so it pins the
floor-level search prompt, the first graph the search agent sees (floors only), the order of expansions and the
graph the planner is given. The plan it ends with is checked by the simulator against the task's goal.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from transcripts import FAST

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.replay import ReplayBackend
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.sayplan import SayPlanOptions
from sayplan_core.sim import check_goals, goal_from_dict, verify_plan

TRANSCRIPT = Path(__file__).parent / "data" / "sayplan_lite_floors_1000_rooms.json"
TASK = re.compile(r"Take the (\S+) from the (\S+) in (\S+) and put it on the (\S+) in (\S+)\.")


@cache
def building() -> SceneGraph:
    return generate_building(BuildingSpec(floors=10, rooms_per_floor=100, seed=0))


def graph_in(prompt: str) -> dict[str, list[dict[str, str]]]:
    line = next(x for x in prompt.splitlines() if x.startswith("3D scene graph: "))
    nodes: dict[str, list[dict[str, str]]] = json.loads(line.removeprefix("3D scene graph: "))["nodes"]
    return nodes


def test_lite_floor_level_search_on_a_1000_room_building_plans_and_verifies() -> None:
    graph = building()
    backend = ReplayBackend.from_file(TRANSCRIPT, check_messages=True)
    assert backend.instruction is not None
    match = TASK.fullmatch(backend.instruction)
    assert match, backend.instruction
    obj, source_asset, source_room, target_asset, target_room = match.groups()
    assert graph.parent(obj) == source_asset and graph.room_of(source_asset) == source_room

    planner = make_planner("sayplan_lite", backend, PlannerOptions(budget=FAST))
    result = planner.plan(graph, backend.instruction)
    assert result.success and result.verified, result.message
    assert backend.exhausted

    # the search agent went floor, room, floor, room: each room only after its floor
    source_floor, target_floor = graph.parent(source_room), graph.parent(target_room)
    assert source_floor != target_floor
    assert result.explored_nodes == [source_floor, source_room, target_floor, target_room]
    calls = json.loads(TRANSCRIPT.read_text())["calls"]
    systems = [c["messages"][0]["content"] for c in calls]
    prompts = [c["messages"][1]["content"] for c in calls]
    # the search agent is taught to open floors; the planner (the last call) gets its own prompt
    assert all("expand(<floor>)" in s for s in systems[:-1]) and "expand(<floor>)" not in systems[-1]
    # the first prompt lists the floors and the agent only; rooms appear once their floor is expanded
    first = graph_in(prompts[0])
    assert set(first) == {"floor", "agent"} and len(first["floor"]) == graph.count("floor") == 10
    second = graph_in(prompts[1])
    assert {r["id"] for r in second["room"]} == {
        c for c in graph.children(source_floor) if graph.nodes[c].type == "room"
    }
    # the planner sees both floors' rooms and both rooms' contents, nothing of the other floors
    last = graph_in(prompts[-1])
    shown_rooms = {r["id"] for r in last["room"]}
    assert shown_rooms == {c for f in (source_floor, target_floor) for c in graph.children(f)} & set(
        graph.ids_of_type("room")
    )
    assert {obj, source_asset, target_asset} <= {n["id"] for kind in last.values() for n in kind}
    # far below the room-level view's 24k tokens at every step
    assert max(c.prompt_tokens for c in result.calls) < 8000
    # and the plan does what was asked, by the simulator
    final = verify_plan(graph, result.full_plan, strict_navigation=True).final_graph()
    goal = goal_from_dict({"kind": "placed", "node": obj, "relation": "ontop_of", "target": target_asset})
    assert check_goals(final, [goal]).success


def test_lite_on_the_same_building_below_the_threshold_starts_with_every_room() -> None:
    """With floor_view_rooms above the room count the floor-level prompts are not used: replay refuses the run."""
    graph = building()
    backend = ReplayBackend.from_file(TRANSCRIPT, check_messages=True)
    assert backend.instruction is not None
    config = SayPlanOptions(floor_view_rooms=1000)
    planner = make_planner("sayplan_lite", backend, PlannerOptions(budget=FAST), config)
    result = planner.plan(graph, backend.instruction)
    assert not result.success and "diverged from the recording" in result.message
