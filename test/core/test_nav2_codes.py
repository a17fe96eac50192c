"""Nav2 (Jazzy) results in SayPlan's terms, and what every base backend shares: where to send the base for a node,
and which node the base is at."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import SiteBinding, Target
from sayplan_core.robots.nav2 import (
    NAV2_ERROR_CODES,
    STATUS_ABORTED,
    STATUS_CANCELED,
    STATUS_SUCCEEDED,
    error_name,
    nav2_outcome,
    progress,
    quaternion_to_yaw,
    yaw_to_quaternion,
)
from sayplan_core.robots.navigation import TargetError, base_target, nearest_place, place_xy, pose_of

OFFICE = load_env("office")

#: A few constants as the Jazzy action files define them (nav2_msgs, branch jazzy), and what each must mean here.
JAZZY = [
    (101, "FollowPath.INVALID_CONTROLLER", SkillCode.ROBOT_FAULT),
    (104, "FollowPath.PATIENCE_EXCEEDED", SkillCode.BLOCKED),
    (105, "FollowPath.FAILED_TO_MAKE_PROGRESS", SkillCode.BLOCKED),
    (203, "ComputePathToPose.START_OUTSIDE_MAP", SkillCode.ROBOT_FAULT),
    (206, "ComputePathToPose.GOAL_OCCUPIED", SkillCode.UNREACHABLE),
    (208, "ComputePathToPose.NO_VALID_PATH", SkillCode.UNREACHABLE),
    (308, "ComputePathThroughPoses.NO_VALID_PATH", SkillCode.UNREACHABLE),
    (503, "SmoothPath.SMOOTHED_PATH_IN_COLLISION", SkillCode.BLOCKED),
    (703, "Spin.COLLISION_AHEAD", SkillCode.BLOCKED),
    (714, "BackUp.COLLISION_AHEAD", SkillCode.BLOCKED),
    (722, "DriveOnHeading.TF_ERROR", SkillCode.ROBOT_FAULT),
]


@pytest.mark.parametrize(("error_code", "name", "code"), JAZZY)
def test_jazzy_error_codes(error_code: int, name: str, code: SkillCode) -> None:
    outcome = nav2_outcome(STATUS_ABORTED, error_code, "", "kitchen")
    assert outcome.code is code and error_name(error_code) == name
    assert outcome.message == f"Nav2 failed to reach kitchen ({name})"


def test_every_code_in_the_table_is_a_replan_or_a_fault() -> None:
    """A navigation failure is never a refusal or a stop: the planner replans, or a person must act."""
    for error_code, (name, code) in NAV2_ERROR_CODES.items():
        assert code.replannable or code.robot_fault, name
        assert name.split(".")[1] == "UNKNOWN" or error_code % 100 != 0, name  # x00 is each family's UNKNOWN


def test_statuses_and_codes_outside_the_table() -> None:
    assert nav2_outcome(STATUS_SUCCEEDED, 0, "", "kitchen").ok
    assert nav2_outcome(STATUS_CANCELED, 0, "", "kitchen").code is SkillCode.CANCELED
    assert nav2_outcome(2, 0, "", "kitchen").code is SkillCode.ROBOT_FAULT  # not a terminal status
    # a code a newer Nav2 added within a known family takes the family's meaning; an unknown family a plain failure
    assert nav2_outcome(STATUS_ABORTED, 109, "", "x").code is SkillCode.SKILL_FAILED
    assert nav2_outcome(STATUS_ABORTED, 299, "", "x").code is SkillCode.SKILL_FAILED
    assert nav2_outcome(STATUS_ABORTED, 8000, "", "x").message == "Nav2 failed to reach x (error code 8000)"


def test_an_abort_without_a_code_is_a_robot_fault() -> None:
    """Jazzy's bt_navigator aborts with 0 when no node it listens to set a code: a goal pose it could not transform,
    a tree that did not load, or a server whose code is not in error_code_names (by default only FollowPath's and
    ComputePathToPose's are). Nothing the planner can route around: a person must look at the robot."""
    outcome = nav2_outcome(STATUS_ABORTED, 0, "", "kitchen")
    assert outcome.code is SkillCode.ROBOT_FAULT and outcome.code.robot_fault
    assert outcome.message.startswith("Nav2 failed to reach kitchen and gave no reason (error code 0)")
    assert "error_code_names" in outcome.message
    detailed = nav2_outcome(STATUS_ABORTED, 0, "Failed to load behavior tree\nfrom /bt/x.xml", "kitchen")
    assert detailed.code is SkillCode.ROBOT_FAULT
    assert "(error code 0: Failed to load behavior tree from /bt/x.xml)" in detailed.message


def test_error_messages_are_one_bounded_line() -> None:
    outcome = nav2_outcome(STATUS_ABORTED, 208, "no path\nfrom\t(1, 2)  " + "x" * 1000, "kitchen")
    assert "\n" not in outcome.message and "no path from (1, 2)" in outcome.message
    assert len(outcome.message) < 400


@given(st.floats(-100.0, 100.0, allow_nan=False))
def test_yaw_survives_the_quaternion(yaw: float) -> None:
    x, y, z, w = yaw_to_quaternion(yaw)
    assert math.isclose(x * x + y * y + z * z + w * w, 1.0)
    assert abs(math.remainder(quaternion_to_yaw(x, y, z, w) - yaw, 2 * math.pi)) < 1e-9


@given(st.lists(st.floats(0.0, 50.0), min_size=1, max_size=20))
def test_progress_follows_the_remaining_distance(remaining: list[float]) -> None:
    initial = max(remaining) or None
    values = [progress(r, initial) for r in sorted(remaining, reverse=True)]
    assert values == sorted(values) and all(0.0 <= v <= 1.0 for v in values)
    assert progress(1.0, None) == 0.0 and progress(math.nan, 5.0) == 0.0


# ----------------------------------------------------------------------------- shared by every base backend
SITE = SiteBinding.from_dict(
    {
        "nodes": {
            "kitchen": {"target": "Kitchen"},
            "kitchen_cupboard": {"pose": [54.5, -4.4, 90]},
            "pose8": {"pose": [35, 1, 0]},
        }
    }
)


def test_base_targets() -> None:
    assert base_target(OFFICE, SITE, "kitchen") == Target("kitchen", "Kitchen", None)
    assert base_target(OFFICE, SITE, "pose9").pose == (40.0, 0.0, 0.0)  # no entry: its graph position
    assert pose_of(base_target(OFFICE, SITE, "kitchen_cupboard")) == (54.5, -4.4, math.pi / 2)
    with pytest.raises(TargetError, match="'coffee_machine' \\(asset\\) has no entry in the site file"):
        base_target(OFFICE, SITE, "coffee_machine")
    with pytest.raises(TargetError, match="not in the scene graph"):
        base_target(OFFICE, SITE, "atlantis")
    with pytest.raises(TargetError, match="needs a map pose"):
        pose_of(base_target(OFFICE, SITE, "kitchen"))


@given(st.floats(-10.0, 110.0), st.floats(-40.0, 40.0))
def test_nearest_place_is_the_closest_room_or_pose(x: float, y: float) -> None:
    """Brute force over every room and pose node is the oracle."""
    found = nearest_place(OFFICE, SITE, x, y)
    assert found is not None and OFFICE.nodes[found].type in ("room", "pose")
    distances = {}
    for node in OFFICE.iter_nodes("room", "pose"):
        xy = place_xy(OFFICE, SITE, node.id)
        assert xy is not None
        distances[node.id] = math.hypot(xy[0] - x, xy[1] - y)
    assert math.isclose(distances[found], min(distances.values()))
    assert place_xy(OFFICE, SITE, "pose8") == (35.0, 1.0)  # the site pose wins over the graph position
    assert nearest_place(OFFICE, SITE, math.nan, 0.0) is None
