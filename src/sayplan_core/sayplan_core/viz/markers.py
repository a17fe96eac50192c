"""What the RViz view of a scene graph shows, as plain data (the ROS node turns it into MarkerArray).

Layers are stacked above the floor plan, as 3DSG viewers do: poses on the floor,
rooms above, assets and objects higher, each with a text label; a hierarchy line
joins a node to its parent and a navigation line each navigation edge; the active
plan's path is a line strip. Nodes without a position take their parent's.

Every marker belongs to one node (its shape, its label, the line to its parent) or one navigation edge, under an
id that stays the node's (or edge's) while it lives, never a list position. So `MarkerCache` can redraw after an
update only what the update touched (time proportional to that, not to the graph): RViz replaces a marker by its
(namespace, id) on ADD and drops it on DELETE, so those changes alone keep its view equal to a full redraw.
docs/concepts/graph_updates.md tells how the server publishes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate

Vec3 = tuple[float, float, float]
RGBA = tuple[float, float, float, float]

LAYER_HEIGHT: dict[str, float] = {
    "pose": 0.2, "room": 3.0, "workspace": 5.0, "asset": 6.0, "object": 8.0, "agent": 0.6,
}  # fmt: skip
LAYER_COLOR: dict[str, RGBA] = {
    "pose": (0.6, 0.6, 0.6, 0.8),
    "room": (0.2, 0.5, 0.9, 0.9),
    "workspace": (0.5, 0.3, 0.8, 0.9),
    "asset": (0.9, 0.6, 0.1, 0.9),
    "object": (0.2, 0.8, 0.3, 0.9),
    "agent": (0.9, 0.1, 0.1, 1.0),
}
LAYER_SIZE: dict[str, float] = {"pose": 0.3, "room": 0.8, "workspace": 0.5, "asset": 0.5, "object": 0.3, "agent": 0.7}
PLAN_COLOR: RGBA = (1.0, 0.1, 0.6, 1.0)
FLOOR_STEP = 12.0  # floors are drawn this far apart so their layers do not overlap


@dataclass
class MarkerSpec:
    ns: str
    id: int
    kind: str  # sphere | cube | text | line_list | line_strip
    position: Vec3 = (0.0, 0.0, 0.0)
    points: list[Vec3] = field(default_factory=list)
    scale: float = 0.3
    color: RGBA = (1.0, 1.0, 1.0, 1.0)
    text: str = ""
    owner: str = ""  # the node the marker draws (a navigation edge's: its lower id); "" for the plan's path


def floor_order(graph: SceneGraph) -> list[str]:
    """Floors from the lowest up, by the height of their rooms and poses (then by id)."""

    def height(floor: str) -> float:
        zs = [p[2] for c in graph.children(floor) if (p := graph.nodes[c].position) is not None]
        return min(zs) if zs else 0.0

    return sorted(graph.ids_of_type("floor"), key=lambda f: (height(f), f))


def node_anchor(graph: SceneGraph, node_id: str, order: list[str] | None = None) -> Vec3:
    """Where a node is drawn: its (or its nearest ancestor's) x, y at its layer's height."""
    floors = order if order is not None else floor_order(graph)
    return _anchor(graph, node_id, {f: i for i, f in enumerate(floors)})


def _anchor(graph: SceneGraph, node_id: str, floor_index: dict[str, int]) -> Vec3:
    return _place(graph, node_id, floor_index)[0]


def _place(graph: SceneGraph, node_id: str, floor_index: dict[str, int]) -> tuple[Vec3, tuple[object, ...]]:
    """A node's anchor, and what its children's anchors take from it: the x, y they inherit and the floor."""
    node = graph.nodes[node_id]
    source = node_id
    while graph.nodes[source].position is None:
        parent = graph.parent(source)
        if parent is None:
            break
        source = parent
    pos = graph.nodes[source].position or (0.0, 0.0, 0.0)
    floor = graph.enclosing(node_id, "floor")
    basis = (pos[0], pos[1], floor)
    if node.type == "agent":
        loc = graph.agent_location()
        if loc and loc in graph and graph.nodes[loc].position is not None:
            pos = graph.nodes[loc].position or pos
            source = loc
        floor = graph.enclosing(source, "floor")
    base = floor_index.get(floor, 0) * FLOOR_STEP if floor is not None else 0.0
    return (pos[0], pos[1], base + LAYER_HEIGHT.get(node.type, 0.0)), basis


def graph_markers(graph: SceneGraph, plan_nodes: Iterable[str] = ()) -> list[MarkerSpec]:
    """The full drawing of a graph, from scratch (ids numbered in node id order)."""
    return MarkerCache().redraw(graph, plan_nodes).upsert


#: Marker namespaces by what owns them: a node's shape (by layer), its label, the line to its parent; an edge.
HIERARCHY_NS, NAVIGATION_NS, PLAN_NS = "hierarchy", "navigation", "plan"
#: Marker ids are int32; numbering starts again (with a full redraw) before it would overflow.
MAX_MARKER_ID = 2**31 - 1
Key = tuple[str, int]


@dataclass
class MarkerChanges:
    """What to send RViz: clear everything first (a full drawing), then ADD `upsert`, then DELETE `delete`."""

    clear: bool = False
    upsert: list[MarkerSpec] = field(default_factory=list)
    delete: list[Key] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.clear or bool(self.upsert) or bool(self.delete)


class MarkerCache:
    """The markers RViz holds, kept up to date one update at a time.

    It remembers every marker drawn, each node's anchor and parent, the navigation edges drawn and the floor
    order, so `update` recomputes only the nodes an update names, the children and edges of those whose anchor
    moved (and so on down), the agent and the plan; anything else is exactly as drawn. A change of floor order
    moves whole floors, so it is a full redraw. Not thread safe: the owner calls it under its graph lock.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}  # node id -> its marker id
        self._edge_ids: dict[tuple[str, str], int] = {}  # navigation edge (a < b) -> its marker id
        self._next_id = 0
        self._reset()

    def _reset(self) -> None:
        """Forget what is drawn (not the ids: a node keeps its id through a full redraw)."""
        self._specs: dict[Key, MarkerSpec] = {}
        self._anchors: dict[str, Vec3] = {}
        self._bases: dict[str, tuple[object, ...]] = {}
        self._parents: dict[str, str | None] = {}
        self._edges: dict[str, set[str]] = {}  # navigation edges drawn, both ways
        self._order: list[str] = []
        self._floor_index: dict[str, int] = {}
        self._plan: list[str] = []

    def __len__(self) -> int:
        return len(self._specs)

    def marker_id(self, node_id: str) -> int | None:
        """The id a node's markers have (in every namespace of the node), None if it is not drawn."""
        return self._ids.get(node_id)

    def anchor(self, node_id: str) -> Vec3 | None:
        """Where a node is drawn (every node of the graph has an anchor, drawn or not: floors, the building)."""
        return self._anchors.get(node_id)

    def current(self) -> MarkerChanges:
        """Everything drawn now, as a full drawing (for a viewer that joins late): O(markers), nothing recomputed."""
        return MarkerChanges(True, list(self._specs.values()))

    def redraw(self, graph: SceneGraph, plan_nodes: Iterable[str] = ()) -> MarkerChanges:
        """Draw the whole graph afresh; nodes and edges drawn before keep their ids, new ones follow in id order."""
        if self._next_id + len(graph) + graph.nav.number_of_edges() >= MAX_MARKER_ID:  # numbered again
            self._ids, self._edge_ids, self._next_id = {}, {}, 0
        self._ids = {n: i for n, i in self._ids.items() if n in graph}
        self._edge_ids = {e: i for e, i in self._edge_ids.items() if graph.nav.has_edge(*e)}
        self._reset()
        self._order = floor_order(graph)
        self._floor_index = {f: i for i, f in enumerate(self._order)}
        for node_id in sorted(graph.nodes):
            self._anchors[node_id], self._bases[node_id] = _place(graph, node_id, self._floor_index)
            self._parents[node_id] = graph.parent(node_id)
            if graph.nodes[node_id].type in LAYER_HEIGHT and node_id not in self._ids:
                self._ids[node_id] = self._new_id()
        changes = MarkerChanges(True)
        for node_id in self._ids:
            self._draw_node(graph, node_id, changes)
        for a, b in sorted(tuple(sorted(e)) for e in graph.nav.edges):
            self._draw_edge(graph, a, b, changes)
        self._plan = [n for n in plan_nodes if n in graph]
        self._draw_plan(changes)
        return changes

    def set_plan(self, graph: SceneGraph, plan_nodes: Iterable[str]) -> MarkerChanges:
        """The active plan's path changed: only its line is redrawn."""
        self._plan = [n for n in plan_nodes if n in graph]
        changes = MarkerChanges()
        self._draw_plan(changes)
        return changes

    def update(self, graph: SceneGraph, update: GraphUpdate, plan_nodes: Iterable[str] | None = None) -> MarkerChanges:
        """Redraw what `update` (already applied to `graph`) touched; a full redraw if floors changed order."""
        plan = self._plan if plan_nodes is None else list(plan_nodes)
        named = [item.node.id for item in update.upsert]
        if self._floors_may_move(graph, named, update.remove):
            order = floor_order(graph)
            if order != self._order:  # whole floors move up or down
                return self.redraw(graph, plan)
        if self._next_id + len(named) + len(update.connect) >= MAX_MARKER_ID:
            return self.redraw(graph, plan)
        changes = MarkerChanges()
        edges: set[tuple[str, str]] = set()
        for node_id in update.remove:
            self._forget(node_id, edges)
        for a, b in (*((c[0], c[1]) for c in update.connect), *update.disconnect):
            edges.add((a, b) if a < b else (b, a))
        # first every anchor that changes (children follow a node whose anchor or basis moved), then the drawing,
        # so a line never takes an anchor from before the update
        todo = [*named, *([graph.agent_id] if graph.agent_id is not None else [])]
        touched: dict[str, bool] = {}  # node -> whether its anchor moved
        while todo:
            node_id = todo.pop()
            if node_id in touched or node_id not in graph:
                continue
            anchor, basis = _place(graph, node_id, self._floor_index)
            moved = self._anchors.get(node_id) != anchor
            if moved or self._bases.get(node_id) != basis:
                todo.extend(graph.tree.succ[node_id])
            touched[node_id] = moved
            self._anchors[node_id], self._bases[node_id] = anchor, basis
            self._parents[node_id] = graph.parent(node_id)
        named_set = set(named)
        drawn = [n for n in touched if graph.nodes[n].type in LAYER_HEIGHT]
        for node_id in drawn:  # ids first: a new parent's line to its new child needs the parent's id
            if node_id not in self._ids:
                self._ids[node_id] = self._new_id()
        for node_id in drawn:
            self._draw_node(graph, node_id, changes)
        for node_id, moved in touched.items():
            if moved or node_id in named_set:
                for other in graph.nav.adj.get(node_id, ()):  # a removed edge is named by the update
                    edges.add((node_id, other) if node_id < other else (other, node_id))
        for node_id in update.remove:
            self._erase(node_id, changes)
        for a, b in sorted(edges):
            self._draw_edge(graph, a, b, changes)
        self._plan = [n for n in plan if n in graph]
        self._draw_plan(changes)
        return changes

    # ------------------------------------------------------------------ internals
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _floors_may_move(self, graph: SceneGraph, named: list[str], removed: list[str]) -> bool:
        """Whether the floor order may have changed: a floor or a floor's child was named."""
        for node_id in (*named, *removed):
            for node in (node_id, self._parents.get(node_id), graph.parent(node_id) if node_id in graph else None):
                if node is not None and (
                    node in self._floor_index or (node in graph and graph.nodes[node].type == "floor")
                ):
                    return True
        return False

    def _put(self, spec: MarkerSpec, changes: MarkerChanges) -> None:
        key = (spec.ns, spec.id)
        if changes.clear or self._specs.get(key) != spec:
            self._specs[key] = spec
            changes.upsert.append(spec)

    def _drop(self, key: Key, changes: MarkerChanges) -> None:
        if self._specs.pop(key, None) is not None:
            changes.delete.append(key)

    def _draw_node(self, graph: SceneGraph, node_id: str, changes: MarkerChanges) -> None:
        node, index, anchor = graph.nodes[node_id], self._ids[node_id], self._anchors[node_id]
        layer = f"{node.type}s"
        size = LAYER_SIZE[node.type]
        kind = "cube" if node.type in ("room", "asset") else "sphere"
        shape = MarkerSpec(layer, index, kind, anchor, scale=size, color=LAYER_COLOR[node.type], owner=node_id)
        self._put(shape, changes)
        label = (anchor[0], anchor[1], anchor[2] + size)
        self._put(
            MarkerSpec(f"{layer}_labels", index, "text", label, scale=0.35, text=node.name, owner=node_id), changes
        )
        parent = self._parents[node_id]
        if parent is not None and parent in self._ids:
            points = [self._anchors[parent], anchor]
            line = MarkerSpec(
                HIERARCHY_NS, index, "line_list", points=points, scale=0.03, color=(0.8, 0.8, 0.8, 0.5), owner=node_id
            )
            self._put(line, changes)
        else:
            self._drop((HIERARCHY_NS, index), changes)

    def _forget(self, node_id: str, edges: set[tuple[str, str]]) -> None:
        """A removed node: what is cached about it goes, and its edges are redrawn (so dropped)."""
        self._anchors.pop(node_id, None)
        self._bases.pop(node_id, None)
        self._parents.pop(node_id, None)
        for other in self._edges.get(node_id, ()):
            edges.add((node_id, other) if node_id < other else (other, node_id))

    def _erase(self, node_id: str, changes: MarkerChanges) -> None:
        """A removed node's own markers (its shape, label and line to its parent), by the id it had."""
        index = self._ids.pop(node_id, None)
        if index is None:
            return
        for ns in (f"{layer}s" for layer in LAYER_HEIGHT):
            self._drop((ns, index), changes)
            self._drop((f"{ns}_labels", index), changes)
        self._drop((HIERARCHY_NS, index), changes)

    def _draw_edge(self, graph: SceneGraph, a: str, b: str, changes: MarkerChanges) -> None:
        drawn = a in self._ids and b in self._ids and graph.nav.has_edge(a, b)
        if not drawn:
            index = self._edge_ids.pop((a, b), None)
            if index is not None:
                self._drop((NAVIGATION_NS, index), changes)
            self._edges.get(a, set()).discard(b)
            self._edges.get(b, set()).discard(a)
            return
        index = self._edge_ids.get((a, b))
        if index is None:
            index = self._edge_ids[(a, b)] = self._new_id()
        self._edges.setdefault(a, set()).add(b)
        self._edges.setdefault(b, set()).add(a)
        points = [self._anchors[a], self._anchors[b]]
        self._put(
            MarkerSpec(
                NAVIGATION_NS, index, "line_list", points=points, scale=0.06, color=(0.3, 0.3, 0.3, 0.8), owner=a
            ),
            changes,
        )

    def _draw_plan(self, changes: MarkerChanges) -> None:
        path = [self._anchors[n] for n in self._plan if n in self._ids]
        self._put(MarkerSpec(PLAN_NS, 0, "line_strip", points=path, scale=0.15, color=PLAN_COLOR), changes)


def layer_counts(specs: Iterable[MarkerSpec]) -> dict[str, int]:
    out: dict[str, int] = {}
    for spec in specs:
        if spec.kind in ("sphere", "cube"):
            out[spec.ns] = out.get(spec.ns, 0) + 1
    return out


def remaining_path(graph: SceneGraph, steps: Iterable[tuple[str, str]], current_step: int) -> list[str]:
    """The nodes the robot still has to pass: its location, then every goto target from the current step on.

    current_step < 0 means the plan is idle (nothing left to draw).
    """
    steps = list(steps)
    if current_step < 0:
        return []
    hops = [target for action, target in steps[current_step:] if action in ("goto", "go_to") and target in graph]
    location = graph.agent_location()
    return ([location] if location and hops else []) + hops
