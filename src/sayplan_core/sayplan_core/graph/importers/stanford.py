"""Stanford 3D Scene Graph `.npz` (Gibson "tiny" buildings): building / room / object / camera dicts."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import Builder
from sayplan_core.graph.model import GraphError, SceneGraph


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
    b = Builder(name or bname)
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
    b: Builder, rooms: Mapping[Any, Any], room_ids: Mapping[int, str], floors: Mapping[str, str]
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
