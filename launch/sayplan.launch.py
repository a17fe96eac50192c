"""Launch the SayPlan stack on a ROS 2 install.

    ros2 launch sayplan_ros sayplan.launch.py robot:=sim planner:=sayplan llm:=auto env:=office rviz:=true

Without `ros2 launch` (the PyPI wheels), the same nodes run composed in one process:
`sayplan_stack --ros-args --params-file config/sayplan.yaml --params-file config/robots/sim.yaml`.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sayplan_core.planners import PLANNERS as PLANNER_REGISTRY

ROBOTS = ("sim", "franka_omron", "spot")
PLANNERS = tuple(PLANNER_REGISTRY)  # every planner of sayplan_core (each has config/planners/<name>.yaml)
LLMS = ("auto", "openai", "ollama", "local")


def _nodes(context: LaunchContext) -> list[Node]:
    share = get_package_share_directory("sayplan_ros")
    config = os.path.join(share, "config")
    robot = LaunchConfiguration("robot").perform(context)
    planner = LaunchConfiguration("planner").perform(context)
    llm = LaunchConfiguration("llm").perform(context)
    env = LaunchConfiguration("env").perform(context)
    for name, value, allowed in (("robot", robot, ROBOTS), ("planner", planner, PLANNERS), ("llm", llm, LLMS)):
        if value not in allowed:
            raise RuntimeError(f"launch argument {name}:={value} is not one of {', '.join(allowed)}")
    if robot != "sim":
        raise RuntimeError(
            f"robot:={robot}: its skill server comes with the robot-backend work; use robot:=sim for now"
        )
    common = os.path.join(config, "sayplan.yaml")
    planner_yaml = os.path.join(config, "planners", f"{planner}.yaml")  # may also set the skills' action set
    return [
        Node(package="sayplan_ros", executable="scene_graph_server", name="scene_graph_server",
             parameters=[common, {"env": env}], output="screen"),
        Node(package="sayplan_ros", executable="path_planner", name="path_planner",
             parameters=[common], output="screen"),
        Node(package="sayplan_ros", executable="planner", name="planner",
             parameters=[common, planner_yaml, {"llm": llm}], output="screen"),
        Node(package="sayplan_ros", executable="executor", name="executor",
             parameters=[common], output="screen"),
        Node(package="sayplan_ros", executable="sim_skill_server", name="sim_skill_server",
             parameters=[os.path.join(config, "robots", f"{robot}.yaml"), planner_yaml, {"env": env}], output="screen"),
    ]  # fmt: skip


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("sayplan_ros")
    return LaunchDescription(
        [
            DeclareLaunchArgument("robot", default_value="sim", description="sim | franka_omron | spot"),
            DeclareLaunchArgument("planner", default_value="sayplan", description=" | ".join(PLANNERS)),
            DeclareLaunchArgument("llm", default_value="auto", description=" | ".join(LLMS)),
            DeclareLaunchArgument("env", default_value="office", description="office | home | <graph file>"),
            DeclareLaunchArgument("rviz", default_value="false", description="start RViz with the scene graph view"),
            OpaqueFunction(function=_nodes),
            Node(
                package="rviz2",
                executable="rviz2",
                arguments=["-d", os.path.join(share, "config", "sayplan.rviz")],
                condition=IfCondition(LaunchConfiguration("rviz")),
            ),
        ]
    )
