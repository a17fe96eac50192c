"""The Franka arm on an Omron LD base as a robot plugin (entry point `sayplan.robots: franka_omron`).

ROS-free, so the registry, the docs and the CLI read the options without rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.node_options import NavigationOptions, graph_wait_option
from sayplan_core.options import option
from sayplan_core.plugins import RobotPlugin


# fmt: off
@dataclass(frozen=True)
class FrankaOmronOptions(NavigationOptions):
    navigation_backend: str = option("arcl", "how the base is driven: arcl (Omron LD over ARCL, TCP) or nav2 (NavigateToPose)", choices=("arcl", "nav2"))
    action_set: str = option("sayplan", "the action set plans are written in: sayplan, or a YAML file whose every action plays a role this robot runs (navigate, access, pick, place, open, close, switch_on, switch_off, finish)", names_file=True)
    motions_file: str = option("", "taught arm motions per asset (YAML); empty: the robot offers only goto and done", names_file=True)
    arcl_host: str = option("", "address of the Omron base's ARCL server (navigation_backend arcl)")
    arcl_port: int = option(7171, "ARCL TCP port", minimum=1, maximum=65535)
    arcl_password_env: str = option("SAYPLAN_ARCL_PASSWORD", "environment variable holding the ARCL password (never logged)")
    arcl_timeout_s: float = option(10.0, "how long to wait for the base to connect, log in or answer a query, seconds", minimum=0.1, maximum=600.0)
    arm_action: str = option("/fr3_arm_controller/follow_joint_trajectory", "FollowJointTrajectory action of the arm's trajectory controller")
    gripper_grasp_action: str = option("/franka_gripper/grasp", "franka_gripper Grasp action")
    gripper_move_action: str = option("/franka_gripper/move", "franka_gripper Move action")
    gripper_homing_action: str = option("/franka_gripper/homing", "franka_gripper Homing action")
    home_gripper: bool = option(True, "home the gripper before its first use (its width is unknown after a power cycle)")
    grasp_width: float = option(0.04, "finger width expected around a grasped object, m (a motions-file grasp overrides it)", minimum=0.0, maximum=0.08, per_goal=True)
    grasp_force: float = option(20.0, "grasp force, N (the Franka Hand holds at most 70 N continuously)", minimum=1.0, maximum=70.0, per_goal=True)
    grasp_speed: float = option(0.05, "finger speed when grasping, m/s", minimum=0.001, maximum=0.2, per_goal=True)
    grasp_epsilon: float = option(0.01, "how far from the expected width the fingers may stop and still hold, m", minimum=0.0, maximum=0.08, per_goal=True)
    open_width: float = option(0.08, "finger width when opening the gripper, m", minimum=0.0, maximum=0.08, per_goal=True)
    gripper_speed: float = option(0.1, "finger speed when opening, m/s", minimum=0.001, maximum=0.2, per_goal=True)
    arm_time_tolerance_s: float = option(0.5, "how long after a taught motion's end the arm may take to settle, s", minimum=0.0, maximum=60.0, per_goal=True)
    gripper_state_topic: str = option("/franka_gripper/joint_states", "franka_gripper's finger joint states, read back after every skill but done")
    gripper_stop_service: str = option("/franka_gripper/stop", "franka_gripper's stop service (std_srvs/Trigger), called on shutdown while a gripper command runs")
    hand_readback_s: float = option(1.0, "how long to wait for a fresh gripper state when reading the hand back, seconds", minimum=0.05, maximum=30.0, per_goal=True)
    gripper_width_tolerance: float = option(0.005, "fingers within this of closed, or of where they were opened to, hold nothing, m", minimum=0.0005, maximum=0.02, per_goal=True)
    drive_timeout_s: float = option(100.0, "longest one drive of the base (an ARCL goto or gotoPoint, a Nav2 leg) may take before it is stopped (timeout), seconds", minimum=1.0, maximum=3600.0, per_goal=True)
    arm_timeout_s: float = option(10.0, "longest an arm motion may take beyond its taught duration before it is canceled (timeout), seconds", minimum=0.1, maximum=600.0, per_goal=True)
    gripper_timeout_s: float = option(15.0, "longest a grasp, opening or homing of the gripper may take before it is canceled (timeout), seconds", minimum=0.1, maximum=600.0, per_goal=True)
    stop_timeout_s: float = option(2.0, "how long the base may take to confirm a stop (ARCL Stopped, after a cancel, a deadline or a failure mid-drive) before that is a latched fault, seconds", minimum=0.1, maximum=30.0, per_goal=True)
    arm_cancel_timeout_s: float = option(5.0, "how long the arm's or gripper's server may take to confirm a cancel before that is a latched fault, seconds", minimum=0.1, maximum=60.0, per_goal=True)
    arcl_status_period_s: float = option(0.5, "seconds between the watchdog's ARCL status queries while the base drives", minimum=0.05, maximum=10.0, per_goal=True)
    arcl_silence_s: float = option(3.0, "a base that sends nothing this long while it drives (no answer to status) ends the drive as a latched robot fault, seconds", minimum=0.2, maximum=60.0, per_goal=True)
    graph_wait_s: float = graph_wait_option()
# fmt: on


FRANKA_OMRON = RobotPlugin(
    name="franka_omron",
    summary="a Franka arm (franka_ros2 controllers) on an Omron LD mobile base (ARCL over TCP, or Nav2)",
    node_name="franka_omron_skill_server",
    package="sayplan_franka_omron",
    executable="franka_omron_skill_server",
    node_class="sayplan_franka_omron.skill_server:FrankaOmronSkillServer",
    Options=FrankaOmronOptions,
)
