"""Id maps of SayPlan JSON and GRASIF imports (one scene and per task), wrong ids answered with ids there are, and
task goals no action can reach flagged by task id (issue 27). Oracles: the source ids written in the test, and the
simulator itself run on each task's start scene (a goal flagged at import is one no action of the set reaches).
A hallway the importer invents is never offered as the closest id."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from sayplan_core.cli import main as cli_main
from sayplan_core.graph import GraphError
from sayplan_core.graph.importers import (
    ImportOptions,
    import_grasif,
    import_sayplan,
    import_stanford,
    read_grasif_tasks,
)
from sayplan_core.sim import load_action_set, verify_plan
from sayplan_core.sim.goal_reach import states_like

DATA = Path(__file__).parent / "data"


# ------------------------------------------------------------------ id maps
def test_sayplan_json_id_map_names_every_source_node_as_it_is() -> None:
    source = json.loads((DATA / "sayplan_appendix_l.json").read_text())
    imported = import_sayplan(source)
    listed = {item["id"] for items in source["nodes"].values() for item in items}
    assert imported.id_map == {n: n for n in listed}
    assert set(imported.id_map.values()) <= set(imported.graph.nodes)


def test_grasif_id_map_from_class_index_names_and_implicit_rooms() -> None:
    nodes = [
        {"name": ["fridge", 1], "type": "asset", "place": ["kitchen", 2]},
        {"name": ["milk", 3], "type": "object", "relation": "inside", "related_to": ["fridge", 1]},
        {"name": ["agent", 1], "type": "agent", "location": ["kitchen", 2]},
    ]
    imported = import_grasif(nodes)
    wanted = {json.dumps(n["name"]): f"{n['name'][0]}-{n['name'][1]}" for n in nodes}
    wanted[json.dumps(["kitchen", 2])] = "kitchen-2"  # a room named only by place
    assert imported.id_map == wanted
    assert "hall" in imported.graph.nodes and "hall" not in imported.id_map.values()  # invented, not the source's
    keyed = import_grasif({"places": {"k-1": {}}, "assets": {"t-1": {"place": "k-1"}}})
    assert keyed.id_map == {"k-1": "k-1", "t-1": "t-1"}


def milk_scene(agent: str = "hall") -> list[dict[str, Any]]:
    return [
        {"name": ["kitchen", 1], "type": "room"},
        {"name": ["hall", 1], "type": "room"},
        {"name": ["bench", 1], "type": "asset", "place": ["kitchen", 1], "affordances": ["put_on"]},
        {"name": ["milk", 1], "type": "object", "relation": "ontop_of", "related_to": ["bench", 1]},
        {"name": ["agent", 1], "type": "agent", "location": [agent, 1]},
    ]


def test_cli_writes_an_id_map_per_task_keyed_by_task_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    goal = milk_scene(agent="kitchen")
    goal.append({"name": ["note", 7], "type": "object", "relation": "ontop_of", "related_to": ["bench", 1]})
    tasks = [
        {"id": "go", "instruction": "Go to the kitchen.", "init": milk_scene(), "goal": milk_scene("kitchen")},
        {"id": "other task", "instruction": "Go to the kitchen.", "init": milk_scene(), "goal": goal},
    ]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps(tasks))
    out = tmp_path / "out"
    code = cli_main(["--json", "env", "import", str(source), str(out)])
    text, _ = capsys.readouterr()
    assert code == 4  # 'other task' names a note the start lacks
    ids = json.loads((out / "tasks.ids.json").read_text())
    assert json.loads(text)["id_map"] == str(out / "tasks.ids.json")
    assert list(ids["ids"]) == ["go"]
    entry = ids["ids"]["go"]
    assert entry["env"] == "go.json" and entry["synthetic_links"] == 2
    for which in ("ids", "goal_ids"):
        assert entry[which] == {json.dumps(n["name"]): f"{n['name'][0]}-{n['name'][1]}" for n in milk_scene()}


# ------------------------------------------------------------------ wrong ids come with ids there are
@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            lambda: import_grasif([*milk_scene()[:4], {"name": ["agent", 1], "type": "agent", "holding": ["milc", 1]}]),
            "the agent holds 'milc-1', which is not in the scene (closest: milk-1)",
        ),
        (
            lambda: import_grasif([*milk_scene()[:4], {"name": ["agent", 1], "type": "agent", "holding": "zzz"}]),
            "the agent holds 'zzz', which is not in the scene (objects: milk-1)",
        ),
        (
            lambda: import_sayplan({"nodes": {"room": [{"id": "kitchen"}]}, "links": ["kitchen<->kitchn"]}),
            "'kitchn', which does not exist (closest: kitchen)",
        ),
        (
            lambda: import_sayplan({"nodes": {"room": [{"id": "kitchen"}]}, "links": ["kitchen<->qq"]}),
            "'qq', which does not exist (ids: kitchen)",
        ),
        (
            lambda: import_grasif(milk_scene(), ImportOptions(agent_at="kitchen1")),
            "--agent-at kitchen1: no such node (closest: kitchen-1",
        ),
    ],
)
def test_a_missing_node_is_named_with_ids_there_are(build: Any, expected: str) -> None:
    with pytest.raises(GraphError) as caught:
        build()
    assert expected in str(caught.value)


def test_stanford_object_in_a_missing_room_lists_the_room_ids(tmp_path: Path) -> None:
    import numpy as np

    output = {
        "building": {"name": "X"},
        "room": {1: {"id": 1, "scene_category": "kitchen", "floor_number": "A"}},
        "object": {5: {"id": 5, "class_": "cup", "parent_room": 42}},
    }
    path = tmp_path / "x.npz"
    np.savez(path, output=np.array(output, dtype=object))
    # left out with a note (review 28: one stray object no longer refuses the building), still naming the room ids
    notes = import_stanford(path).notes
    assert any("object 5 (cup) has parent_room 42, not a room (room ids: 1)" in note for note in notes), notes


def test_a_type_list_class_matching_no_node_is_named_with_the_closest_class() -> None:
    imported = import_grasif(milk_scene(), ImportOptions(types={"mlik": "asset"}))
    assert "type list class(es) matching no node (a typo?): mlik (closest: milk)" in imported.summary()


# ------------------------------------------------------------------ goals no action reaches
STATES = ("on", "off", "open", "closed", "dirty")
OPPOSITE = {"on": "off", "off": "on", "open": "closed", "closed": "open"}
AFFORDANCES = ("turn_on", "turn_off", "open", "close")


def gadget_task(task_id: str, node_type: str, affords: list[str], state: str) -> dict[str, Any]:
    """A gadget (asset, or object on a table) starting in the opposite of `state`; the goal asks for `state`."""

    def scene(states: list[str]) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = [
            {"name": ["kitchen", 1], "type": "room"},
            {"name": ["table", 1], "type": "asset", "place": ["kitchen", 1]},
            {"name": ["agent", 1], "type": "agent", "location": ["kitchen", 1]},
        ]
        gadget: dict[str, Any] = {"name": ["gadget", 1], "type": node_type, "states": states, "affordances": affords}
        where = (
            {"place": ["kitchen", 1]} if node_type == "asset" else {"relation": "ontop_of", "related_to": ["table", 1]}
        )
        return [*nodes, {**gadget, **where}]

    start = [OPPOSITE[state]] if state in OPPOSITE else []
    return {"id": task_id, "instruction": f"Make the gadget {state}.", "init": scene(start), "goal": scene([state])}


def reachable_by_one_action(task: dict[str, Any], state: str) -> bool:
    """The oracle: does any action of the set, run by the simulator on the start scene, leave the gadget `state`?"""
    start = import_grasif(task["init"]).graph
    for name in load_action_set("lookplangraph").names():
        result = verify_plan(start, f"{name}(gadget-1) > done", "lookplangraph")
        if result.success and state in result.final_graph().nodes["gadget-1"].states:
            return True
    return False


def test_goal_states_the_action_set_cannot_give_are_flagged_by_task_id() -> None:
    subsets = [list(c) for r in range(len(AFFORDANCES) + 1) for c in itertools.combinations(AFFORDANCES, r)]
    tasks = [
        gadget_task(f"{node_type}-{state}-{'+'.join(affords) or 'none'}", node_type, affords, state)
        for node_type in ("asset", "object")
        for state in STATES
        for affords in subsets
    ]
    found = read_grasif_tasks(tasks)
    flagged = set(found.skipped)
    assert len(found.tasks) + len(flagged) == len(tasks)
    wanted = {t["id"] for t in tasks if not reachable_by_one_action(t, t["goal"][-1]["states"][0])}
    assert flagged == wanted
    assert 0 < len(wanted) < len(tasks)
    [problem] = found.skipped["asset-on-open+close"]
    assert problem == (
        "the goal scene asks 'gadget-1' to be 'on', which it cannot take: 'gadget-1' is an asset affording open, "
        "close; the lookplangraph action set sets it only by turn_on (affordance turn_on, on: asset, object)"
    )
    assert found.skipped["asset-dirty-none"] == [
        "the goal scene asks 'gadget-1' to be 'dirty', a state no action of the lookplangraph action set sets "
        "(it sets: closed, off, on, open)"
    ]


def test_a_goal_state_in_the_wrong_case_is_answered_with_the_state_the_set_sets() -> None:
    actions = load_action_set("lookplangraph")
    assert states_like(actions, "Open") == " (did you mean 'open'?)"
    assert states_like(actions, "clsed") == " (did you mean 'closed'?)"


def test_goal_affordances_and_moves_the_start_cannot_give_are_flagged() -> None:
    def task(task_id: str, milk_affords: list[str], goal_affords: list[str], moved: bool) -> dict[str, Any]:
        init, goal = milk_scene("kitchen"), milk_scene("kitchen")
        init[3]["affordances"], goal[3]["affordances"] = milk_affords, goal_affords
        if moved:
            goal.insert(3, {"name": ["shelf", 1], "type": "asset", "place": ["kitchen", 1], "affordances": ["put_on"]})
            init.insert(3, dict(goal[3]))
            goal[4].update(related_to=["shelf", 1])
        return {"id": task_id, "instruction": "Move the milk.", "init": init, "goal": goal}

    tasks = [
        task("moves", ["pick_up"], ["pick_up"], True),
        task("stuck", [], [], True),
        task("gains", ["pick_up"], ["pick_up", "pour"], False),
    ]
    found = read_grasif_tasks(tasks)
    assert [t.id for t in found.tasks] == ["moves"]
    assert found.skipped["stuck"] == [
        "the goal scene moves 'milk-1' (to 'shelf-1'), which cannot be picked up: 'milk-1' is an object affording "
        "nothing; the lookplangraph action set picks up by pick_up (affordance pick_up or pickup, on: object)"
    ]
    assert found.skipped["gains"] == [
        "the goal scene gives 'milk-1' affordance(s) its start lacks, and no action adds one: pour ('milk-1' is an "
        "object affording pick_up)"
    ]
    # the oracle for the moves: the simulator picks the milk up only where the import let the task through
    for item in tasks[:2]:
        start = import_grasif(item["init"]).graph
        plan = "pick_up(milk-1) > put_on(shelf-1) > done"
        assert verify_plan(start, plan, "lookplangraph").success == (item["id"] == "moves")
    # another action set is checked by its own actions: the sayplan set picks up only what affords pickup/pick_up
    assert set(read_grasif_tasks(tasks, action_set="sayplan").skipped) == {"stuck", "gains"}


def test_cli_checks_goals_against_the_action_set_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--action-set` picks the actions goals are checked against; on one scene it is refused (it checks goals)."""
    tasks = [gadget_task("lamp", "asset", ["turn_on"], "on")]
    source = tmp_path / "tasks.json"
    source.write_text(json.dumps(tasks))
    actions = tmp_path / "no_toggle.yaml"
    actions.write_text(
        "name: no_toggle\nactions:\n  go_to: {targets: [room], affordance: null, effects: [move_agent]}\n"
        "  done: {targets: [], affordance: null, effects: [finish]}\n"
    )
    assert cli_main(["env", "import", str(source), str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert cli_main(["env", "import", str(source), str(tmp_path / "b"), "--action-set", str(actions)]) == 2
    _, err = capsys.readouterr()
    assert "skipped task 'lamp': the goal scene asks 'gadget-1' to be 'on', a state no action of the no_toggle" in err
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps(tasks[0]["init"]))
    assert cli_main(["env", "import", str(scene), str(tmp_path / "s.json"), "--action-set", "sayplan"]) == 2
    assert "--action-set checks the goals of a task list" in capsys.readouterr().err


def test_a_goal_room_the_start_lacks_comes_with_the_start_rooms() -> None:
    goal = milk_scene()
    goal.append({"name": ["zz", 9], "type": "room"})
    found = read_grasif_tasks([{"id": "t", "instruction": "Go.", "init": milk_scene(), "goal": goal}])
    assert found.skipped["t"] == [
        "the goal scene names room(s) the start scene lacks, so it cannot be reached: 'zz-9' (its rooms: hall-1, "
        "kitchen-1)"
    ]


def test_the_invented_hallway_is_not_offered_as_the_closest_id() -> None:
    nodes = [{"name": ["kitchen", 1], "type": "place"}, {"name": ["bathroom", 1], "type": "place"}]
    plain = import_grasif(nodes)  # no connectivity in the data: a hallway pose is invented and named 'hall'
    assert "hall" in plain.graph.nodes and plain.graph.nodes["hall"].attributes.get("synthetic")
    with pytest.raises(GraphError) as info:
        import_grasif(nodes, ImportOptions(agent_at="hal"))
    message = str(info.value)
    assert "--agent-at hal: no such node" in message
    assert "hall" not in message.replace("--agent-at hal:", ""), message
    assert "kitchen-1" in message  # a wrong id still comes with ids there are
