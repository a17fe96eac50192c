"""What every base backend shares (ARCL, Nav2, ...): where to send the base for a node, and where it is.

A base reports its pose in map coordinates; the planner thinks in room and pose nodes.
`nearest_place` turns the one into the other, so a skill result after a failed or
interrupted drive can tell the scene graph where the agent really is.
"""

from __future__ import annotations

import math

from sayplan_core.graph.model import NAV_TYPES, GraphError, SceneGraph
from sayplan_core.robots.binding import SiteBinding, Target

#: A map pose: x, y in metres, heading in radians.
Pose2D = tuple[float, float, float]


def place_xy(graph: SceneGraph, binding: SiteBinding, node_id: str) -> tuple[float, float] | None:
    """Where a node is on the map: its site-file pose, else its scene-graph position, else None."""
    entry = binding.entries.get(node_id)
    if entry is not None and entry.pose is not None:
        return entry.pose[0], entry.pose[1]
    node = graph.nodes.get(node_id)
    if node is None or node.position is None:
        return None
    return float(node.position[0]), float(node.position[1])


def nearest_place(graph: SceneGraph, binding: SiteBinding, x: float, y: float) -> str | None:
    """The room or pose node closest to map point (x, y); ties go to the smaller id, so the answer is stable."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    best: tuple[float, str] | None = None
    for node_id in graph.ids_of_type(*NAV_TYPES):
        xy = place_xy(graph, binding, node_id)
        if xy is None:
            continue
        candidate = (math.hypot(xy[0] - x, xy[1] - y), node_id)
        if best is None or candidate < best:
            best = candidate
    return None if best is None else best[1]


class TargetError(ValueError):
    """A step that cannot be turned into robot motion (no such node, no position, no site-file entry where one is
    needed or the wrong kind, no handle, no program): refused before the robot moves. Every robot raises this one."""


def base_target(graph: SceneGraph, binding: SiteBinding, node_id: str) -> Target:
    """Where to send the base for `node_id`.

    Rooms and poses fall back to their scene-graph position. An asset (or anything else
    the arm works at) needs a site-file entry: its graph position is its centre, and a
    base sent there would drive into it.
    """
    if node_id not in graph.nodes:
        raise TargetError(f"'{node_id}' is not in the scene graph")
    entry = binding.entries.get(node_id)
    if entry is not None:
        return entry
    if graph.nodes[node_id].type not in NAV_TYPES:
        raise TargetError(
            f"'{node_id}' ({graph.nodes[node_id].type}) has no entry in the site file: give the base pose "
            "(or robot goal) from which the arm reaches it"
        )
    try:
        return binding.target(graph, node_id)
    except GraphError as exc:
        raise TargetError(str(exc)) from None


def pose_of(target: Target) -> Pose2D:
    """The map pose of a target, for bases that take poses (Nav2); a name-only binding is refused."""
    if target.pose is None:
        raise TargetError(
            f"'{target.node}' is bound to the robot-side name '{target.name}' but this base needs a map pose: "
            "add pose: [x, y, heading_deg] to its site-file entry"
        )
    return target.pose
