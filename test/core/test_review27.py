"""Issue 27 review: what a researcher's own task lists and graphs did that they should not have. Each test is a
case found by trying the documented commands on hostile input; the oracle is the input built here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from sayplan_core.cli import main as cli_main
from sayplan_core.graph import GraphError, load
from sayplan_core.graph.importers.common import read_agent_at_by_task, read_connectivity_by_task
from sayplan_core.graph.importers.stanford import import_stanford


def rooms_scene(i: int, agent_in: str) -> list[dict[str, Any]]:
    """A GRASIF node-list scene whose rooms name task `i` and whose agent is in `agent_in`: start and goal scenes
    of every task differ, so each written file can be told apart."""
    nodes: list[dict[str, Any]] = [{"name": [room, 1], "type": "room"} for room in (f"hall{i}", f"kitchen{i}")]
    nodes.append({"name": ["bench", 1], "type": "asset", "place": [f"kitchen{i}", 1], "affordances": ["put_on"]})
    nodes.append({"name": ["agent", 1], "type": "agent", "location": [f"{agent_in}{i}", 1]})
    return nodes


def test_task_ids_whose_file_names_meet_get_files_of_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`x`'s goal file is `x.goal.json`, which is also the start scene of a task `x.goal`; `a/b` and `a_b` make
    the same file name; an id of 300 characters is longer than a file name may be. Each task must keep its own
    scenes, and none may stop the import half way."""
    ids = ["x", "x.goal", "a/b", "a_b", "Case", "case", "t" * 300]
    tasks = [
        {"id": task_id, "instruction": f"Task {i}.", "init": rooms_scene(i, "hall"), "goal": rooms_scene(i, "kitchen")}
        for i, task_id in enumerate(ids)
    ]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps({"tasks": tasks}))
    out = tmp_path / "out"
    code = cli_main(["env", "import", str(source), str(out)])
    _, err = capsys.readouterr()
    assert code == 0, err
    listed = yaml.safe_load((out / "tasks.yaml").read_text())["tasks"]
    assert [t["id"] for t in listed] == ids
    files = [t["env"] for t in listed] + [t["goal"]["graph"] for t in listed]
    assert len({f.casefold() for f in files}) == len(files), files
    for i, entry in enumerate(listed):
        start, goal = load(out / entry["env"]), load(out / entry["goal"]["graph"])
        assert start.agent_location() == f"hall{i}-1", entry
        assert goal.agent_location() == f"kitchen{i}-1", entry
    id_maps = json.loads((out / "tasks.ids.json").read_text())["ids"]
    assert {task_id: id_maps[task_id]["env"] for task_id in ids} == {t["id"]: t["env"] for t in listed}


def test_a_stanford_room_with_no_floor_number_is_put_on_no_floor(tmp_path: Path) -> None:
    """A Gibson room whose `floor_number` is missing sat on floor A, joined to floor A's invented hallway, even
    when its height is floor B's: the import joined what the data does not, and said nothing. It must be on no
    floor (joined only to the `hall` pose of rooms in no floor, as the docs say), and the summary names it."""

    def room(rid: int, category: str, floor: str | None, z: float) -> dict[str, Any]:
        return {
            "id": rid,
            "scene_category": category,
            "floor_number": floor,
            "location": np.array([0.0, 0.0, z]),
            "size": np.array([3.0, 3.0, 2.5]),
        }

    rooms = {1: room(1, "kitchen", "A", 1.25), 2: room(2, "bedroom", "B", 4.25), 3: room(3, "office", None, 4.25)}
    output = {"building": {"id": 0, "name": "T"}, "room": rooms, "object": {}}
    path = tmp_path / "b.npz"
    np.savez(path, output=np.array(output, dtype=object))
    imported = import_stanford(path)
    graph = imported.graph
    assert graph.parent("office_3") == "building_t"
    assert not graph.nav.has_edge("office_3", "hall_floor_a") and not graph.nav.has_edge("office_3", "hall_floor_b")
    assert graph.nav_component("office_3") != graph.nav_component("kitchen_1")
    assert "office_3" in imported.summary() and "floor_number" in imported.summary()


def test_a_hydra_object_named_by_a_long_caption_imports(tmp_path: Path) -> None:
    """Hydra variants (Clio) name objects by a phrase; a name of 600 characters made an id over the 256-character
    limit and refused the whole graph. The class is cut to MAX_CLASS characters; the node keeps its full name."""
    dsg = pytest.importorskip("spark_dsg", reason="spark-dsg (requirements/interop.txt) is not installed")
    from sayplan_core.graph.importers.hydra import MAX_CLASS, import_hydra

    g = dsg.DynamicSceneGraph()
    for index, x in enumerate((0.0, 4.0)):
        room = dsg.RoomNodeAttributes()
        room.position = np.array([x, 0.0, 0.0])
        g.add_node(4, dsg.NodeSymbol("R", index), room)
    g.insert_edge(dsg.NodeSymbol("R", 0), dsg.NodeSymbol("R", 1))
    caption = "a red mug next to the kettle " * 20
    obj = dsg.ObjectNodeAttributes()
    obj.position = np.array([0.0, 0.0, 0.0])
    obj.name = caption
    g.add_node(2, dsg.NodeSymbol("O", 3), obj)
    g.insert_edge(dsg.NodeSymbol("R", 0), dsg.NodeSymbol("O", 3))
    path = tmp_path / "clio.sparkdsg"
    g.save(str(path))
    imported = import_hydra(path)
    our = imported.id_map["O(3)"]
    assert our.startswith("a_red_mug_next_to_the_kettle") and our.endswith("_3")
    assert len(our) <= MAX_CLASS + len("_3")
    assert imported.graph.node(our).name == caption
    assert imported.graph.room_of(our) == imported.id_map["R(0)"]


def test_a_json_types_file_names_labels_by_number(tmp_path: Path) -> None:
    """JSON object keys are strings, so `{"labels": {"3": "cup"}}` is the only way a JSON --types file can name
    label 3; it was refused ("must map label numbers"), so the labels section worked in YAML only. A bad entry is
    named in the error."""
    from sayplan_core.graph.importers.common import read_labels

    good = tmp_path / "types.json"
    good.write_text(json.dumps({"labels": {"3": "cup", "4": "dining table"}, "room_labels": {"0": "kitchen"}}))
    assert read_labels(good) == {"objects": {3: "cup", 4: "dining table"}, "rooms": {0: "kitchen"}}
    yaml_file = tmp_path / "types.yaml"
    yaml_file.write_text("labels: {3: cup}\n")
    assert read_labels(yaml_file) == {"objects": {3: "cup"}}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"labels": {"3": "cup", "three": "mug", "5": ""}}))
    with pytest.raises(GraphError) as err:
        read_labels(bad)
    assert "'three'" in str(err.value) and "'5'" in str(err.value) and "'3'" not in str(err.value)


def test_keyed_option_files_name_their_bad_entries(tmp_path: Path) -> None:
    """A per-task --agent-at or --connectivity file with one bad entry: the error names that entry (and says the
    connectivity file was read as keyed by task id), not only the shape the file should have."""
    agent_at = tmp_path / "agent_at.json"
    agent_at.write_text(json.dumps({"t1": "hall1", "t2": 5, "t3": ""}))
    with pytest.raises(GraphError) as caught:
        read_agent_at_by_task(str(agent_at))
    assert "'t2': 5" in str(caught.value) and "'t3': ''" in str(caught.value) and "'t1'" not in str(caught.value)
    links = tmp_path / "doors.json"
    links.write_text(json.dumps({"t1": [["hall1", "kitchen1"]], "t2": "hall2 kitchen2"}))
    with pytest.raises(GraphError) as caught:
        read_connectivity_by_task(links)
    assert "keyed by task id" in str(caught.value) and "'t2'" in str(caught.value) and "'t1'" not in str(caught.value)
    links.write_text(json.dumps({"t1": [["hall1", "kitchen1"]]}))
    assert read_connectivity_by_task(links) == {"t1": (("hall1", "kitchen1", None),)}
