"""From fused objects to scene-graph structure: rooms, assets vs objects, support and containment.

Rooms come from configured floor regions, or else from the nearest room/pose node
of an existing graph. Labels decide asset (immovable) vs object. An object is
`inside_of` a container asset whose box holds its centre, `ontop_of` an asset
whose footprint it stands over at a height the asset spans (a table top, a shelf
plank), and otherwise just in its room. The mapper turns each frame's changes into
an incremental GraphUpdate with stable ids, so planning can run while the map grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
from sayplan_core.perception.fusion import Frame, MapObject, ObjectMap
from sayplan_core.perception.labels import DEFAULT_ASSETS, DEFAULT_CONTAINERS

Region = tuple[tuple[float, float], tuple[float, float]]


@dataclass
class StructureConfig:
    asset_labels: frozenset[str] = DEFAULT_ASSETS
    container_labels: frozenset[str] = DEFAULT_CONTAINERS
    room_regions: Mapping[str, Region] = field(default_factory=dict)
    support_tolerance: float = 0.06
    contain_margin: float = 0.03
    min_footprint_overlap: float = 0.5


@dataclass(frozen=True)
class Placement:
    id: str
    label: str
    kind: str  # asset | object
    room: str
    parent: str
    relation: str  # in | ontop_of | inside_of
    position: tuple[float, float, float]


def assign_room(center: np.ndarray, config: StructureConfig, graph: SceneGraph | None) -> str:
    for room, ((x0, y0), (x1, y1)) in config.room_regions.items():
        if x0 <= center[0] <= x1 and y0 <= center[1] <= y1:
            return room
    if graph is not None:
        best, best_d = "", float("inf")
        for node in graph.iter_nodes("room", "pose"):
            if node.position is None:
                continue
            room = node.id if node.type == "room" else (graph.room_of(node.id) or "")
            d = float(np.linalg.norm(np.asarray(node.position[:2]) - center[:2]))
            if room and d < best_d:
                best, best_d = room, d
        return best
    return ""


def infer_structure(
    objects: Iterable[MapObject],
    config: StructureConfig,
    graph: SceneGraph | None = None,
    kinds: Mapping[str, str] | None = None,
) -> list[Placement]:
    """Placements of the fused objects. `kinds` fixes the kind of ids that already have one (a graph node never
    changes type), whatever their most frequent label says now; an asset in no room supports nothing."""
    items = list(objects)
    kinds = kinds or {}
    boxes = {o.id: o.box for o in items}
    rooms = {o.id: assign_room(boxes[o.id].center, config, graph) for o in items}
    is_asset = {
        o.id: kinds.get(o.id, "asset" if o.label in config.asset_labels else "object") == "asset" for o in items
    }
    assets = [o for o in items if is_asset[o.id] and rooms[o.id]]
    out = []
    for obj in items:
        box = boxes[obj.id]
        position = tuple(float(v) for v in box.center)
        if is_asset[obj.id]:
            out.append(Placement(obj.id, obj.label, "asset", rooms[obj.id], rooms[obj.id], "in", position))  # type: ignore[arg-type]
            continue
        parent, relation = rooms[obj.id], "in"
        best_gap = float("inf")
        for asset in assets:
            abox = boxes[asset.id]
            if asset.label in config.container_labels and abox.contains(box.center, config.contain_margin):
                parent, relation = asset.id, "inside_of"
                break
            over = box.footprint_overlap(abox) >= config.min_footprint_overlap
            bottom = box.lo[2]
            spans = abox.lo[2] - config.support_tolerance <= bottom <= abox.hi[2] + config.support_tolerance
            if over and spans:
                gap = abs(abox.hi[2] - bottom)
                if gap < best_gap:
                    parent, relation, best_gap = asset.id, "ontop_of", gap
        out.append(Placement(obj.id, obj.label, "object", rooms[obj.id], parent, relation, position))  # type: ignore[arg-type]
    return out


class SceneGraphMapper:
    """Fuses frames and emits incremental updates for a scene graph that holds the rooms."""

    def __init__(self, object_map: ObjectMap | None = None, config: StructureConfig | None = None) -> None:
        self.map = object_map or ObjectMap()
        self.config = config or StructureConfig()
        # What the graph holds from this mapper, as far as it knows: its view of the graph may lag
        # behind its own updates, so this (not the view) decides what to remove.
        self.published: dict[str, Placement] = {}
        self._unsure: set[str] = set()  # may be in the graph, not in the map: removed once the view shows them
        self._kinds: dict[str, str] = {}  # the type each id was sent with (the server refuses a type change)

    def process(self, frame: Frame, graph: SceneGraph) -> GraphUpdate:
        self.map.integrate(frame)
        return self.update_for(graph)

    def finish(self, graph: SceneGraph) -> GraphUpdate:
        self.map.finalize()
        return self.update_for(graph)

    def update_for(self, graph: SceneGraph) -> GraphUpdate:
        """Upserts for new or moved nodes, removals for nodes the map dropped."""
        kinds = dict(self._kinds)
        kinds.update({i: graph.nodes[i].type for i in self.map.objects if i in graph})
        inferred = infer_structure(self.map.objects.values(), self.config, graph, kinds)
        placements = {p.id: p for p in inferred if p.room}  # one in no room leaves the graph until it is in one
        update = GraphUpdate(source="perception")
        for room, ((x0, y0), (x1, y1)) in self.config.room_regions.items():
            if room not in graph and not any(u.node.id == room for u in update.upsert):
                update.upsert.append(NodeUpsert(Node(room, "room", position=((x0 + x1) / 2, (y0 + y1) / 2, 0.0))))
        # assets first, so objects can be placed on them in the same update
        for p in sorted(placements.values(), key=lambda p: p.kind != "asset"):
            if self.published.get(p.id) == p:
                continue
            obj = self.map.objects[p.id]
            node = Node(
                p.id,
                p.kind,
                name=p.label,
                affordances=["pickup"] if p.kind == "object" else [],
                attributes={"detections": obj.detections, "labels": dict(obj.labels)},
                position=p.position,
            )
            update.upsert.append(NodeUpsert(node, p.parent, p.relation))
            self._kinds[p.id] = p.kind
        # removals: what was sent and left the map (whatever the view says: it may not show it yet), and what may
        # be there once the view shows it; never a node that holds something perception did not put there (a skill
        # put a mug on a perceived table): the server would refuse the whole update, frame after frame
        self._unsure -= placements.keys()
        candidates = [i for i in self.published if i not in placements]
        candidates += sorted(i for i in self._unsure - self.published.keys() if i in graph)
        removing = set(candidates)
        for node_id in candidates:
            foreign = node_id in graph and any(
                c not in placements and c not in removing for c in graph.children(node_id)
            )
            if foreign:
                self._unsure.add(node_id)
            else:
                self._unsure.discard(node_id)
                self._kinds.pop(node_id, None)
                update.remove.append(node_id)
        # objects left on a dropped asset were re-placed above, before the removal
        self.published = placements
        return update

    def not_applied(self, update: GraphUpdate) -> None:
        """`update` never reached the graph (refused or undelivered): the next update sends everything again.

        Updates apply atomically, so none of it is there; and what the mapper believed of the graph may be wrong
        (someone else removed a parent): every placement is upserted again (upserts are idempotent) and everything
        sent so far may be removed once the view shows it.
        """
        # rooms are not the map's: they are upserted again while the view lacks them
        sent = {u.node.id for u in update.upsert if u.node.type != "room"}
        self._unsure |= self.published.keys() | sent | set(update.remove)
        self.published = {}
