"""Run the SayPlan nodes composed in one process (the path for machines without `ros2 launch`).

    sayplan_stack --ros-args --params-file config/sayplan.yaml --params-file config/robots/sim.yaml

Parameters reach each node by its name exactly as with a launch file.
"""

from __future__ import annotations

from rclpy.context import Context
from rclpy.node import Node

from sayplan_ros.executor_node import ExecutorNode
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.runner import run_nodes
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer


def create_nodes(context: Context | None = None, robot: str = "sim") -> list[Node]:
    """The whole stack for one robot; `sim` brings its simulated skill server."""
    nodes: list[Node] = [
        SceneGraphServer(context=context),
        PathPlannerNode(context=context),
        PlannerNode(context=context),
        ExecutorNode(context=context),
    ]
    if robot == "sim":
        nodes.append(SimSkillServer(context=context))
    return nodes


def main(args: list[str] | None = None) -> None:
    run_nodes("sayplan_stack", create_nodes, args)
