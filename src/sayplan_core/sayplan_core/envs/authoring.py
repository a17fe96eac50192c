"""A compact YAML format for writing environments by hand, converted to the native model.

    floors:  [basement, floor1, floor2]          # bottom-up, 3 m apart
    default_floor: floor1                        # of rooms and poses that name none (default: the first)
    rooms:   {kitchen: [x, y], lab: {pos: [x, y], floor: floor2, attributes: {...}}}
    poses:   {pose1: [x, y]}
    links:   ["kitchen pose1", "pose1 pose2 pose3"]   # a chain of navigation edges
    assets:  {kitchen: {fridge: {kind: container}, bench: {}}}
    objects: {fridge: {orange: {}, milk: {attributes: {expiry: today}}}}
    agent:   {location: pose1}

Asset kinds set default affordances and states (see ASSET_KINDS); objects default
to `pickup` and go inside container-like assets, on top of everything else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME, FORMAT_VERSION, graph_from_dict

ASSET_KINDS: dict[str, tuple[list[str], list[str], dict[str, Any]]] = {
    # kind: (affordances, initial states, extra attributes)
    "surface": (["release"], [], {}),
    "seat": (["release"], [], {}),
    "container": (["open", "close", "release"], ["closed"], {}),
    "open_container": (["release"], [], {"container": True}),
    "appliance": (["turn_on", "turn_off"], ["off"], {}),
    "appliance_container": (["open", "close", "turn_on", "turn_off", "release"], ["closed", "off"], {}),
    "fixture": ([], [], {}),
}
FLOOR_HEIGHT = 3.0


def _xy(raw: Any, where: str) -> list[float]:
    if not isinstance(raw, (list, tuple)) or len(raw) not in (2, 3):
        raise GraphError(f"{where}: position must be [x, y] or [x, y, z], got {raw!r}")
    return [float(v) for v in raw]


def env_from_authoring(data: Mapping[str, Any], source: str = "<env>") -> SceneGraph:
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    floors = list(data.get("floors") or ["floor1"])
    floor_z = {f: i * FLOOR_HEIGHT for i, f in enumerate(floors)}
    # the floor of a room or pose that names none: `default_floor`, else the first (lowest) floor
    default_floor = data.get("default_floor", floors[0])
    if default_floor not in floor_z:
        raise GraphError(f"{source}: default_floor '{default_floor}' is not one of the floors {floors}")
    for f in floors:
        nodes.append({"id": f, "type": "floor"})
    positions: dict[str, list[float]] = {}
    container_like: set[str] = set()

    def place_nav(kind: str, node_id: str, spec: Any) -> None:
        where = f"{source}: {kind} '{node_id}'"
        if isinstance(spec, Mapping):
            pos, floor = spec.get("pos"), spec.get("floor", default_floor)
            extra = {k: v for k, v in spec.items() if k in ("name", "attributes")}
        else:
            pos, floor, extra = spec, default_floor, {}
        if floor not in floor_z:
            raise GraphError(f"{where}: unknown floor '{floor}'", node_id)
        xyz = _xy(pos, where)
        if len(xyz) == 2:
            xyz.append(floor_z[floor])
        positions[node_id] = xyz
        nodes.append({"id": node_id, "type": kind, "position": xyz, **extra})
        edges.append({"source": node_id, "relation": "in", "target": floor})

    for room_id, spec in (data.get("rooms") or {}).items():
        place_nav("room", room_id, spec)
    for pose_id, spec in (data.get("poses") or {}).items():
        place_nav("pose", pose_id, spec)
    for chain in data.get("links") or []:
        hops = chain.split() if isinstance(chain, str) else list(chain)
        if len(hops) < 2:
            raise GraphError(f"{source}: link '{chain}' needs at least two nodes")
        for a, b in pairwise(hops):
            edges.append({"source": a, "relation": "connected_to", "target": b})

    for room_id, assets in (data.get("assets") or {}).items():
        if room_id not in positions:
            raise GraphError(f"{source}: assets listed under '{room_id}', which is not a room", room_id)
        items = list((assets or {}).items())
        for index, (asset_id, spec) in enumerate(items):
            spec = dict(spec or {})
            kind = spec.pop("kind", "surface")
            if kind not in ASSET_KINDS:
                raise GraphError(f"{source}: asset '{asset_id}' has unknown kind '{kind}'", asset_id)
            affordances, states, attrs = ASSET_KINDS[kind]
            angle = 2 * math.pi * index / max(len(items), 1)
            base = positions[room_id]
            pos = [base[0] + 1.5 * math.cos(angle), base[1] + 1.5 * math.sin(angle), base[2]]
            positions[asset_id] = pos
            if kind in ("container", "open_container", "appliance_container"):
                container_like.add(asset_id)
            node = {
                "id": asset_id,
                "type": "asset",
                "affordances": spec.pop("affordances", list(affordances)),
                "states": spec.pop("states", list(states)),
                "attributes": {**attrs, **spec.pop("attributes", {})},
                "position": [round(v, 3) for v in pos],
            }
            node.update(spec)
            nodes.append(node)
            edges.append({"source": asset_id, "relation": "in", "target": room_id})

    for parent_id, objects in (data.get("objects") or {}).items():
        if parent_id not in positions:
            raise GraphError(f"{source}: objects listed under '{parent_id}', which is not an asset", parent_id)
        for index, (obj_id, spec) in enumerate((objects or {}).items()):
            spec = dict(spec or {})
            default_rel = "inside_of" if parent_id in container_like else "ontop_of"
            relation = spec.pop("relation", default_rel)
            base = positions[parent_id]
            pos = [base[0] + 0.15 * index, base[1], base[2] + 0.8]
            positions[obj_id] = pos
            tags = spec.pop("tags", None)
            attrs = dict(spec.pop("attributes", {}))
            if tags:
                attrs["tags"] = [t.strip() for t in str(tags).split(",") if t.strip()]
            node = {
                "id": obj_id,
                "type": "object",
                "affordances": spec.pop("affordances", ["pickup"]),
                "states": spec.pop("states", []),
                "attributes": attrs,
                "position": [round(v, 3) for v in pos],
            }
            node.update(spec)
            nodes.append(node)
            edges.append({"source": obj_id, "relation": relation, "target": parent_id})

    agent = data.get("agent") or {}
    agent_id = str(agent.get("id", "agent"))
    nodes.append({"id": agent_id, "type": "agent", "attributes": {"location": agent.get("location")}})
    doc = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": data.get("name", source), "nodes": nodes}
    doc["edges"] = edges
    return graph_from_dict(doc, source=source)
