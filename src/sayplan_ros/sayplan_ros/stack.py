"""Run the SayPlan nodes composed in one process (the path for machines without `ros2 launch`).

    sayplan_stack --ros-args --params-file config/sayplan.yaml

Parameters reach each node by its name exactly as with a launch file.
"""

from __future__ import annotations

import sys

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

from sayplan_core.graph.model import GraphError
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer


def create_nodes(context: Context | None = None) -> list[Node]:
    return [SceneGraphServer(context=context), PathPlannerNode(context=context)]


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    nodes: list[Node] = []
    code = 0
    executor = MultiThreadedExecutor(num_threads=4)
    try:
        nodes = create_nodes()
        for node in nodes:
            executor.add_node(node)
        nodes[0].get_logger().info(f"stack up: {', '.join(n.get_name() for n in nodes)}")
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (GraphError, ValueError) as exc:
        print(f"sayplan_stack: {exc}", file=sys.stderr)
        code = 1
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    sys.exit(code)
