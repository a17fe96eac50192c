"""Native graphs out to Hydra / Spark-DSG files (.json or binary .sparkdsg), readable by spark_dsg and Hydra's tools.

Buildings, rooms, poses (as places), assets, objects and workspaces (as objects, labelled through a labelspace of
their classes) and the agent (layer 2, partition 'a') become spark_dsg nodes with their positions and bounding
boxes; hierarchy becomes interlayer edges (building -> room -> place, room -> object, place or room -> agent) and
navigation links room-room and place-place edges. What Hydra has no field for (node types, states, affordances,
attributes, a support such as `ontop_of` an asset, floors, links a layer cannot hold) is kept in node and graph
metadata under `sayplan`, so `import_hydra` gives back the same graph.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sayplan_core.graph.importers.common import class_of
from sayplan_core.graph.importers.hydra import META_KEY, class_name, import_dsg, spark
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.native_format import node_to_dict

#: What each of our types becomes: (layer, partition, symbol category).
LAYERS: dict[str, tuple[int, str, str]] = {
    "building": (5, "", "B"),
    "room": (4, "", "R"),
    "pose": (3, "", "p"),
    "workspace": (2, "", "O"),
    "asset": (2, "", "O"),
    "object": (2, "", "O"),
    "agent": (2, "a", "a"),
}
#: Parents the importer finds again from the layers (anything else is kept in metadata).
_DERIVED_PARENTS = {"room": ("building",), "pose": ("room", "building"), "asset": ("room",), "object": ("room",)}
_INDEX = re.compile(r"(\d+)$")


def _symbols(graph: SceneGraph) -> dict[str, tuple[str, int]]:
    """A symbol per node: its id's trailing number where that is free in its category (so ids survive a round
    trip without metadata), the next free number otherwise."""
    taken: dict[str, set[int]] = {}
    out: dict[str, tuple[str, int]] = {}
    later: list[Node] = []
    for node in sorted(graph.nodes.values(), key=lambda n: n.id):
        if node.type not in LAYERS:
            continue
        category = LAYERS[node.type][2]
        match = _INDEX.search(node.id)
        index = int(match.group(1)) if match and len(match.group(1)) < 15 else None
        if index is None or index in taken.setdefault(category, set()):
            later.append(node)
            continue
        taken[category].add(index)
        out[node.id] = (category, index)
    free = {category: max(used, default=-1) + 1 for category, used in taken.items()}
    for node in later:
        category = LAYERS[node.type][2]
        index = free.get(category, 0)
        out[node.id] = (category, index)
        free[category] = index + 1
    return out


def _labelspace(graph: SceneGraph, types: tuple[str, ...]) -> dict[str, int]:
    classes = sorted({class_name(class_of(n.id)) or "object" for n in graph.iter_nodes(*types)})
    return {cls: label for label, cls in enumerate(classes)}


def _position(node: Node, graph: SceneGraph) -> tuple[float, float, float] | None:
    if node.position is not None:
        return node.position
    if node.type == "agent":
        location = graph.agent_location()
        return graph.nodes[location].position if location else None
    return None


def _bounding_box(dsg: Any, raw: Any) -> Any:
    import numpy as np

    if not isinstance(raw, dict):
        return None
    try:
        size = np.array([float(v) for v in raw["size"]], dtype=np.float32)
        center = np.array([float(v) for v in raw["center"]], dtype=np.float32)
        kind = getattr(dsg.BoundingBoxType, str(raw.get("type", "AABB")))
        rotation = np.array(raw.get("rotation") or np.eye(3), dtype=np.float32)
        if size.shape != (3,) or center.shape != (3,) or rotation.shape != (3, 3):
            return None
        return dsg.BoundingBox(kind, size, center, rotation)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _attributes(dsg: Any, node: Node, graph: SceneGraph, labels: dict[str, dict[str, int]]) -> Any:
    import numpy as np

    kind = {
        "building": dsg.SemanticNodeAttributes,
        "room": dsg.RoomNodeAttributes,
        "pose": dsg.PlaceNodeAttributes,
        "agent": dsg.AgentNodeAttributes,
    }.get(node.type, dsg.ObjectNodeAttributes)
    attrs = kind()
    position = _position(node, graph)
    attrs.position = np.array(position if position is not None else (0.0, 0.0, 0.0), dtype=np.float64)
    meta: dict[str, Any] = {"id": node.id, "type": node.type, "name": node.name}
    if node.position is None:
        meta["no_position"] = True
    if node.type == "agent":
        attrs.world_R_body = dsg.Quaternion(1.0, 0.0, 0.0, 0.0)  # the binding leaves it unset
    else:
        attrs.name = node.name
        table = labels.get("rooms" if node.type == "room" else "objects", {})
        label = table.get(class_name(class_of(node.id)) or "object")
        if label is not None:
            attrs.semantic_label = label
        box = _bounding_box(dsg, node.attributes.get("bounding_box"))
        if box is not None:
            attrs.bounding_box = box
    for field in ("states", "affordances"):
        if getattr(node, field):
            meta[field] = list(getattr(node, field))
    kept = {k: v for k, v in node.attributes.items() if k != "bounding_box" or _bounding_box(dsg, v) is None}
    if kept:
        meta["attributes"] = kept
    parent = graph.parent(node.id)
    if parent is not None and graph.nodes[parent].type not in _DERIVED_PARENTS.get(node.type, ()):
        meta["parent"], meta["relation"] = parent, graph.relation(node.id)
    attrs.metadata.set({META_KEY: meta})
    return attrs


def build_dsg(graph: SceneGraph) -> tuple[Any, dict[str, str]]:
    """The spark_dsg graph of a native one, and our id -> spark symbol (`cup_12` -> `O(12)`)."""
    dsg = spark()
    out = dsg.DynamicSceneGraph()
    symbols = _symbols(graph)
    labels = {
        "objects": _labelspace(graph, ("asset", "object", "workspace")),
        "rooms": _labelspace(graph, ("room",)),
    }
    values: dict[str, Any] = {}
    for node in graph.iter_nodes():
        if node.id not in symbols:
            continue
        layer, partition, _ = LAYERS[node.type]
        category, index = symbols[node.id]
        symbol = dsg.NodeSymbol(category, index)
        attrs = _attributes(dsg, node, graph, labels)
        added = out.add_node(layer, symbol, attrs, partition) if partition else out.add_node(layer, symbol, attrs)
        if not added:
            raise GraphError(f"spark_dsg refused node '{node.id}' ({symbol})", node.id)
        values[node.id] = symbol
    for which, layer in (("objects", 2), ("rooms", 4)):
        if labels[which]:
            out.set_labelspace(dsg.Labelspace({v: k for k, v in labels[which].items()}), layer, 0)
    for node_id, symbol in values.items():
        parent = _spark_parent(graph, node_id)
        if parent is not None and parent in values:
            out.insert_edge(values[parent], symbol)
    for a, b, data in graph.nav.edges(data=True):
        same = graph.nodes[a].type == graph.nodes[b].type
        if same and a in values and b in values:
            info = dsg.EdgeAttributes()
            if "weight" in data:
                info.weight, info.weighted = float(data["weight"]), True
            out.insert_edge(values[a], values[b], info)
    floors = []
    for floor in graph.iter_nodes("floor"):
        item = node_to_dict(floor, exact=True)
        item["parent"] = graph.parent(floor.id)
        floors.append(item)
    out.metadata.add({META_KEY: {"name": graph.name, "floors": floors}})  # beside the labelspaces
    _record_links(out, graph)
    return out, {node_id: str(symbol) for node_id, symbol in values.items()}


def _spark_parent(graph: SceneGraph, node_id: str) -> str | None:
    """The interlayer parent Hydra expects: a room's building, a place's room, an object's room, the agent's place."""
    node = graph.nodes[node_id]
    if node.type == "agent":
        return graph.agent_location()
    if node.type in ("asset", "object", "workspace"):
        return graph.room_of(node_id)
    if node.type in ("room", "pose"):
        for ancestor in graph.ancestors(node_id):
            if graph.nodes[ancestor].type in ("room", "building") and not (
                node.type == "room" and graph.nodes[ancestor].type == "room"
            ):
                return ancestor
    return None


def _record_links(out: Any, graph: SceneGraph) -> None:
    """The navigation links import would get wrong (a room-place link across rooms, a place left unlinked from its
    room): import the graph as it stands and keep the difference in the metadata."""
    derived = import_dsg(out, "<export>").graph
    ours = {(min(a, b), max(a, b)): d.get("weight") for a, b, d in graph.nav.edges(data=True)}
    theirs = {(min(a, b), max(a, b)): d.get("weight") for a, b, d in derived.nav.edges(data=True)}
    added = [[a, b, w] for (a, b), w in sorted(ours.items()) if theirs.get((a, b), -1.0) != w]
    removed = [[a, b] for (a, b) in sorted(theirs) if (a, b) not in ours]
    out.metadata.add({META_KEY: {"links_added": added, "links_removed": removed}})


def export_hydra(graph: SceneGraph, path: str | Path) -> dict[str, str]:
    """Write a native graph as a Hydra file (.json or .sparkdsg); returns our id -> spark symbol."""
    path = Path(path)
    if path.suffix not in (".json", ".sparkdsg"):
        raise GraphError(f"{path}: a Hydra graph file ends in .json or .sparkdsg")
    if not path.parent.is_dir():
        raise GraphError(f"cannot write {path}: folder {path.parent} does not exist")
    out, symbols = build_dsg(graph)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")  # spark_dsg picks the encoding by the suffix
    try:
        out.save(str(tmp), include_mesh=False)
        os.replace(tmp, path)
    except (OSError, RuntimeError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise GraphError(f"cannot write {path}: {exc}") from None
    return symbols
