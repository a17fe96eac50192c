"""Importers: SayPlan JSON (appendix L), GRASIF JSON (both layouts), Stanford 3DSG .npz."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sayplan_core.cli import main as cli_main
from sayplan_core.graph import GraphError, load
from sayplan_core.graph.importers import import_graph, import_grasif_json, import_sayplan_json, import_stanford_npz

DATA = Path(__file__).parent / "data"


def test_sayplan_appendix_l_graph() -> None:
    graph = import_sayplan_json(DATA / "sayplan_appendix_l.json")
    assert graph.count("room") == 5 and graph.count("pose") == 5 and graph.count("asset") == 6
    assert graph.parent("coffee_mug") == "wardrobe1"
    assert graph.relation("coffee_mug") == "inside_of"
    assert graph.nodes["coffee_mug"].attributes == {"tags": ["blue"]}
    assert graph.parent("wardrobe1") == "bobs_room"
    assert graph.nodes["wardrobe1"].states == ["closed"]
    assert graph.nodes["bed1"].states == []  # "free" is not a state
    assert graph.agent_location() == "bobs_room"
    assert graph.neighbours("kitchen") == ["pose3", "pose4", "pose5"]


def test_sayplan_link_to_unknown_node() -> None:
    data = {"nodes": {"room": [{"id": "a"}]}, "links": ["a↔b"]}
    with pytest.raises(GraphError, match="'b', which does not exist"):
        import_sayplan_json(data)


def test_grasif_appendix_list_layout() -> None:
    graph = import_grasif_json(DATA / "grasif_living_room.json")
    assert graph.count("object") == 6
    assert graph.parent("sock1") == "sofa1" and graph.relation("sock1") == "ontop_of"
    assert graph.nodes["carton1"].states == ["closed"]
    assert graph.agent_location() == "living_room1"
    assert graph.held_object() is None


def test_grasif_keyed_layout_with_class_idx_ids() -> None:
    graph = import_grasif_json(DATA / "grasif_keyed_kitchen.json")
    assert graph.name == "kitchen_scene"
    assert graph.parent("apple-1") == "fridge-1" and graph.relation("apple-1") == "inside_of"
    assert graph.relation("bowl-1") == "ontop_of"
    assert graph.nodes["apple-1"].attributes == {"tags": ["red", "ripe"]}
    assert graph.held_object() == "spoon-1"
    assert graph.room_of("spoon-1") == "kitchen-1"


def test_grasif_object_without_parent_is_rejected() -> None:
    data = {"places": {"k-1": {}}, "objects": {"cup-1": {"relation": "ontop_of"}}}
    with pytest.raises(GraphError, match="cup-1"):
        import_grasif_json(data)


def write_stanford_npz(path: Path) -> None:
    """A two-floor building with the Gibson 3DSG layout: one pickled dict under 'output'."""
    output: dict[str, Any] = {
        "building": {
            "id": 0,
            "name": "Allensville",
            "function": "residential",
            "num_floors": 2,
            "num_rooms": 3,
            "num_objects": 3,
            "reference_point": np.array([0.0, 0.0, 0.0]),
        },
        "room": {
            1: {
                "id": 1,
                "scene_category": "bathroom",
                "floor_number": "A",
                "location": np.array([1.0, 2.0, 0.5]),
                "size": np.array([2.0, 2.0, 2.5]),
                "volume": 10.0,
                "parent_building": 0,
            },
            2: {
                "id": 2,
                "scene_category": "living room",
                "floor_number": "A",
                "location": np.array([5.0, 2.0, 0.5]),
                "size": np.array([5.0, 4.0, 2.5]),
                "volume": 50.0,
                "parent_building": 0,
            },
            3: {
                "id": 3,
                "scene_category": "bedroom",
                "floor_number": "B",
                "location": np.array([3.0, 3.0, 3.5]),
                "size": np.array([4.0, 4.0, 2.5]),
                "volume": 40.0,
                "parent_building": 0,
            },
        },
        "object": {
            10: {
                "id": 10,
                "class_": "toilet",
                "parent_room": 1,
                "location": np.array([1.0, 1.5, 0.4]),
                "action_affordance": ["flush", "sit on"],
                "material": ["ceramic", None],
                "size": np.array([0.5, 0.7, 0.8]),
                "tactile_texture": "smooth",
            },
            11: {
                "id": 11,
                "class_": "couch",
                "parent_room": 2,
                "location": np.array([5.0, 1.0, 0.4]),
                "action_affordance": ["sit on"],
                "material": ["fabric"],
                "size": np.array([2.0, 0.9, 0.8]),
            },
            12: {
                "id": 12,
                "class_": "bed",
                "parent_room": 3,
                "location": np.array([3.0, 3.5, 3.4]),
                "action_affordance": ["sleep on"],
                "material": [],
                "size": np.array([2.0, 1.6, 0.5]),
            },
        },
        "camera": {0: {"id": 0, "name": "p0", "location": np.array([0.0, 0.0, 1.5])}},
    }
    np.savez(path, output=np.array(output, dtype=object))


def test_stanford_npz(tmp_path: Path) -> None:
    path = tmp_path / "3DSceneGraph_Allensville.npz"
    write_stanford_npz(path)
    graph = import_stanford_npz(path)
    assert graph.name == "Allensville"
    assert graph.count("floor") == 2 and graph.count("room") == 3 and graph.count("asset") == 3
    assert graph.room_of("toilet_10") == "bathroom_1"
    assert graph.nodes["toilet_10"].affordances == ["flush", "sit_on"]
    assert graph.nodes["toilet_10"].attributes["material"] == ["ceramic"]
    assert graph.parent("living_room_2") == "floor_a"
    # no connectivity in the dataset: one hallway pose per floor, joined by stairs
    assert graph.nav_component("bathroom_1") == graph.nav_component("bedroom_3")


def test_stanford_object_in_unknown_room(tmp_path: Path) -> None:
    path = tmp_path / "bad.npz"
    output = {"building": {"name": "X"}, "room": {}, "object": {1: {"id": 1, "class_": "cup", "parent_room": 9}}}
    np.savez(path, output=np.array(output, dtype=object))
    with pytest.raises(GraphError, match="parent_room 9"):
        import_stanford_npz(path)


def test_import_auto_and_cli_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "appendix.json"
    assert cli_main(["env", "import", str(DATA / "sayplan_appendix_l.json"), str(out)]) == 0
    graph = load(out)
    assert graph.parent("coffee_mug") == "wardrobe1"
    assert import_graph(out).nodes.keys() == graph.nodes.keys()
    npz = tmp_path / "3DSceneGraph_Allensville.npz"
    write_stanford_npz(npz)
    assert import_graph(npz).count("room") == 3
    assert "imported" in capsys.readouterr().out
