"""RViz markers redrawn per update (viz.markers.MarkerCache) against a full redraw of the final graph.

The oracle is RViz's own rule for a MarkerArray, written here: markers are kept by (namespace, id); DELETEALL
clears them, ADD replaces the one with the same key, DELETE drops it. Folding every change the cache sent into an
empty set must give what a from-scratch drawing of the final graph gives (ids aside, since a node keeps the id it
was first drawn with), and a node keeps its id as long as it lives.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.viz.markers import MarkerCache, MarkerChanges, MarkerSpec, graph_markers

Key = tuple[str, int]


def fold(held: dict[Key, MarkerSpec], changes: MarkerChanges) -> None:
    """What RViz does with one MarkerArray: DELETEALL first (as the server sends it), then each marker in turn."""
    if changes.clear:
        held.clear()
    for spec in changes.upsert:
        held[(spec.ns, spec.id)] = spec
    for key in changes.delete:
        held.pop(key, None)


def content(specs: list[MarkerSpec]) -> Counter[tuple[object, ...]]:
    """Every marker as what it shows (the id left out), counted."""
    return Counter((s.ns, s.kind, s.position, tuple(s.points), s.scale, s.color, s.text) for s in specs)


def building() -> SceneGraph:
    """Two floors (so floors can swap heights), with a navigation layer and an agent."""
    return generate_building(BuildingSpec(floors=2, rooms_per_floor=3, assets_per_room=2, objects_per_asset=2))


def _moved(node: Node, dx: float, dz: float) -> Node:
    x, y, z = node.position or (0.0, 0.0, 0.0)
    return replace(node, position=(x + dx, y, z + dz))


@st.composite
def an_update(draw: st.DrawFn, graph: SceneGraph) -> GraphUpdate:
    """What perception and skills send: moves, new and removed objects, the robot walking, renames, nodes that
    move (so what hangs off them moves too), edges, and now and then a floor lifted above the other."""
    objects, holders = graph.ids_of_type("object"), graph.ids_of_type("asset", "object", "room")
    nav = graph.ids_of_type("room", "pose")
    update = GraphUpdate()
    for _ in range(draw(st.integers(1, 3))):
        choice = draw(st.sampled_from(["move", "new", "walk", "rename", "shift", "remove", "edge", "lift"]))
        if choice == "move" and objects:
            node_id, parent = draw(st.sampled_from(objects)), draw(st.sampled_from(holders))
            relation = "in" if graph.nodes[parent].type == "room" else "ontop_of"
            node = graph.nodes[node_id]
            node = replace(node, position=draw(st.sampled_from([None, node.position, (1.0, 2.0, 0.5)])))
            update.upsert.append(NodeUpsert(node, parent, relation))
        elif choice == "new":
            node_id = f"new{draw(st.integers(0, 3))}"
            position = draw(st.sampled_from([None, (4.0, -1.0, 0.7)]))
            parent = draw(st.sampled_from(holders))
            relation = "in" if graph.nodes[parent].type == "room" else "inside_of"
            update.upsert.append(NodeUpsert(Node(node_id, "object", position=position), parent, relation))
        elif choice == "walk" and graph.agent_id is not None:
            agent = graph.nodes[graph.agent_id]
            agent = replace(agent, attributes={**agent.attributes, "location": draw(st.sampled_from(nav))})
            update.upsert.append(NodeUpsert(agent))
        elif choice in ("rename", "shift"):
            node_id = draw(st.sampled_from(sorted(graph.nodes)))
            node = graph.nodes[node_id]
            if choice == "rename":
                node = replace(node, name=f"{node.name}!")
            else:
                node = _moved(node, draw(st.sampled_from([0.0, 1.5])), draw(st.sampled_from([0.0, 0.25])))
            update.upsert.append(NodeUpsert(node, graph.parent(node_id), graph.relation(node_id) or "in"))
        elif choice == "remove":
            leaves = [n for n in objects if not graph.children(n)]
            if leaves:
                update.remove.append(draw(st.sampled_from(leaves)))
        elif choice == "edge":
            a, b = draw(st.sampled_from(nav)), draw(st.sampled_from(nav))
            if a != b and graph.nav.has_edge(a, b) and draw(st.booleans()):
                update.disconnect.append((a, b))
            elif a != b:
                update.connect.append((a, b, None))
        elif choice == "lift":  # every room and pose of one floor far up: the floors swap order
            floor = draw(st.sampled_from(graph.ids_of_type("floor")))
            for child in graph.children(floor):
                update.upsert.append(NodeUpsert(_moved(graph.nodes[child], 0.0, 50.0), floor, "in"))
    return update


@st.composite
def sessions(draw: st.DrawFn) -> tuple[SceneGraph, list[tuple[GraphUpdate | None, list[str]]]]:
    """A start graph and a few steps: an update (None: only the plan changes) and the plan drawn after it."""
    graph = building()
    work, steps = graph.copy(), []
    for _ in range(draw(st.integers(1, 6))):
        update = draw(an_update(work)) if draw(st.integers(0, 4)) else None
        if update is not None:
            try:
                apply_in_place(work, copy.deepcopy(update))
            except GraphError:
                continue  # the server draws only the updates it accepted
        plan = draw(st.lists(st.sampled_from(work.ids_of_type("room", "pose")), max_size=4))
        steps.append((update, plan))
    return graph, steps


@settings(max_examples=120, derandomize=True, deadline=None)
@given(sessions())
def test_changes_folded_as_rviz_does_equal_a_full_redraw(
    session: tuple[SceneGraph, list[tuple[GraphUpdate | None, list[str]]]],
) -> None:
    graph, steps = session
    cache, held = MarkerCache(), {}
    fold(held, cache.redraw(graph))
    first_ids = {n: cache.marker_id(n) for n in graph.nodes}
    plan: list[str] = []
    for update, plan in steps:
        if update is not None:
            apply_in_place(graph, update)
            fold(held, cache.update(graph, update))
        fold(held, cache.set_plan(graph, plan))
    assert content(list(held.values())) == content(graph_markers(graph, plan))
    assert content(cache.current().upsert) == content(graph_markers(graph, plan))  # what a late viewer gets
    for node_id, marker_id in first_ids.items():  # ids belong to nodes, not to list positions
        if node_id in graph:
            assert cache.marker_id(node_id) == marker_id, node_id


def test_one_moved_object_redraws_its_own_markers_only() -> None:
    """A skill's update on a building with many objects: a handful of markers, not the graph's thousands."""
    from sayplan_core.envs.generator import add_distractors

    graph = add_distractors(load_env("office"), 2000, seed=1)
    cache = MarkerCache()
    full = cache.redraw(graph)
    assert len(full.upsert) > 4000 and full.clear
    mug = copy.deepcopy(graph.nodes["coffee_mug"])
    update = GraphUpdate(upsert=[NodeUpsert(mug, graph.ids_of_type("asset")[0], "ontop_of")])
    apply_in_place(graph, update)
    changes = cache.update(graph, update)
    assert not changes.clear and not changes.delete
    # the mug's shape, label and line to its parent, maybe the agent's; the plan line stays as it was
    assert 1 <= len(changes.upsert) <= 6, [(s.ns, s.id) for s in changes.upsert]
    assert {"objects", "objects_labels", "hierarchy"} >= {s.ns for s in changes.upsert} - {"agents", "agents_labels"}
    removal = GraphUpdate(remove=["coffee_mug"])
    apply_in_place(graph, removal)
    mug_id = cache.marker_id("coffee_mug")
    changes = cache.update(graph, removal)
    assert {("objects", mug_id), ("objects_labels", mug_id), ("hierarchy", mug_id)} <= set(changes.delete)
    assert cache.marker_id("coffee_mug") is None
