"""How Spot's own statuses become the typed outcomes the executor and planner act on.

Keys are the enum value names of the Spot API (bosdyn-api protos), so this module needs no SDK: the adapter
passes `Status.Name(value)`. Feedback tables map a status to None while the robot is still working on it, to
SkillCode.NONE when it finished well, and to a failure code otherwise. Refusal tables map the status of a
command the robot refused. The split the planner needs: the world differs from the plan (grasp failed,
nothing there, blocked, unreachable: replan) versus a robot fault nobody can plan around (lease lost,
e-stopped, motors off, behaviour fault, lost localization: the task ends with the robot's message).

A command "overridden" (or an arm trajectory "cancelled") was replaced by another command. The adapter only
reports `canceled` when it stopped the robot itself (a cancel request); otherwise another client or the robot
took over, which is a robot fault (and `lease_lost` when the adapter then finds the lease gone).

A test checks every table against the enums of the installed SDK, so no status goes unclassified.
"""

from __future__ import annotations

from collections.abc import Mapping

from sayplan_core.outcomes import SkillCode

C = SkillCode
Feedback = Mapping[str, "SkillCode | None"]

#: GraphNav NavigationFeedbackResponse.Status (graph_nav/graph_nav.proto).
NAVIGATION_FEEDBACK: Feedback = {
    "STATUS_FOLLOWING_ROUTE": None,
    "STATUS_REACHED_GOAL": C.NONE,
    "STATUS_UNKNOWN": C.INTERNAL_ERROR,
    "STATUS_NO_ROUTE": C.SKILL_FAILED,
    "STATUS_NO_LOCALIZATION": C.ROBOT_FAULT,
    "STATUS_LOST": C.ROBOT_FAULT,
    "STATUS_STUCK": C.BLOCKED,
    "STATUS_COMMAND_TIMED_OUT": C.TIMEOUT,
    "STATUS_ROBOT_IMPAIRED": C.ROBOT_FAULT,
    "STATUS_CONSTRAINT_FAULT": C.UNREACHABLE,
    "STATUS_COMMAND_OVERRIDDEN": C.ROBOT_FAULT,  # not by us: the adapter reports its own cancel as canceled
    "STATUS_NOT_LOCALIZED_TO_ROUTE": C.ROBOT_FAULT,
    "STATUS_LEASE_ERROR": C.LEASE_LOST,
    "STATUS_AREA_CALLBACK_ERROR": C.BLOCKED,
}

#: GraphNav NavigateToResponse.Status: why a navigate_to was refused.
NAVIGATE_TO_REFUSAL: Mapping[str, SkillCode] = {
    "STATUS_UNKNOWN": C.INTERNAL_ERROR,
    "STATUS_OK": C.NONE,
    "STATUS_NO_TIMESYNC": C.ROBOT_FAULT,
    "STATUS_EXPIRED": C.ROBOT_FAULT,
    "STATUS_TOO_DISTANT": C.ROBOT_FAULT,
    "STATUS_ROBOT_IMPAIRED": C.ROBOT_FAULT,
    "STATUS_RECORDING": C.ROBOT_FAULT,
    "STATUS_UNKNOWN_WAYPOINT": C.INVALID_TARGET,
    "STATUS_NO_PATH": C.UNREACHABLE,
    "STATUS_FEATURE_DESERT": C.UNREACHABLE,
    "STATUS_LOST": C.ROBOT_FAULT,
    "STATUS_NOT_LOCALIZED_TO_MAP": C.ROBOT_FAULT,
    "STATUS_COULD_NOT_UPDATE_ROUTE": C.BLOCKED,
    "STATUS_STUCK": C.BLOCKED,
    "STATUS_UNRECOGNIZED_COMMAND": C.INTERNAL_ERROR,
    "STATUS_AREA_CALLBACK_ERROR": C.BLOCKED,
}

#: ManipulationFeedbackState (manipulation_api.proto) while grasping.
MANIPULATION_FEEDBACK: Feedback = {
    "MANIP_STATE_UNKNOWN": None,  # the first feedback may come before the robot started
    "MANIP_STATE_SEARCHING_FOR_GRASP": None,
    "MANIP_STATE_MOVING_TO_GRASP": None,
    "MANIP_STATE_GRASPING_OBJECT": None,
    "MANIP_STATE_GRASP_PLANNING_SUCCEEDED": None,
    "MANIP_STATE_GRASP_PLANNING_WAITING_DATA_AT_EDGE": None,
    "MANIP_STATE_WALKING_TO_OBJECT": None,
    "MANIP_STATE_ATTEMPTING_RAYCASTING": None,
    "MANIP_STATE_PLACING_OBJECT": None,
    "MANIP_STATE_MOVING_TO_PLACE": None,
    "MANIP_STATE_GRASP_SUCCEEDED": C.NONE,
    "MANIP_STATE_DONE": C.NONE,
    "MANIP_STATE_PLACE_SUCCEEDED": C.NONE,
    "MANIP_STATE_GRASP_FAILED": C.GRASP_FAILED,
    "MANIP_STATE_GRASP_PLANNING_NO_SOLUTION": C.UNREACHABLE,
    "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP": C.NOT_FOUND,
    "MANIP_STATE_PLACE_FAILED_TO_RAYCAST_INTO_MAP": C.NOT_FOUND,
    "MANIP_STATE_PLACE_FAILED": C.SKILL_FAILED,
}

#: RobotCommandResponse.Status: why a robot command was refused.
ROBOT_COMMAND_REFUSAL: Mapping[str, SkillCode] = {
    "STATUS_UNKNOWN": C.INTERNAL_ERROR,
    "STATUS_OK": C.NONE,
    "STATUS_INVALID_REQUEST": C.INTERNAL_ERROR,
    "STATUS_UNSUPPORTED": C.ROBOT_FAULT,
    "STATUS_NO_TIMESYNC": C.ROBOT_FAULT,
    "STATUS_EXPIRED": C.ROBOT_FAULT,
    "STATUS_TOO_DISTANT": C.ROBOT_FAULT,
    "STATUS_NOT_POWERED_ON": C.NOT_POWERED,
    "STATUS_BEHAVIOR_FAULT": C.ROBOT_FAULT,
    "STATUS_DOCKED": C.ROBOT_FAULT,
    "STATUS_UNKNOWN_FRAME": C.INTERNAL_ERROR,
}

#: RobotCommandFeedbackStatus.Status (basic_command.proto): the state of any running command.
COMMAND_FEEDBACK: Feedback = {
    "STATUS_PROCESSING": None,
    "STATUS_UNKNOWN": C.INTERNAL_ERROR,
    "STATUS_COMMAND_OVERRIDDEN": C.ROBOT_FAULT,  # not by us: the adapter reports its own cancel as canceled
    "STATUS_COMMAND_TIMED_OUT": C.TIMEOUT,
    "STATUS_ROBOT_FROZEN": C.ROBOT_FAULT,
    "STATUS_INCOMPATIBLE_HARDWARE": C.ROBOT_FAULT,
}

#: SE2TrajectoryCommand.Feedback.Status (STATUS_AT_GOAL etc. are older names of the same values).
TRAJECTORY_FEEDBACK: Feedback = {
    "STATUS_UNKNOWN": None,
    "STATUS_IN_PROGRESS": None,
    "STATUS_GOING_TO_GOAL": None,
    "STATUS_STOPPING": None,
    "STATUS_NEAR_GOAL": None,
    "STATUS_STOPPED": C.NONE,
    "STATUS_AT_GOAL": C.NONE,
}
#: SE2TrajectoryCommand.Feedback.FinalGoalStatus: a goal the robot sees it cannot reach.
TRAJECTORY_GOAL: Feedback = {
    "FINAL_GOAL_STATUS_UNKNOWN": None,
    "FINAL_GOAL_STATUS_IN_PROGRESS": None,
    "FINAL_GOAL_STATUS_ACHIEVABLE": None,
    "FINAL_GOAL_STATUS_BLOCKED": C.BLOCKED,
}

#: StandCommand / SitCommand feedback.
STAND_FEEDBACK: Feedback = {"STATUS_UNKNOWN": None, "STATUS_IN_PROGRESS": None, "STATUS_IS_STANDING": C.NONE}
SIT_FEEDBACK: Feedback = {"STATUS_UNKNOWN": None, "STATUS_IN_PROGRESS": None, "STATUS_IS_SITTING": C.NONE}

#: ArmCartesianCommand.Feedback.Status: the hand moving to where something is put down.
ARM_CARTESIAN_FEEDBACK: Feedback = {
    "STATUS_UNKNOWN": None,
    "STATUS_IN_PROGRESS": None,
    "STATUS_TRAJECTORY_COMPLETE": C.NONE,
    "STATUS_TRAJECTORY_CANCELLED": C.ROBOT_FAULT,  # likewise
    "STATUS_TRAJECTORY_STALLED": C.UNREACHABLE,
}

#: NamedArmPositionsCommand.Feedback.Status: stowing the arm.
ARM_STOW_FEEDBACK: Feedback = {
    "STATUS_UNKNOWN": None,
    "STATUS_IN_PROGRESS": None,
    "STATUS_COMPLETE": C.NONE,
    "STATUS_STALLED_HOLDING_ITEM": C.SKILL_FAILED,
}

#: ClawGripperCommand.Feedback.Status.
GRIPPER_FEEDBACK: Feedback = {
    "STATUS_UNKNOWN": None,
    "STATUS_IN_PROGRESS": None,
    "STATUS_AT_GOAL": C.NONE,
    "STATUS_APPLYING_FORCE": C.NONE,
}

#: ConstrainedManipulationCommand.Feedback.Status: pulling a handle. A door that does not move is locked.
CONSTRAINED_MANIPULATION_FEEDBACK: Feedback = {
    "STATUS_UNKNOWN": None,
    "STATUS_RUNNING": None,
    "STATUS_ARM_IS_STUCK": C.LOCKED,
    "STATUS_GRASP_IS_LOST": C.GRASP_FAILED,
}

#: PowerCommandStatus (power.proto): powering the motors on or off.
POWER_FEEDBACK: Feedback = {
    "STATUS_IN_PROGRESS": None,
    "STATUS_COMMAND_IN_PROGRESS": None,
    "STATUS_SUCCESS": C.NONE,
    "STATUS_UNKNOWN": C.NOT_POWERED,
    "STATUS_SHORE_POWER_CONNECTED": C.NOT_POWERED,
    "STATUS_BATTERY_MISSING": C.NOT_POWERED,
    "STATUS_ESTOPPED": C.ESTOPPED,
    "STATUS_FAULTED": C.ROBOT_FAULT,
    "STATUS_INTERNAL_ERROR": C.ROBOT_FAULT,
    "STATUS_LICENSE_ERROR": C.ROBOT_FAULT,
    "INCOMPATIBLE_HARDWARE_ERROR": C.ROBOT_FAULT,
    "STATUS_OVERRIDDEN": C.NOT_POWERED,
    "STATUS_KEEPALIVE_MOTORS_OFF": C.NOT_POWERED,
}

#: LeaseUseResult.Status: anything but OK means another client owns the robot now.
LEASE_USE: Mapping[str, SkillCode] = {
    "STATUS_OK": C.NONE,
    "STATUS_UNKNOWN": C.LEASE_LOST,
    "STATUS_INVALID_LEASE": C.LEASE_LOST,
    "STATUS_OLDER": C.LEASE_LOST,
    "STATUS_REVOKED": C.LEASE_LOST,
    "STATUS_UNMANAGED": C.LEASE_LOST,
    "STATUS_WRONG_EPOCH": C.LEASE_LOST,
}

#: ImageResponse.Status: a camera that gives no image.
IMAGE_STATUS: Mapping[str, SkillCode] = {
    "STATUS_OK": C.NONE,
    "STATUS_UNKNOWN": C.ROBOT_FAULT,
    "STATUS_UNKNOWN_CAMERA": C.ROBOT_FAULT,
    "STATUS_SOURCE_DATA_ERROR": C.ROBOT_FAULT,
    "STATUS_IMAGE_DATA_ERROR": C.ROBOT_FAULT,
    "STATUS_UNSUPPORTED_IMAGE_FORMAT_REQUESTED": C.ROBOT_FAULT,
    "STATUS_UNSUPPORTED_PIXEL_FORMAT_REQUESTED": C.ROBOT_FAULT,
    "STATUS_UNSUPPORTED_RESIZE_RATIO_REQUESTED": C.ROBOT_FAULT,
    "STATUS_CUSTOM_PARAMS_ERROR": C.ROBOT_FAULT,
}

#: The refusal table of each response type whose `status` field says why a request failed.
REFUSALS: Mapping[str, Mapping[str, SkillCode]] = {
    "NavigateToResponse": NAVIGATE_TO_REFUSAL,
    "RobotCommandResponse": ROBOT_COMMAND_REFUSAL,
    "PowerCommandResponse": POWER_FEEDBACK,  # type: ignore[dict-item]  # its None entries are never refusals
}

#: Plain words for the statuses a person at the robot has to act on.
EXPLANATIONS: Mapping[str, str] = {
    "STATUS_STUCK": "the robot is stuck: the route is blocked",
    "STATUS_LOST": "GraphNav is lost: re-localize the robot on its map (tablet or a fiducial)",
    "STATUS_NO_LOCALIZATION": "the robot is not localized on its GraphNav map: localize it first",
    "STATUS_NOT_LOCALIZED_TO_MAP": "the robot is not localized on its GraphNav map: localize it first",
    "STATUS_NOT_LOCALIZED_TO_ROUTE": "the localization changed while walking: localize the robot again",
    "STATUS_ROBOT_IMPAIRED": "the robot is impaired (a perception or behaviour fault): check the tablet",
    "STATUS_NO_PATH": "GraphNav has no path to that waypoint",
    "STATUS_UNKNOWN_WAYPOINT": "the waypoint is not in the robot's map: check the site file and the uploaded map",
    "STATUS_NOT_POWERED_ON": "the motors are off",
    "STATUS_BEHAVIOR_FAULT": "the robot has a behaviour fault: clear it on the tablet",
    "STATUS_ESTOPPED": "the robot is e-stopped",
    "STATUS_ARM_IS_STUCK": "the handle does not move: locked or jammed",
    "STATUS_GRASP_IS_LOST": "the gripper lost the handle",
    "STATUS_DOCKED": "the robot is on its dock: undock it first",
    "STATUS_COMMAND_OVERRIDDEN": "another client (the tablet, another program) or the robot replaced the command",
    "MANIP_STATE_GRASP_FAILED": "the grasp failed",
    "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP": "nothing to grasp where the object should be",
    "MANIP_STATE_GRASP_PLANNING_NO_SOLUTION": "no grasp the arm can reach",
}


def verdict(table: Feedback, status: str) -> SkillCode | None:
    """None while running; NONE when done well; else the failure (an unknown status is an internal error)."""
    if status not in table:
        return C.INTERNAL_ERROR
    return table[status]


def refusal(response_type: str, status: str) -> SkillCode:
    """The outcome of a request the robot refused, from its response type and status name."""
    table = REFUSALS.get(response_type)
    code = table.get(status) if table is not None else None
    if code is None or code is C.NONE:
        return C.ROBOT_FAULT
    return code


def explain(status: str) -> str:
    """The status with plain words for it when there are any: `STATUS_STUCK (the robot is stuck: ...)`."""
    words = EXPLANATIONS.get(status)
    return f"{status} ({words})" if words else status
