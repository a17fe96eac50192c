"""What the RViz view of a scene graph shows, as plain data (the ROS node turns it into MarkerArray).

Layers are stacked above the floor plan, as 3DSG viewers do: poses on the floor,
rooms above, assets and objects higher, each with a text label; hierarchy edges
join a node to its parent; the navigation layer and the active plan's path are
line lists. Nodes without a position take their parent's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sayplan_core.graph.model import SceneGraph

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


def floor_order(graph: SceneGraph) -> list[str]:
    """Floors from the lowest up, by the height of their rooms and poses (then by id)."""

    def height(floor: str) -> float:
        zs = [p[2] for c in graph.children(floor) if (p := graph.nodes[c].position) is not None]
        return min(zs) if zs else 0.0

    return sorted(graph.ids_of_type("floor"), key=lambda f: (height(f), f))


def _floor_index(graph: SceneGraph, node_id: str, order: list[str]) -> int:
    floor = graph.enclosing(node_id, "floor")
    return order.index(floor) if floor in order else 0


def node_anchor(graph: SceneGraph, node_id: str, order: list[str] | None = None) -> Vec3:
    """Where a node is drawn: its (or its nearest ancestor's) x, y at its layer's height."""
    node = graph.nodes[node_id]
    source = node_id
    while graph.nodes[source].position is None:
        parent = graph.parent(source)
        if parent is None:
            break
        source = parent
    pos = graph.nodes[source].position or (0.0, 0.0, 0.0)
    if node.type == "agent":
        loc = graph.agent_location()
        if loc and graph.nodes[loc].position is not None:
            pos = graph.nodes[loc].position or pos
            source = loc
    floors = order if order is not None else floor_order(graph)
    base = _floor_index(graph, source if node.type == "agent" else node_id, floors) * FLOOR_STEP
    return (pos[0], pos[1], base + LAYER_HEIGHT.get(node.type, 0.0))


def graph_markers(graph: SceneGraph, plan_nodes: Iterable[str] = ()) -> list[MarkerSpec]:
    specs: list[MarkerSpec] = []
    ids: dict[str, int] = {}
    anchors: dict[str, Vec3] = {}
    order = floor_order(graph)
    for node_id in sorted(graph.nodes):
        node = graph.nodes[node_id]
        if node.type not in LAYER_HEIGHT:
            continue
        anchor = anchors[node_id] = node_anchor(graph, node_id, order)
        index = ids[node_id] = len(ids)
        layer = f"{node.type}s"
        kind = "cube" if node.type in ("room", "asset") else "sphere"
        size = LAYER_SIZE[node.type]
        specs.append(MarkerSpec(layer, index, kind, anchor, scale=size, color=LAYER_COLOR[node.type]))
        label = (anchor[0], anchor[1], anchor[2] + size)
        specs.append(MarkerSpec(f"{layer}_labels", index, "text", label, scale=0.35, text=node.name))
    hierarchy: list[Vec3] = []
    for parent, child in graph.tree.edges:
        if parent in anchors and child in anchors:
            hierarchy += [anchors[parent], anchors[child]]
    specs.append(MarkerSpec("hierarchy", 0, "line_list", points=hierarchy, scale=0.03, color=(0.8, 0.8, 0.8, 0.5)))
    nav: list[Vec3] = []
    for a, b in graph.nav.edges:
        nav += [anchors[a], anchors[b]]
    specs.append(MarkerSpec("navigation", 0, "line_list", points=nav, scale=0.06, color=(0.3, 0.3, 0.3, 0.8)))
    path = [anchors[n] for n in plan_nodes if n in anchors]
    specs.append(MarkerSpec("plan", 0, "line_strip", points=path, scale=0.15, color=PLAN_COLOR))
    return specs


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
