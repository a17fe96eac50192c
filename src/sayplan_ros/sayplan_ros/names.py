"""How a relative topic or action name resolves under a node's namespace (remapping aside).

`Node.resolve_topic_name` is not in every distro's rclpy; the graph queries (`get_publishers_info_by_topic`) need
the absolute name, so this one rule is written here once.
"""

from __future__ import annotations

from rclpy.node import Node


def absolute_name(node: Node, name: str) -> str:
    """`name` as the node's graph queries see it: absolute names unchanged, relative ones under its namespace."""
    if name.startswith("/"):
        return name
    return f"{node.get_namespace().rstrip('/')}/{name.removeprefix('~/')}"
