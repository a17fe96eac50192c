"""Foxglove scene entities sent per update (viz.scene.SceneEntities) against a conversion of the final graph.

The oracle is Foxglove's own rule for a SceneUpdate, written here: entities are kept by id; a deletion drops one
(deletion "all" clears them), deletions are applied before the entities of the same message, and an entity
replaces the one with its id. Folding every change sent into an empty scene must give what the from-scratch
conversion of the final graph gives, and no change may re-send an entity the viewer already holds as it is.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from test_marker_deltas import an_update, building

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import add_distractors
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.viz.scene import Entity, SceneChanges, SceneEntities, scene_entities


def fold(held: dict[str, Entity], changes: SceneChanges) -> None:
    """What Foxglove's 3D panel does with one SceneUpdate: deletions first (clear is a deletion of all), then
    each entity by id."""
    if changes.clear:
        held.clear()
    for entity_id in changes.deletions:
        held.pop(entity_id, None)
    for entity in changes.entities:
        held[entity.id] = entity


@st.composite
def sessions(draw: st.DrawFn) -> tuple[SceneGraph, list[GraphUpdate]]:
    """A start graph and the updates a server accepted after it (a refused one is never sent)."""
    graph = building()
    work, updates = graph.copy(), []
    for _ in range(draw(st.integers(1, 8))):
        update = draw(an_update(work))
        try:
            apply_in_place(work, copy.deepcopy(update))
        except GraphError:
            continue
        updates.append(update)
    return graph, updates


@settings(max_examples=120, derandomize=True, deadline=None)
@given(sessions())
def test_changes_folded_as_foxglove_does_equal_a_conversion_of_the_final_graph(
    session: tuple[SceneGraph, list[GraphUpdate]],
) -> None:
    graph, updates = session
    scene, held = SceneEntities(), {}
    first = scene.redraw(graph)
    assert first.clear and len(first.entities) == len(graph)  # one entity per node
    fold(held, first)
    for update in updates:
        apply_in_place(graph, update)
        changes = scene.update(graph, update)
        if not changes.clear:
            for entity in changes.entities:  # only what changed is sent
                assert held.get(entity.id) != entity, entity.id
            assert set(changes.deletions) <= set(held), changes.deletions
            assert set(changes.deletions) <= set(update.remove)
        fold(held, changes)
    expected = scene_entities(graph)
    assert held == expected
    assert {e.id: e for e in scene.current().entities} == expected  # what a viewer that joins late gets
    assert set(expected) == set(graph.nodes)


def test_one_moved_object_sends_its_own_entity_only() -> None:
    """A skill's update on a building with thousands of objects: the mug's entity, not the graph."""
    graph = add_distractors(load_env("office"), 2000, seed=1)
    scene = SceneEntities()
    full = scene.redraw(graph)
    assert full.clear and len(full.entities) == len(graph) > 2000
    kinds = {e.type for e in full.entities}
    assert {"floor", "room", "pose", "asset", "object", "agent"} <= kinds
    mug = graph.nodes["coffee_mug"]
    mug = replace(mug, states=(*mug.states, "dirty"))
    update = GraphUpdate(upsert=[NodeUpsert(mug, graph.ids_of_type("asset")[0], "ontop_of")])
    apply_in_place(graph, update)
    changes = scene.update(graph, update)
    assert not changes.clear and not changes.deletions
    assert [e.id for e in changes.entities] == ["coffee_mug"]
    assert dict(changes.entities[0].metadata)["states"].endswith("dirty")
    removal = GraphUpdate(remove=["coffee_mug"])
    apply_in_place(graph, removal)
    changes = scene.update(graph, removal)
    assert changes.deletions == ["coffee_mug"] and not changes.entities


def test_entities_carry_the_rviz_layout_and_colours() -> None:
    """A room is a cube, an object a sphere, coloured by kind; navigation links are lines held by one end."""
    graph = load_env("office")
    entities = scene_entities(graph)
    room = entities[graph.ids_of_type("room")[0]]
    obj = entities[graph.ids_of_type("object")[0]]
    assert room.shapes[0].kind == "cube" and obj.shapes[0].kind == "sphere"
    assert room.shapes[0].color != obj.shapes[0].color
    assert room.labels[0].text == graph.nodes[room.id].name
    navigation = sum(1 for e in entities.values() for line in e.lines if line.kind == "navigation")
    assert navigation == graph.nav.number_of_edges()


def test_a_floor_follows_its_building_when_only_the_building_moves() -> None:
    """A floor without a position is drawn at its building's: the building's update changes the floor's entity,
    though the update never names the floor (floors have no markers to say so)."""
    graph = building()
    scene, held = SceneEntities(), {}
    fold(held, scene.redraw(graph))
    floor = copy.deepcopy(graph.nodes["floor0"])
    steps = [
        GraphUpdate(upsert=[NodeUpsert(Node("hq", "building", position=(5.0, 5.0, 0.0))), NodeUpsert(floor, "hq")]),
        GraphUpdate(upsert=[NodeUpsert(Node("hq", "building", position=(9.0, 5.0, 0.0)))]),
    ]
    for update in steps:
        apply_in_place(graph, update)
        fold(held, scene.update(graph, update))
    assert held["floor0"].shapes[0].position[:2] == (9.0, 5.0)
    assert held == scene_entities(graph)
