"""LTL missions: product-graph A* against the search without its heuristic and the in-order baseline, and the
planner's loop (grounding, translation, re-asks, the independent trace check). Optimality against a brute-force
oracle is in test_ltl_optimality.py, the automaton against the LTLf definition in test_ltl_semantics.py."""

from __future__ import annotations

import json
import random
import shutil
from typing import Any

import pytest
from transcripts import FAST, transcript

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.ltl import (
    AutomatonError,
    NoSatisfyingPathError,
    ProductSearch,
    build_dfa,
    dijkstra_to_each_goal,
    holds,
    parse_prefix,
)
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.planners.ltl import LtlOptions, grounding_catalogue, trace_violation
from sayplan_core.sim import verify_plan

if shutil.which("mona") is None:
    print("test_ltl: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)


def test_the_heuristic_only_saves_work() -> None:
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
        assert informed.cost <= dijkstra_to_each_goal(graph, start, goals).cost + 1e-9
        assert holds(parse_prefix(text), informed.trace)
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
        formula("W coffee_mug nikos_desk"),  # weak until is not accepted: re-asked with the vocabulary
        formula("F & coffee_mug F garage"),  # not a grounded id
        formula("F & coffee_mug F nikos_desk"),
    )
    assert result.success and result.verified, result.message
    feedback = [c.detail for c in result.calls if c.outcome == "bad_answer"]
    assert (
        len(feedback) == 2
        and "'W' is neither an operator" in feedback[0]
        and "UNTIL" in feedback[0]
        and "'garage'" in feedback[1]
    )
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
        "'the_mug' is not the id of a floor, room, pose, asset, object or workspace"
    ]


def test_planner_reports_a_mission_no_path_satisfies() -> None:
    start = load_env("office").agent_location()
    # "stay out of the start node until the kitchen": violated by the very first position
    result = run(ground(("kitchen", "kitchen"), ("here", str(start))), formula(f"U ! {start} kitchen"))
    assert not result.success and result.failure is PlanCode.SEARCH_FAILED
    assert result.message.startswith("no path through the navigation graph satisfies the mission")
    assert f"the start position {start} (where {start} hold) already violates it" in result.message


def test_a_path_the_trace_check_rejects_is_an_internal_error_never_a_plan() -> None:
    office = load_env("office")
    start = office.agent_location()
    assert start is not None
    path = ProductSearch(office, build_dfa(parse_prefix("& F kitchen F pose12"))).search(start)
    assert trace_violation(parse_prefix("& F kitchen F pose12"), path) is None
    wrong = trace_violation(parse_prefix("& F kitchen G ! pose12"), path)  # a path found for another formula
    assert wrong is not None and wrong.startswith("internal error: the path found for & F kitchen G ! pose12")


def test_planner_plans_missions_with_always_and_objects() -> None:
    result = run(
        ground(("mug", "coffee_mug"), ("desk", "nikos_desk"), ("orange", "orange"), ("pose", "pose10")),
        formula("AND G NOT pose10 AND EVENTUALLY orange EVENTUALLY AND coffee_mug EVENTUALLY nikos_desk"),
    )
    assert result.success and result.verified, result.message
    steps = [str(s) for s in result.plan]
    assert "goto(pose10)" not in steps
    assert "access(kitchen_bench)" in steps and "access(kitchen_cupboard)" in steps  # the orange, the mug
    assert steps[-2:] == ["access(nikos_desk)", "done"]


def test_planner_without_mona_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run(ground(("kitchen", "kitchen")), formula("F kitchen"))
    assert not result.success and not result.calls
    assert result.message == (
        "the ltl planner cannot run here: the 'mona' program is not installed (Debian: apt-get install mona)"
    )


def test_the_grounding_prompt_lists_floors_room_connections_and_contents() -> None:
    home = load_env("home")
    catalogue = json.loads(grounding_catalogue(home))
    assert sorted(catalogue) == sorted(home.ids_of_type("floor"))
    kitchen = next(f["rooms"]["kitchen"] for f in catalogue.values() if "kitchen" in f["rooms"])
    assert kitchen["connects_to"] == home.neighbours("kitchen")
    assert "oven" in kitchen["contains"] and "milk" in kitchen["contains"]
    poses = {p: n for f in catalogue.values() for p, n in f["poses"].items()}
    assert set(poses) == set(home.ids_of_type("pose"))
    assert all(home.nav.has_edge(p, q) for p, near in poses.items() for q in near)
    assert home.held_object() is None and "in the robot's hand" not in catalogue


def test_the_grounding_prompt_lists_the_object_in_the_hand() -> None:
    office = load_env("office")
    office.set_parent("coffee_mug", office.agent_id, "inside_hand")
    catalogue = json.loads(grounding_catalogue(office))
    assert catalogue["in the robot's hand"] == ["coffee_mug"]


def test_automata_are_cached_by_the_formula_shape() -> None:
    from sayplan_core.ltl.automaton import _run_mona

    build_dfa(parse_prefix("& F kitchen G ! lab"))
    before = _run_mona.cache_info()
    dfa = build_dfa(parse_prefix("& F office G ! pantry"))  # same shape, atoms in the same sorted order
    after = _run_mona.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    assert dfa.accepts([frozenset({"office"})]) and not dfa.accepts([frozenset({"office", "pantry"})])


def test_a_mission_no_path_satisfies_is_reported_with_the_reason() -> None:
    graph = generate_building(BuildingSpec(floors=1, rooms_per_floor=6, seed=1))
    start = graph.agent_location()
    assert start is not None
    room = graph.ids_of_type("room")[0]
    door = graph.neighbours(room)[0]
    graph.disconnect(room, door)
    with pytest.raises(NoSatisfyingPathError, match=f"{room} hold\\(s\\) nowhere the robot can go from {start}"):
        ProductSearch(graph, build_dfa(parse_prefix(f"F {room}"))).search(start)
    other = next(r for r in graph.ids_of_type("room") if r != room)
    # every path to the other room leaves the start pose
    with pytest.raises(NoSatisfyingPathError, match="its constraints rule out every way through this building"):
        ProductSearch(graph, build_dfa(parse_prefix(f"& F {other} X G {start}"))).search(start)


def test_a_reach_distance_out_of_range_is_refused_before_planning() -> None:
    # the settings say 0.05..100 m; make_planner once took 0 (and the options their own (0, 100])
    for bad in (0.0, 0.01, 150.0):
        with pytest.raises(ValueError, match=r"reach_distance must be (>= 0\.05|<= 100), got"):
            make_planner("ltl", transcript(), PlannerOptions(), LtlOptions(reach_distance=bad))


def test_an_automaton_too_large_to_read_is_refused_with_the_reason() -> None:
    # five propositions each followed two letters later by itself, and five more in any order: MONA prints over
    # 500 MB, which took about 50 s to read; the build now stops reading at the cap
    atoms = [f"p{i}" for i in range(10)]
    parts = [f"F & {a} X X {a}" for a in atoms[:5]] + [f"F {a}" for a in atoms[5:]]
    text = parts[-1]
    for part in reversed(parts[:-1]):
        text = f"& {part} {text}"
    with pytest.raises(AutomatonError, match="too large"):
        build_dfa(parse_prefix(text))
