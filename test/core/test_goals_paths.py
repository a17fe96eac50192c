"""Goal checking, plan scoring, and the path planner (Dijkstra, A*, plan expansion).

`nav_edge_costs` (what the ltl search reads) gives each link the cost the path planner gives it, with and without
positions and weights, between floors."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph import GraphError
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.nav import NoPathError, PathPlanner
from sayplan_core.nav.path_planner import nav_edge_costs
from sayplan_core.sim import check_goals, goal_from_dict, parse_plan, verify_plan
from sayplan_core.sim.goals import score_against_goal_graph, score_against_goals


def test_goal_predicates_on_office() -> None:
    graph = load_env("office")
    goals = [
        goal_from_dict({"kind": "placed", "node": "orange", "relation": "ontop_of", "target": "kitchen_bench"}),
        goal_from_dict({"kind": "placed", "node": "orange", "relation": "in_room", "target": "kitchen"}),
        goal_from_dict({"kind": "state", "node": "fridge", "state": "closed"}),
        goal_from_dict({"kind": "state", "node": "fridge", "state": "open", "negate": True}),
        goal_from_dict({"kind": "holding", "node": ""}),
        goal_from_dict({"kind": "agent_at", "target": "pose7"}),
        goal_from_dict({"kind": "not_placed", "node": "beer", "relation": "in_room", "target": "meeting_room4"}),
    ]
    report = check_goals(graph, goals)
    assert report.success, report.summary()
    unmet = check_goals(graph, [goal_from_dict({"kind": "state", "node": "fridge", "state": "open"})])
    assert not unmet.success and unmet.summary() == "unmet: open(fridge)"


def test_goal_alternatives_and_count() -> None:
    graph = load_env("office")
    two = goal_from_dict(
        {"kind": "placed", "node": "tshirt2|tshirt3|tshirt1", "relation": "ontop_of", "target": "phd_desk3", "count": 2}
    )
    three = goal_from_dict(
        {"kind": "placed", "node": "tshirt2|tshirt3|tshirt1", "relation": "ontop_of", "target": "phd_desk3", "count": 3}
    )
    assert check_goals(graph, [two]).success
    assert not check_goals(graph, [three]).success


def test_bad_goals_are_rejected() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        goal_from_dict({"kind": "teleported", "node": "x"})
    with pytest.raises(ValueError, match="relation must be"):
        goal_from_dict({"kind": "placed", "node": "x", "relation": "under", "target": "y"})
    with pytest.raises(GraphError, match="'unicorn', which is not in the graph"):
        check_goals(load_env("office"), [goal_from_dict({"kind": "state", "node": "unicorn", "state": "on"})])


def test_plan_precision_counts_side_effects() -> None:
    graph = load_env("office")
    plan = "goto(kitchen) > open(fridge) > access(kitchen_bench) > pickup(orange) > access(fridge) > release(orange) > done"
    final = verify_plan(graph, plan).final_graph()
    goals = [goal_from_dict({"kind": "placed", "node": "orange", "relation": "inside_of", "target": "fridge"})]
    score = score_against_goals(graph, final, goals)
    assert score.success
    assert score.changed == ["fridge", "orange"] and score.correct == ["orange"]
    assert score.precision == pytest.approx(0.5)


def test_scoring_against_a_goal_graph() -> None:
    graph = load_env("office")
    goal_graph = verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine) > done").final_graph()
    good = verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine)").final_graph()
    bad = verify_plan(graph, "goto(kitchen) > open(fridge)").final_graph()
    assert score_against_goal_graph(graph, good, goal_graph).success
    wrong = score_against_goal_graph(graph, bad, goal_graph)
    assert not wrong.success and wrong.precision == 0.0 and wrong.important == ["agent", "coffee_machine"]


# ------------------------------------------------------------------ path planner
def test_dijkstra_and_astar_agree() -> None:
    graph = load_env("office")
    planner = PathPlanner(graph)
    d = planner.shortest_path("reception", "server_room")
    a = planner.shortest_path("reception", "server_room", method="astar")
    assert d.cost == pytest.approx(a.cost)
    assert d.nodes[0] == "reception" and d.nodes[-1] == "server_room"
    assert all(graph.nav.has_edge(x, y) for x, y in zip(d.nodes, d.nodes[1:], strict=False))


def test_path_across_floors() -> None:
    graph = load_env("home")
    path = PathPlanner(graph).shortest_path("kitchen", "bedroom5")
    assert "stairs_ground" in path.nodes and "stairs_basement" in path.nodes
    assert graph.nodes[path.nodes[-1]].position is not None


def test_expand_plan_inserts_pose_hops() -> None:
    graph = load_env("office")
    planner = PathPlanner(graph)
    full = planner.expand_plan(parse_plan("goto(kitchen) > access(fridge) > goto(cafeteria)"))
    text = " > ".join(str(s) for s in full)
    assert text.startswith("goto(pose8) > goto(pose9)") and "goto(pose12) > goto(kitchen) > access(fridge)" in text
    assert text.endswith("goto(pose12) > goto(pose13) > goto(cafeteria)")
    assert verify_plan(graph, full, strict_navigation=True).success


def test_unreachable_and_wrong_nodes_are_clear() -> None:
    graph = load_env("office")
    graph.disconnect("cafeteria", "pose13")
    planner = PathPlanner(graph)
    with pytest.raises(NoPathError, match="'cafeteria' is unreachable from 'kitchen'"):
        planner.shortest_path("kitchen", "cafeteria")
    with pytest.raises(GraphError, match="goal 'fridge' is an asset"):
        planner.shortest_path("kitchen", "fridge")
    with pytest.raises(GraphError, match="did you mean 'kitchen'"):
        planner.shortest_path("kichen", "reception")


def test_generated_building_paths() -> None:
    graph = generate_building(BuildingSpec(floors=3, rooms_per_floor=10, seed=4))
    planner = PathPlanner(graph)
    a, b = planner.farthest_pair()
    d = planner.shortest_path(a, b)
    s = planner.shortest_path(a, b, method="astar")
    assert d.cost == pytest.approx(s.cost) and d.cost > 0


def test_goal_graph_scoring_checks_the_agent() -> None:
    """A goal graph that puts the agent somewhere is met only when the agent got there (issue 13)."""
    graph = load_env("office")
    goal_graph = verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine) > goto(nikos_office) > done").final_graph()
    stayed = verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine) > done").final_graph()
    score = score_against_goal_graph(graph, stayed, goal_graph)
    assert not score.success and "agent" in score.important
    went = verify_plan(graph, "goto(kitchen) > turn_on(coffee_machine) > goto(nikos_office)").final_graph()
    assert score_against_goal_graph(graph, went, goal_graph).success
    # a pose inside the goal room counts as being in that room; holding is part of the agent too
    holding = verify_plan(graph, "goto(kitchen) > access(kitchen_bench) > pickup(orange)").final_graph()
    empty_handed = verify_plan(graph, "goto(kitchen)").final_graph()
    assert not score_against_goal_graph(graph, empty_handed, holding).success
    assert score_against_goal_graph(graph, holding, holding).success


@pytest.mark.parametrize("weight", [None, 0.0, 2.5, 1e9])
@pytest.mark.parametrize("positions", [(None, None), ((0, 0, 0), (3, 4, 0)), ((0, 0, 0), (0, 0, 0)), ((0, 0, 0), None)])
def test_nav_edge_costs_agree_with_the_path_planner_between_floors(
    weight: float | None, positions: tuple[Any, Any]
) -> None:
    graph = SceneGraph("two floors")
    graph.add_node(Node("b", "building"))
    for floor in ("f1", "f2"):
        graph.add_node(Node(floor, "floor"))
        graph.set_parent(floor, "b", "in")
    graph.add_node(Node("stairs_low", "pose", position=positions[0]))
    graph.add_node(Node("stairs_high", "pose", position=positions[1]))
    graph.set_parent("stairs_low", "f1", "in")
    graph.set_parent("stairs_high", "f2", "in")
    graph.connect("stairs_low", "stairs_high", weight)
    [(a, b, cost)] = list(nav_edge_costs(graph))
    assert {a, b} == {"stairs_low", "stairs_high"}
    assert cost == PathPlanner(graph).edge_cost(a, b)
    if None in positions:  # no geometry: the stored weight, else the default
        assert cost == (weight if weight is not None else 1.0)
    else:
        straight = math.dist(positions[0], positions[1])
        assert cost == (max(straight, weight) if weight is not None else max(straight, 1e-6))
