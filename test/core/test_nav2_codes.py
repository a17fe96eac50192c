"""Nav2 (Jazzy) results in SayPlan's terms, and what every base backend shares: where to send the base for a node,
and which node the base is at."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
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

#: The error constants of every nav2_msgs/action/*.action result (NONE=0 and feedback states left out), as read
#: in ros-navigation/navigation2: branch jazzy at commit f4108e5b1c2bce804a1aa0c7be6673a8eb4a1501 (tag 1.3.13) and
#: branch kilted at commit 71a1d84f49dc48e226c96619188ee12054824ff3 (1.4.2 + 12 commits). Differences: kilted adds
#: NavigateToPose 9000-9003 and NavigateThroughPoses 9100-9103 (the navigator's own failures, which jazzy aborts with
#: 0), Wait 740-741, FollowWaypoints/FollowGPSWaypoints 602-603 (602 named differently by the two) and Dock/Undock
#: TIMEOUT 907; jazzy 1.3.13 alone has FollowObject (opennav_following, backported), whose 901-904 reuse DockRobot's
#: values under other names. Every one is in our table; shared values with different names are named both ways.
UPSTREAM: dict[str, dict[str, dict[str, int]]] = {
    "jazzy": {
        "AssistedTeleop": {"UNKNOWN": 730, "TIMEOUT": 731, "TF_ERROR": 732},
        "BackUp": {"UNKNOWN": 710, "TIMEOUT": 711, "TF_ERROR": 712, "INVALID_INPUT": 713, "COLLISION_AHEAD": 714},
        "ComputeAndTrackRoute": {"UNKNOWN": 400, "TF_ERROR": 401, "NO_VALID_GRAPH": 402, "INDETERMINANT_NODES_ON_GRAPH": 403, "TIMEOUT": 404, "NO_VALID_ROUTE": 405, "OPERATION_FAILED": 406, "INVALID_EDGE_SCORER_USE": 407},
        "ComputePathThroughPoses": {"UNKNOWN": 300, "INVALID_PLANNER": 301, "TF_ERROR": 302, "START_OUTSIDE_MAP": 303, "GOAL_OUTSIDE_MAP": 304, "START_OCCUPIED": 305, "GOAL_OCCUPIED": 306, "TIMEOUT": 307, "NO_VALID_PATH": 308, "NO_VIAPOINTS_GIVEN": 309},
        "ComputePathToPose": {"UNKNOWN": 200, "INVALID_PLANNER": 201, "TF_ERROR": 202, "START_OUTSIDE_MAP": 203, "GOAL_OUTSIDE_MAP": 204, "START_OCCUPIED": 205, "GOAL_OCCUPIED": 206, "TIMEOUT": 207, "NO_VALID_PATH": 208},
        "ComputeRoute": {"UNKNOWN": 400, "TF_ERROR": 401, "NO_VALID_GRAPH": 402, "INDETERMINANT_NODES_ON_GRAPH": 403, "TIMEOUT": 404, "NO_VALID_ROUTE": 405, "INVALID_EDGE_SCORER_USE": 407},
        "DockRobot": {"DOCK_NOT_IN_DB": 901, "DOCK_NOT_VALID": 902, "FAILED_TO_STAGE": 903, "FAILED_TO_DETECT_DOCK": 904, "FAILED_TO_CONTROL": 905, "FAILED_TO_CHARGE": 906, "UNKNOWN": 999},
        "DriveOnHeading": {"UNKNOWN": 720, "TIMEOUT": 721, "TF_ERROR": 722, "COLLISION_AHEAD": 723, "INVALID_INPUT": 724},
        "FollowGPSWaypoints": {"UNKNOWN": 600, "TASK_EXECUTOR_FAILED": 601},
        "FollowObject": {"TF_ERROR": 901, "FAILED_TO_DETECT_OBJECT": 902, "FAILED_TO_CONTROL": 903, "TIMEOUT": 904, "UNKNOWN": 999},
        "FollowPath": {"UNKNOWN": 100, "INVALID_CONTROLLER": 101, "TF_ERROR": 102, "INVALID_PATH": 103, "PATIENCE_EXCEEDED": 104, "FAILED_TO_MAKE_PROGRESS": 105, "NO_VALID_CONTROL": 106, "CONTROLLER_TIMED_OUT": 107},
        "FollowWaypoints": {"UNKNOWN": 600, "TASK_EXECUTOR_FAILED": 601},
        "SmoothPath": {"UNKNOWN": 500, "INVALID_SMOOTHER": 501, "TIMEOUT": 502, "SMOOTHED_PATH_IN_COLLISION": 503, "FAILED_TO_SMOOTH_PATH": 504, "INVALID_PATH": 505},
        "Spin": {"UNKNOWN": 700, "TIMEOUT": 701, "TF_ERROR": 702, "COLLISION_AHEAD": 703},
        "UndockRobot": {"DOCK_NOT_VALID": 902, "FAILED_TO_CONTROL": 905, "UNKNOWN": 999},
    },
    "kilted": {
        "AssistedTeleop": {"UNKNOWN": 730, "TIMEOUT": 731, "TF_ERROR": 732},
        "BackUp": {"UNKNOWN": 710, "TIMEOUT": 711, "TF_ERROR": 712, "INVALID_INPUT": 713, "COLLISION_AHEAD": 714},
        "ComputeAndTrackRoute": {"UNKNOWN": 400, "TF_ERROR": 401, "NO_VALID_GRAPH": 402, "INDETERMINANT_NODES_ON_GRAPH": 403, "TIMEOUT": 404, "NO_VALID_ROUTE": 405, "OPERATION_FAILED": 406, "INVALID_EDGE_SCORER_USE": 407},
        "ComputePathThroughPoses": {"UNKNOWN": 300, "INVALID_PLANNER": 301, "TF_ERROR": 302, "START_OUTSIDE_MAP": 303, "GOAL_OUTSIDE_MAP": 304, "START_OCCUPIED": 305, "GOAL_OCCUPIED": 306, "TIMEOUT": 307, "NO_VALID_PATH": 308, "NO_VIAPOINTS_GIVEN": 309},
        "ComputePathToPose": {"UNKNOWN": 200, "INVALID_PLANNER": 201, "TF_ERROR": 202, "START_OUTSIDE_MAP": 203, "GOAL_OUTSIDE_MAP": 204, "START_OCCUPIED": 205, "GOAL_OCCUPIED": 206, "TIMEOUT": 207, "NO_VALID_PATH": 208},
        "ComputeRoute": {"UNKNOWN": 400, "TF_ERROR": 401, "NO_VALID_GRAPH": 402, "INDETERMINANT_NODES_ON_GRAPH": 403, "TIMEOUT": 404, "NO_VALID_ROUTE": 405, "INVALID_EDGE_SCORER_USE": 407},
        "DockRobot": {"DOCK_NOT_IN_DB": 901, "DOCK_NOT_VALID": 902, "FAILED_TO_STAGE": 903, "FAILED_TO_DETECT_DOCK": 904, "FAILED_TO_CONTROL": 905, "FAILED_TO_CHARGE": 906, "TIMEOUT": 907, "UNKNOWN": 999},
        "DriveOnHeading": {"UNKNOWN": 720, "TIMEOUT": 721, "TF_ERROR": 722, "COLLISION_AHEAD": 723, "INVALID_INPUT": 724},
        "FollowGPSWaypoints": {"UNKNOWN": 600, "TASK_EXECUTOR_FAILED": 601, "NO_WAYPOINTS_GIVEN": 602, "STOP_ON_MISSED_WAYPOINT": 603},
        "FollowPath": {"UNKNOWN": 100, "INVALID_CONTROLLER": 101, "TF_ERROR": 102, "INVALID_PATH": 103, "PATIENCE_EXCEEDED": 104, "FAILED_TO_MAKE_PROGRESS": 105, "NO_VALID_CONTROL": 106, "CONTROLLER_TIMED_OUT": 107},
        "FollowWaypoints": {"UNKNOWN": 600, "TASK_EXECUTOR_FAILED": 601, "NO_VALID_WAYPOINTS": 602, "STOP_ON_MISSED_WAYPOINT": 603},
        "NavigateThroughPoses": {"UNKNOWN": 9100, "FAILED_TO_LOAD_BEHAVIOR_TREE": 9101, "TF_ERROR": 9102, "TIMEOUT": 9103},
        "NavigateToPose": {"UNKNOWN": 9000, "FAILED_TO_LOAD_BEHAVIOR_TREE": 9001, "TF_ERROR": 9002, "TIMEOUT": 9003},
        "SmoothPath": {"UNKNOWN": 500, "INVALID_SMOOTHER": 501, "TIMEOUT": 502, "SMOOTHED_PATH_IN_COLLISION": 503, "FAILED_TO_SMOOTH_PATH": 504, "INVALID_PATH": 505},
        "Spin": {"UNKNOWN": 700, "TIMEOUT": 701, "TF_ERROR": 702, "COLLISION_AHEAD": 703},
        "UndockRobot": {"DOCK_NOT_VALID": 902, "FAILED_TO_CONTROL": 905, "TIMEOUT": 907, "UNKNOWN": 999},
        "Wait": {"UNKNOWN": 740, "TIMEOUT": 741},
    },
}  # fmt: skip


def upstream_names(value: int) -> dict[str, set[str]]:
    """Constant name -> the actions that give `value` that name, over both branches."""
    names: dict[str, set[str]] = {}
    for actions in UPSTREAM.values():
        for action, constants in actions.items():
            for name, number in constants.items():
                if number == value:
                    names.setdefault(name, set()).add(action)
    return names


UPSTREAM_VALUES = sorted({v for actions in UPSTREAM.values() for c in actions.values() for v in c.values()})


@pytest.mark.parametrize("value", UPSTREAM_VALUES)
def test_every_upstream_code_is_in_the_table_under_its_upstream_names(value: int) -> None:
    """Each value a jazzy or kilted server can report is in the table, named as upstream names it; a value two actions
    name differently (FollowObject's and DockRobot's 901-904) names both and is a robot fault."""
    assert value in NAV2_ERROR_CODES, f"{value} ({upstream_names(value)}) is missing from the table"
    ours = NAV2_ERROR_CODES[value][0].split(" or ")
    upstream = upstream_names(value)
    assert {name.split(".")[1] for name in ours} == set(upstream), (value, ours, upstream)
    for name in ours:
        action, constant = name.split(".")
        assert action in upstream[constant], (value, name, upstream)
    if len(upstream) > 1:
        assert NAV2_ERROR_CODES[value][1] is SkillCode.ROBOT_FAULT


def test_the_table_holds_nothing_upstream_lacks() -> None:
    assert sorted(NAV2_ERROR_CODES) == UPSTREAM_VALUES


def test_the_branches_differ_as_recorded() -> None:
    """The jazzy/kilted differences the table's comments and the README state (kilted's navigator codes above all)."""
    jazzy = {(a, n, v) for a, c in UPSTREAM["jazzy"].items() for n, v in c.items()}
    kilted = {(a, n, v) for a, c in UPSTREAM["kilted"].items() for n, v in c.items()}
    kilted_only = {9000, 9001, 9002, 9003, 9100, 9101, 9102, 9103, 740, 741, 602, 603, 907}
    assert {v for _a, _n, v in kilted - jazzy} == kilted_only
    assert {a for a, _n, _v in jazzy - kilted} == {"FollowObject"}


@pytest.mark.parametrize(
    ("error_code", "name"),
    [
        (9000, "NavigateToPose.UNKNOWN"),
        (9001, "NavigateToPose.FAILED_TO_LOAD_BEHAVIOR_TREE"),
        (9002, "NavigateToPose.TF_ERROR"),
        (9003, "NavigateToPose.TIMEOUT"),
    ],
)
def test_kilted_navigator_codes_are_robot_faults(error_code: int, name: str) -> None:
    """Kilted's bt_navigator aborts with these where jazzy aborts with 0: a person must look, as for 0."""
    outcome = nav2_outcome(STATUS_ABORTED, error_code, "from kilted", "kitchen")
    assert outcome.code is SkillCode.ROBOT_FAULT and outcome.code.latches
    assert outcome.message == f"Nav2 failed to reach kitchen ({name}: from kilted)"


@pytest.mark.parametrize(("error_code", "name", "code"), [
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
    (100, "FollowPath.UNKNOWN", SkillCode.ROBOT_FAULT),
    (904, "DockRobot.FAILED_TO_DETECT_DOCK or FollowObject.TIMEOUT", SkillCode.ROBOT_FAULT),
])  # fmt: skip
def test_error_codes(error_code: int, name: str, code: SkillCode) -> None:
    outcome = nav2_outcome(STATUS_ABORTED, error_code, "", "kitchen")
    assert outcome.code is code and error_name(error_code) == name
    assert outcome.message == f"Nav2 failed to reach kitchen ({name})"


def test_every_code_in_the_table_is_a_replan_or_a_fault() -> None:
    """A navigation failure is never a refusal or a stop: the planner replans, or a person must act; a server that
    cannot say what failed (its UNKNOWN) is never a replan."""
    for name, code in NAV2_ERROR_CODES.values():
        assert code.replannable or code.robot_fault, name
        if name.endswith(".UNKNOWN"):
            assert code is SkillCode.ROBOT_FAULT, name


@given(st.integers(1, 65535).filter(lambda c: c not in NAV2_ERROR_CODES))
@settings(max_examples=50, deadline=None, derandomize=True)
def test_codes_no_release_knows_are_robot_faults(error_code: int) -> None:
    """A newer Nav2 or a custom plugin: SayPlan cannot tell what stopped the base, so it is never a replan."""
    outcome = nav2_outcome(STATUS_ABORTED, error_code, "", "kitchen")
    assert outcome.code is SkillCode.ROBOT_FAULT
    assert f"error code {error_code}, which no Nav2 release SayPlan knows" in outcome.message


def test_statuses() -> None:
    assert nav2_outcome(STATUS_SUCCEEDED, 0, "", "kitchen").ok
    assert nav2_outcome(STATUS_CANCELED, 0, "", "kitchen").code is SkillCode.CANCELED
    assert nav2_outcome(2, 0, "", "kitchen").code is SkillCode.ROBOT_FAULT  # not a terminal status
    assert error_name(8000) == "error code 8000" and error_name(0) == "NONE"


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
