"""LTL missions: prefix parsing and co-safety, MONA automata, optimal product-graph A*, and the planner's loop."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from typing import Any

import pytest
from transcripts import FAST, transcript

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.ltl import (
    FormulaError,
    NoSatisfyingPathError,
    ProductSearch,
    build_dfa,
    check_co_safe,
    dijkstra_to_each_goal,
    parse_prefix,
)
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.sim import verify_plan

if shutil.which("mona") is None:
    print("test_ltl: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "the formula is empty"),
        ("& F kitchen", "ends early"),
        ("F kitchen lab", "unexpected tokens after a complete formula: 'lab'"),
        ("F garage", "'garage' is neither an operator nor a node id"),
    ],
)
def test_parse_errors_name_the_problem(text: str, error: str) -> None:
    with pytest.raises(FormulaError, match=error):
        parse_prefix(text, {"kitchen", "lab"})


@pytest.mark.parametrize(
    ("text", "co_safe"),
    [
        ("& F kitchen F lab", True),
        ("U ! lab kitchen", True),
        ("! G ! kitchen", True),  # = F kitchen
        ("G ! lab", False),
        ("! F lab", False),  # = G ! lab
        ("-> kitchen F lab", True),
        ("R kitchen lab", False),
    ],
)
def test_syntactic_co_safety(text: str, co_safe: bool) -> None:
    formula = parse_prefix(text)
    if co_safe:
        check_co_safe(formula)
    else:
        with pytest.raises(FormulaError, match="not syntactically co-safe"):
            check_co_safe(formula)


def test_unsatisfiable_formula_is_refused() -> None:
    with pytest.raises(FormulaError, match="can never be satisfied"):
        build_dfa(parse_prefix("& F kitchen ! F kitchen"))


def brute_force_reach_all(graph: Any, start: str, goals: list[str]) -> float:
    """The cheapest order to visit every goal, by trying them all."""
    return min(dijkstra_to_each_goal(graph, start, list(order)).cost for order in itertools.permutations(goals))


def test_product_astar_is_optimal_and_the_heuristic_only_saves_work() -> None:
    graph = generate_building(BuildingSpec(floors=2, rooms_per_floor=10, seed=3))
    rooms = graph.ids_of_type("room")
    objects = graph.ids_of_type("object")
    rng = random.Random(7)
    start = graph.agent_location()
    assert start is not None
    saved = 0
    for _ in range(8):
        goals = rng.sample(rooms, 2) + rng.sample(objects, 1)
        text = "& F {} & F {} F {}".format(*goals)
        dfa = build_dfa(parse_prefix(text))
        informed = ProductSearch(graph, dfa).search(start)
        blind = ProductSearch(graph, dfa, use_heuristic=False).search(start)
        assert informed.cost == pytest.approx(blind.cost)
        assert informed.cost == pytest.approx(brute_force_reach_all(graph, start, goals))
        assert informed.cost <= dijkstra_to_each_goal(graph, start, goals).cost + 1e-9
        assert informed.expansions <= blind.expansions
        saved += blind.expansions - informed.expansions
    assert saved > 0


def test_avoid_until_takes_a_detour() -> None:
    import networkx as nx

    office = load_env("office")
    start = office.agent_location()
    assert start is not None
    direct = ProductSearch(office, build_dfa(parse_prefix("F nikos_office"))).search(start)
    # a node the direct path goes through, with another way around it
    blocked = next(
        n for n in direct.nodes[1:-1] if nx.has_path(nx.restricted_view(office.nav, [n], []), start, "nikos_office")
    )
    detour = ProductSearch(office, build_dfa(parse_prefix(f"U ! {blocked} nikos_office"))).search(start)
    assert blocked not in detour.nodes and detour.nodes[-1] == "nikos_office"
    assert detour.cost > direct.cost
    with pytest.raises(NoSatisfyingPathError):  # a cut vertex cannot be avoided
        cut = next(
            n
            for n in direct.nodes[1:-1]
            if not nx.has_path(nx.restricted_view(office.nav, [n], []), start, "nikos_office")
        )
        ProductSearch(office, build_dfa(parse_prefix(f"U ! {cut} nikos_office"))).search(start)


def ground(*pairs: tuple[str, str]) -> str:
    return json.dumps({"mapping": [{"phrase": p, "node": n} for p, n in pairs]})


def formula(text: str) -> str:
    return json.dumps({"formula": text})


def run(*answers: str) -> Any:
    planner = make_planner("ltl", transcript(*answers), PlannerOptions(budget=FAST))
    return planner.plan(load_env("office"), "Fetch the coffee mug from the kitchen, then go to Niko's desk.")


def test_planner_grounds_translates_and_plans_the_optimal_path() -> None:
    result = run(
        ground(("coffee mug", "coffee_mug"), ("Niko's desk", "nikos_desk")),
        formula("G F coffee_mug"),  # not co-safe: re-asked with the reason
        formula("F & coffee_mug F garage"),  # not a grounded id
        formula("F & coffee_mug F nikos_desk"),
    )
    assert result.success and result.verified, result.message
    feedback = [c.detail for c in result.calls if c.outcome == "bad_answer"]
    assert len(feedback) == 2 and "not syntactically co-safe" in feedback[0] and "'garage'" in feedback[1]
    visited = [s.target for s in result.plan if s.action == "goto"]
    assert visited.index("kitchen") < visited.index("nikos_office")
    office = load_env("office")
    start = office.agent_location()
    expected = dijkstra_to_each_goal(office, start, ["coffee_mug", "nikos_desk"]).cost  # type: ignore[arg-type]
    assert f"cost {expected:.1f}" in result.message
    assert verify_plan(office, result.full_plan, strict_navigation=True).success


def test_planner_gives_up_when_the_formula_never_checks() -> None:
    result = run(ground(("mug", "coffee_mug")), *[formula("& F coffee_mug")] * 4)
    assert not result.success and result.failure is PlanCode.BUDGET_EXHAUSTED
    assert "no usable answer after 4 tries at the translate step" in result.message
    assert "ends early" in result.message


def test_planner_refuses_ungrounded_nodes() -> None:
    result = run(ground(("mug", "the_mug")), ground(("mug", "coffee_mug")), formula("F coffee_mug"))
    assert result.success
    assert [c.detail for c in result.calls if c.outcome == "bad_answer"] == [
        "'the_mug' is not a room, pose, asset or object id of the scene graph"
    ]


def test_planner_reports_a_mission_no_path_satisfies() -> None:
    start = load_env("office").agent_location()
    # "stay out of the start node until the kitchen": violated by the very first position
    result = run(ground(("kitchen", "kitchen"), ("here", str(start))), formula(f"U ! {start} kitchen"))
    assert not result.success and result.failure is PlanCode.SEARCH_FAILED
    assert result.message.startswith("no path through the navigation graph satisfies the mission")


def test_planner_without_mona_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run(ground(("kitchen", "kitchen")), formula("F kitchen"))
    assert not result.success and not result.calls
    assert result.message == (
        "the ltl planner cannot run here: the 'mona' program is not installed (Debian: apt-get install mona)"
    )
