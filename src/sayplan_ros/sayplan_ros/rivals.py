"""Who offers a service. Without SROS2 any peer on the domain can offer the same service name for a moment and
answer a request first (DDS sends the request to every server; the client takes the first answer). So the stack
takes an answer to a call that steers the robot or the graph (describe_skills, apply_graph_update, get_scene_graph)
only while one node offers that service, refuses it with the names of the rivals otherwise, and says so on
/diagnostics (docs/concepts/trust.md)."""

from __future__ import annotations

from rclpy.node import Node

from sayplan_core.graph import limits
from sayplan_ros.names import absolute_name

#: rival names listed at most in a message
SHOWN = 5


def offerers(node: Node, service: str) -> list[str]:
    """The nodes ('namespace/name') that offer `service` (resolved under `node`'s namespace), sorted."""
    wanted = absolute_name(node, service)
    return sorted(
        f"{ns.rstrip('/')}/{name}"
        for name, ns in node.get_node_names_and_namespaces()
        if any(s == wanted for s, _ in node.get_service_names_and_types_by_node(name, ns))
    )


def rival_servers(node: Node, service: str) -> str:
    """'' while at most one node offers `service`; else the problem, naming them (bounded)."""
    found = offerers(node, service)
    if len(found) <= 1:
        return ""
    shown = ", ".join(limits.shown(n, limits.MAX_ID_CHARS) for n in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return f"{len(found)} nodes offer '{absolute_name(node, service)}': {shown}{more}"
