"""LookPlanGraph / GRASIF-style JSON.

Nodes keyed `class-idx` with `relation`, `related_to`, `states`, `affordances`,
`properties`; places; an agent with `location` / `holding`. Both the list layout of
the paper's appendix A and the keyed layout are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import Builder, attributes, load_json, norm_relation
from sayplan_core.graph.model import GraphError, SceneGraph


def _grasif_id(raw: Any) -> str:
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        return f"{raw[0]}-{raw[1]}"
    return str(raw)


def _grasif_items(section: Any, source: str, what: str) -> list[tuple[str, Mapping[str, Any]]]:
    if section is None:
        return []
    if isinstance(section, Mapping):
        return [(str(k), v if isinstance(v, Mapping) else {}) for k, v in section.items()]
    if isinstance(section, list):
        out = []
        for index, item in enumerate(section):
            if not isinstance(item, Mapping) or "id" not in item:
                raise GraphError(f"{source}: {what}[{index}] needs an 'id'")
            out.append((_grasif_id(item["id"]), item))
        return out
    raise GraphError(f"{source}: '{what}' must be an object or a list")


def import_grasif_json(path_or_data: str | Path | Mapping[str, Any], name: str = "") -> SceneGraph:
    data, source = load_json(path_or_data)
    root = data.get("nodes", data)
    if not isinstance(root, Mapping):
        raise GraphError(f"{source}: expected 'nodes' to be an object")
    scene_name = name or str(data.get("scene", data.get("name", "grasif")))
    b = Builder(scene_name)
    places = _grasif_items(root.get("places", root.get("room", root.get("rooms"))), source, "places")
    assets = _grasif_items(root.get("assets", root.get("asset")), source, "assets")
    objects = _grasif_items(root.get("objects", root.get("object")), source, "objects")
    agent_raw = root.get("agent")
    if isinstance(agent_raw, list):
        agent_raw = agent_raw[0] if agent_raw else None
    for place_id, item in places:
        b.node(place_id, "room", attributes=attributes(item.get("properties")), position=item.get("position"))
    for asset_id, item in assets:
        room = item.get("located", item.get("place", item.get("related_to")))
        b.node(
            asset_id,
            "asset",
            states=list(item.get("states") or []),
            affordances=list(item.get("affordances") or []),
            attributes=attributes(item.get("properties")),
            position=item.get("position"),
        )
        if room is None:
            raise GraphError(f"{source}: asset '{asset_id}' has no place ('located' or 'place')", asset_id)
        b.child(asset_id, "in", _grasif_id(room))
    agent_id = None
    holding = None
    if isinstance(agent_raw, Mapping):
        agent_id = _grasif_id(agent_raw.get("id", "agent"))
        location = agent_raw.get("location")
        holding = agent_raw.get("holding") or None
        b.node(agent_id, "agent", attributes={"location": _grasif_id(location)} if location else {})
    for obj_id, item in objects:
        b.node(
            obj_id,
            "object",
            states=list(item.get("states") or []),
            affordances=list(item.get("affordances") or []),
            attributes=attributes(item.get("properties")),
            position=item.get("position"),
        )
        if holding is not None and _grasif_id(holding) == obj_id:
            continue
        parent = item.get("related_to")
        if parent is None:
            raise GraphError(f"{source}: object '{obj_id}' has no 'related_to'", obj_id)
        b.child(obj_id, norm_relation(str(item.get("relation", "ontop_of"))), _grasif_id(parent))
    if holding is not None and agent_id is not None:
        b.child(_grasif_id(holding), "inside_hand", agent_id)
    return b.build(source)
