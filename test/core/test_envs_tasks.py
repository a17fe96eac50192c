"""Bundled environments and the 90 SayPlan tasks: every task fits its env, planning tasks are solvable."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from sayplan_core.envs import load_env
from sayplan_core.envs.authoring import env_from_authoring
from sayplan_core.envs.generator import BuildingSpec, generate_building, spec_for_size
from sayplan_core.envs.tasks import SearchGoal, Task, TaskFileError, apply_setup, check_task_nodes, load_tasks
from sayplan_core.graph import GraphError, graph_from_dict, graph_to_dict
from sayplan_core.nav import PathPlanner
from sayplan_core.sim import check_goals, verify_plan

TASKS = load_tasks()
ENVS = {name: load_env(name) for name in ("office", "home")}


def test_environment_sizes_follow_the_paper() -> None:
    office, home = ENVS["office"], ENVS["home"]
    assert office.count("room") == 37
    assert 140 <= office.count("asset") + office.count("object") <= 180
    assert home.count("room") == 28 and home.count("floor") == 3
    assert 100 <= home.count("asset") + home.count("object") <= 125
    for graph in ENVS.values():
        components = {graph.nav_component(n) for n in graph.nav.nodes}
        assert len(components) == 1, "every room must be reachable"


def test_every_floor_holds_rooms_and_no_two_places_of_a_floor_coincide() -> None:
    # home once put its ground floor's rooms on the basement: the kitchen and bedroom5 at one point, the ground
    # floor empty and the stairs between them 0 m long
    for name, graph in ENVS.items():
        for floor in graph.ids_of_type("floor"):
            rooms = [r for r in graph.ids_of_type("room") if graph.enclosing(r, "floor") == floor]
            assert rooms, f"{name}: floor {floor} holds no room"
            heights = {graph.nodes[r].position[2] for r in rooms}  # type: ignore[index]
            assert len(heights) == 1, f"{name}: the rooms of {floor} stand at heights {heights}"
        seen: dict[tuple[float, ...], str] = {}
        for node in sorted(graph.nav.nodes):
            where = tuple(graph.nodes[node].position or ())
            assert where not in seen, f"{name}: {node} and {seen[where]} stand at the same point {where}"
            seen[where] = node


def test_an_env_file_names_its_default_floor() -> None:
    with pytest.raises(GraphError, match="default_floor 'attic' is not one of the floors"):
        env_from_authoring({"floors": ["f1"], "default_floor": "attic", "rooms": {"a": [0, 0]}})


def test_ninety_tasks_in_four_families() -> None:
    assert len(TASKS) == 90
    families = Counter(t.family for t in TASKS)
    assert families == {"simple_search": 30, "complex_search": 30, "simple_planning": 15, "long_horizon": 15}
    assert sum(1 for t in TASKS if t.checkable) >= 88


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_task_names_only_existing_nodes(task: Task) -> None:
    assert check_task_nodes(ENVS[task.env], task) == []


PLANNING = [t for t in TASKS if t.reference_plan]


@pytest.mark.parametrize("task", PLANNING, ids=lambda t: t.id)
def test_reference_plan_is_feasible_and_meets_the_goal(task: Task) -> None:
    graph = apply_setup(ENVS[task.env], task)
    full = PathPlanner(graph).expand_plan(task.reference_plan)
    result = verify_plan(graph, full, strict_navigation=True)
    assert result.success, f"{task.id}: step {result.failed_step}: {result.feedback}"
    if task.predicates:
        report = check_goals(result.final_graph(), task.predicates)
        assert report.success, f"{task.id}: {report.summary()}"


@pytest.mark.parametrize("task", [t for t in TASKS if t.predicates], ids=lambda t: t.id)
def test_planning_goal_is_not_already_met(task: Task) -> None:
    """A goal that holds before any action would make the task meaningless."""
    assert not check_goals(apply_setup(ENVS[task.env], task), task.predicates).success


def test_search_goal_scoring() -> None:
    assert SearchGoal(any=("a", "b")).satisfied_by(["b", "z"])
    assert not SearchGoal(any=("a", "b"), count=2).satisfied_by(["b"])
    assert SearchGoal(all=("a", "b")).satisfied_by(["a", "b", "c"])
    assert SearchGoal(none=True).satisfied_by([]) and not SearchGoal(none=True).satisfied_by(["x"])


def test_setup_applies_to_a_copy() -> None:
    task = next(t for t in TASKS if t.id == "office-sp-15")
    graph = ENVS["office"]
    prepared = apply_setup(graph, task)
    assert prepared.held_object() == "empty_coffee_cup"
    assert graph.held_object() is None


def test_bad_task_file(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.yaml"
    bad.write_text("tasks:\n  - {id: t1, env: office, family: 'cooking tasks!', instruction: x, note: n}\n")
    with pytest.raises(TaskFileError, match="task t1: family 'cooking tasks!' must be a name"):
        load_tasks(bad)
    bad.write_text("tasks:\n  - {id: t1, env: office, family: x, instruction: x, goal: {graph: g.json, search: {}}}\n")
    with pytest.raises(TaskFileError, match="holds one of 'predicates', 'search' or 'graph'"):
        load_tasks(bad)
    bad.write_text("[" * 50_000)
    with pytest.raises(TaskFileError, match=r"tasks\.yaml"):
        load_tasks(bad)
    bad.write_text("tasks:\n  - {id: t2, env: office, family: simple_planning, instruction: x, goal: null}\n")
    with pytest.raises(TaskFileError, match="needs a 'note'"):
        load_tasks(bad)


def test_custom_families_and_goal_graphs_relative_to_the_task_file(tmp_path: Path) -> None:
    """Issue 13: task files are not limited to SayPlan's four families, and a goal may be a goal graph."""
    from sayplan_core.graph.native_format import save
    from sayplan_core.sim import verify_plan

    graph = load_env("office")
    save(verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine)").final_graph(), tmp_path / "goal.json")
    save(graph, tmp_path / "scene.json")
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  - {id: c1, env: scene.json, family: cooking, instruction: make coffee, goal: {graph: goal.json}}\n"
    )
    (task,) = load_tasks(tmp_path / "tasks.yaml")
    assert task.family == "cooking" and task.checkable and not task.is_search
    assert task.env == str(tmp_path / "scene.json") and task.goal_graph == str(tmp_path / "goal.json")
    assert len(load_env(task.env)) == len(graph)


def test_unknown_env_is_a_clear_error() -> None:
    with pytest.raises(GraphError, match="unknown environment 'hospital'"):
        load_env("hospital")


@pytest.mark.parametrize("size", [1000, 10000])
def test_generator_is_seeded_valid_and_sized(size: int) -> None:
    spec = spec_for_size(size, seed=7)
    graph = generate_building(spec)
    assert 0.8 * size <= len(graph) <= 1.2 * size
    again = generate_building(spec)
    assert graph_to_dict(graph) == graph_to_dict(again)
    assert len(graph_from_dict(graph_to_dict(graph))) == len(graph)
    assert len({graph.nav_component(n) for n in graph.nav.nodes}) == 1


def test_generated_containers_block_contents() -> None:
    graph = generate_building(BuildingSpec(floors=1, rooms_per_floor=4, seed=1))
    closed = next(n for n in graph.iter_nodes("asset") if "closed" in n.states and graph.children(n.id))
    room = graph.room_of(closed.id)
    item = graph.children(closed.id)[0]
    result = verify_plan(graph, f"goto({room}) > access({closed.id}) > pickup({item})")
    assert result.feedback == f"cannot pickup({item}): it is inside {closed.id}, which is closed"


def test_every_task_field_is_checked_at_load_time(tmp_path: Path) -> None:
    """A string where a mapping belongs is a TaskFileError naming task and field, not an AttributeError."""
    bad = tmp_path / "tasks.yaml"
    bad.write_text("tasks:\n  - {id: a, env: office, family: f, instruction: find the mug, goal: {search: mug}}\n")
    with pytest.raises(TaskFileError, match=r"tasks\.yaml: task a: goal 'search' must be a mapping .*got 'mug'$"):
        load_tasks(bad)
    bad.write_text(
        "tasks:\n"
        "  - {id: a, env: office, family: f, instruction: x, goal: {search: {any: [mug]}}, setup: abc}\n"
        "  - {id: b, env: office, family: f, instruction: x, goal: {search: {any: mug, count: 0, colour: red}}}\n"
        "  - {id: c, env: office, family: f, instruction: x, goal: {predicates: {kind: holding}},"
        " setup: [{kind: state, node: lamp}, {kind: hold, node: 3}, {kind: paint, node: wall}, oops]}\n"
        "  - {id: d, env: 5, family: f, instruction: x, goal: {predicates: [{kind: flying}]},"
        " reference_plan: {steps: []}, note: [n]}\n"
    )
    with pytest.raises(TaskFileError) as info:
        load_tasks(bad)
    message = str(info.value)
    for expected in (
        "13 problems: ",
        "task a: 'setup' must be a list of changes",
        "task b: goal 'search' has unknown field(s) colour",
        "task b: goal 'search.any' must be a list of node ids, got 'mug'",
        "task b: goal 'search.count' must be a whole number >= 1, got 0",
        "task c: goal 'predicates' must be a non-empty list of predicates",
        "task c: setup[0]: 'states' must be a non-empty list of states, got None",
        "task c: setup[1]: 'node' must be a node id, got 3",
        "task c: setup[2]: kind must be state or hold, got 'paint'",
        "task c: setup[3] must be a mapping",
        "task d: 'env' must be a string, got 5",
        "task d: 'note' must be a string",
        "task d: goal 'predicates[0]': goal {'kind': 'flying'}: kind must be one of",
        "task d: 'reference_plan': a plan object needs a 'plan' list",
    ):
        assert expected in message, (expected, message)
    many = "".join(
        f"  - {{id: t{i}, env: office, family: f, instruction: x, goal: {{search: x}}}}\n" for i in range(25)
    )
    bad.write_text("tasks:\n" + many)
    with pytest.raises(TaskFileError, match=r"25 problems: .*; and 5 more$"):
        load_tasks(bad)


def test_search_goals_that_cannot_be_met_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.yaml"
    for search, expected in (
        ("{}", "needs 'any' or 'all' nodes, or none: true"),
        ("{none: true, any: [mug]}", "with none: true lists no nodes"),
        ("{any: [mug], count: 2}", "'search.count' is 2, more than the 1 node(s) in 'any'"),
        ("{none: yes please}", "'search.none' must be true or false"),
    ):
        bad.write_text(f"tasks:\n  - {{id: s, env: office, family: f, instruction: x, goal: {{search: {search}}}}}\n")
        with pytest.raises(TaskFileError, match=re.escape(expected)):
            load_tasks(bad)


def test_a_missing_goal_graph_is_reported_when_the_task_file_is_read(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text("tasks:\n  - {id: b, env: office, family: f, instruction: x, goal: {graph: nothere.json}}\n")
    with pytest.raises(TaskFileError, match=r"task b: goal 'graph': cannot read scene graph file .*nothere\.json"):
        load_tasks(tasks)
    (tmp_path / "nothere.json").write_text('{"format": "sayplan-3dsg", "nodes": [')
    with pytest.raises(TaskFileError, match=r"task b: goal 'graph': .*nothere\.json: not valid JSON"):
        load_tasks(tasks)
