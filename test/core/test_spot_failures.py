"""Spot's statuses -> typed outcomes (sayplan_spot.failures): the split the planner relies on, and
every table checked against the enums of the installed Spot API (skipped, with the reason, without the SDK)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

import pytest

from sayplan_core.outcomes import SkillCode
from sayplan_spot import failures as sf

HAVE_SDK = importlib.util.find_spec("bosdyn") is not None and importlib.util.find_spec("bosdyn.api") is not None
needs_sdk = pytest.mark.skipif(
    not HAVE_SDK, reason="bosdyn-api is not installed (pip install -r requirements/spot.txt; make test installs it)"
)


def test_world_differences_are_replannable_and_robot_faults_are_not() -> None:
    """The issue's split: grasp failed, nothing there, blocked, no path -> the planner acts; lease lost,
    e-stopped, motors off, behaviour fault, lost localization -> the task ends with the robot's message."""
    replannable = [
        sf.MANIPULATION_FEEDBACK["MANIP_STATE_GRASP_FAILED"],
        sf.MANIPULATION_FEEDBACK["MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP"],
        sf.MANIPULATION_FEEDBACK["MANIP_STATE_GRASP_PLANNING_NO_SOLUTION"],
        sf.NAVIGATION_FEEDBACK["STATUS_STUCK"],
        sf.NAVIGATE_TO_REFUSAL["STATUS_NO_PATH"],
        sf.TRAJECTORY_GOAL["FINAL_GOAL_STATUS_BLOCKED"],
        sf.CONSTRAINED_MANIPULATION_FEEDBACK["STATUS_ARM_IS_STUCK"],
    ]
    assert replannable == [
        SkillCode.GRASP_FAILED, SkillCode.NOT_FOUND, SkillCode.UNREACHABLE, SkillCode.BLOCKED,
        SkillCode.UNREACHABLE, SkillCode.BLOCKED, SkillCode.LOCKED,
    ]  # fmt: skip
    assert all(code is not None and code.replannable for code in replannable)
    faults = {
        "lease": sf.NAVIGATION_FEEDBACK["STATUS_LEASE_ERROR"],
        "estop": sf.POWER_FEEDBACK["STATUS_ESTOPPED"],
        "motors": sf.ROBOT_COMMAND_REFUSAL["STATUS_NOT_POWERED_ON"],
        "behaviour": sf.ROBOT_COMMAND_REFUSAL["STATUS_BEHAVIOR_FAULT"],
        "lost": sf.NAVIGATION_FEEDBACK["STATUS_LOST"],
    }
    assert faults == {
        "lease": SkillCode.LEASE_LOST, "estop": SkillCode.ESTOPPED, "motors": SkillCode.NOT_POWERED,
        "behaviour": SkillCode.ROBOT_FAULT, "lost": SkillCode.ROBOT_FAULT,
    }  # fmt: skip
    assert all(code.robot_fault for code in faults.values())
    assert sf.NAVIGATE_TO_REFUSAL["STATUS_UNKNOWN_WAYPOINT"].refused  # a site file naming no waypoint of the map


def test_a_command_replaced_by_someone_else_is_a_robot_fault_not_a_cancel() -> None:
    """STATUS_COMMAND_OVERRIDDEN: another command replaced ours. The adapter reports its own cancel as canceled
    (it checks its stop event); in the tables it is another client or the robot taking over, which nobody can
    plan around and which is not the caller stopping the skill."""
    overridden = [
        sf.NAVIGATION_FEEDBACK["STATUS_COMMAND_OVERRIDDEN"],
        sf.COMMAND_FEEDBACK["STATUS_COMMAND_OVERRIDDEN"],
        sf.ARM_CARTESIAN_FEEDBACK["STATUS_TRAJECTORY_CANCELLED"],
    ]
    assert overridden == [SkillCode.ROBOT_FAULT] * 3
    assert all(code is not None and code.robot_fault and not code.stopped for code in overridden)
    assert "another client" in sf.explain("STATUS_COMMAND_OVERRIDDEN")


def test_every_lease_result_but_ok_is_a_lost_lease() -> None:
    assert {k for k, v in sf.LEASE_USE.items() if v is not SkillCode.LEASE_LOST} == {"STATUS_OK"}


def test_unknown_statuses_are_internal_errors_not_successes() -> None:
    assert sf.verdict(sf.NAVIGATION_FEEDBACK, "STATUS_FROM_THE_FUTURE") is SkillCode.INTERNAL_ERROR
    assert sf.refusal("NoSuchResponse", "STATUS_OK") is SkillCode.ROBOT_FAULT
    assert sf.refusal("RobotCommandResponse", "STATUS_OK") is SkillCode.ROBOT_FAULT  # refused with OK: still a fault
    assert sf.refusal("NavigateToResponse", "STATUS_STUCK") is SkillCode.BLOCKED
    assert sf.explain("STATUS_STUCK").startswith("STATUS_STUCK (the robot is stuck")
    assert sf.explain("STATUS_PROCESSING") == "STATUS_PROCESSING"


def test_each_feedback_table_can_run_succeed_and_fail() -> None:
    tables = [
        sf.NAVIGATION_FEEDBACK, sf.MANIPULATION_FEEDBACK, sf.COMMAND_FEEDBACK, sf.TRAJECTORY_GOAL,
        sf.ARM_CARTESIAN_FEEDBACK, sf.ARM_STOW_FEEDBACK, sf.CONSTRAINED_MANIPULATION_FEEDBACK, sf.POWER_FEEDBACK,
    ]  # fmt: skip
    for table in tables:
        assert None in table.values()
        assert any(code is not None and code is not SkillCode.NONE for code in table.values())
    for table in (sf.NAVIGATION_FEEDBACK, sf.MANIPULATION_FEEDBACK, sf.TRAJECTORY_FEEDBACK, sf.POWER_FEEDBACK):
        assert SkillCode.NONE in table.values()


def _enum_names(enum: Any) -> set[str]:
    return set(enum.keys())


@needs_sdk
def test_tables_cover_exactly_the_sdk_enums() -> None:
    """Every status of the installed API is classified, and no key is a typo (keys equal the enum's names)."""
    from bosdyn.api import (
        arm_command_pb2,
        basic_command_pb2,
        gripper_command_pb2,
        image_pb2,
        lease_pb2,
        manipulation_api_pb2,
        power_pb2,
        robot_command_pb2,
    )
    from bosdyn.api.graph_nav import graph_nav_pb2

    basic = basic_command_pb2
    pairs: list[tuple[Mapping[str, object], Any]] = [
        (sf.NAVIGATION_FEEDBACK, graph_nav_pb2.NavigationFeedbackResponse.Status),
        (sf.NAVIGATE_TO_REFUSAL, graph_nav_pb2.NavigateToResponse.Status),
        (sf.MANIPULATION_FEEDBACK, manipulation_api_pb2.ManipulationFeedbackState),
        (sf.ROBOT_COMMAND_REFUSAL, robot_command_pb2.RobotCommandResponse.Status),
        (sf.COMMAND_FEEDBACK, basic.RobotCommandFeedbackStatus.Status),
        (sf.TRAJECTORY_FEEDBACK, basic.SE2TrajectoryCommand.Feedback.Status),
        (sf.TRAJECTORY_GOAL, basic.SE2TrajectoryCommand.Feedback.FinalGoalStatus),
        (sf.STAND_FEEDBACK, basic.StandCommand.Feedback.Status),
        (sf.SIT_FEEDBACK, basic.SitCommand.Feedback.Status),
        (sf.ARM_CARTESIAN_FEEDBACK, arm_command_pb2.ArmCartesianCommand.Feedback.Status),
        (sf.ARM_STOW_FEEDBACK, arm_command_pb2.NamedArmPositionsCommand.Feedback.Status),
        (sf.GRIPPER_FEEDBACK, gripper_command_pb2.ClawGripperCommand.Feedback.Status),
        (sf.CONSTRAINED_MANIPULATION_FEEDBACK, basic.ConstrainedManipulationCommand.Feedback.Status),
        (sf.POWER_FEEDBACK, power_pb2.PowerCommandStatus),
        (sf.LEASE_USE, lease_pb2.LeaseUseResult.Status),
        (sf.IMAGE_STATUS, image_pb2.ImageResponse.Status),
    ]
    for table, enum in pairs:
        assert set(table) == _enum_names(enum), enum.DESCRIPTOR.full_name
    # aliases (STATUS_AT_GOAL == STATUS_STOPPED) must agree, whichever name the SDK reports for the value
    trajectory = basic.SE2TrajectoryCommand.Feedback.Status
    for name in sorted(_enum_names(trajectory)):
        assert sf.TRAJECTORY_FEEDBACK[name] == sf.TRAJECTORY_FEEDBACK[trajectory.Name(trajectory.Value(name))]
    assert set(sf.REFUSALS) == {
        graph_nav_pb2.NavigateToResponse.DESCRIPTOR.name,
        robot_command_pb2.RobotCommandResponse.DESCRIPTOR.name,
        power_pb2.PowerCommandResponse.DESCRIPTOR.name,
    }
