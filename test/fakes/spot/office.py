"""The bundled office as a Spot site: the fake robot's world and the site file a user would write for it.

The fake's truth is the scene graph's geometry (its map frame is the GraphNav seed frame): one waypoint per
room and pose node (recorded with the node id as its name, under an opaque waypoint id, as GraphNav does),
every object where the graph puts it, and the kitchen cupboard's handle. The site file binds the rooms and
poses to those waypoint names, gives the handle, and a place on Niko's desk beside his laptop.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import yaml

from sayplan_core.envs import load_env
from sayplan_core.graph.model import SceneGraph

from .world import FakeHandle, FakeObject, FakeWorld, Se2, Waypoint

CUPBOARD_HANDLE = (54.468, -3.297, 0.9)
CUPBOARD_PULL = (0.0, 1.0)
DESK_PLACE = (41.2, 4.7, 0.85)


def office() -> SceneGraph:
    return load_env("office")


def waypoint_id(node: str) -> str:
    """An opaque GraphNav-like id (users bind waypoints by their recorded names)."""
    return f"wp-{zlib.crc32(node.encode()):08x}"


def office_world(graph: SceneGraph | None = None) -> FakeWorld:
    graph = graph or office()
    start = graph.nodes[graph.agent_location() or "pose7"].position
    assert start is not None
    world = FakeWorld(Se2(start[0], start[1], 0.0))
    for node in graph.iter_nodes("room", "pose"):
        if node.position is not None:
            wid = waypoint_id(node.id)
            world.waypoints[wid] = Waypoint(wid, node.id, node.position[0], node.position[1])
    for node in graph.iter_nodes("object"):
        if node.position is not None:
            world.objects[node.id] = FakeObject(node.id, tuple(node.position))  # type: ignore[arg-type]
    world.handles["kitchen_cupboard"] = FakeHandle("kitchen_cupboard", CUPBOARD_HANDLE, CUPBOARD_PULL)
    return world


def office_site(
    path: Path,
    graph: SceneGraph | None = None,
    unbound: tuple[str, ...] = (),
    desk_place: tuple[float, float, float] = DESK_PLACE,
    objects: dict[str, Any] | None = None,
    **extra: Any,
) -> Path:
    graph = graph or office()
    nodes: dict[str, Any] = {n.id: {"target": n.id} for n in graph.iter_nodes("room", "pose") if n.id not in unbound}
    nodes.update(extra.pop("nodes", {}))
    site = {
        "frame": "map",
        "nodes": nodes,
        "spot": {
            "handles": {
                "kitchen_cupboard": {
                    "position": list(CUPBOARD_HANDLE),
                    "kind": "hinge",
                    "opening": 90,
                    "pull": list(CUPBOARD_PULL),
                }
            },
            "places": {"nikos_desk": list(desk_place)},
            "objects": objects or {},
        },
    }
    site.update(extra)
    path.write_text(yaml.safe_dump(site))
    return path
