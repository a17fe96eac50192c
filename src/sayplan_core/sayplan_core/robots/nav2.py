"""Nav2's NavigateToPose (ROS 2 Jazzy) in SayPlan's terms: which map pose a node is, and what a result means.

Any robot whose base runs Nav2 navigates through this: the path planner (Dijkstra or A*
over the room/pose layer) has already split a plan into goto hops between adjacent
nodes, and each hop becomes one NavigateToPose goal to the node's pose (its site-file
entry, else its position in the scene graph).

How Jazzy's bt_navigator ends a goal (nav2_behavior_tree bt_action_server_impl.hpp,
branch jazzy, 1.3.x): SUCCEEDED with error_code 0; ABORTED when the behaviour tree
fails, with error_code set to the lowest non-zero error code any tree node reported
(FollowPath 1xx, ComputePathToPose 2xx, ComputePathThroughPoses 3xx, route server 4xx,
SmoothPath 5xx, waypoint followers 6xx, Spin/BackUp/DriveOnHeading/AssistedTeleop 7xx,
docking 9xx), or 0 when none did; CANCELED after a cancel. bt_navigator only reads the
codes named in its `error_code_names` parameter, whose Jazzy default is
`compute_path_error_code` and `follow_path_error_code`: a failure of any other server
(smoother, recoveries, ...) aborts with 0 unless its name is added there. 0 also comes
from faults outside planning (a goal pose it could not transform, a behaviour tree that
failed to load), so an abort with 0 is a robot fault, not a place the planner can
avoid. Jazzy's result declares only NONE=0 itself and Humble's has no error_code at
all; these codes are the constants of the Jazzy action files of the nodes that report
them. A result's error_msg is kept when the server fills it.
"""

from __future__ import annotations

import math

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.primitives import Outcome

#: Jazzy error codes a NavigateToPose result can carry: code -> (upstream name, what SayPlan makes of it).
#: The world is in the way (replan): no path, goal occupied, controller blocked. The robot is at fault (a
#: person must act): transforms, plugins, localisation.
NAV2_ERROR_CODES: dict[int, tuple[str, SkillCode]] = {
    # FollowPath (controller server)
    100: ("FollowPath.UNKNOWN", SkillCode.SKILL_FAILED),
    101: ("FollowPath.INVALID_CONTROLLER", SkillCode.ROBOT_FAULT),
    102: ("FollowPath.TF_ERROR", SkillCode.ROBOT_FAULT),
    103: ("FollowPath.INVALID_PATH", SkillCode.UNREACHABLE),
    104: ("FollowPath.PATIENCE_EXCEEDED", SkillCode.BLOCKED),
    105: ("FollowPath.FAILED_TO_MAKE_PROGRESS", SkillCode.BLOCKED),
    106: ("FollowPath.NO_VALID_CONTROL", SkillCode.BLOCKED),
    107: ("FollowPath.CONTROLLER_TIMED_OUT", SkillCode.BLOCKED),
    # ComputePathToPose (planner server)
    200: ("ComputePathToPose.UNKNOWN", SkillCode.SKILL_FAILED),
    201: ("ComputePathToPose.INVALID_PLANNER", SkillCode.ROBOT_FAULT),
    202: ("ComputePathToPose.TF_ERROR", SkillCode.ROBOT_FAULT),
    203: ("ComputePathToPose.START_OUTSIDE_MAP", SkillCode.ROBOT_FAULT),
    204: ("ComputePathToPose.GOAL_OUTSIDE_MAP", SkillCode.UNREACHABLE),
    205: ("ComputePathToPose.START_OCCUPIED", SkillCode.BLOCKED),
    206: ("ComputePathToPose.GOAL_OCCUPIED", SkillCode.UNREACHABLE),
    207: ("ComputePathToPose.TIMEOUT", SkillCode.UNREACHABLE),
    208: ("ComputePathToPose.NO_VALID_PATH", SkillCode.UNREACHABLE),
    # ComputePathThroughPoses
    300: ("ComputePathThroughPoses.UNKNOWN", SkillCode.SKILL_FAILED),
    301: ("ComputePathThroughPoses.INVALID_PLANNER", SkillCode.ROBOT_FAULT),
    302: ("ComputePathThroughPoses.TF_ERROR", SkillCode.ROBOT_FAULT),
    303: ("ComputePathThroughPoses.START_OUTSIDE_MAP", SkillCode.ROBOT_FAULT),
    304: ("ComputePathThroughPoses.GOAL_OUTSIDE_MAP", SkillCode.UNREACHABLE),
    305: ("ComputePathThroughPoses.START_OCCUPIED", SkillCode.BLOCKED),
    306: ("ComputePathThroughPoses.GOAL_OCCUPIED", SkillCode.UNREACHABLE),
    307: ("ComputePathThroughPoses.TIMEOUT", SkillCode.UNREACHABLE),
    308: ("ComputePathThroughPoses.NO_VALID_PATH", SkillCode.UNREACHABLE),
    309: ("ComputePathThroughPoses.NO_VIAPOINTS_GIVEN", SkillCode.SKILL_FAILED),
    # ComputeRoute / ComputeAndTrackRoute (route server)
    400: ("ComputeRoute.UNKNOWN", SkillCode.SKILL_FAILED),
    401: ("ComputeRoute.TF_ERROR", SkillCode.ROBOT_FAULT),
    402: ("ComputeRoute.NO_VALID_GRAPH", SkillCode.ROBOT_FAULT),
    403: ("ComputeRoute.INDETERMINANT_NODES_ON_GRAPH", SkillCode.UNREACHABLE),
    404: ("ComputeRoute.TIMEOUT", SkillCode.UNREACHABLE),
    405: ("ComputeRoute.NO_VALID_ROUTE", SkillCode.UNREACHABLE),
    406: ("ComputeAndTrackRoute.OPERATION_FAILED", SkillCode.SKILL_FAILED),
    407: ("ComputeRoute.INVALID_EDGE_SCORER_USE", SkillCode.ROBOT_FAULT),
    # SmoothPath (smoother server)
    500: ("SmoothPath.UNKNOWN", SkillCode.SKILL_FAILED),
    501: ("SmoothPath.INVALID_SMOOTHER", SkillCode.ROBOT_FAULT),
    502: ("SmoothPath.TIMEOUT", SkillCode.UNREACHABLE),
    503: ("SmoothPath.SMOOTHED_PATH_IN_COLLISION", SkillCode.BLOCKED),
    504: ("SmoothPath.FAILED_TO_SMOOTH_PATH", SkillCode.UNREACHABLE),
    505: ("SmoothPath.INVALID_PATH", SkillCode.UNREACHABLE),
    # recovery behaviours (behavior server)
    700: ("Spin.UNKNOWN", SkillCode.SKILL_FAILED),
    701: ("Spin.TIMEOUT", SkillCode.BLOCKED),
    702: ("Spin.TF_ERROR", SkillCode.ROBOT_FAULT),
    703: ("Spin.COLLISION_AHEAD", SkillCode.BLOCKED),
    710: ("BackUp.UNKNOWN", SkillCode.SKILL_FAILED),
    711: ("BackUp.TIMEOUT", SkillCode.BLOCKED),
    712: ("BackUp.TF_ERROR", SkillCode.ROBOT_FAULT),
    713: ("BackUp.INVALID_INPUT", SkillCode.SKILL_FAILED),
    714: ("BackUp.COLLISION_AHEAD", SkillCode.BLOCKED),
    720: ("DriveOnHeading.UNKNOWN", SkillCode.SKILL_FAILED),
    721: ("DriveOnHeading.TIMEOUT", SkillCode.BLOCKED),
    722: ("DriveOnHeading.TF_ERROR", SkillCode.ROBOT_FAULT),
    723: ("DriveOnHeading.COLLISION_AHEAD", SkillCode.BLOCKED),
    724: ("DriveOnHeading.INVALID_INPUT", SkillCode.SKILL_FAILED),
    730: ("AssistedTeleop.UNKNOWN", SkillCode.SKILL_FAILED),
    731: ("AssistedTeleop.TIMEOUT", SkillCode.BLOCKED),
    732: ("AssistedTeleop.TF_ERROR", SkillCode.ROBOT_FAULT),
}

#: Terminal states of an action goal, as action_msgs/GoalStatus numbers them.
STATUS_SUCCEEDED = 4
STATUS_CANCELED = 5
STATUS_ABORTED = 6


def error_name(error_code: int) -> str:
    """The upstream constant's name for a Nav2 error code (`FollowPath.NO_VALID_CONTROL`), or the number."""
    known = NAV2_ERROR_CODES.get(error_code)
    if known is not None:
        return known[0]
    return "NONE" if error_code == 0 else f"error code {error_code}"


def nav2_outcome(status: int, error_code: int, error_msg: str, where: str) -> Outcome:
    """What a finished NavigateToPose goal means for the skill; `where` names the target in messages.

    Unknown codes fall back to their hundred's family (a newer Nav2 may add codes), and
    codes outside every family to SKILL_FAILED: the planner may still plan around them.
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
    code, detail = _code_of(error_code), error_name(error_code)
    return Outcome(code, f"Nav2 failed to reach {where} ({detail}{': ' + text if text else ''})")


def _code_of(error_code: int) -> SkillCode:
    if error_code in NAV2_ERROR_CODES:
        return NAV2_ERROR_CODES[error_code][1]
    family = (error_code // 100) * 100
    if family in NAV2_ERROR_CODES:
        return NAV2_ERROR_CODES[family][1]
    return SkillCode.SKILL_FAILED


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
