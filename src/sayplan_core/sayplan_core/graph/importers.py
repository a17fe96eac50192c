"""Importers from other scene-graph formats into the native model.

- SayPlan-style JSON (SayPlan appendix K/L): nodes grouped by type plus `links`.
- LookPlanGraph / GRASIF-style JSON: nodes keyed `class-idx` with `relation`,
  `related_to`, `states`, `affordances`, `properties`; places; an agent with
  `location` / `holding`. Both the list layout of the paper's appendix A and the
  keyed layout are read.
- Stanford 3D Scene Graph `.npz` (Gibson "tiny" buildings): building / room /
  object / camera dicts.

Every importer produces a native dict first and then goes through
`graph_from_dict`, so imported files get exactly the same validation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME, FORMAT_VERSION, graph_from_dict

_STATE_RELATION = re.compile(r"^\s*(ontop_of|inside_of|on_top_of|inside|on)\s*\(\s*([^)]+?)\s*\)\s*$")
_LINK_SPLIT = re.compile(r"\s*(?:↔|<->|<=>|--)\s*")
_IGNORED_STATES = {"", "free", "none", "null"}


def _norm_relation(rel: str) -> str:
    rel = rel.strip().lower()
    return {"on_top_of": "ontop_of", "on": "ontop_of", "inside": "inside_of", "in": "inside_of"}.get(rel, rel)


def _attributes(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.split(",") if p.strip()]
        return {"tags": parts}
    if isinstance(raw, list):
        return {"tags": [str(p) for p in raw]}
    return {"value": raw}


def _load_json(path_or_data: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    if isinstance(path_or_data, Mapping):
        return path_or_data, "<dict>"
    path = Path(path_or_data)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GraphError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise GraphError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, Mapping):
        raise GraphError(f"{path}: expected a JSON object at the top level")
    return data, str(path)


class _Builder:
    """Collects native nodes/edges; duplicate ids are caught by the native loader."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.types: dict[str, str] = {}

    def node(self, node_id: str, node_type: str, **fields: Any) -> dict[str, Any]:
        item: dict[str, Any] = {"id": node_id, "type": node_type}
        item.update({k: v for k, v in fields.items() if v not in (None, [], {}, "")})
        self.nodes.append(item)
        self.types.setdefault(node_id, node_type)
        return item

    def child(self, child: str, relation: str, parent: str) -> None:
        self.edges.append({"source": child, "relation": relation, "target": parent})

    def link(self, a: str, b: str) -> None:
        self.edges.append({"source": a, "relation": "connected_to", "target": b})

    def build(self, source: str) -> SceneGraph:
        data = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name}
        data["nodes"] = self.nodes
        data["edges"] = self.edges
        return graph_from_dict(data, source=source)


# --------------------------------------------------------------------------- SayPlan
def import_sayplan_json(path_or_data: str | Path | Mapping[str, Any], name: str = "") -> SceneGraph:
    data, source = _load_json(path_or_data)
    groups = data.get("nodes")
    if not isinstance(groups, Mapping):
        raise GraphError(f"{source}: SayPlan graph needs a 'nodes' object grouped by type")
    b = _Builder(name or str(data.get("name", Path(source).stem if source != "<dict>" else "sayplan")))
    type_map = {"floor": "floor", "room": "room", "pose": "pose", "asset": "asset", "object": "object"}
    type_map["agent"] = "agent"
    object_parent: dict[str, tuple[str, str]] = {}
    agent_id: str | None = None
    agent_location: str | None = None
    for group, items in groups.items():
        node_type = type_map.get(str(group))
        if node_type is None:
            raise GraphError(f"{source}: unknown node group '{group}' (expected {', '.join(type_map)})")
        if not isinstance(items, list):
            raise GraphError(f"{source}: nodes.{group} must be a list")
        for index, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise GraphError(f"{source}: nodes.{group}[{index}] needs a string 'id'")
            node_id = item["id"]
            states: list[str] = []
            raw_state = item.get("state", item.get("states"))
            for state in raw_state if isinstance(raw_state, list) else [raw_state]:
                if not isinstance(state, str) or state.strip().lower() in _IGNORED_STATES:
                    continue
                match = _STATE_RELATION.match(state)
                if match and node_type == "object":
                    object_parent[node_id] = (match.group(2), _norm_relation(match.group(1)))
                elif state.strip() == "inside_hand" and node_type == "object":
                    object_parent[node_id] = ("__agent__", "inside_hand")
                else:
                    states.append(state.strip())
            fields: dict[str, Any] = {
                "name": item.get("name"),
                "states": states,
                "affordances": list(item.get("affordances") or []),
                "attributes": _attributes(item.get("attributes")),
                "position": item.get("position"),
            }
            if node_type == "agent":
                agent_id = node_id
                agent_location = item.get("location")
                fields["attributes"] = {
                    **fields["attributes"],
                    **({"location": agent_location} if agent_location else {}),
                }
            b.node(node_id, node_type, **fields)
            if node_type in ("asset",) and isinstance(item.get("room"), str):
                b.child(node_id, "in", item["room"])
            if node_type in ("room", "pose") and isinstance(item.get("floor"), str):
                b.child(node_id, "in", item["floor"])
    hierarchy_done = {e["source"] for e in b.edges}
    for raw in data.get("links", []) or []:
        if isinstance(raw, str):
            ends = _LINK_SPLIT.split(raw.strip())
        elif isinstance(raw, (list, tuple)):
            ends = [str(e) for e in raw]
        else:
            raise GraphError(f"{source}: link {raw!r} must be 'a<->b' or [a, b]")
        if len(ends) != 2:
            raise GraphError(f"{source}: link {raw!r} must join exactly two nodes")
        a, c = ends
        ta, tc = b.types.get(a), b.types.get(c)
        if ta is None or tc is None:
            missing = a if ta is None else c
            raise GraphError(f"link {raw!r} refers to node '{missing}', which does not exist", missing)
        pair = {ta, tc}
        if pair <= {"room", "pose"}:
            b.link(a, c)
        elif "agent" in pair:
            other = c if ta == "agent" else a
            if agent_location is None and b.types[other] in ("room", "pose"):
                agent_location = other
                for node in b.nodes:
                    if node["id"] == agent_id:
                        node.setdefault("attributes", {})["location"] = other
        else:
            order = ("floor", "room", "asset", "object")
            pa, pc = (order.index(ta) if ta in order else -1), (order.index(tc) if tc in order else -1)
            parent, child = (a, c) if pa < pc else (c, a)
            if child in hierarchy_done:
                continue
            if b.types[child] == "object":
                object_parent.setdefault(child, (parent, "ontop_of"))
            else:
                b.child(child, "in", parent)
                hierarchy_done.add(child)
    for obj, (parent, relation) in object_parent.items():
        if parent == "__agent__":
            if agent_id is None:
                raise GraphError(f"object '{obj}' is inside_hand but the graph has no agent", obj)
            parent = agent_id
        b.child(obj, relation, parent)
    return b.build(source)


# --------------------------------------------------------------------------- GRASIF
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
    data, source = _load_json(path_or_data)
    root = data.get("nodes", data)
    if not isinstance(root, Mapping):
        raise GraphError(f"{source}: expected 'nodes' to be an object")
    scene_name = name or str(data.get("scene", data.get("name", "grasif")))
    b = _Builder(scene_name)
    places = _grasif_items(root.get("places", root.get("room", root.get("rooms"))), source, "places")
    assets = _grasif_items(root.get("assets", root.get("asset")), source, "assets")
    objects = _grasif_items(root.get("objects", root.get("object")), source, "objects")
    agent_raw = root.get("agent")
    if isinstance(agent_raw, list):
        agent_raw = agent_raw[0] if agent_raw else None
    for place_id, item in places:
        b.node(place_id, "room", attributes=_attributes(item.get("properties")), position=item.get("position"))
    for asset_id, item in assets:
        room = item.get("located", item.get("place", item.get("related_to")))
        b.node(
            asset_id,
            "asset",
            states=list(item.get("states") or []),
            affordances=list(item.get("affordances") or []),
            attributes=_attributes(item.get("properties")),
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
            attributes=_attributes(item.get("properties")),
            position=item.get("position"),
        )
        if holding is not None and _grasif_id(holding) == obj_id:
            continue
        parent = item.get("related_to")
        if parent is None:
            raise GraphError(f"{source}: object '{obj_id}' has no 'related_to'", obj_id)
        b.child(obj_id, _norm_relation(str(item.get("relation", "ontop_of"))), _grasif_id(parent))
    if holding is not None and agent_id is not None:
        b.child(_grasif_id(holding), "inside_hand", agent_id)
    return b.build(source)


# --------------------------------------------------------------------------- Stanford 3DSG
def import_stanford_npz(path: str | Path, name: str = "") -> SceneGraph:
    """Gibson 3D Scene Graph `.npz` (the file holds one pickled dict under 'output').

    The dataset stores Python objects, so numpy must unpickle it: only open files
    from the dataset or your own exports.
    """
    import numpy as np

    path = Path(path)
    try:
        with np.load(path, allow_pickle=True) as archive:
            if "output" not in archive.files:
                raise GraphError(f"{path}: not a 3D Scene Graph file (no 'output' entry)")
            data = archive["output"].item()
    except (OSError, ValueError) as exc:
        raise GraphError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, Mapping) or "building" not in data:
        raise GraphError(f"{path}: 'output' must be a dict with 'building', 'room' and 'object'")
    building = data["building"]
    bname = str(building.get("name", "") or path.stem.replace("3DSceneGraph_", ""))
    b = _Builder(name or bname)
    building_id = f"building_{bname.lower()}" if bname else "building"
    b.node(building_id, "building", name=bname, attributes={"function": building.get("function", "")})
    floors: dict[str, str] = {}
    rooms = data.get("room", {}) or {}
    objects = data.get("object", {}) or {}
    room_ids: dict[int, str] = {}
    for key in sorted(rooms, key=lambda k: int(rooms[k].get("id", k))):
        room = rooms[key]
        rid = int(room.get("id", key))
        category = str(room.get("scene_category") or "room").strip().replace(" ", "_").lower()
        room_id = f"{category}_{rid}"
        room_ids[rid] = room_id
        floor_label = str(room.get("floor_number", "A") or "A")
        if floor_label not in floors:
            floors[floor_label] = f"floor_{floor_label.lower()}"
            b.node(floors[floor_label], "floor", name=f"floor {floor_label}")
            b.child(floors[floor_label], "in", building_id)
        b.node(
            room_id,
            "room",
            name=category.replace("_", " "),
            attributes={"size": _as_list(room.get("size")), "volume": _as_float(room.get("volume"))},
            position=_as_list(room.get("location")),
        )
        b.child(room_id, "in", floors[floor_label])
    for key in sorted(objects, key=lambda k: int(objects[k].get("id", k))):
        obj = objects[key]
        oid = int(obj.get("id", key))
        cls = str(obj.get("class_") or "object").strip().replace(" ", "_").lower()
        parent = room_ids.get(int(obj.get("parent_room", -1)))
        if parent is None:
            raise GraphError(f"{path}: object {oid} ({cls}) has parent_room {obj.get('parent_room')}, not a room")
        affordances = [str(a).replace(" ", "_") for a in _as_list(obj.get("action_affordance")) if a]
        b.node(
            f"{cls}_{oid}",
            "asset",
            name=cls.replace("_", " "),
            affordances=affordances,
            attributes={
                k: v
                for k, v in {
                    "material": [str(m) for m in _as_list(obj.get("material")) if m],
                    "size": _as_list(obj.get("size")),
                    "texture": str(obj.get("tactile_texture") or ""),
                }.items()
                if v
            },
            position=_as_list(obj.get("location")),
        )
        b.child(f"{cls}_{oid}", "in", parent)
    _link_rooms_by_floor(b, rooms, room_ids, floors)
    return b.build(str(path))


def _link_rooms_by_floor(
    b: _Builder, rooms: Mapping[Any, Any], room_ids: Mapping[int, str], floors: Mapping[str, str]
) -> None:
    """The dataset has no room connectivity: add one pose per floor as its hallway hub, joined by stairs."""
    hubs: list[str] = []
    for label, floor_id in sorted(floors.items()):
        hub = f"hall_{floor_id}"
        members = [
            (room_ids[int(r.get("id", k))], _as_list(r.get("location")))
            for k, r in rooms.items()
            if str(r.get("floor_number", "A") or "A") == label
        ]
        xs = [loc for _, loc in members if len(loc) == 3]
        centre = [sum(v[i] for v in xs) / len(xs) for i in range(3)] if xs else None
        b.node(hub, "pose", name=f"hallway of {floor_id}", position=centre)
        b.child(hub, "in", floor_id)
        for room_id, _ in members:
            b.link(room_id, hub)
        hubs.append(hub)
    for a, c in pairwise(hubs):
        b.link(a, c)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [float(v) if isinstance(v, (int, float)) else v for v in value]
    return [value]


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


IMPORTERS = {
    "native": None,
    "sayplan": import_sayplan_json,
    "grasif": import_grasif_json,
    "stanford": import_stanford_npz,
}


def import_graph(path: str | Path, fmt: str = "auto") -> SceneGraph:
    """Load any supported file; `auto` picks by extension and content."""
    from sayplan_core.graph import native_format

    path = Path(path)
    if fmt == "auto":
        if path.suffix == ".npz":
            fmt = "stanford"
        else:
            data, _ = _load_json(path)
            if data.get("format") == FORMAT_NAME:
                fmt = "native"
            elif "links" in data:
                fmt = "sayplan"
            else:
                fmt = "grasif"
    if fmt == "native":
        return native_format.load(path)
    if fmt == "sayplan":
        return import_sayplan_json(path)
    if fmt == "grasif":
        return import_grasif_json(path)
    if fmt == "stanford":
        return import_stanford_npz(path)
    raise GraphError(f"unknown graph format '{fmt}' (use auto, native, sayplan, grasif or stanford)")
