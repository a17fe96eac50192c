"""Who offers a service. Without SROS2 any peer on the domain can offer the same service or action name and
answer a request first (DDS sends the request to every server; the client takes the first answer). So the stack
takes an answer to a call that steers the robot or the graph (describe_skills, apply_graph_update, get_scene_graph,
the plan_task and execute_skill actions) only while one server offers it, refuses it with the names of the rivals
otherwise, and says so on /diagnostics (docs/concepts/trust.md). Servers are counted from DDS's endpoints where
rclpy can (count_services), since a process can hide its nodes from the ROS graph; this detects, it does not
authenticate: only SROS2 does."""

from __future__ import annotations

from rclpy.node import Node

from sayplan_core.graph import limits
from sayplan_ros.names import absolute_name

#: rival names listed at most in a message
SHOWN = 5
#: how long a second server may be listed before it counts as a rival: a server just restarted in its process (its
#: node destroyed and made again) is listed twice until DDS drops the old endpoints, usually within milliseconds
RIVAL_GRACE_S = 2.0
#: how often the servers are counted again within that grace
RIVAL_CHECK_S = 0.05


def offerers(node: Node, service: str) -> list[str]:
    """The nodes ('namespace/name') that offer `service` (resolved under `node`'s namespace), sorted."""
    wanted = absolute_name(node, service)
    return sorted(
        f"{ns.rstrip('/')}/{name}"
        for name, ns in node.get_node_names_and_namespaces()
        if any(s == wanted for s, _ in node.get_service_names_and_types_by_node(name, ns))
    )


def server_count(node: Node, service: str) -> int | None:
    """How many servers DDS knows for `service`, counted from the endpoints themselves (rclpy's count_services): a
    process can hide its nodes from the ROS graph, never the endpoints a request must reach. None where rclpy
    lacks it (Humble): then only the servers a node lists are seen."""
    count = getattr(node, "count_services", None)
    return None if count is None else int(count(absolute_name(node, service)))


def rival_servers(node: Node, service: str, label: str = "") -> str:
    """'' while at most one server offers `service`; else the problem, naming the nodes that list it (bounded) and
    counting those no node lists. `label`: the name to show (an action's, for its send_goal service)."""
    found = sorted(set(offerers(node, service)))  # a node destroyed in this process may stay listed under its name
    total = max(len(found), server_count(node, service) or 0)
    if total <= 1:
        return ""
    shown = ", ".join(limits.shown(n, limits.MAX_ID_CHARS) for n in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    hidden = total - len(found)
    unlisted = f"{', ' if found else ''}{hidden} listed by no node" if hidden else ""
    return f"{total} nodes offer '{absolute_name(node, label or service)}': {shown}{more}{unlisted}"


def rival_action_servers(node: Node, action: str) -> str:
    """rival_servers for an action: its servers are those of its send_goal service."""
    return rival_servers(node, f"{action}/_action/send_goal", label=action)
