"""Launch the SayPlan stack on a ROS 2 install: `ros2 launch sayplan_ros sayplan.launch.py env:=home`.

Without `ros2 launch` (the PyPI wheels), run the same nodes composed in one process:
`sayplan_stack --ros-args --params-file config/sayplan.yaml`.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("sayplan_ros")
    params = os.path.join(share, "config", "sayplan.yaml")
    env = LaunchConfiguration("env")
    method = LaunchConfiguration("path_method")
    return LaunchDescription(
        [
            DeclareLaunchArgument("env", default_value="office", description="office | home | <graph file>"),
            DeclareLaunchArgument("path_method", default_value="dijkstra", description="dijkstra | astar"),
            Node(
                package="sayplan_ros",
                executable="scene_graph_server",
                name="scene_graph_server",
                parameters=[params, {"env": env}],
                output="screen",
            ),
            Node(
                package="sayplan_ros",
                executable="path_planner",
                name="path_planner",
                parameters=[params, {"method": method}],
                output="screen",
            ),
        ]
    )
