"""The scene graph as Foxglove scene entities, as plain data (the Foxglove bridge turns them into SceneUpdate).

One entity per graph node, under the node's id: its shape (coloured by kind), its label, the line to its parent
and the navigation links it owns (an edge belongs to its lower node id). The layout and colours are the RViz
view's (`sayplan_core.viz.markers`): every entity is made of that node's markers, so the two views agree and the
work of finding what an update changed is done once, by `MarkerCache`. Floors and the building, which RViz does
not draw, are a cube and a label at their anchor.

`SceneEntities.update` returns only the entities an update changed, plus the ids it removed: a Foxglove viewer
replaces an entity by id and drops a deleted one (deletions first, then entities, within one SceneUpdate), so
those changes alone keep its scene equal to a conversion of the whole graph (test/core/test_scene_entities.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.viz.markers import (
    HIERARCHY_NS,
    NAVIGATION_NS,
    RGBA,
    Key,
    MarkerCache,
    MarkerChanges,
    MarkerSpec,
    Vec3,
)

#: Nodes RViz does not draw: a cube and a label at their anchor, this size and colour.
UNDRAWN_STYLE: dict[str, tuple[float, RGBA]] = {
    "floor": (1.0, (0.4, 0.4, 0.5, 0.6)),
    "building": (1.5, (0.3, 0.3, 0.35, 0.6)),
}
LABEL_COLOR: RGBA = (1.0, 1.0, 1.0, 1.0)
LABEL_SIZE = 0.35


@dataclass(frozen=True)
class Shape:
    kind: str  # cube | sphere
    position: Vec3
    size: float
    color: RGBA


@dataclass(frozen=True)
class Label:
    position: Vec3
    text: str
    size: float
    color: RGBA


@dataclass(frozen=True)
class Line:
    kind: str  # hierarchy | navigation
    points: tuple[Vec3, ...]
    thickness: float
    color: RGBA


@dataclass(frozen=True)
class Entity:
    """One node as Foxglove draws it; `metadata` is what the panel lists when the entity is picked."""

    id: str
    type: str
    shapes: tuple[Shape, ...]
    labels: tuple[Label, ...]
    lines: tuple[Line, ...]
    metadata: tuple[tuple[str, str], ...]


@dataclass
class SceneChanges:
    """What to send a viewer: clear everything first (a full scene), then delete `deletions`, then put `entities`."""

    clear: bool = False
    entities: list[Entity] = field(default_factory=list)
    deletions: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.clear or bool(self.entities) or bool(self.deletions)


def scene_entities(graph: SceneGraph) -> dict[str, Entity]:
    """The whole graph as entities, from scratch, by id."""
    return {entity.id: entity for entity in SceneEntities().redraw(graph).entities}


class SceneEntities:
    """The entities a viewer holds, kept up to date one update at a time (through a `MarkerCache`, see the
    module docstring). Not thread safe: the owner calls it under its graph lock."""

    def __init__(self) -> None:
        self._markers = MarkerCache()
        self._owner: dict[Key, str] = {}  # marker -> the node whose entity holds it
        self._owned: dict[str, dict[Key, MarkerSpec]] = {}  # node -> its markers
        self._entities: dict[str, Entity] = {}

    def __len__(self) -> int:
        return len(self._entities)

    def anchor(self, node_id: str) -> Vec3 | None:
        """Where a node is drawn (None for one not in the graph drawn)."""
        return self._markers.anchor(node_id)

    def current(self) -> SceneChanges:
        """Every entity now, as a full scene (for a viewer that joins late): nothing recomputed."""
        return SceneChanges(True, list(self._entities.values()))

    def redraw(self, graph: SceneGraph) -> SceneChanges:
        """The whole graph afresh (the first graph, or a full graph fetched after a gap)."""
        return self._take(graph, self._markers.redraw(graph), [])

    def update(self, graph: SceneGraph, update: GraphUpdate) -> SceneChanges:
        """The entities `update` (already applied to `graph`) changed; a full scene if the floors changed order."""
        named = [item.node.id for item in update.upsert]
        # floors and the building have no markers to tell when their anchor moves; there are few: look at each
        return self._take(graph, self._markers.update(graph, update), [*named, *graph.ids_of_type("building", "floor")])

    # ------------------------------------------------------------------ internals
    def _take(self, graph: SceneGraph, markers: MarkerChanges, named: list[str]) -> SceneChanges:
        out = SceneChanges(clear=markers.clear)
        if markers.clear:
            self._owner, self._owned, self._entities = {}, {}, {}
        touched = set(graph.nodes) if markers.clear else set(named)
        for spec in markers.upsert:
            if spec.owner:  # the plan's path is not a node's
                key = (spec.ns, spec.id)
                self._owner[key] = spec.owner
                self._owned.setdefault(spec.owner, {})[key] = spec
                touched.add(spec.owner)
        for key in markers.delete:
            owner = self._owner.pop(key, None)
            if owner is None:
                continue
            owned = self._owned.get(owner, {})
            owned.pop(key, None)
            if not owned:
                self._owned.pop(owner, None)
            touched.add(owner)
        for node_id in sorted(touched):
            if node_id not in graph:
                if self._entities.pop(node_id, None) is not None:
                    out.deletions.append(node_id)
                continue
            entity = self._entity(graph, node_id)
            if self._entities.get(node_id) != entity:
                self._entities[node_id] = entity
                out.entities.append(entity)
        return out

    def _entity(self, graph: SceneGraph, node_id: str) -> Entity:
        node = graph.nodes[node_id]
        shapes: list[Shape] = []
        labels: list[Label] = []
        lines: list[Line] = []
        owned = self._owned.get(node_id, {})
        for spec in owned.values():
            if spec.kind in ("cube", "sphere"):
                shapes.append(Shape(spec.kind, spec.position, spec.scale, spec.color))
            elif spec.kind == "text":
                labels.append(Label(spec.position, spec.text, spec.scale, LABEL_COLOR))
            elif spec.ns in (HIERARCHY_NS, NAVIGATION_NS):
                lines.append(Line(spec.ns, tuple(spec.points), spec.scale, spec.color))
        if not owned and node.type in UNDRAWN_STYLE:
            size, color = UNDRAWN_STYLE[node.type]
            x, y, z = self._markers.anchor(node_id) or (0.0, 0.0, 0.0)
            shapes.append(Shape("cube", (x, y, z), size, color))
            labels.append(Label((x, y, z + size), node.name, LABEL_SIZE, LABEL_COLOR))
        metadata = (
            ("id", node_id),
            ("type", node.type),
            ("name", node.name),
            ("parent", graph.parent(node_id) or ""),
            ("states", ", ".join(node.states)),
        )
        return Entity(
            node_id,
            node.type,
            tuple(sorted(shapes, key=repr)),
            tuple(sorted(labels, key=repr)),
            tuple(sorted(lines, key=repr)),
            metadata,
        )
