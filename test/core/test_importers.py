"""Importers: SayPlan JSON (appendix L), GRASIF JSON (grouped, keyed, node list, task list), Stanford 3DSG .npz;
the options every importer shares (connectivity, types, agent) and their errors: a JSON types file names labels by
number, a node whose own id is refused is named once, a Stanford object whose parent_room is no room is left out
(named in a note), not the building."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sayplan_core.cli import main as cli_main
from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.graph import GraphError, load
from sayplan_core.graph.importers import (
    ImportOptions,
    import_graph,
    import_grasif,
    import_grasif_json,
    import_grasif_tasks,
    import_sayplan,
    import_sayplan_json,
    import_stanford,
    import_stanford_npz,
    read_connectivity,
    read_types,
)
from sayplan_core.nav import PathPlanner
from sayplan_core.sim import verify_plan
from sayplan_core.sim.goals import score_against_goal_graph

DATA = Path(__file__).parent / "data"


def test_sayplan_appendix_l_graph() -> None:
    graph = import_sayplan_json(DATA / "sayplan_appendix_l.json")
    assert graph.count("room") == 5 and graph.count("pose") == 5 and graph.count("asset") == 6
    assert graph.parent("coffee_mug") == "wardrobe1"
    assert graph.relation("coffee_mug") == "inside_of"
    assert graph.nodes["coffee_mug"].attributes == {"tags": ["blue"]}
    assert graph.parent("wardrobe1") == "bobs_room"
    assert graph.nodes["wardrobe1"].states == ("closed",)
    assert graph.nodes["bed1"].states == ()  # "free" is not a state
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
    assert graph.nodes["carton1"].states == ("closed",)
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


def write_stanford_npz(path: Path, extra_rooms: dict[int, Any] | None = None, extra_objects: Any = None) -> None:
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
    output["room"].update(extra_rooms or {})
    output["object"].update(extra_objects or {})
    np.savez(path, output=np.array(output, dtype=object))


def test_stanford_npz(tmp_path: Path) -> None:
    path = tmp_path / "3DSceneGraph_Allensville.npz"
    write_stanford_npz(path)
    graph = import_stanford_npz(path)
    assert graph.name == "Allensville"
    assert graph.count("floor") == 2 and graph.count("room") == 3 and graph.count("asset") == 3
    assert graph.room_of("toilet_10") == "bathroom_1"
    assert graph.nodes["toilet_10"].affordances == ("flush", "sit_on")
    assert graph.nodes["toilet_10"].attributes["material"] == ["ceramic"]
    assert graph.parent("living_room_2") == "floor_a"
    # no connectivity in the dataset: one hallway pose per floor; no staircase is on both floors, so they stay apart
    assert graph.nav_component("bathroom_1") == graph.nav_component("living_room_2")
    assert graph.nav_component("bathroom_1") != graph.nav_component("bedroom_3")


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


# ------------------------------------------------------------------ issue 13: no silent empty graphs
def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_file_with_none_of_the_format_keys_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps({"tasks": [{"id": "t1", "instruction": "x"}], "version": 1}))
    code, out, err = run_cli(["env", "import", str(task_file), str(tmp_path / "out.json")], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "not a scene graph in any format read here; tried native" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    code, _, err = run_cli(["env", "import", str(other), str(tmp_path / "out.json")], capsys)
    assert code == 2 and "not a scene graph in any format read here; tried native" in err
    assert "sayplan (" in err and "grasif (" in err and "stanford" in err
    for fmt, expected in (("grasif", "not GRASIF JSON: 'places'/'rooms'"), ("sayplan", "not SayPlan JSON")):
        code, _, err = run_cli(["env", "import", str(other), str(tmp_path / "o.json"), "--format", fmt], capsys)
        assert code == 2 and expected in err, err
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "o.json").exists()


def test_inputs_without_nodes_or_rooms_are_errors() -> None:
    with pytest.raises(GraphError, match="no nodes found; expected SayPlan JSON"):
        import_sayplan_json({"nodes": {}, "links": []})
    with pytest.raises(GraphError, match="no rooms found; expected GRASIF JSON"):
        import_grasif_json({"assets": {}, "objects": {}, "agent": {"id": "agent"}})


def test_errors_list_every_problem_up_to_a_limit() -> None:
    nodes = [{"name": ["kitchen", 1], "type": "room"}]
    nodes += [{"name": ["cup", i], "type": "object", "related_to": ["shelf", 9]} for i in range(3)]
    nodes += [{"name": ["ghost", 1], "type": "spirit"}]
    with pytest.raises(GraphError) as info:
        import_grasif_json(nodes)
    message = str(info.value)
    assert message.startswith("<dict>: 4 problems: ") and "\n" not in message
    assert all(f"cup-{i}" in message for i in range(3)) and "'ghost-1' has type 'spirit'" in message
    many = [{"name": ["kitchen", 1], "type": "room"}]
    many += [{"name": ["cup", i], "type": "object"} for i in range(30)]
    with pytest.raises(GraphError, match=r"30 problems: .*; and 10 more$"):
        import_grasif_json(many)


# ------------------------------------------------------------------ GRASIF node list and task list
def test_grasif_node_list_scene() -> None:
    graph = import_grasif_json(DATA / "grasif_node_list_scene.json")
    assert graph.count("room") == 2 and graph.count("asset") == 4 and graph.count("object") == 6
    assert graph.parent("apple-1") == "bowl-1" and graph.relation("apple-1") == "inside_of"
    assert graph.room_of("apple-1") == "kitchen-1"
    assert graph.nodes["tv-1"].states == ("off",)  # the VLM's turned_off
    assert graph.parent("book-1") == "living_room-1"  # no relation: in its place
    assert graph.held_object() == "cup-1" and graph.agent_location() == "living_room-1"
    assert graph.nodes["fridge-1"].attributes == {"tags": ["white"]}


def test_grasif_room_named_only_by_an_objects_place_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = [
        {"name": ["agent", 0], "type": "agent", "location": "kitchen"},
        {"name": ["table", 1], "type": "asset", "place": "kitchen", "affordances": ["put_on"]},
        {"name": ["apple", 1], "type": "object", "place": "pantry", "affordances": ["pick_up"]},
    ]
    source = tmp_path / "pantry.json"
    source.write_text(json.dumps(nodes))
    code, _, err = run_cli(["env", "import", str(source), str(tmp_path / "pantry_graph.json")], capsys)
    assert code == 0, err
    graph = load(tmp_path / "pantry_graph.json")
    assert graph.nodes["pantry"].type == "room" and graph.parent("apple-1") == "pantry"
    assert graph.neighbours("pantry") == graph.neighbours("kitchen") != []  # joined to the hallway like the kitchen
    plan = "go_to(pantry) > pick_up(apple-1) > go_to(kitchen) > put_on(table-1) > done"
    result = verify_plan(graph, plan, "lookplangraph")
    assert result.success, result.feedback
    assert result.final_graph().parent("apple-1") == "table-1"


def test_grasif_rooms_without_connectivity_are_joined_by_an_invented_hallway() -> None:
    graph = import_grasif_json(DATA / "grasif_node_list_scene.json")
    assert graph.neighbours("hall") == ["kitchen-1", "living_room-1"]
    plan = "go_to(kitchen-1) > open(fridge-1) > put_inside(fridge-1) > done"
    result = verify_plan(graph, plan, "lookplangraph")
    assert result.success, result.feedback
    assert result.final_graph().parent("cup-1") == "fridge-1"


def test_grasif_connectivity_from_a_file(tmp_path: Path) -> None:
    doors = tmp_path / "doors.yaml"
    doors.write_text("links:\n  - kitchen-1 living_room-1\n")
    imported = import_grasif(DATA / "grasif_node_list_scene.json", ImportOptions(connectivity=read_connectivity(doors)))
    assert imported.graph.neighbours("kitchen-1") == ["living_room-1"] and imported.graph.count("pose") == 0
    assert "1 link(s) from the connectivity file" in imported.summary()
    doors.write_text("- [kitchen-1, garage-1]\n- [kitchen-1]\n")
    with pytest.raises(GraphError, match="links\\[1\\]: \\['kitchen-1'\\] must join two nodes"):
        read_connectivity(doors)
    doors.write_text("- [kitchen-1, garage-1]\n")
    with pytest.raises(GraphError, match="refers to 'garage-1', which does not exist"):
        import_grasif(DATA / "grasif_node_list_scene.json", ImportOptions(connectivity=read_connectivity(doors)))


def test_type_overrides_by_class(tmp_path: Path) -> None:
    types = tmp_path / "types.yaml"
    types.write_text("asset: [bowl]\nobject: [tv]\n")
    graph = import_grasif(DATA / "grasif_node_list_scene.json", ImportOptions(types=read_types(types))).graph
    assert graph.nodes["bowl-1"].type == "asset" and graph.parent("bowl-1") == "kitchen-1"
    assert graph.parent("apple-1") == "bowl-1"  # what it held stays on it
    assert graph.nodes["tv-1"].type == "object" and graph.parent("tv-1") == "living_room-1"
    types.write_text("furniture: [sofa]\n")
    with pytest.raises(GraphError, match="'furniture' is not a type that can be set"):
        read_types(types)


def test_grasif_task_list_with_goal_scenes() -> None:
    tasks = import_grasif_tasks(DATA / "grasif_node_list_tasks.json")
    assert [t.id for t in tasks] == ["refrigerate-milk", "grasif_node_list_tasks-1"]
    milk = tasks[0]
    assert milk.init.graph.parent("milk-1") == "bench-1" and milk.goal.graph.parent("milk-1") == "fridge-1"
    plan = "go_to(kitchen-1) > pick_up(milk-1) > open(fridge-1) > put_inside(fridge-1) > done"
    final = verify_plan(milk.init.graph, plan, "lookplangraph").final_graph()
    assert score_against_goal_graph(milk.init.graph, final, milk.goal.graph).success
    with pytest.raises(GraphError, match="holds 2 task scene"):
        import_grasif_json(DATA / "grasif_node_list_tasks.json")


def milk_task(goal_agent: dict[str, Any], goal_milk: dict[str, Any]) -> dict[str, Any]:
    """A GRASIF task: the milk starts on the bench, the agent in the hall; the goal scene's agent and milk vary."""
    kitchen = ["kitchen", 1]
    rooms: list[dict[str, Any]] = [{"name": kitchen, "type": "room"}, {"name": ["hall", 1], "type": "room"}]
    fridge = {"name": ["fridge", 1], "type": "asset", "place": kitchen, "affordances": ["open", "close", "put_inside"]}
    bench = {"name": ["bench", 1], "type": "asset", "place": kitchen, "affordances": ["put_on"]}
    milk = {"name": ["milk", 1], "type": "object", "affordances": ["pick_up"]}
    start = {"relation": "ontop_of", "related_to": ["bench", 1]}
    init = [*rooms, {**fridge, "states": ["closed"]}, bench, {**milk, **start}]
    init.append({"name": ["agent", 1], "type": "agent", "location": ["hall", 1]})
    goal = [*rooms, {**fridge, "states": ["open"]}, bench, {**milk, **goal_milk}, {"name": ["agent", 1], **goal_agent}]
    return {"id": "milk", "instruction": "Deal with the milk.", "init": init, "goal": goal}


def test_a_goal_scene_that_does_not_place_the_agent_scores_on_the_objects() -> None:
    """A goal agent with no location asks nothing of where the agent ends; one with a location still does."""
    in_fridge = {"relation": "inside_of", "related_to": ["fridge", 1]}
    store = "go_to(kitchen-1) > pick_up(milk-1) > open(fridge-1) > put_inside(fridge-1)"
    [task] = import_grasif_tasks([milk_task({"type": "agent"}, in_fridge)])
    assert task.goal.graph.agent_location() is None
    for plan in (store, store + " > go_to(hall-1)"):
        final = verify_plan(task.init.graph, plan + " > done", "lookplangraph").final_graph()
        assert score_against_goal_graph(task.init.graph, final, task.goal.graph).success, plan
    unstored = verify_plan(task.init.graph, "go_to(kitchen-1) > open(fridge-1) > done", "lookplangraph")
    assert not score_against_goal_graph(task.init.graph, unstored.final_graph(), task.goal.graph).success
    [placed] = import_grasif_tasks([milk_task({"type": "agent", "location": ["kitchen", 1]}, in_fridge)])
    for plan, ends_in_kitchen in ((store, True), (store + " > go_to(hall-1)", False)):
        final = verify_plan(placed.init.graph, plan + " > done", "lookplangraph").final_graph()
        score = score_against_goal_graph(placed.init.graph, final, placed.goal.graph)
        assert score.success == (final.room_of(final.agent_location() or "") == "kitchen-1") == ends_in_kitchen


def test_a_goal_scene_agent_that_holds_something_is_scored_without_a_location() -> None:
    [task] = import_grasif_tasks([milk_task({"type": "agent", "holding": ["milk", 1]}, {})])
    assert task.goal.graph.held_object() == "milk-1" and task.goal.graph.agent_location() is None
    for plan, holds in (
        ("go_to(kitchen-1) > pick_up(milk-1) > open(fridge-1)", True),
        ("go_to(kitchen-1) > open(fridge-1)", False),
    ):
        final = verify_plan(task.init.graph, plan + " > done", "lookplangraph").final_graph()
        assert final.held_object() == ("milk-1" if holds else None)
        assert score_against_goal_graph(task.init.graph, final, task.goal.graph).success == holds, plan


def test_agent_at_places_the_robot_in_the_init_scene_only() -> None:
    """--agent-at says where the robot starts; a goal scene keeps where it must end, or that it does not say."""
    in_fridge = {"relation": "inside_of", "related_to": ["fridge", 1]}
    options = ImportOptions(agent_at="kitchen-1")
    [placed] = import_grasif_tasks([milk_task({"type": "agent", "location": ["hall", 1]}, in_fridge)], options)
    [unplaced] = import_grasif_tasks([milk_task({"type": "agent"}, in_fridge)], options)
    assert placed.init.graph.agent_location() == unplaced.init.graph.agent_location() == "kitchen-1"
    assert placed.goal.graph.agent_location() == "hall-1" and unplaced.goal.graph.agent_location() is None
    store = "pick_up(milk-1) > open(fridge-1) > put_inside(fridge-1)"
    for plan in (store, store + " > go_to(hall-1)"):
        final = verify_plan(placed.init.graph, plan + " > done", "lookplangraph").final_graph()
        in_hall = final.room_of(final.agent_location() or "") == "hall-1"
        assert score_against_goal_graph(placed.init.graph, final, placed.goal.graph).success == in_hall, plan


def test_cli_imports_a_task_list_into_a_folder_the_bench_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grasif"
    code, text, _ = run_cli(["env", "import", str(DATA / "grasif_node_list_tasks.json"), str(out)], capsys)
    assert code == 0 and "imported 2 task scene(s)" in text and "added 1 hallway pose" in text
    tasks = load_tasks(out / "tasks.yaml")
    assert [t.family for t in tasks] == ["grasif", "grasif"]
    assert tasks[0].goal_graph is not None and load(tasks[0].goal_graph).parent("milk-1") == "fridge-1"
    assert load_env(tasks[0].env).agent_location() == "hall-1"
    code, _, err = run_cli(
        ["env", "import", str(DATA / "grasif_node_list_tasks.json"), str(tmp_path / "x.json")], capsys
    )
    assert code == 2 and "give a folder" in err


# ------------------------------------------------------------------ the agent
def test_an_import_without_agent_is_written_but_cannot_be_planned_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    npz = tmp_path / "3DSceneGraph_Allensville.npz"
    write_stanford_npz(npz)
    out = tmp_path / "allensville.json"
    code, text, _ = run_cli(["env", "import", str(npz), str(out)], capsys)
    assert code == 0 and "no agent in the data: to plan on this graph, import it again with --agent-at" in text
    with pytest.raises(GraphError, match=r"no agent node, so the robot cannot plan on it; place it with .*--agent-at"):
        load_env(str(out))
    code, text, _ = run_cli(["env", "import", str(npz), str(out), "--agent-at", "bathroom_1"], capsys)
    assert code == 0 and "agent placed at bathroom_1" in text
    assert load_env(str(out)).agent_location() == "bathroom_1"
    code, _, err = run_cli(["env", "import", str(npz), str(out), "--agent-at", "toilet_10"], capsys)
    assert code == 2 and "--agent-at toilet_10: it is an asset, not a room or pose" in err


# ------------------------------------------------------------------ Stanford 3DSG (issue 12)
def staircase_building(path: Path) -> None:
    write_stanford_npz(
        path,
        extra_rooms={
            4: {"id": 4, "scene_category": "staircase", "floor_number": "A", "location": np.array([9.0, 0, 0.5])},
            5: {"id": 5, "scene_category": "staircase", "floor_number": "B", "location": np.array([9.0, 0, 3.5])},
        },
        extra_objects={
            13: {"id": 13, "class_": "cup", "parent_room": 2, "location": np.array([5.0, 1.0, 0.9])},
            14: {"id": 14, "class_": "teddy bear", "parent_room": 3, "action_affordance": ["pick up"]},
        },
    )


def test_stanford_movable_classes_become_objects(tmp_path: Path) -> None:
    path = tmp_path / "3DSceneGraph_Allensville.npz"
    staircase_building(path)
    graph = import_stanford_npz(path)
    assert graph.nodes["cup_13"].type == "object" and graph.parent("cup_13") == "living_room_2"
    assert graph.nodes["teddy_bear_14"].type == "object"
    assert graph.nodes["teddy_bear_14"].affordances == ("pick_up",)
    assert graph.nodes["couch_11"].type == "asset"
    result = verify_plan(
        graph_with_agent(graph, "living_room_2"), "pick_up(cup_13) > go_to(bathroom_1) > done", "lookplangraph"
    )
    assert result.success, result.feedback


def graph_with_agent(graph: Any, where: str) -> Any:
    from sayplan_core.graph.model import Node

    out = graph.copy()
    out.add_node(Node("agent", "agent", attributes={"location": where}))
    return out


def test_stanford_floors_are_joined_only_through_a_staircase_on_both(tmp_path: Path) -> None:
    """Two staircases, one per floor, are not one staircase: the data never joins them, so neither does the import
    (issue 27); a staircase whose floor_number lists both floors joins them, through the two hallway poses."""
    path = tmp_path / "3DSceneGraph_Allensville.npz"
    staircase_building(path)
    imported = import_stanford(path)
    graph = imported.graph
    assert not graph.nav.has_edge("hall_floor_a", "hall_floor_b")
    assert not graph.nav.has_edge("staircase_4", "staircase_5")
    assert graph.nav_component("bathroom_1") != graph.nav_component("bedroom_3")
    assert imported.apart_floors == [["floor_a"], ["floor_b"]]
    assert "floors left unlinked (no staircase or elevator room the data places on two of them)" in imported.summary()
    shared = tmp_path / "shared.npz"
    write_stanford_npz(shared, extra_rooms={4: {"id": 4, "scene_category": "staircase", "floor_number": ["A", "B"]}})
    joined = import_stanford(shared)
    route = PathPlanner(joined.graph).shortest_path("bathroom_1", "bedroom_3").nodes
    assert route == ["bathroom_1", "hall_floor_a", "staircase_4", "hall_floor_b", "bedroom_3"]
    assert joined.apart_floors == [] and "joined through staircase/elevator room(s) on both: staircase_4" in (
        joined.summary()
    )


def test_stanford_connectivity_and_types_from_files(tmp_path: Path) -> None:
    path = tmp_path / "3DSceneGraph_Allensville.npz"
    staircase_building(path)
    doors = tmp_path / "doors.json"
    doors.write_text(
        json.dumps([["bathroom_1", "living_room_2", 2.5], "living_room_2 staircase_4", "staircase_4<->staircase_5"])
    )
    types = tmp_path / "types.yaml"
    types.write_text("object: [couch]\n")
    options = ImportOptions(connectivity=read_connectivity(doors), types=read_types(types), agent_at="bathroom_1")
    imported = import_stanford(path, options)
    graph = imported.graph
    assert graph.count("pose") == 0 and graph.nav["bathroom_1"]["living_room_2"]["weight"] == 2.5
    assert graph.nodes["couch_11"].type == "object"
    assert "1 room(s) left unlinked (unreachable)" in imported.summary()


# ------------------------------------------------------------------ hostile files, one-line errors
@pytest.mark.parametrize(
    ("make", "fmt", "message"),
    [
        (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "auto", "nested too deeply"),
        (lambda p: p.write_text('{"nodes": {"room": [{"id": "a"}]}, "links": []}'), "stanford", "reads .npz files"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "auto", "not UTF-8 text"),
        (lambda p: p.mkdir(), "auto", "it is a folder"),
    ],
)
def test_hostile_inputs_give_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, fmt: str, message: str
) -> None:
    source = tmp_path / "in.json"
    make(source)
    code, out, err = run_cli(["env", "import", str(source), str(tmp_path / "out.json"), "--format", fmt], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_a_json_file_given_as_npz_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "fake.npz"
    fake.write_text('{"hello": 1}')
    code, _, err = run_cli(["env", "import", str(fake), str(tmp_path / "out.json")], capsys)
    assert code == 2 and "not a 3D Scene Graph .npz" in err and err.count("\n") == 1


def test_import_into_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nowhere" / "out.json"
    code, _, err = run_cli(["env", "import", str(DATA / "sayplan_appendix_l.json"), str(out)], capsys)
    assert code == 2 and f"folder {out.parent} does not exist" in err


# ------------------------------------------------------------------ every problem listed, in plain words
def problems_of(data: Any, options: ImportOptions | None = None) -> str:
    with pytest.raises(GraphError) as info:
        if isinstance(data, dict) and "links" in data:
            import_sayplan(data, options)
        else:
            import_grasif(data, options)
    return str(info.value)


def test_unknown_relations_and_a_missing_agent_location_are_all_listed() -> None:
    nodes = [
        {"name": ["kitchen", 1], "type": "place"},
        {"name": ["table", 1], "type": "asset", "place": ["kitchen", 1]},
        {"name": ["cup", 1], "type": "object", "relation": "under", "related_to": ["table", 1]},
        {"name": ["cup", 2], "type": "object", "relation": "beside", "related_to": ["table", 1]},
        {"name": ["cup", 3], "type": "object", "relation": "ontop", "related_to": ["table", 1]},
        {"name": ["robot", 1], "type": "agent", "location": ["hall", 1]},
    ]
    message = problems_of(nodes)
    assert message.startswith("<dict>: 4 problems: "), message
    for rel in ("under", "beside", "ontop"):
        assert f"unknown relation '{rel}'" in message
    assert "the agent 'robot-1' is at 'hall-1', which does not exist" in message


def test_a_grouped_scene_lists_a_bad_agent_location_with_the_other_problems() -> None:
    scene = {
        "rooms": [{"id": "kitchen"}],
        "assets": [{"id": "table", "place": "kitchen"}, {"id": "shelf"}],
        "objects": [{"id": "cup", "related_to": "table", "relation": "on"}],
        "agent": {"name": "robot", "location": "garage"},
    }
    message = problems_of(scene)
    assert message.startswith("<dict>: 2 problems: "), message
    assert "asset 'shelf' has no place" in message and "'robot' is at 'garage', which does not exist" in message
    scene["agent"] = {"name": "robot", "location": "table"}
    assert "'robot' is at 'table', a asset, not a room or pose" in problems_of(scene)


def test_a_missing_parent_and_a_duplicate_id_are_reported_once_in_plain_words() -> None:
    nodes = [
        {"name": ["kitchen", 1], "type": "place"},
        {"name": ["table", 1], "type": "asset", "place": ["kitchen", 1]},
        {"name": ["cup", 1], "type": "object", "related_to": ["table", 1]},
        {"name": ["cup", 1], "type": "object", "related_to": ["table", 1]},
        {"name": ["cup", 1], "type": "object", "related_to": ["table", 1]},
        {"name": ["plate", 1], "type": "object", "relation": "on", "related_to": ["sink", 1]},
    ]
    message = problems_of(nodes)
    assert message.startswith("<dict>: 2 problems: "), message
    assert "duplicate node id 'cup-1'" in message and "two places" not in message
    assert "'plate-1' is ontop_of 'sink-1', which does not exist" in message


def test_wrong_typed_fields_are_problems_naming_node_field_and_type() -> None:
    nodes = [
        {"name": ["kitchen", 1], "type": "place"},
        {"name": ["table", 1], "type": "asset", "place": ["kitchen", 1], "affordances": "put_on", "states": 5},
        {"name": ["cup", 1], "type": "object", "related_to": ["table", 1], "affordances": {"pick_up": True}},
        {"name": ["bowl", 1], "type": "object", "related_to": ["table", 1], "position": "here"},
    ]
    message = problems_of(nodes)
    assert message.startswith("<dict>: 3 problems: "), message
    assert "node 'table-1': 'states' must be a string or a list of strings, got 5" in message
    assert "node 'cup-1': 'affordances' must be a string or a list of strings, got {'pick_up': True}" in message
    assert "node 'bowl-1': position" in message
    sayplan = {
        "nodes": {
            "room": [{"id": "kitchen"}],
            "asset": [{"id": "table", "room": "kitchen", "affordances": {"put_on": True}, "state": [1]}],
        },
        "links": [],
    }
    message = problems_of(sayplan)
    assert "node 'table': 'affordances' must be a string or a list of strings" in message
    assert "node 'table': 'state' must be a string or a list of strings, got [1]" in message


def test_sayplan_assets_and_objects_in_no_room_are_problems() -> None:
    data = {
        "nodes": {
            "room": [{"id": "kitchen"}],
            "asset": [{"id": "table"}, {"id": "bench"}, {"id": "sink", "room": 3}, {"id": "shelf", "room": "kitchen"}],
            "object": [{"id": "cup"}, {"id": "plate", "state": "ontop_of(shelf)"}],
            "agent": [{"id": "robot", "location": "kitchen"}],
        },
        "links": [],
    }
    message = problems_of(data)
    assert message.startswith("<dict>: 4 problems: "), message
    assert "asset 'table' is in no room: nothing places it (give it a 'room'" in message
    assert "asset 'bench' is in no room" in message and "object 'cup' is in no room" in message
    assert "node 'sink': 'room' must be a room id (a string), got 3" in message
    assert "plate" not in message and "shelf" not in message


def test_a_held_object_typed_asset_stands_in_the_agents_room(tmp_path: Path) -> None:
    nodes = [
        {"name": ["kitchen", 1], "type": "place"},
        {"name": ["table", 1], "type": "asset", "place": ["kitchen", 1]},
        {"name": ["cup", 1], "type": "object", "relation": "on", "related_to": ["table", 1]},
        {"name": ["spoon", 1], "type": "object", "relation": "inside", "related_to": ["cup", 1]},
        {"name": ["robot", 1], "type": "agent", "location": ["kitchen", 1], "holding": ["cup", 1]},
    ]
    types = tmp_path / "types.yaml"
    types.write_text("asset: [cup, ghostclass]\n")
    imported = import_grasif(nodes, ImportOptions(types=read_types(types)))
    graph = imported.graph
    assert graph.nodes["cup-1"].type == "asset" and graph.parent("cup-1") == "kitchen-1"
    assert graph.held_object() is None and graph.parent("spoon-1") == "cup-1"
    summary = imported.summary()
    assert "'cup-1' was held by the agent" in summary and "agent's room 'kitchen-1'" in summary
    assert "type list class(es) matching no node (a typo?): ghostclass" in summary
    # at a pose that is in no room, the agent's room is unknown: a problem, not a parentless asset
    message = problems_of(nodes, ImportOptions(types=read_types(types), agent_at="hall"))
    assert "'cup-1' is typed asset by the type list, but what held it ('robot-1') is in no room" in message


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


LONG = "x" * 300


def error_of(run: Any) -> str:
    with pytest.raises(GraphError) as info:
        run()
    return str(info.value)


def test_a_node_whose_id_is_refused_is_named_once() -> None:
    nodes = [{"name": ["kitchen", 1], "type": "place"}, {"name": [LONG, 1], "type": "object"}]
    message = error_of(lambda: import_grasif(nodes))
    assert message.count(LONG[:40]) == 1, message
    assert "over 256 characters" in message
    assert len(message) < 400, message  # never the whole 300-character id


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
