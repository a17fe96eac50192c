"""Review 28 fixes in sayplan_core: importer messages and tolerance, planner option names.

Importers: an invented hallway is never offered as a "closest" id; a node whose own id is bad is named once;
a NaN position drops that position (named in a note), not the graph; a graph with no rooms says so; a Stanford
object whose parent_room is no room is left out (named in a note), not the building.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sayplan_core.graph import GraphError
from sayplan_core.graph.importers import ImportOptions, import_grasif, import_stanford
from sayplan_core.settings import planner_settings

LONG = "x" * 300


def error_of(run: Any) -> str:
    with pytest.raises(GraphError) as info:
        run()
    return str(info.value)


# ----------------------------------------------------------------------------- (a) invented ids never suggested
def test_the_invented_hallway_is_not_offered_as_the_closest_id() -> None:
    nodes = [{"name": ["kitchen", 1], "type": "place"}, {"name": ["bathroom", 1], "type": "place"}]
    plain = import_grasif(nodes)  # no connectivity in the data: a hallway pose is invented and named 'hall'
    assert "hall" in plain.graph.nodes and plain.graph.nodes["hall"].attributes.get("synthetic")
    message = error_of(lambda: import_grasif(nodes, ImportOptions(agent_at="hal")))
    assert "--agent-at hal: no such node" in message
    assert "hall" not in message.replace("--agent-at hal:", ""), message
    assert "kitchen-1" in message  # a wrong id still comes with ids there are


# ----------------------------------------------------------------------------- (b) a bad id named once
def test_a_node_whose_id_is_refused_is_named_once() -> None:
    nodes = [{"name": ["kitchen", 1], "type": "place"}, {"name": [LONG, 1], "type": "object"}]
    message = error_of(lambda: import_grasif(nodes))
    assert message.count(LONG[:40]) == 1, message
    assert "over 256 characters" in message
    assert len(message) < 400, message  # never the whole 300-character id


# ----------------------------------------------------------------------------- (e) Stanford: a bad parent_room
def write_npz(path: Path, objects: dict[int, Any], rooms: dict[int, Any] | None = None) -> None:
    if rooms is None:
        rooms = {1: {"id": 1, "scene_category": "kitchen", "floor_number": "A", "location": np.array([1.0, 2, 0])}}
    output = {"building": {"name": "Tiny"}, "room": rooms, "object": objects}
    np.savez(path, output=np.array(output, dtype=object))


def test_a_stanford_object_in_no_room_is_left_out_and_named(tmp_path: Path) -> None:
    path = tmp_path / "tiny.npz"
    write_npz(
        path,
        {
            1: {"id": 1, "class_": "cup", "parent_room": 1, "location": np.array([1.0, 2, 0.5])},
            2: {"id": 2, "class_": "couch", "parent_room": 9, "location": np.array([1.0, 2, 0.5])},
        },
    )
    imported = import_stanford(path)
    assert "cup_1" in imported.graph.nodes and "couch_2" not in imported.graph.nodes
    assert any("object 2 (couch)" in note and "parent_room 9" in note for note in imported.notes), imported.notes
    assert "object 2" not in imported.id_map


def test_a_stanford_building_with_no_rooms_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.npz"
    write_npz(path, {1: {"id": 1, "class_": "cup", "parent_room": 9}}, rooms={})
    assert "parent_room 9" in error_of(lambda: import_stanford(path))


# ----------------------------------------------------------------------------- Hydra: (c) NaN, (d) no rooms
dsg = pytest.importorskip("spark_dsg", reason="spark-dsg (requirements/interop.txt) is not installed")

from test_spark_dsg import apartment, attrs, sym  # noqa: E402

from sayplan_core.graph.importers.hydra import import_dsg  # noqa: E402


def test_a_nan_position_drops_that_position_not_the_graph() -> None:
    reference = import_dsg(apartment(), "<apartment>")
    g = apartment()
    g.get_node(sym("O", 7)).attributes.position = np.array([math.nan, 1.0, 0.8])  # the cup
    g.get_node(sym("R", 2)).attributes.position = np.array([10.0, math.inf, 0.0])  # the bedroom
    imported = import_dsg(g, "<nan>")
    cup, bedroom = imported.id_map[str(sym("O", 7))], imported.id_map[str(sym("R", 2))]
    graph = imported.graph
    assert set(graph.nodes) == set(reference.graph.nodes)  # every node kept
    assert graph.nodes[cup].position is None and graph.nodes[bedroom].position is None
    assert graph.room_of(cup) == reference.graph.room_of(cup)  # still where the data puts it
    assert all(math.isfinite(v) for node in graph.nodes.values() if node.position is not None for v in node.position)
    note = next(n for n in imported.notes if "non-finite position" in n)
    assert cup in note and bedroom in note, note


def test_a_hydra_graph_with_objects_but_no_rooms_says_no_rooms() -> None:
    g = dsg.DynamicSceneGraph()
    g.add_node(dsg.DsgLayers.OBJECTS, sym("O", 1), attrs(dsg.ObjectNodeAttributes, [1, 1, 0], name="sofa"))
    g.add_node(dsg.DsgLayers.OBJECTS, sym("O", 2), attrs(dsg.ObjectNodeAttributes, [2, 1, 0], name="cup"))
    message = error_of(lambda: import_dsg(g, "<no rooms>"))
    assert message.startswith("<no rooms>: no rooms found; expected "), message
    assert "is in no room" not in message


# ----------------------------------------------------------------------------- planner options
def test_planner_settings_suggest_the_name_meant() -> None:
    settings = planner_settings()
    assert "sayplan.floor_view_rooms" in settings  # the name the misspelling below means
    message = error_of_value(lambda: settings.check({"sayplan.floor_veiw_rooms": 2}))
    assert "sayplan.floor_veiw_rooms" in message and "did you mean sayplan.floor_view_rooms?" in message


def error_of_value(run: Any) -> str:
    with pytest.raises(ValueError) as info:
        run()
    return str(info.value)
