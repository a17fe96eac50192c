"""Hydra scene graphs (MIT SPARK, stored with `spark_dsg`): .json and binary .sparkdsg files into the native model.

Layer by layer (docs/howto/hydra.md has the whole table):
- BUILDINGS (5) -> building; ROOMS (4) -> room; PLACES (3) -> pose in its room, linked to it;
- OBJECTS (2) -> object (a movable class, affording pickup) or asset (the rest), in the room of its place;
- the agent layer (2, a partition per robot) -> one agent, at the place of its latest pose;
- room-room and place-place edges -> navigation links; two rooms whose places touch are linked too. With no such
  edge in the data the builder invents hallway links and says so (common.Builder.invent_connectivity).
Labels come from the graph's labelspace (its metadata) or the `labels` / `room_labels` of a --types file. Node
symbols map to our ids `<class>_<index>` (`O(12)` labelled cup -> `cup_12`); `Imported.id_map` lists them all.
Metadata written by `hydra_export` under the key `sayplan` restores what Hydra has no field for (types, states,
affordances, supports, floors), so a native graph survives export and import.

spark_dsg is imported only when a Hydra file is read or written: the rest of the project runs without it.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sayplan_core import files
from sayplan_core.graph import limits
from sayplan_core.graph.importers.common import (
    Builder,
    Imported,
    ImportOptions,
    account_keys,
    at,
    give_pickup,
    named_keys,
)
from sayplan_core.graph.importers.stanford import MOVABLE_CLASSES as COCO_MOVABLE
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import MAX_FILE_BYTES, parse_json

EXPECTED = "a Hydra / Spark-DSG scene graph (.json, .bson or binary .sparkdsg written by spark_dsg)"
#: Extensions spark_dsg reads: JSON (.bson is JSON text too, as spark_dsg writes it) and its binary encoding.
SUFFIXES = (".json", ".bson", ".sparkdsg")
#: The metadata key our exporter writes and the importer reads back.
META_KEY = "sayplan"
#: The keys read under META_KEY: of a node's metadata, of the graph's, and of each floor the graph's lists.
NODE_META_KEYS = frozenset({"id", "type", "name", "no_position", "states", "affordances", "attributes", "parent",
                            "relation"})  # fmt: skip
GRAPH_META_KEYS = frozenset({"name", "floors", "links_added", "links_removed"})
FLOOR_KEYS = frozenset({"id", "type", "name", "states", "affordances", "attributes", "position", "parent"})
#: Metadata keys read beside ours: the graph's labelspaces (spark_dsg's own).
GRAPH_METADATA_KEYS = frozenset({META_KEY, "labelspaces"})
#: Top-level parts of a spark_dsg JSON file known and not read: the mesh (no counterpart here).
SKIPPED_JSON_KEYS = frozenset({"mesh"})
#: How long the child process that reads a binary file first may take.
PROBE_TIMEOUT_S = 600.0
INSTALL_HINT = "reading or writing Hydra graphs needs the spark-dsg package: pip install spark-dsg==1.1.3"

#: Movable classes beyond COCO's that Hydra's labelspaces (ADE20K, MP3D) name.
MOVABLE_CLASSES: frozenset[str] = COCO_MOVABLE | frozenset({
    "bag", "basket", "book", "box", "can", "cushion", "jar", "mug", "pillow", "plate", "pot", "towel", "toy",
    "glass", "phone", "tray", "shoe", "hat", "bucket", "plant", "flower", "flowerpot", "ball", "paper",
})  # fmt: skip

#: Longest class a label or name gives (ids are `<class>_<index>`, under the model's id limit): Hydra variants
#: such as Clio name objects by whole phrases.
MAX_CLASS = 64

_NON_WORD = re.compile(r"[^a-z0-9]+")
_SYMBOL_NAME = re.compile(r"^[A-Za-z]\(?\d+\)?$")


def spark() -> Any:
    """The spark_dsg module, or one GraphError line saying how to install it."""
    try:
        return importlib.import_module("spark_dsg")
    except ImportError:
        raise GraphError(INSTALL_HINT) from None


def looks_like(data: Any) -> bool:
    """A parsed JSON document spark_dsg wrote (its header, or the layer fields of older files)."""
    if not isinstance(data, Mapping):
        return False
    return "SPARK_DSG_header" in data or ({"nodes", "edges", "directed"} <= set(data) and "layer_ids" in data)


def load_dsg(path: str | Path) -> Any:
    """A DynamicSceneGraph from a file, refused in one line if it is not a regular file, too big or malformed."""
    return _load(Path(path))[0]


def _load(path: Path) -> tuple[Any, Any]:
    """The DynamicSceneGraph of a file, and its parsed JSON document (None for a binary file)."""
    document = None
    if path.suffix not in SUFFIXES:
        raise GraphError(f"{path}: a Hydra graph file ends in {', '.join(SUFFIXES)} (spark_dsg picks its reader so)")
    try:
        data = files.read_bytes(path, MAX_FILE_BYTES, "Hydra graph file")
    except files.FileReadError as exc:
        raise GraphError(str(exc)) from exc
    if path.suffix in (".json", ".bson"):  # checked here first (spark_dsg writes .bson as JSON text too)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GraphError(f"{path}: not UTF-8 JSON ({exc.reason} at byte {exc.start})") from None
        document = parse_json(text, str(path))
        if not looks_like(document):
            raise GraphError(f"{path}: not {EXPECTED} (no SPARK_DSG_header and no layers){_unknown_text(document)}")
    dsg = spark()
    if path.suffix == ".sparkdsg":
        _survives_reading(path)
    try:
        return dsg.DynamicSceneGraph.load(str(path)), document
    except MemoryError:
        raise GraphError(f"{path}: not {EXPECTED} (a size in it is too large)") from None
    except Exception as exc:  # the C++ readers raise ValueError/RuntimeError with the reason
        raise GraphError(f"{path}: not {EXPECTED} ({_reason(exc)}){_unknown_text(document)}") from None


@functools.cache
def _reference_keys() -> dict[str, frozenset[str]]:
    """Every key spark_dsg writes, by where it is (list items as `[]`): a graph with a node of each kind, edges
    and a mesh-less save. What a file that spark_dsg cannot read has beyond these is named in the refusal."""
    import numpy as np

    dsg = spark()
    g = dsg.DynamicSceneGraph()
    kinds = [(5, "B", dsg.SemanticNodeAttributes), (4, "R", dsg.RoomNodeAttributes)]
    kinds += [(3, "p", dsg.PlaceNodeAttributes), (2, "O", dsg.ObjectNodeAttributes)]
    for layer, category, kind in kinds:
        attrs = kind()
        attrs.position = np.zeros(3)
        g.add_node(layer, dsg.NodeSymbol(category, 0), attrs)
    agent = dsg.AgentNodeAttributes()
    agent.world_R_body = dsg.Quaternion(1.0, 0.0, 0.0, 0.0)
    g.add_node(2, dsg.NodeSymbol("a", 0), agent, "a")
    g.insert_edge(dsg.NodeSymbol("B", 0), dsg.NodeSymbol("R", 0))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "reference.json"
        g.save(str(out), include_mesh=False)
        written = json.loads(out.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}

    def walk(where: str, value: Any) -> None:
        if isinstance(value, Mapping):
            found.setdefault(where, set()).update(value)
            for key, item in value.items():
                if key != "metadata":
                    walk(at(where, key), item)
        elif isinstance(value, list):
            for item in value:
                walk(f"{where}[]", item)

    walk("", written)
    found[""] = found[""] | SKIPPED_JSON_KEYS
    return {where: frozenset(keys) for where, keys in found.items()}


def _unknown_text(document: Any) -> str:
    """'; key(s) not read: ...' naming what of a file spark_dsg refused is none of the keys it writes."""
    if not isinstance(document, Mapping):
        return ""
    try:
        known = _reference_keys()
    except GraphError:  # no spark_dsg: the error says how to install it
        return ""
    lines: list[str] = []

    def walk(where: str, shape: str, value: Any) -> None:
        if isinstance(value, Mapping) and shape in known:
            refusals, unread = account_keys(where, value, known[shape])
            lines.extend([line.split(";")[0] for line in refusals] + unread)
            for key, item in value.items():
                if key != "metadata":
                    walk(at(where, key), at(shape, key), item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(f"{where}[{index}]", f"{shape}[]", item)

    walk("", "", document)
    return f"; key(s) not read: {named_keys(lines)}" if lines else ""


def _survives_reading(path: Path) -> None:
    """Read a binary file once in a child process first: metadata nested deeply enough makes spark_dsg's C++ JSON
    reader overflow its stack (a segfault, not an exception), which would end this process without a word."""
    probe = (
        "import sys, spark_dsg\ntry:\n    spark_dsg.DynamicSceneGraph.load(sys.argv[1])\nexcept Exception:\n    pass\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe, str(path)], capture_output=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise GraphError(f"{path}: spark_dsg did not finish reading it in {PROBE_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise GraphError(f"{path}: cannot start a process to read it ({exc.strerror or exc})") from None
    if done.returncode != 0:
        why = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        raise GraphError(f"{path}: not {EXPECTED} (spark_dsg's reader crashed on it: {why})")


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return re.sub(r"^\[[^\]]*\]\s*", "", text)[:300]  # drop the C++ source location


def import_hydra(path: str | Path, options: ImportOptions | None = None, name: str = "") -> Imported:
    path = Path(path)
    graph, document = _load(path)
    return import_dsg(graph, str(path), options, name or path.stem, document)


def import_hydra_graph(path: str | Path, options: ImportOptions | None = None) -> SceneGraph:
    return import_hydra(path, options).graph


def class_name(label: str) -> str:
    """A label as a class: `Dining Table` -> `dining_table`; cut to MAX_CLASS characters."""
    return _NON_WORD.sub("_", label.strip().lower()).strip("_")[:MAX_CLASS].rstrip("_")


def _layer(graph: Any, name: str, default: int) -> Any:
    key = graph.get_layer_key(name)
    return key if key is not None else spark().LayerKey(default)


def _meta(attrs: Any) -> dict[str, Any]:
    """Our exporter's metadata of a node, if any (a dict; anything else is ignored)."""
    try:
        found = attrs.metadata.get().get(META_KEY)
    except (ValueError, RuntimeError, AttributeError):
        return {}
    return dict(found) if isinstance(found, Mapping) else {}


def _vector(value: Any) -> list[float] | None:
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError):
        return None
    return out if len(out) == 3 else None


def _bbox(attrs: Any) -> dict[str, Any] | None:
    box = getattr(attrs, "bounding_box", None)
    if box is None or box.type.name == "INVALID":
        return None
    out: dict[str, Any] = {
        "type": box.type.name,
        "center": [float(v) for v in box.world_P_center],
        "size": [float(v) for v in box.dimensions],
    }
    if box.type.name != "AABB":
        out["rotation"] = [[float(v) for v in row] for row in box.world_R_center]
    return out


class _Reader:
    """One pass over a DynamicSceneGraph, building native dicts through a Builder."""

    def __init__(self, graph: Any, b: Builder) -> None:
        self.g = graph
        self.b = b
        self.dsg = spark()
        self.ids: dict[int, str] = {}  # node value -> our id
        self.kind: dict[int, str] = {}  # node value -> building, room, place, object, agent
        self.id_map: dict[str, str] = {}
        self.labels = dict(b.options.labels)
        self.unknown_labels: set[int] = set()
        self.positions: dict[str, list[float]] = {}
        self.spaces: dict[tuple[int, int], dict[int, str]] = {}
        self.saved = self._graph_meta()
        #: Written by our exporter: its links are the whole connectivity, even when there are none.
        self.exported = bool(self.saved)

    def _meta(self, node: Any) -> dict[str, Any]:
        """Our exporter's metadata of a node, every key of it and beside it accounted for (named or refused)."""
        try:
            found = node.attributes.metadata.get()
        except (ValueError, RuntimeError, AttributeError):
            return {}
        where = f"nodes[{node.id}].attributes.metadata"
        if isinstance(found, Mapping):
            self.b.keys(where, found, {META_KEY})
        meta = _meta(node.attributes)
        self.b.keys(at(where, META_KEY), meta, NODE_META_KEYS)
        return meta

    # ------------------------------------------------------------------ ids and labels
    def _our_id(self, node: Any, cls: str, meta: Mapping[str, Any]) -> str:
        wanted = meta.get("id")
        taken = self.b.types  # every id given so far (floors included)
        if isinstance(wanted, str) and wanted.strip() and wanted not in taken:
            return wanted
        base = f"{cls}_{node.id.category_id}"
        our, k = base, 1
        while our in taken:
            k += 1
            our = f"{base}_{k}"
        return our

    def _class(self, node: Any, key: Any, fallback: str, which: str) -> str:
        attrs = node.attributes
        label = int(getattr(attrs, "semantic_label", -1))
        no_label = int(getattr(attrs, "NO_SEMANTIC_LABEL", -1))
        names = self.labels.get(which, {})
        if label in names:
            return class_name(names[label]) or fallback
        space = self._labelspace(key)
        if label in space:
            return class_name(space[label]) or fallback
        name = str(getattr(attrs, "name", "") or "")
        if name and not _SYMBOL_NAME.match(name):
            return class_name(name) or fallback
        if label != no_label and which == "objects":
            self.unknown_labels.add(label)
            return f"label{label}"
        return fallback

    def _labelspace(self, key: Any) -> dict[int, str]:
        index = (int(key.layer), int(key.partition))
        if index not in self.spaces:
            space = self.g.get_labelspace(index[0], index[1])
            self.spaces[index] = {int(k): str(v) for k, v in dict(space.labels_to_names).items()} if space else {}
        return self.spaces[index]

    def _name(self, attrs: Any, default: str, meta: Mapping[str, Any]) -> str:
        name = meta.get("name")
        if isinstance(name, str) and name:
            return name
        raw = str(getattr(attrs, "name", "") or "")
        return raw if raw and not _SYMBOL_NAME.match(raw) else default

    def _add(
        self, node: Any, kind: str, node_type: str, cls: str, name_default: str | None = None, **fields: Any
    ) -> dict[str, Any] | None:
        meta = self._meta(node)
        our = self._our_id(node, cls, meta)
        self.ids[int(node.id.value)] = our
        self.kind[int(node.id.value)] = kind
        self.id_map[str(node.id)] = our
        position = _vector(node.attributes.position)
        if position is not None and all(math.isfinite(v) for v in position):  # the Builder drops a NaN one
            self.positions[our] = position
        if meta.get("no_position") is True:
            position = None
        attributes = dict(fields.pop("attributes", {}) or {})
        attributes = {k: v for k, v in attributes.items() if v is not None}
        saved = meta.get("attributes")
        if isinstance(saved, Mapping):
            attributes.update(saved)
        item = self.b.node(
            our,
            str(meta.get("type") or node_type),
            name=self._name(node.attributes, cls.replace("_", " ") if name_default is None else name_default, meta),
            position=position,
            attributes=attributes,
            states=self.b.str_list(our, "states", meta.get("states")),
            affordances=self.b.str_list(our, "affordances", meta.get("affordances")),
            **fields,
        )
        return item

    # ------------------------------------------------------------------ layers
    def read(self) -> None:
        g = self.g
        buildings, rooms = _layer(g, "BUILDINGS", 5), _layer(g, "ROOMS", 4)
        places, objects = _layer(g, "PLACES", 3), _layer(g, "OBJECTS", 2)
        used = {(int(k.layer), int(k.partition)) for k in (buildings, rooms, places, objects)}
        agent_keys = [k for k in g.layer_keys if int(k.layer) == int(objects.layer) and int(k.partition) != 0]
        used |= {(int(k.layer), int(k.partition)) for k in agent_keys}
        dropped = []
        for key in g.layer_keys:
            if (int(key.layer), int(key.partition)) not in used:
                count = g.get_layer(int(key.layer), int(key.partition)).num_nodes()
                if count:
                    dropped.append(f"{key} ({count} nodes)")
                    self.b.drop("nodes of other layers", count)
        within = g.get_layer(objects.layer, objects.partition).num_edges()
        if within:  # objects stand in rooms and on each other only through our metadata: an edge says neither
            self.b.drop("edges between objects", within)
            self.b.notes.append(f"{within} edge(s) between objects dropped (objects do not link to each other here)")
        if dropped:
            self.b.notes.append(f"layer(s) with no counterpart here dropped: {', '.join(dropped)}")
        floors = self._floors()
        for node in sorted(g.get_layer(buildings.layer, buildings.partition).nodes, key=_order):
            self._add(node, "building", "building", "building", attributes={"bounding_box": _bbox(node.attributes)})
        for node in sorted(g.get_layer(rooms.layer, rooms.partition).nodes, key=_order):
            cls = self._class(node, rooms, "room", "rooms")
            self._add(node, "room", "room", cls, attributes={"bounding_box": _bbox(node.attributes)})
        for node in sorted(g.get_layer(places.layer, places.partition).nodes, key=_order):
            self._add(node, "place", "pose", "place", name_default="")
        for node in sorted(g.get_layer(objects.layer, objects.partition).nodes, key=_order):
            cls = self._class(node, objects, "object", "objects")
            node_type = "object" if cls in MOVABLE_CLASSES else "asset"
            item = self._add(node, "object", node_type, cls, attributes={"bounding_box": _bbox(node.attributes)})
            if item is not None and item["type"] == "object" and not _meta(node.attributes):
                give_pickup(item)
        if self.unknown_labels:
            shown = ", ".join(str(v) for v in sorted(self.unknown_labels)[:10])
            self.b.notes.append(
                f"object label(s) {shown} are in no labelspace: named label<N>; a --types file's labels: "
                "{N: class} names them"
            )
        self._agent(agent_keys)
        self._hierarchy(floors)
        self._links(rooms, places)

    def _graph_meta(self) -> dict[str, Any]:
        try:
            metadata = self.g.metadata.get()
        except (ValueError, RuntimeError, AttributeError):
            return {}
        if not isinstance(metadata, Mapping):
            return {}
        self.b.keys("metadata", metadata, GRAPH_METADATA_KEYS)
        saved = metadata.get(META_KEY)
        if not isinstance(saved, Mapping):
            return {}
        self.b.keys(at("metadata", META_KEY), saved, GRAPH_META_KEYS)
        return dict(saved)

    def _floors(self) -> dict[str, dict[str, Any]]:
        """Floor nodes our exporter kept in the graph metadata (Hydra has no floor layer)."""
        out: dict[str, dict[str, Any]] = {}
        raw = self.saved.get("floors")
        for index, item in enumerate(raw if isinstance(raw, list) else []):
            where = f"metadata.{META_KEY}.floors[{index}]"
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                self.b.problem(f"{where}: a floor needs a string 'id', got {item!r:.60}")
                continue
            self.b.keys(where, item, FLOOR_KEYS)
            fields = {k: item.get(k) for k in ("name", "position", "attributes")}
            fields |= {k: self.b.str_list(item["id"], k, item.get(k)) for k in ("states", "affordances")}
            if self.b.node(item["id"], "floor", **fields) is not None:
                out[item["id"]] = dict(item)
        return out

    def _agent(self, keys: list[Any]) -> None:
        """One agent: the latest pose of the first robot's partition; the rest of the trajectory is dropped."""
        nodes = [
            n
            for k in sorted(keys, key=lambda k: int(k.partition))
            for n in self.g.get_layer(k.layer, k.partition).nodes
        ]
        if not nodes:
            return
        first = int(sorted(keys, key=lambda k: int(k.partition))[0].partition)
        own = [n for n in nodes if int(n.layer.partition) == first]
        latest = max(own, key=lambda n: (int(n.attributes.timestamp.total_seconds() * 1e9), int(n.id.category_id)))
        meta = self._meta(latest)
        our = meta.get("id") if isinstance(meta.get("id"), str) else "agent"
        position = _vector(latest.attributes.position)
        self.ids[int(latest.id.value)] = str(our)
        if meta.get("no_position") is True:
            position = None
        self.kind[int(latest.id.value)] = "agent"
        self.id_map[str(latest.id)] = str(our)
        attributes = dict(meta.get("attributes") or {}) if isinstance(meta.get("attributes"), Mapping) else {}
        location = attributes.get("location")
        if not isinstance(location, str):
            location = self._agent_location(latest, position)
            if location:
                attributes["location"] = location
        self.b.node(str(our), "agent", name=str(meta.get("name") or ""), attributes=attributes, position=position)
        if len(nodes) > 1:
            for node in nodes:  # a dropped pose's metadata keys are named like the kept one's
                if node is not latest:
                    self._meta(node)
            self.b.drop("agent poses", len(nodes) - 1)
            self.b.notes.append(
                f"agent layer: kept the latest pose {latest.id} as the agent; {len(nodes) - 1} other agent pose(s) "
                "dropped (a trajectory has no counterpart here)"
            )

    def _agent_location(self, node: Any, position: list[float] | None) -> str | None:
        for parent in _parents(node):
            if self.kind.get(parent) in ("place", "room"):
                return self.ids[parent]
        candidates = [
            self.ids[v] for v, k in self.kind.items() if k in ("place", "room") and self.ids[v] in self.positions
        ]
        if position is None or not all(math.isfinite(v) for v in position) or not candidates:
            return None
        nearest = min(candidates, key=lambda c: math.dist(self.positions[c], position))
        self.b.notes.append(f"the agent has no place in the data: put at the nearest place or room, '{nearest}'")
        return nearest

    def _room_of(self, value: int, seen: set[int] | None = None) -> int | None:
        """The room above a node through places (a place's room), or None."""
        seen = seen or set()
        if value in seen:
            return None
        seen.add(value)
        if self.kind.get(value) == "room":
            return value
        node = self.g.get_node(self.dsg.NodeSymbol(value))
        for parent in _parents(node):
            if self.kind.get(parent) in ("room", "place"):
                found = self._room_of(parent, seen)
                if found is not None:
                    return found
        return None

    def _hierarchy(self, floors: Mapping[str, Mapping[str, Any]]) -> None:
        for floor_id, item in floors.items():
            if isinstance(item.get("parent"), str):
                self.b.child(floor_id, "in", item["parent"])
        unplaced: list[str] = []
        for value, kind in self.kind.items():
            our = self.ids[value]
            if kind == "agent":
                continue
            meta = _meta(self.g.get_node(self.dsg.NodeSymbol(value)).attributes)
            parent, relation = meta.get("parent"), meta.get("relation")
            if isinstance(parent, str) and isinstance(relation, str):
                self.b.child(our, relation, parent)
                continue
            node = self.g.get_node(self.dsg.NodeSymbol(value))
            parents = [p for p in _parents(node) if p in self.kind]
            if kind == "room" or kind == "place":
                wanted = ("building",) if kind == "room" else ("room", "building")
                found = [p for p in parents if self.kind[p] in wanted]
                found.sort(key=lambda p: wanted.index(self.kind[p]))
                if found:
                    self.b.child(our, "in", self.ids[found[0]])
            elif kind == "object":
                room = self._room_of(value)
                if room is None:
                    room = self._nearest_room(our)
                    if room is not None:
                        unplaced.append(our)
                if room is not None:
                    self.b.child(our, "in", self.ids[room])
        if unplaced:
            shown = ", ".join(unplaced[:10]) + (f" and {len(unplaced) - 10} more" if len(unplaced) > 10 else "")
            self.b.notes.append(f"{len(unplaced)} object(s) with no room in the data put in the nearest room: {shown}")

    def _nearest_room(self, our: str) -> int | None:
        if our not in self.positions:
            return None
        rooms = [v for v, k in self.kind.items() if k == "room" and self.ids[v] in self.positions]
        if not rooms:
            return None
        return min(rooms, key=lambda v: math.dist(self.positions[self.ids[v]], self.positions[our]))

    def _links(self, rooms: Any, places: Any) -> None:
        links: dict[tuple[str, str], float | None] = {}

        def add(a: str, b: str, weight: float | None) -> None:
            if a != b:
                links.setdefault((min(a, b), max(a, b)), weight)

        for key in (rooms, places):
            for edge in self.g.get_layer(key.layer, key.partition).edges:
                a, b = self.ids.get(int(edge.source)), self.ids.get(int(edge.target))
                if a and b:
                    weighted = bool(edge.info.weighted) and math.isfinite(edge.info.weight) and edge.info.weight >= 0
                    add(a, b, float(edge.info.weight) if weighted else None)
        data_links = len(links)
        place_room: dict[str, str] = {}
        for value, kind in self.kind.items():
            if kind == "place":
                room = self._room_of(value)
                if room is not None:
                    place_room[self.ids[value]] = self.ids[room]
                    add(self.ids[value], self.ids[room], None)
        derived = 0
        for a, b in list(links):
            ra, rb = place_room.get(a), place_room.get(b)
            if ra and rb and ra != rb and (min(ra, rb), max(ra, rb)) not in links:
                add(ra, rb, None)
                derived += 1
        saved = self._saved_link_changes()
        for a, b, weight in saved[0]:
            links[(min(a, b), max(a, b))] = weight
        for a, b in saved[1]:
            links.pop((min(a, b), max(a, b)), None)
        if not data_links and not self.exported:
            self.b.has_connectivity = False
            return
        for (a, b), weight in sorted(links.items()):
            self.b.link(a, b, weight)
        if derived:
            self.b.notes.append(f"{derived} room link(s) from places of two rooms that touch")
        rooms = sorted(self.ids[v] for v, k in self.kind.items() if k == "room")
        apart = _apart(rooms, links)
        if apart:
            shown = ", ".join(apart[:10]) + (f" and {len(apart) - 10} more" if len(apart) > 10 else "")
            self.b.notes.append(
                f"{len(apart)} room(s) the data does not join to the others (unreachable, no link invented): {shown}"
            )

    def _saved_link_changes(self) -> tuple[list[tuple[str, str, float | None]], list[tuple[str, str]]]:
        """Links our exporter recorded that the layers cannot carry (added) or that would be derived wrongly."""
        saved = self.saved
        added: list[tuple[str, str, float | None]] = []
        for item in saved.get("links_added") or []:
            if isinstance(item, list) and len(item) == 3 and all(isinstance(e, str) for e in item[:2]):
                weight = item[2] if isinstance(item[2], (int, float)) and not isinstance(item[2], bool) else None
                added.append((item[0], item[1], None if weight is None else float(weight)))
        removed = [
            (item[0], item[1])
            for item in saved.get("links_removed") or []
            if isinstance(item, list) and len(item) == 2 and all(isinstance(e, str) for e in item)
        ]
        return added, removed


def _apart(rooms: list[str], links: Mapping[tuple[str, str], Any]) -> list[str]:
    """Rooms outside the part of the link graph that holds the most rooms."""
    part: dict[str, str] = {}

    def root(node: str) -> str:
        while part.get(node, node) != node:
            node = part[node]
        return node

    for a, b in links:
        ra, rb = root(a), root(b)
        if ra != rb:
            part[ra] = rb
    groups: dict[str, list[str]] = {}
    for room in rooms:
        groups.setdefault(root(room), []).append(room)
    if len(groups) < 2:
        return []
    main = max(groups.values(), key=lambda g: (len(g), [-ord(c) for c in g[0]]))
    return sorted(r for r in rooms if r not in main)


def _order(node: Any) -> tuple[str, int]:
    return (str(node.id.category), int(node.id.category_id))


def _parents(node: Any) -> list[int]:
    return sorted(int(p) for p in node.parents())


def _account_document(b: Builder, graph: Any, document: Mapping[str, Any]) -> None:
    """Every key of a spark_dsg JSON file that spark_dsg does not read is named or refused, and every node or edge
    it refuses (a duplicate, an edge to no node) counted: what it read is what it writes back, so the file is
    compared, part by part, with the graph it read saved again. Metadata is accounted for where it is read."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "read.json"
        graph.save(str(out), include_mesh=False)
        written = json.loads(out.read_text(encoding="utf-8"))
    header, ours = document.get("SPARK_DSG_header"), written.get("SPARK_DSG_header")
    version = header.get("version") if isinstance(header, Mapping) else None
    if version != ours.get("version"):  # another encoding: its keys are not this reader's
        b.notes.append(
            f"keys not checked: the file is in spark_dsg's encoding {version}, this reader's is {ours['version']}"
        )
        return
    b.keys("", document, set(written) | SKIPPED_JSON_KEYS)
    for key, value in document.items():
        if key in written and key not in ("nodes", "edges", "metadata"):
            _compare(b, key, value, written[key])
    dsg = spark()
    found: dict[str, dict[Any, Any]] = {
        "nodes": {n["id"]: n for n in written["nodes"]},
        "edges": {frozenset((e["source"], e["target"])): e for e in written["edges"]},
    }
    refused: dict[str, list[str]] = {"nodes": [], "edges": []}
    for part, back in found.items():
        given = document.get(part)
        seen: set[Any] = set()
        for index, item in enumerate(given if isinstance(given, list) else []):
            if not isinstance(item, Mapping):
                refused[part].append(f"{part}[{index}]")
                continue
            ends = (item.get("id"),) if part == "nodes" else (item.get("source"), item.get("target"))
            ident: Any = ends[0] if part == "nodes" else frozenset(ends)
            named = "-".join(str(dsg.NodeSymbol(e)) if isinstance(e, int) and e >= 0 else repr(e) for e in ends)
            if ident in seen or ident not in back:
                refused[part].append(named)
                continue
            seen.add(ident)
            _compare(b, f"{part}[{named}]", item, back[ident])
            info = item.get("info")
            if part == "edges" and isinstance(info, Mapping) and isinstance(info.get("metadata"), Mapping):
                b.keys(f"edges[{named}].info.metadata", info["metadata"], ())  # no edge metadata is read
    for part, names in refused.items():
        if names:
            b.drop(f"{part} spark_dsg refused", len(names))
            shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            b.notes.append(
                f"{len(names)} of the file's {part} not read by spark_dsg (a duplicate, or a missing end): {shown}"
            )


def _compare(b: Builder, where: str, given: Any, written: Any) -> None:
    """The keys of `given` that `written` (what spark_dsg wrote back) lacks, part by part; metadata is skipped."""
    if isinstance(given, Mapping) and isinstance(written, Mapping):
        b.keys(where, given, set(written))
        for key, value in given.items():
            if key in written and key != "metadata":
                _compare(b, at(where, key), value, written[key])
    elif isinstance(given, list) and isinstance(written, list) and len(given) == len(written):
        for index, (item, back) in enumerate(zip(given, written, strict=True)):
            _compare(b, f"{where}[{index}]", item, back)


def import_dsg(
    graph: Any, source: str, options: ImportOptions | None = None, name: str = "", document: Any = None
) -> Imported:
    """A DynamicSceneGraph (loaded or built with the spark_dsg API) as a native graph; `id_map` names every node.
    `document`: the parsed JSON file it was read from, whose every key is then accounted for."""
    if graph.num_nodes() > limits.MAX_GRAPH_NODES:
        raise GraphError(f"{source}: {graph.num_nodes()} nodes is over the {limits.MAX_GRAPH_NODES} node limit")
    b = Builder(name, source, options)
    if isinstance(document, Mapping):
        _account_document(b, graph, document)
    reader = _Reader(graph, b)
    b.name = str(reader.saved["name"]) if isinstance(reader.saved.get("name"), str) else name
    reader.read()
    imported = b.build(EXPECTED)
    imported.format = "hydra"
    imported.id_map = reader.id_map
    return imported


def dumps_id_map(id_map: Mapping[str, str]) -> str:
    return json.dumps(dict(id_map), indent=1, sort_keys=True) + "\n"
