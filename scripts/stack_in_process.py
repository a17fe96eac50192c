"""The whole sim stack in this process, spun by a thread, for the scripts that drive it (soak, start-up bench)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import rclpy
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from sayplan_ros.stack import create_nodes


@contextmanager
def running_stack(
    context: Context, overrides: Mapping[str, Sequence[Parameter]], operator: str
) -> Iterator[tuple[list[Node], Node]]:
    """The stack's nodes and an operator node of our own, spinning until the block ends; then stopped and
    destroyed (the context is the caller's to shut down)."""
    executor = MultiThreadedExecutor(num_threads=4, context=context)
    nodes = create_nodes(context, "sim", overrides)
    operator_node = rclpy.create_node(operator, context=context)
    for node in [*nodes, operator_node]:
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield nodes, operator_node
    finally:
        executor.shutdown(timeout_sec=2.0)
        spinner.join(timeout=5.0)
        for node in [*nodes, operator_node]:
            node.destroy_node()
