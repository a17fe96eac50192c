"""SayPlan's floor-level search (issue 28) on a generated 1,000-room building, from a stored transcript.

The transcript (test/core/data/sayplan_floors_1000_rooms.json, written by
`scripts/bench_planning_overhead.py --record-floor-transcript`) holds every prompt of the run: replay refuses a
run whose prompts differ, so it pins the floor-level prompts, the first graph the model sees (floors only) and the
order of expansions. The plan it ends with is checked by the simulator against the task's goal.
"""

from __future__ import annotations

from floor_runs import DATA, assert_room_level_diverges, replay_floor_search

TRANSCRIPT = DATA / "sayplan_floors_1000_rooms.json"


def test_floor_level_search_on_a_1000_room_building_plans_and_verifies() -> None:
    replay_floor_search("sayplan", TRANSCRIPT)


def test_the_same_building_below_the_threshold_starts_with_every_room() -> None:
    assert_room_level_diverges("sayplan", TRANSCRIPT)
