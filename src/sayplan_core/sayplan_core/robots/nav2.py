"""Nav2's NavigateToPose (ROS 2 Jazzy wire type; Kilted's result codes too) in SayPlan's terms: which map pose a
node is, and what a result means.

Any robot whose base runs Nav2 navigates through this: the path planner (Dijkstra or A*
over the room/pose layer) has already split a plan into goto hops between adjacent
nodes, and each hop becomes one NavigateToPose goal to the node's pose (its site-file
entry, else its position in the scene graph).

How bt_navigator ends a goal (nav2_behavior_tree bt_action_server_impl.hpp): SUCCEEDED
with error_code 0; ABORTED when the behaviour tree fails, with error_code set to the
lowest non-zero code a tree node reported, or 0 when none did; CANCELED after a cancel.
Which tree nodes it listens to differs: Jazzy (1.3.x) reads the blackboard entries named
in `error_code_names` (default: compute_path_error_code, follow_path_error_code), so a
failure of any other server aborts with 0; Kilted (1.4.x) reads every entry whose name
starts with one of `error_code_name_prefixes` (default: assisted_teleop, backup,
compute_path, dock_robot, drive_on_heading, follow_path, nav_thru_poses, nav_to_pose,
spin, undock_robot, wait) and adds the navigator's own codes (NavigateToPose 9000-9003:
unknown, behaviour tree failed to load, TF error, timeout), which Jazzy reports as 0.

The table below holds every error constant of every nav2_msgs action on the jazzy and
kilted branches (test/core/test_nav2_codes.py pins it to them), because a behaviour tree
may report any server's code. A code it does not hold (a newer Nav2, a custom plugin)
is a robot fault, as an abort with 0 is: SayPlan cannot tell what stopped the base, so a
person must look before it moves again (the skill server latches robot faults). The same
goes for each server's UNKNOWN. Only a failure that says the world is in the way (no
path, goal occupied, blocked, no progress) lets the planner replan.
"""

from __future__ import annotations

import math

from sayplan_core.outcomes import STATUS_ABORTED, STATUS_CANCELED, STATUS_SUCCEEDED, SkillCode
from sayplan_core.robots.primitives import Outcome

_FAULT = SkillCode.ROBOT_FAULT

#: Every nav2_msgs error code (jazzy 1.3.13 and kilted 1.4.x): code -> (upstream name, what SayPlan makes of it).
#: Where two actions give one value different names, both are named ("A.X or B.Y") and it is a robot fault.
NAV2_ERROR_CODES: dict[int, tuple[str, SkillCode]] = {
    # FollowPath (controller server)
    100: ("FollowPath.UNKNOWN", _FAULT),
    101: ("FollowPath.INVALID_CONTROLLER", _FAULT),
    102: ("FollowPath.TF_ERROR", _FAULT),
    103: ("FollowPath.INVALID_PATH", SkillCode.UNREACHABLE),
    104: ("FollowPath.PATIENCE_EXCEEDED", SkillCode.BLOCKED),
    105: ("FollowPath.FAILED_TO_MAKE_PROGRESS", SkillCode.BLOCKED),
    106: ("FollowPath.NO_VALID_CONTROL", SkillCode.BLOCKED),
    107: ("FollowPath.CONTROLLER_TIMED_OUT", SkillCode.BLOCKED),
    # ComputePathToPose (planner server)
    200: ("ComputePathToPose.UNKNOWN", _FAULT),
    201: ("ComputePathToPose.INVALID_PLANNER", _FAULT),
    202: ("ComputePathToPose.TF_ERROR", _FAULT),
    203: ("ComputePathToPose.START_OUTSIDE_MAP", _FAULT),
    204: ("ComputePathToPose.GOAL_OUTSIDE_MAP", SkillCode.UNREACHABLE),
    205: ("ComputePathToPose.START_OCCUPIED", SkillCode.BLOCKED),
    206: ("ComputePathToPose.GOAL_OCCUPIED", SkillCode.UNREACHABLE),
    207: ("ComputePathToPose.TIMEOUT", SkillCode.UNREACHABLE),
    208: ("ComputePathToPose.NO_VALID_PATH", SkillCode.UNREACHABLE),
    # ComputePathThroughPoses
    300: ("ComputePathThroughPoses.UNKNOWN", _FAULT),
    301: ("ComputePathThroughPoses.INVALID_PLANNER", _FAULT),
    302: ("ComputePathThroughPoses.TF_ERROR", _FAULT),
    303: ("ComputePathThroughPoses.START_OUTSIDE_MAP", _FAULT),
    304: ("ComputePathThroughPoses.GOAL_OUTSIDE_MAP", SkillCode.UNREACHABLE),
    305: ("ComputePathThroughPoses.START_OCCUPIED", SkillCode.BLOCKED),
    306: ("ComputePathThroughPoses.GOAL_OCCUPIED", SkillCode.UNREACHABLE),
    307: ("ComputePathThroughPoses.TIMEOUT", SkillCode.UNREACHABLE),
    308: ("ComputePathThroughPoses.NO_VALID_PATH", SkillCode.UNREACHABLE),
    309: ("ComputePathThroughPoses.NO_VIAPOINTS_GIVEN", SkillCode.SKILL_FAILED),
    # ComputeRoute / ComputeAndTrackRoute (route server; both use these values and names)
    400: ("ComputeRoute.UNKNOWN", _FAULT),
    401: ("ComputeRoute.TF_ERROR", _FAULT),
    402: ("ComputeRoute.NO_VALID_GRAPH", _FAULT),
    403: ("ComputeRoute.INDETERMINANT_NODES_ON_GRAPH", SkillCode.UNREACHABLE),
    404: ("ComputeRoute.TIMEOUT", SkillCode.UNREACHABLE),
    405: ("ComputeRoute.NO_VALID_ROUTE", SkillCode.UNREACHABLE),
    406: ("ComputeAndTrackRoute.OPERATION_FAILED", SkillCode.SKILL_FAILED),
    407: ("ComputeRoute.INVALID_EDGE_SCORER_USE", _FAULT),
    # SmoothPath (smoother server)
    500: ("SmoothPath.UNKNOWN", _FAULT),
    501: ("SmoothPath.INVALID_SMOOTHER", _FAULT),
    502: ("SmoothPath.TIMEOUT", SkillCode.UNREACHABLE),
    503: ("SmoothPath.SMOOTHED_PATH_IN_COLLISION", SkillCode.BLOCKED),
    504: ("SmoothPath.FAILED_TO_SMOOTH_PATH", SkillCode.UNREACHABLE),
    505: ("SmoothPath.INVALID_PATH", SkillCode.UNREACHABLE),
    # FollowWaypoints / FollowGPSWaypoints (waypoint follower; 602 and 603 are Kilted's)
    600: ("FollowWaypoints.UNKNOWN", _FAULT),
    601: ("FollowWaypoints.TASK_EXECUTOR_FAILED", _FAULT),
    602: ("FollowWaypoints.NO_VALID_WAYPOINTS or FollowGPSWaypoints.NO_WAYPOINTS_GIVEN", _FAULT),
    603: ("FollowWaypoints.STOP_ON_MISSED_WAYPOINT", SkillCode.UNREACHABLE),
    # behaviours (behavior server; Wait's codes are Kilted's)
    700: ("Spin.UNKNOWN", _FAULT),
    701: ("Spin.TIMEOUT", SkillCode.BLOCKED),
    702: ("Spin.TF_ERROR", _FAULT),
    703: ("Spin.COLLISION_AHEAD", SkillCode.BLOCKED),
    710: ("BackUp.UNKNOWN", _FAULT),
    711: ("BackUp.TIMEOUT", SkillCode.BLOCKED),
    712: ("BackUp.TF_ERROR", _FAULT),
    713: ("BackUp.INVALID_INPUT", SkillCode.SKILL_FAILED),
    714: ("BackUp.COLLISION_AHEAD", SkillCode.BLOCKED),
    720: ("DriveOnHeading.UNKNOWN", _FAULT),
    721: ("DriveOnHeading.TIMEOUT", SkillCode.BLOCKED),
    722: ("DriveOnHeading.TF_ERROR", _FAULT),
    723: ("DriveOnHeading.COLLISION_AHEAD", SkillCode.BLOCKED),
    724: ("DriveOnHeading.INVALID_INPUT", SkillCode.SKILL_FAILED),
    730: ("AssistedTeleop.UNKNOWN", _FAULT),
    731: ("AssistedTeleop.TIMEOUT", SkillCode.BLOCKED),
    732: ("AssistedTeleop.TF_ERROR", _FAULT),
    740: ("Wait.UNKNOWN", _FAULT),
    741: ("Wait.TIMEOUT", _FAULT),
    # docking server (DockRobot / UndockRobot; 907 is Kilted's) and, on jazzy 1.3.13 only, opennav_following's
    # FollowObject, which reuses 901-904 with other names: a robot fault either way
    901: ("DockRobot.DOCK_NOT_IN_DB or FollowObject.TF_ERROR", _FAULT),
    902: ("DockRobot.DOCK_NOT_VALID or FollowObject.FAILED_TO_DETECT_OBJECT", _FAULT),
    903: ("DockRobot.FAILED_TO_STAGE or FollowObject.FAILED_TO_CONTROL", _FAULT),
    904: ("DockRobot.FAILED_TO_DETECT_DOCK or FollowObject.TIMEOUT", _FAULT),
    905: ("DockRobot.FAILED_TO_CONTROL", _FAULT),
    906: ("DockRobot.FAILED_TO_CHARGE", _FAULT),
    907: ("DockRobot.TIMEOUT", _FAULT),
    999: ("DockRobot.UNKNOWN", _FAULT),
    # the navigators themselves (Kilted; Jazzy aborts these cases with 0)
    9000: ("NavigateToPose.UNKNOWN", _FAULT),
    9001: ("NavigateToPose.FAILED_TO_LOAD_BEHAVIOR_TREE", _FAULT),
    9002: ("NavigateToPose.TF_ERROR", _FAULT),
    9003: ("NavigateToPose.TIMEOUT", _FAULT),
    9100: ("NavigateThroughPoses.UNKNOWN", _FAULT),
    9101: ("NavigateThroughPoses.FAILED_TO_LOAD_BEHAVIOR_TREE", _FAULT),
    9102: ("NavigateThroughPoses.TF_ERROR", _FAULT),
    9103: ("NavigateThroughPoses.TIMEOUT", _FAULT),
}


def error_name(error_code: int) -> str:
    """The upstream constant's name for a Nav2 error code (`FollowPath.NO_VALID_CONTROL`), or the number."""
    known = NAV2_ERROR_CODES.get(error_code)
    if known is not None:
        return known[0]
    return "NONE" if error_code == 0 else f"error code {error_code}"


def nav2_outcome(status: int, error_code: int, error_msg: str, where: str) -> Outcome:
    """What a finished NavigateToPose goal means for the skill; `where` names the target in messages.

    A code outside the table is a robot fault (see the module docstring): a replan would move the base again
    after a failure nobody understood.
    """
    if status == STATUS_SUCCEEDED:
        return Outcome(SkillCode.NONE, f"Nav2 arrived at {where}")
    if status == STATUS_CANCELED:
        return Outcome(SkillCode.CANCELED, f"Nav2 navigation to {where} was canceled")
    if status != STATUS_ABORTED:
        return Outcome(SkillCode.ROBOT_FAULT, f"Nav2 ended the goal to {where} with status {status}")
    text = _one_line(error_msg or "")
    if error_code == 0:  # the tree failed without a node saying why: a TF failure, a tree that did not load, ...
        return Outcome(
            SkillCode.ROBOT_FAULT,
            f"Nav2 failed to reach {where} and gave no reason (error code 0{': ' + text if text else ''}): "
            "check its transforms and behaviour tree, and name every server's error code in bt_navigator's "
            "error_code_names",
        )
    known = NAV2_ERROR_CODES.get(error_code)
    if known is None:
        return Outcome(
            SkillCode.ROBOT_FAULT,
            f"Nav2 failed to reach {where} with error code {error_code}, which no Nav2 release SayPlan knows "
            f"(jazzy, kilted){': ' + text if text else ''}: check the navigator before the robot moves again",
        )
    return Outcome(known[1], f"Nav2 failed to reach {where} ({known[0]}{': ' + text if text else ''})")


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def yaw_to_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation by `yaw` radians about z."""
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


def quaternion_to_yaw(x: float, y: float, z: float, w: float) -> float:
    """Heading (radians, -pi..pi) of a quaternion, ignoring roll and pitch."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def progress(distance_remaining: float, initial: float | None) -> float:
    """Fraction of a leg done, from Nav2's distance_remaining feedback (0 until a distance is known)."""
    if initial is None or not math.isfinite(initial) or initial <= 0.0 or not math.isfinite(distance_remaining):
        return 0.0
    return min(1.0, max(0.0, 1.0 - distance_remaining / initial))
