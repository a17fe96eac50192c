"""Stanford 3D Scene Graph `.npz` (Gibson "tiny" buildings): building / room / object / camera dicts.

What the dataset has: rooms (scene category, floor, centre, size), objects (COCO class, room, centre, size,
materials, action affordances). What it lacks, and what the importer does about it:
- no room connectivity: a hallway pose per floor joined to each of its rooms (links marked synthetic and counted),
  floors joined only through a staircase or elevator room the data places on both (its `floor_number` lists both,
  or its height spans both floors' rooms; see synthetic_links.invent), or real doors from
  `--connectivity`;
- no movable/immovable split: classes in MOVABLE_CLASSES become objects (in their room, with no support
  surface: the dataset has no object-object relations), the rest assets; `--types` overrides per class;
- no robot: `--agent-at` places one;
- no states (open/closed, on/off): none are invented.
"""

from __future__ import annotations

import math
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import (
    Builder,
    Imported,
    ImportOptions,
    closest,
    give_pickup,
    unread_text,
)
from sayplan_core.graph.importers.synthetic_links import joins_floors
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import MAX_FILE_BYTES

EXPECTED = "a 3D Scene Graph .npz: 'output' holding a dict with 'building', 'room' and 'object'"

#: COCO classes (the dataset's object vocabulary) a mobile manipulator can carry.
MOVABLE_CLASSES: frozenset[str] = frozenset({
    "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports_ball", "kite",
    "baseball_bat", "baseball_glove", "skateboard", "surfboard", "tennis_racket", "bottle", "wine_glass", "cup",
    "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot_dog",
    "pizza", "donut", "cake", "laptop", "mouse", "remote", "keyboard", "cell_phone", "book", "clock", "vase",
    "scissors", "teddy_bear", "hair_drier", "toothbrush",
})  # fmt: skip
#: How far (metres) a staircase's height must reach into another floor's rooms for the data to place it there.
MIN_SHARED_HEIGHT = 1.0
#: Every key of the dataset (its tools/load.py), by section: the ones read, and the ones known and not kept (mesh
#: segmentations, voxels, areas, volumes, counts, textures, cameras: nothing in our graph holds them).
SECTIONS = ("building", "room", "object", "camera")
READ_KEYS: dict[str, frozenset[str]] = {
    "building": frozenset({"name", "function"}),
    "room": frozenset({"id", "scene_category", "floor_number", "location", "size", "volume"}),
    "object": frozenset({"id", "class_", "parent_room", "location", "size", "material", "action_affordance",
                         "tactile_texture"}),
    "camera": frozenset(),
}  # fmt: skip
SKIPPED_KEYS: dict[str, frozenset[str]] = {
    "building": frozenset({"floor_area", "gibson_split", "id", "num_cameras", "num_floors", "num_objects",
                           "num_rooms", "reference_point", "size", "volume", "voxel_size", "voxel_centers",
                           "voxel_resolution", "object_inst_segmentation", "room_inst_segmentation",
                           "object_voxel_occupancy", "room_voxel_occupancy"}),
    "room": frozenset({"floor_area", "inst_segmentation", "voxel_occupancy", "parent_building"}),
    "object": frozenset({"floor_area", "surface_coverage", "inst_segmentation", "visual_texture", "volume",
                         "voxel_occupancy"}),
    "camera": frozenset({"name", "id", "FOV", "location", "rotation", "modality", "resolution", "parent_room"}),
}  # fmt: skip


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _read_npz(path: Path) -> Any:
    import numpy as np

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise GraphError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if path.is_dir():
        raise GraphError(f"cannot read {path}: it is a folder")
    if not stat.S_ISREG(path.stat().st_mode):  # /dev/zero reads as size 0 and never ends
        raise GraphError(f"cannot read {path}: not a regular file (a device, FIFO or socket)")
    if size > MAX_FILE_BYTES:
        raise GraphError(f"cannot read {path}: {size / 1e6:.0f} MB is over the {MAX_FILE_BYTES / 1e6:.0f} MB limit")
    try:
        with np.load(path, allow_pickle=True) as archive:
            if not hasattr(archive, "files") or "output" not in archive.files:
                raise GraphError(f"{path}: not {EXPECTED} (no 'output' entry)")
            return archive["output"].item()
    except GraphError:
        raise
    except Exception as exc:  # numpy and pickle raise many kinds on a file that is not an .npz
        raise GraphError(f"{path}: not {EXPECTED} ({type(exc).__name__}: {exc})") from None


def import_stanford(path: str | Path, options: ImportOptions | None = None, name: str = "") -> Imported:
    """Gibson 3D Scene Graph `.npz` (the file holds one pickled dict under 'output').

    The dataset stores Python objects, so numpy must unpickle it: only open files
    from the dataset or your own exports.
    """
    path = Path(path)
    data = _read_npz(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("building"), Mapping):
        raise GraphError(f"{path}: not {EXPECTED}{unread_text('', data, SECTIONS)}")
    building = data["building"]
    bname = str(building.get("name", "") or path.stem.replace("3DSceneGraph_", ""))
    b = Builder(name or bname, str(path), options)
    b.has_connectivity = False
    b.keys("", data, SECTIONS)
    b.keys("building", building, _known("building"))
    building_id = f"building_{bname.lower()}" if bname else "building"
    b.node(building_id, "building", name=bname, attributes={"function": str(building.get("function", "") or "")})
    floors: dict[str, str] = {}
    rooms = data.get("room") or {}
    objects = data.get("object") or {}
    if not isinstance(rooms, Mapping) or not isinstance(objects, Mapping):
        raise GraphError(f"{path}: 'room' and 'object' must be dicts keyed by id")
    room_ids: dict[int, str] = {}
    no_floor: list[str] = []
    on_floors: dict[str, list[str]] = {}  # room id -> the floor labels the data gives it, its own first
    heights: dict[str, tuple[float, float] | None] = {}
    id_map: dict[str, str] = {f"building {bname}" if bname else "building": building_id}
    entries = [(_int(r.get("id", k)) if isinstance(r, Mapping) else None, k, r) for k, r in rooms.items()]
    for rid, key, room in sorted((e for e in entries if e[0] is not None), key=lambda e: e[0] or 0):
        assert rid is not None
        b.keys(f"room.{key}", room, _known("room"))
        category = str(room.get("scene_category") or "room").strip().replace(" ", "_").lower()
        room_id = f"{category}_{rid}"
        room_ids[rid] = room_id
        id_map[f"room {rid}"] = room_id
        labels = _floor_labels(room.get("floor_number"))
        for floor_label in labels:
            floors.setdefault(floor_label, f"floor_{floor_label.lower()}")
        if labels:
            on_floors[room_id] = labels
        else:  # on no floor: never guessed onto one, where the invented hallway would join it to that floor
            no_floor.append(room_id)
        heights[room_id] = _height(room)
        b.node(
            room_id,
            "room",
            name=category.replace("_", " "),
            attributes={"size": _as_list(room.get("size")), "volume": _as_float(room.get("volume"))},
            position=_as_list(room.get("location")),
        )
        b.child(room_id, "in", floors[labels[0]] if labels else building_id)
    for rid, key, _ in entries:
        if rid is None:
            b.problem(f"room {key!r} has no integer id")
    if no_floor:
        shown = ", ".join(no_floor[:10]) + (f" and {len(no_floor) - 10} more" if len(no_floor) > 10 else "")
        b.notes.append(f"{len(no_floor)} room(s) with no floor_number in the data, on no floor: {shown}")
    for room_id, labels in _shared_rooms(on_floors, heights).items():
        b.also_on[room_id] = [floors[label] for label in labels]
    for label, floor_id in sorted(floors.items()):
        b.node(floor_id, "floor", name=f"floor {label}")
        id_map[f"floor {label}"] = floor_id
        b.child(floor_id, "in", building_id)
    movable = 0
    roomless: list[str] = []  # objects whose parent_room is no room: left out, named in one note
    for key, obj in objects.items():
        oid = _int(obj.get("id", key)) if isinstance(obj, Mapping) else None
        if oid is None or not isinstance(obj, Mapping):
            b.problem(f"object {key!r} has no integer id")
            continue
        b.keys(f"object.{key}", obj, _known("object"))
        cls = str(obj.get("class_") or "object").strip().replace(" ", "_").lower()
        parent = room_ids.get(_int(obj.get("parent_room")) or -1)
        if parent is None:
            line = f"object {oid} ({cls}) has parent_room {str(obj.get('parent_room'))[:40]}, not a room" + closest(
                str(obj.get("parent_room")), [str(r) for r in room_ids], fallback="room ids"
            )
            if room_ids:  # one stray object does not refuse the building (as a NaN position drops only that)
                roomless.append(line)
            else:  # no room at all: the data is not a building's
                b.problem(line)
            continue
        node_type = "object" if cls in MOVABLE_CLASSES else "asset"
        movable += node_type == "object"
        affordances = [str(a).replace(" ", "_") for a in _as_list(obj.get("action_affordance")) if a]
        item = b.node(
            f"{cls}_{oid}",
            node_type,
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
        if item is not None and node_type == "object":
            give_pickup(item)
        id_map[f"object {oid}"] = f"{cls}_{oid}"
        b.child(f"{cls}_{oid}", "in", parent)
    cameras = data.get("camera") or {}
    for key, camera in cameras.items() if isinstance(cameras, Mapping) else ():
        if isinstance(camera, Mapping):  # not imported (a panorama's pose has no counterpart), but accounted for
            b.keys(f"camera.{key}", camera, _known("camera"))
    b.notes.append(f"{movable} node(s) of movable classes typed object (affording pickup), the rest asset")
    if roomless:
        shown = "; ".join(roomless[:10]) + (f"; and {len(roomless) - 10} more" if len(roomless) > 10 else "")
        b.drop("objects", len(roomless))
        b.notes.append(f"{len(roomless)} object(s) left out, in no room of the building: {shown}")
    imported = b.build(EXPECTED)
    imported.format = "stanford"
    imported.id_map = id_map
    return imported


def import_stanford_npz(path: str | Path, name: str = "", options: ImportOptions | None = None) -> SceneGraph:
    return import_stanford(path, options, name).graph


def _known(section: str) -> frozenset[str]:
    return READ_KEYS[section] | SKIPPED_KEYS[section]


def _floor_labels(raw: Any) -> list[str]:
    """The floors a room is on: its `floor_number` ("A"), several when the data lists several (["A", "B"]), or none."""
    if hasattr(raw, "tolist"):
        raw = raw.tolist()
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    labels = [str(v).strip() for v in items if v is not None and str(v).strip()]
    return list(dict.fromkeys(labels))


def _height(room: Mapping[str, Any]) -> tuple[float, float] | None:
    """A room's vertical extent (bottom, top) from its centre and size, when the data has both."""
    centre, size = _as_list(room.get("location")), _as_list(room.get("size"))
    if len(centre) != 3 or len(size) != 3:
        return None
    try:
        z, h = float(centre[2]), abs(float(size[2]))
    except (TypeError, ValueError):
        return None
    return (z - h / 2, z + h / 2) if math.isfinite(z) and math.isfinite(h) else None


def _shared_rooms(
    on_floors: Mapping[str, list[str]], heights: Mapping[str, tuple[float, float] | None]
) -> dict[str, list[str]]:
    """Staircase/elevator rooms the data places on floors besides their own: listed there, or reaching at least
    MIN_SHARED_HEIGHT into the height band of that floor's other rooms. Room id -> those floor labels."""
    bands: dict[str, tuple[float, float]] = {}
    for room, labels in on_floors.items():
        extent = heights.get(room)
        if extent is None or joins_floors(room) or len(labels) > 1:
            continue
        low, high = bands.get(labels[0], extent)
        bands[labels[0]] = (min(low, extent[0]), max(high, extent[1]))
    out: dict[str, list[str]] = {}
    for room, labels in on_floors.items():
        extra = labels[1:]
        extent = heights.get(room)
        if joins_floors(room) and extent is not None:
            for label, (low, high) in sorted(bands.items()):
                if label not in labels and min(high, extent[1]) - max(low, extent[0]) >= MIN_SHARED_HEIGHT:
                    extra.append(label)
        if extra:
            out[room] = extra
    return out


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
