"""SayPlan Lite's floor-level search (issue 28) on a generated 1,000-room building, from a stored transcript.

The transcript (test/core/data/sayplan_lite_floors_1000_rooms.json, written by
`scripts/bench_planning_overhead.py --record-floor-transcript PATH --record-planner sayplan_lite`) holds every
prompt of the run, the search agent's and the planner's: replay refuses a run whose prompts differ, so it pins the
floor-level search prompt, the first graph the search agent sees (floors only), the order of expansions and the
graph the planner is given. The plan it ends with is checked by the simulator against the task's goal.
"""

from __future__ import annotations

from floor_runs import DATA, assert_room_level_diverges, graph_in, replay_floor_search

TRANSCRIPT = DATA / "sayplan_lite_floors_1000_rooms.json"


def test_lite_floor_level_search_on_a_1000_room_building_plans_and_verifies() -> None:
    run = replay_floor_search("sayplan_lite", TRANSCRIPT)
    graph = run.graph
    systems = [c["messages"][0]["content"] for c in run.calls]
    # the search agent is taught to open floors; the planner (the last call) gets its own prompt
    assert all("expand(<floor>)" in s for s in systems[:-1]) and "expand(<floor>)" not in systems[-1]
    # the planner sees both floors' rooms and both rooms' contents, nothing of the other floors
    last = graph_in(run.calls[-1]["messages"][1]["content"])
    shown_rooms = {r["id"] for r in last["room"]}
    assert shown_rooms == {c for f in (run.source_floor, run.target_floor) for c in graph.children(f)} & set(
        graph.ids_of_type("room")
    )
    assert {run.obj, run.source_asset, run.target_asset} <= {n["id"] for kind in last.values() for n in kind}


def test_lite_on_the_same_building_below_the_threshold_starts_with_every_room() -> None:
    assert_room_level_diverges("sayplan_lite", TRANSCRIPT)
