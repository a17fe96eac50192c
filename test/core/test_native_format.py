"""Native JSON format: lossless round trip and validation errors that name the node.

A file's node count is bounded (limits.MAX_GRAPH_NODES, as for graphs in messages) and a columns file's navigation
edges too, before anything is built: a columns file costs about 50 bytes of memory per byte of file, so a file
under MAX_FILE_BYTES could otherwise take over 12 GB."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sayplan_core.envs import load_env
from sayplan_core.graph import GraphError, graph_from_dict, graph_to_dict, limits, load, loads, save
from sayplan_core.graph.model import Node, SceneGraph


def small() -> dict[str, Any]:
    return {
        "format": "sayplan-3dsg",
        "version": 1,
        "name": "small",
        "nodes": [
            {"id": "floor1", "type": "floor"},
            {"id": "kitchen", "type": "room", "position": [0, 0, 0]},
            {"id": "pose1", "type": "pose", "position": [3, 0, 0]},
            {"id": "fridge", "type": "asset", "states": ["closed"], "affordances": ["open", "close", "release"]},
            {"id": "table", "type": "asset"},
            {"id": "milk", "type": "object", "attributes": {"expiry": "today"}},
            {"id": "agent", "type": "agent", "attributes": {"location": "pose1"}},
        ],
        "edges": [
            {"source": "kitchen", "relation": "in", "target": "floor1"},
            {"source": "fridge", "relation": "in", "target": "kitchen"},
            {"source": "table", "relation": "in", "target": "kitchen"},
            {"source": "milk", "relation": "inside_of", "target": "fridge"},
            {"source": "kitchen", "relation": "connected_to", "target": "pose1"},
        ],
    }


@pytest.mark.parametrize("env", ["office", "home"])
def test_round_trip_is_lossless(env: str, tmp_path: Any) -> None:
    graph = load_env(env)
    path = tmp_path / f"{env}.json"
    save(graph, path)
    again = load(path)
    assert graph_to_dict(again) == graph_to_dict(graph)
    assert json.loads(path.read_text())["format"] == "sayplan-3dsg"


def test_loads_small_graph() -> None:
    graph = graph_from_dict(small())
    assert graph.parent("milk") == "fridge"
    assert graph.relation("milk") == "inside_of"
    assert graph.room_of("milk") == "kitchen"
    assert graph.agent_location() == "pose1"
    assert graph.neighbours("kitchen") == ["pose1"]


def _expect_error(data: dict[str, Any], node: str, fragment: str) -> None:
    with pytest.raises(GraphError) as info:
        graph_from_dict(data)
    assert info.value.node_id == node
    assert fragment in str(info.value)
    assert node in str(info.value)


def test_dangling_edge_names_the_missing_node() -> None:
    data = small()
    data["edges"].append({"source": "butter", "relation": "inside_of", "target": "fridge"})
    _expect_error(data, "butter", "does not exist")


def test_duplicate_id_is_rejected() -> None:
    data = small()
    data["nodes"].append({"id": "milk", "type": "object"})
    _expect_error(data, "milk", "duplicate node id")


def test_object_inside_two_containers_is_rejected() -> None:
    data = small()
    data["edges"].append({"source": "milk", "relation": "ontop_of", "target": "table"})
    _expect_error(data, "milk", "two parents")


def test_unknown_node_type_is_rejected() -> None:
    data = small()
    data["nodes"].append({"id": "ghost", "type": "spirit"})
    _expect_error(data, "ghost", "unknown type 'spirit'")


def test_cycle_in_hierarchy_is_rejected() -> None:
    data = small()
    data["nodes"].append({"id": "box", "type": "object"})
    data["nodes"].append({"id": "crate", "type": "object"})
    data["edges"].append({"source": "box", "relation": "inside_of", "target": "crate"})
    data["edges"].append({"source": "crate", "relation": "inside_of", "target": "box"})
    with pytest.raises(GraphError, match="cycle in the hierarchy") as info:
        graph_from_dict(data)
    assert info.value.node_id in ("box", "crate")


def test_wrong_parent_type_is_rejected() -> None:
    data = small()
    data["edges"].append({"source": "pose1", "relation": "in", "target": "fridge"})
    _expect_error(data, "pose1", "cannot be placed under 'fridge'")


def test_agent_at_an_asset_is_rejected() -> None:
    data = small()
    data["nodes"][-1]["attributes"]["location"] = "fridge"
    _expect_error(data, "agent", "not a room or pose")


def test_unknown_field_and_bad_position_are_rejected() -> None:
    data = small()
    data["nodes"][1]["colour"] = "red"
    _expect_error(data, "kitchen", "unknown field")
    data = small()
    data["nodes"][1]["position"] = [0, "x"]
    _expect_error(data, "kitchen", "position")


def test_not_json_and_wrong_format() -> None:
    with pytest.raises(GraphError, match="not valid JSON"):
        loads("{nodes: [")
    bad = small()
    bad["format"] = "other"
    with pytest.raises(GraphError, match="use an importer"):
        graph_from_dict(bad)


def test_failed_load_does_not_touch_the_input() -> None:
    data = small()
    data["edges"].append({"source": "milk", "relation": "ontop_of", "target": "table"})
    before = copy.deepcopy(data)
    with pytest.raises(GraphError):
        graph_from_dict(data)
    assert data == before


def test_set_parent_refuses_cycles_and_keeps_graph() -> None:
    graph = SceneGraph()
    graph.add_node(Node("room", "room"))
    graph.add_node(Node("shelf", "asset"), "room")
    graph.add_node(Node("box", "object"), "shelf", "ontop_of")
    graph.add_node(Node("cup", "object"), "box", "inside_of")
    with pytest.raises(GraphError, match="cycle"):
        graph.set_parent("box", "cup", "inside_of")
    assert graph.parent("box") == "shelf"


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), -1.0, True])
def test_navigation_weight_must_be_finite_and_non_negative(weight: Any) -> None:
    data = small()
    data["edges"][-1]["weight"] = weight
    with pytest.raises(GraphError, match="weight must be a finite number"):
        graph_from_dict(data)


def test_a_graph_without_agent_is_refused_unless_asked_for() -> None:
    data = small()
    data["nodes"] = [n for n in data["nodes"] if n["type"] != "agent"]
    with pytest.raises(GraphError, match="no agent node"):
        graph_from_dict(data)
    assert graph_from_dict(data, require_agent=False).agent_id is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_positions_are_refused_everywhere(bad: float) -> None:
    with pytest.raises(GraphError, match="position must be finite"):
        Node("cup", "object", position=(0.0, bad, 0.0))
    data = small()
    data["nodes"][1]["position"] = [0.0, bad, 0.0]
    with pytest.raises(GraphError, match="'kitchen': position must be finite"):
        graph_from_dict(data)


@pytest.mark.parametrize("layout", ["columns", "rows"])
def test_a_file_over_the_node_limit_is_refused_before_it_is_built(layout: str) -> None:
    count = limits.MAX_GRAPH_NODES + 1
    ids = [f"{i:x}" for i in range(count)]
    if layout == "columns":
        data: dict[str, object] = {
            "format": "sayplan-3dsg", "version": 2, "layout": "columns", "types": ["object"], "ids": ids,
            "type": [0] * count, "unplaced": list(range(count)), "positions": [],
        }  # fmt: skip
    else:
        data = {"format": "sayplan-3dsg", "version": 1, "nodes": [{"id": i, "type": "object"} for i in ids]}
    text = json.dumps(data, separators=(",", ":"))
    del data, ids
    with pytest.raises(GraphError, match=f"{count} nodes is over the {limits.MAX_GRAPH_NODES} node limit"):
        loads(text, require_agent=False)


def test_a_columns_file_over_the_navigation_edge_limit_is_refused() -> None:
    count = limits.MAX_GRAPH_EDGES + 1
    data = {
        "format": "sayplan-3dsg", "version": 2, "layout": "columns", "types": ["room"], "ids": ["a", "b"],
        "type": [0, 0], "unplaced": [0, 1], "positions": [], "links": [0, 1] * count,
    }  # fmt: skip
    with pytest.raises(GraphError, match="navigation edges is over"):
        loads(json.dumps(data, separators=(",", ":")), require_agent=False)
