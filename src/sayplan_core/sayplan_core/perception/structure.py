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

DEFAULT_ASSETS = frozenset({"table", "desk", "shelf", "cabinet", "counter", "fridge", "bed", "sofa", "wardrobe"})
DEFAULT_CONTAINERS = frozenset({"cabinet", "fridge", "wardrobe", "drawer"})

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
    objects: Iterable[MapObject], config: StructureConfig, graph: SceneGraph | None = None
) -> list[Placement]:
    items = list(objects)
    boxes = {o.id: o.box for o in items}
    rooms = {o.id: assign_room(boxes[o.id].center, config, graph) for o in items}
    assets = [o for o in items if o.label in config.asset_labels]
    out = []
    for obj in items:
        box = boxes[obj.id]
        position = tuple(float(v) for v in box.center)
        if obj.label in config.asset_labels:
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
        self._unsure: set[str] = set()  # removals that were not applied: sent again once the view shows them

    def process(self, frame: Frame, graph: SceneGraph) -> GraphUpdate:
        self.map.integrate(frame)
        return self.update_for(graph)

    def finish(self, graph: SceneGraph) -> GraphUpdate:
        self.map.finalize()
        return self.update_for(graph)

    def update_for(self, graph: SceneGraph) -> GraphUpdate:
        """Upserts for new or moved nodes, removals for nodes the map dropped."""
        placements = {p.id: p for p in infer_structure(self.map.objects.values(), self.config, graph)}
        update = GraphUpdate(source="perception")
        for room, ((x0, y0), (x1, y1)) in self.config.room_regions.items():
            if room not in graph and not any(u.node.id == room for u in update.upsert):
                update.upsert.append(NodeUpsert(Node(room, "room", position=((x0 + x1) / 2, (y0 + y1) / 2, 0.0))))
        # assets first, so objects can be placed on them in the same update
        for p in sorted(placements.values(), key=lambda p: p.kind != "asset"):
            if self.published.get(p.id) == p or not p.room:
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
        gone = [i for i in self.published if i not in placements]
        self._unsure -= placements.keys() | self.published.keys()
        retry = sorted(i for i in self._unsure if i in graph)
        self._unsure -= set(retry)  # the rest wait until the (possibly lagging) view shows them
        update.remove = gone + retry  # objects left on a dropped asset were re-placed above, before the removal
        self.published = {i: p for i, p in placements.items() if p.room}
        return update

    def not_applied(self, update: GraphUpdate) -> None:
        """`update` never reached the graph (refused or undelivered): the next update makes it good.

        Updates apply atomically, so none of its upserts is there (they are sent again); its removals
        are sent again once the graph shows them.
        """
        for upsert in update.upsert:
            self.published.pop(upsert.node.id, None)
        self._unsure.update(update.remove)
