"""The robot-side drivers SayPlan's franka_omron robot talks to, each started when its package is installed.

    ros2 launch sayplan_franka_omron drivers.launch.py robot_ip:=172.16.0.2 [navigation_backend:=arcl|nav2]
        [nav2_map:=/maps/site.yaml nav2_params:=/maps/nav2_params.yaml] [use_fake_hardware:=false]

- The arm: franka_fr3_moveit_config's moveit.launch.py (franka_ros2, Jazzy). It starts
  ros2_control with the `fr3_arm_controller` JointTrajectoryController, the
  `franka_gripper` node (Grasp, Move, Homing) and MoveIt's move_group: exactly the
  action names config/robots/franka_omron.yaml uses. franka_ros2 on Jazzy drives an FR3
  only (libfranka >= 0.10); a Panda needs its own driver exposing the same actions.
- The base, for `navigation_backend:=nav2` only: nav2_bringup's bringup_launch.py with
  the site's map and Nav2 parameters. An Omron LD base over ARCL needs no driver: it
  localises and plans on board, and the skill server connects to it directly.

A driver whose package is not installed is skipped with a log line saying so.
"""

from __future__ import annotations

import os

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchContext, LaunchDescription
from launch.action import Action
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, LogInfo, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration


def _include(package: str, launch_file: str, arguments: dict[str, str]) -> Action:
    try:
        share = get_package_share_directory(package)
    except PackageNotFoundError:
        return LogInfo(msg=f"sayplan_franka_omron drivers: {package} is not installed; not starting {launch_file}")
    source = PythonLaunchDescriptionSource(os.path.join(share, "launch", launch_file))
    return IncludeLaunchDescription(source, launch_arguments=list(arguments.items()))


def _drivers(context: LaunchContext) -> list[Action]:
    value = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    backend = value["navigation_backend"]
    if backend not in ("arcl", "nav2"):
        raise RuntimeError(f"navigation_backend:={backend} is not one of arcl, nav2")
    actions = [
        _include(
            "franka_fr3_moveit_config",
            "moveit.launch.py",
            {"robot_ip": value["robot_ip"], "load_gripper": "true", "use_fake_hardware": value["use_fake_hardware"]},
        )
    ]
    if backend == "nav2":
        actions.append(
            _include(
                "nav2_bringup",
                "bringup_launch.py",
                {"map": value["nav2_map"], "params_file": value["nav2_params"], "autostart": "true"},
            )
        )
    return actions


ARGUMENTS = {
    "robot_ip": ("172.16.0.2", "address of the Franka arm's controller"),
    "navigation_backend": ("arcl", "arcl (the Omron base drives itself) | nav2 (start Nav2 too)"),
    "nav2_map": ("", "map YAML for Nav2's map server (navigation_backend nav2)"),
    "nav2_params": ("", "Nav2 parameter file (navigation_backend nav2)"),
    "use_fake_hardware": ("false", "franka_ros2's mock hardware instead of the arm"),
}


def generate_launch_description() -> LaunchDescription:
    declared: list[Action] = [
        DeclareLaunchArgument(name, default_value=default, description=text)
        for name, (default, text) in ARGUMENTS.items()
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=_drivers)])
