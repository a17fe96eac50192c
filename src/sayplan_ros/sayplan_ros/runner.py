"""One way to run nodes as a program: init, spin on a MultiThreadedExecutor, clean exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

from sayplan_core.graph.model import GraphError


def run_nodes(program: str, make_nodes: Callable[[], list[Node]], args: list[str] | None = None) -> None:
    """Spin the nodes until Ctrl-C; a configuration error exits 1 with one line on stderr."""
    rclpy.init(args=args)
    nodes: list[Node] = []
    code = 0
    executor = MultiThreadedExecutor(num_threads=4)
    try:
        nodes = make_nodes()
        for node in nodes:
            executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (GraphError, ValueError) as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        code = 1
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    sys.exit(code)
