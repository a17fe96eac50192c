"""sayplan_ros: rclpy nodes over sayplan_core."""

from glob import glob

from setuptools import find_packages, setup

package_name = "sayplan_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.rviz") + glob("config/*.json")),
        ("share/" + package_name + "/config/robots", glob("config/robots/*.yaml")),
        ("share/" + package_name + "/config/planners", glob("config/planners/*.yaml")),
        ("share/" + package_name + "/config/dds", glob("config/dds/*.xml")),
        ("share/" + package_name + "/transcripts", glob("transcripts/*.json")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="SayPlan ROS maintainers",
    maintainer_email="maintainers@sayplan-ros.dev",
    description="Thin rclpy nodes that expose sayplan_core over ROS 2.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "scene_graph_server = sayplan_ros.scene_graph_server:main",
            "path_planner = sayplan_ros.path_planner_node:main",
            "planner = sayplan_ros.planner_node:main",
            "executor = sayplan_ros.executor_node:main",
            "sim_skill_server = sayplan_ros.sim_skill_server:main",
            "perception = sayplan_ros.perception_node:main",
            "lifecycle_manager = sayplan_ros.lifecycle_manager:main",
            "sayplan_stack = sayplan_ros.stack:main",
            "sayplan_demo = sayplan_ros.demo:main",
            "sayplan_replay = sayplan_ros.replay:main",
            "foxglove_bridge = sayplan_ros.foxglove_bridge:main",
        ],
    },
)
