"""Launch the SayPlan stack on a ROS 2 install: one process per node.

    ros2 launch sayplan_ros sayplan.launch.py robot:=sim planner:=sayplan llm:=auto env:=office rviz:=true \
        params_file:=my_site.yaml namespace:=robot1 use_sim_time:=false log_level:=info

The node list is `sayplan_ros.stack.stack_specs(robot)`, the same list `sayplan_stack`, `sayplan_demo` and the tests
compose in one process. Parameters come, in order (later wins), from config/sayplan.yaml,
config/robots/<robot>.yaml, config/planners/<planner>.yaml, `params_file`, and the launch arguments
(env, llm, use_sim_time). Every file is keyed by node name; the sections are applied to the nodes whatever their
namespace.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from ament_index_python.packages import get_package_share_directory
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sayplan_core.llm.selection import BACKENDS
from sayplan_core.planners import PLANNERS
from sayplan_ros.stack import ROBOTS, composed_parameters, stack_specs

LLMS = tuple(b for b in BACKENDS if b != "replay")  # replay: set planner.replay_transcript in params_file
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")


def node_sections(path: str, node: str) -> dict[str, Any]:
    """The parameters a params file gives `node` (its own section, then a `/**` section for every node)."""
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    if not isinstance(data, dict):
        raise RuntimeError(f"params file {path}: expected node names at the top level")
    out: dict[str, Any] = {}
    for key in ("/**", node, f"/{node}"):
        body = data.get(key)
        if isinstance(body, dict):
            out.update(body.get("ros__parameters") or {})
    return out


def stack_parameters(value: dict[str, str], config: str) -> dict[str, dict[str, Any]]:
    """Each node's parameters for these launch argument values: the files in order, then the arguments."""
    files = [
        os.path.join(config, "sayplan.yaml"),
        os.path.join(config, "robots", f"{value['robot']}.yaml"),
        os.path.join(config, "planners", f"{value['planner']}.yaml"),
    ]
    if value["params_file"]:
        files.append(value["params_file"])
    sim_time = value["use_sim_time"].lower() in ("true", "1", "yes")
    given = {"scene_graph_server": {"env": value["env"]}, "planner": {"llm": value["llm"]}}
    if value["robot"] == "sim":
        given["sim_skill_server"] = {"env": value["env"]}
    given.update(composed_parameters(value["robot"]))  # the lifecycle manager's node list
    out: dict[str, dict[str, Any]] = {}
    for spec in stack_specs(value["robot"]):
        parameters: dict[str, Any] = {}
        for path in files:
            parameters.update(node_sections(path, spec.name))
        parameters.update(given.get(spec.name, {}))
        parameters["use_sim_time"] = sim_time
        out[spec.name] = parameters
    return out


def _nodes(context: LaunchContext) -> list[Node]:
    config = os.path.join(get_package_share_directory("sayplan_ros"), "config")
    value = {name: LaunchConfiguration(name).perform(context) for name in (
        "robot", "planner", "llm", "env", "params_file", "namespace", "use_sim_time", "log_level")}  # fmt: skip
    for name, allowed in (
        ("robot", tuple(ROBOTS)),
        ("planner", tuple(PLANNERS)),
        ("llm", LLMS),
        ("log_level", LOG_LEVELS),
    ):
        if value[name] not in allowed:
            raise RuntimeError(f"launch argument {name}:={value[name]} is not one of {', '.join(allowed)}")
    parameters = stack_parameters(value, config)
    nodes = []
    for spec in stack_specs(value["robot"]):
        nodes.append(
            Node(
                package=spec.package,
                executable=spec.executable,
                name=spec.name,
                namespace=value["namespace"],
                parameters=[parameters[spec.name]],
                arguments=["--ros-args", "--log-level", value["log_level"]],
                output="screen",
            )
        )
    return nodes


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("sayplan_ros")
    return LaunchDescription(
        [
            DeclareLaunchArgument("robot", default_value="sim", description=" | ".join(ROBOTS)),
            DeclareLaunchArgument("planner", default_value="sayplan", description=" | ".join(PLANNERS)),
            DeclareLaunchArgument("llm", default_value="auto", description=" | ".join(LLMS)),
            DeclareLaunchArgument("env", default_value="office", description="office | home | <graph file>"),
            DeclareLaunchArgument("params_file", default_value="", description="YAML keyed by node name, applied last"),
            DeclareLaunchArgument("namespace", default_value="", description="namespace of every node of the stack"),
            DeclareLaunchArgument(
                "use_sim_time", default_value="false", description="use /clock (bag replay, simulators)"
            ),
            DeclareLaunchArgument("log_level", default_value="info", description=" | ".join(LOG_LEVELS)),
            DeclareLaunchArgument("rviz", default_value="false", description="start RViz with the scene graph view"),
            OpaqueFunction(function=_nodes),
            Node(
                package="rviz2",
                executable="rviz2",
                namespace=LaunchConfiguration("namespace"),
                arguments=["-d", os.path.join(share, "config", "sayplan.rviz")],
                condition=IfCondition(LaunchConfiguration("rviz")),
            ),
        ]
    )
