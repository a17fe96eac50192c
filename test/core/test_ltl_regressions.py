"""Each defect of issue 12, reproduced on the smallest case that shows it."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from transcripts import FAST, transcript

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_from_dict
from sayplan_core.ltl import NoSatisfyingPathError, ProductSearch, build_dfa, parse_prefix
from sayplan_core.planners import PlannerOptions, make_planner
from sayplan_core.sim.plan import PlanStep

if shutil.which("mona") is None:
    print("test_ltl_regressions: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)


def accepts(text: str, word: list[set[str]]) -> bool:
    dfa = build_dfa(parse_prefix(text))
    state = dfa.initial
    for letter in word:
        state = dfa.step(state, frozenset(letter))
    return state in dfa.accepting


def test_a_guard_with_a_bracketed_disjunction_is_read_as_written() -> None:
    # F c & G !(a & b): the one-letter word {a, c} satisfies it (b never holds)
    assert accepts("& F c G ! & a b", [{"a", "c"}])


def test_an_implication_is_not_discharged_by_its_premise() -> None:
    # F a & ((b | c) -> F d): a word starting with {b} must still reach d
    assert not accepts("& F a -> | b c F d", [{"b"}, {"a"}])
    assert accepts("& F a -> | b c F d", [{"b"}, {"a"}, {"d"}])
    assert accepts("& F a -> | b c F d", [{"a"}])


def ground(*pairs: tuple[str, str]) -> str:
    return json.dumps({"mapping": [{"phrase": p, "node": n} for p, n in pairs]})


def formula(text: str) -> str:
    return json.dumps({"formula": text})


def plan_office(*answers: str) -> Any:
    planner = make_planner("ltl", transcript(*answers), PlannerOptions(budget=FAST))
    return planner.plan(load_env("office"), "Go to the kitchen; if you start in the corridor, visit Niko's office.")


def test_a_path_that_violates_the_mission_is_never_reported_as_a_success() -> None:
    # "if you are in the corridor or outside the cafeteria, be neither in the corridor nor in the kitchen", from the
    # corridor pose7: false at the first position, whatever the path; the old planner returned the empty path
    # with success=True, verified=True
    result = plan_office(
        ground(("corridor", "pose7"), ("cafeteria", "cafeteria"), ("kitchen", "kitchen")),
        formula("-> | pose7 ! cafeteria ! | pose7 kitchen"),
    )
    assert not result.success and not result.verified
    assert "the start position pose7 (where pose7 hold) already violates it" in result.message


def test_always_avoid_plans() -> None:
    result = plan_office(
        ground(("Niko's office", "nikos_office"), ("kitchen", "kitchen")),
        formula("& F nikos_office G ! kitchen"),
    )
    assert result.success, result.message
    assert not [c for c in result.calls if c.outcome == "bad_answer"]
    assert "kitchen" not in [s.target for s in result.plan]


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        ("e kitchen lab", "& -> kitchen lab -> lab kitchen"),
        ("<-> kitchen lab", "& -> kitchen lab -> lab kitchen"),
        ("i kitchen lab", "-> kitchen lab"),
        ("~ kitchen", "! kitchen"),
        ("AND EVENTUALLY kitchen ALWAYS NOT lab", "& F kitchen G ! lab"),
        ("OR NEXT kitchen UNTIL lab kitchen", "| X kitchen U lab kitchen"),
        ("IMPLY kitchen EQUAL lab kitchen", "-> kitchen & -> lab kitchen -> kitchen lab"),
        ("R kitchen lab", "! U ! kitchen ! lab"),
    ],
)
def test_the_prefix_vocabularies_of_llms_and_tools_parse(text: str, same_as: str) -> None:
    words = [[set()], [{"kitchen"}], [{"lab"}], [{"kitchen", "lab"}], [{"lab"}, {"kitchen"}], [set(), {"lab"}]]
    assert [accepts(text, w) for w in words] == [accepts(same_as, w) for w in words]


def test_an_unknown_operator_is_named_with_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match=r"'W' is neither an operator nor a node id.*U.*UNTIL"):
        parse_prefix("W kitchen lab", {"kitchen", "lab"})


def cost(graph: Any, text: str) -> float:
    start = graph.agent_location()
    return float(ProductSearch(graph, build_dfa(parse_prefix(text))).search(start).cost)


def test_entering_a_room_does_not_touch_every_object_in_it() -> None:
    home = load_env("home")
    assert cost(home, "& F bathroom4 G ! sink4") >= cost(home, "F bathroom4")


def test_visiting_objects_in_one_room_costs_the_walk_between_them() -> None:
    office = load_env("office")
    one_room = cost(office, "F cafeteria")
    assert cost(office, "& F apple1 F kale2") > one_room + 2.0  # the objects are 3.3 m apart


def office_with_a_bare_apple(offset: tuple[float, float]) -> Any:
    """The office with apple1 lying directly in the cafeteria (as the Stanford importer leaves every movable
    object), `offset` metres from the fruit bowl table it used to rest on."""
    office = load_env("office")
    table = office.nodes["fruit_bowl_table"].position
    assert table is not None
    office.set_parent("apple1", "cafeteria")
    office.replace_node(
        replace(office.nodes["apple1"], position=(table[0] + offset[0], table[1] + offset[1], table[2]))
    )
    return office


def test_an_object_lying_in_a_room_is_reached_by_a_step_that_goes_there() -> None:
    # the old domain charged the walk to a stop in front of the bare apple, but the plan had no step going there
    # (from the cafeteria: cost > 0, plan ['done'])
    office = office_with_a_bare_apple((0.4, 0.3))
    office.set_attributes(office.agent_id, {"location": "cafeteria"})  # type: ignore[arg-type]
    path = ProductSearch(office, build_dfa(parse_prefix("F apple1"))).search("cafeteria")
    assert path.steps == [PlanStep("access", "fruit_bowl_table"), PlanStep("done", "")]
    table, apple = office.nodes["fruit_bowl_table"].position, office.nodes["apple1"].position
    assert table is not None and apple is not None
    assert path.cost > 0 and math.hypot(table[0] - apple[0], table[1] - apple[1]) <= 1.0


def test_an_object_lying_in_a_room_out_of_reach_of_every_place_is_reported_unreachable() -> None:
    office = office_with_a_bare_apple((-3.0, 1.0))  # 3.2 m from the table, 4.6 m from the cafeteria node
    with pytest.raises(NoSatisfyingPathError) as caught:
        ProductSearch(office, build_dfa(parse_prefix("F apple1"))).search("cafeteria")
    message = str(caught.value)
    assert "apple1 lies directly in cafeteria" in message and "reach distance (1 m)" in message
    # a longer reach finds the table again, and the plan walks there
    path = ProductSearch(office, build_dfa(parse_prefix("F apple1")), reach_distance=4.0).search("cafeteria")
    assert path.steps[-2:] == [PlanStep("access", "fruit_bowl_table"), PlanStep("done", "")]


def test_objects_on_one_support_are_reached_by_one_access_that_costs_one_walk() -> None:
    # carrot and old_tuna_sandwich are both in the fridge: the search charged a walk between them that no step
    # made (cost 2.7 against 1.5 for the carrot alone, one access(fridge) in both plans)
    office = load_env("office")
    kitchen, fridge = office.nodes["kitchen"].position, office.nodes["fridge"].position
    assert kitchen is not None and fridge is not None
    walk = math.hypot(kitchen[0] - fridge[0], kitchen[1] - fridge[1])
    for text in ("F carrot", "& F carrot F old_tuna_sandwich", "& F old_tuna_sandwich F fridge"):
        path = ProductSearch(office, build_dfa(parse_prefix(text))).search("kitchen")
        assert path.steps == [PlanStep("access", "fridge"), PlanStep("done", "")], text
        assert path.cost == pytest.approx(walk), text


def test_objects_lying_in_a_room_may_share_the_asset_that_reaches_both() -> None:
    # o1 and o2 lie in R; A is nearest o1, C nearest o2, and B, 0.9 m from each, reaches both with one access:
    # only A and C were stops, so the "optimal" plan accessed both (cost 17.5 against 15.0)
    def node(i: str, kind: str, x: float, y: float) -> dict[str, Any]:
        return {"id": i, "type": kind, "position": [x, y, 0.0]}

    doc = {
        "nodes": [
            {"id": "floor1", "type": "floor"},
            node("R", "room", 0.9, 5),
            node("P", "pose", 0.9, 15),
            *(node(a, "asset", x, 0) for a, x in (("A", -0.3), ("B", 0.9), ("C", 2.1))),
            node("o1", "object", 0, 0),
            node("o2", "object", 1.8, 0),
            {"id": "robot", "type": "agent", "attributes": {"location": "P"}},
        ],
        "edges": [
            {"source": "R", "relation": "in", "target": "floor1"},
            {"source": "P", "relation": "in", "target": "floor1"},
            *({"source": x, "relation": "in", "target": "R"} for x in ("A", "B", "C", "o1", "o2")),
            {"source": "R", "relation": "connected_to", "target": "P"},
        ],
    }
    graph = graph_from_dict(doc)
    path = ProductSearch(graph, build_dfa(parse_prefix("& F o1 F o2"))).search("P")
    assert path.steps == [PlanStep("goto", "R"), PlanStep("access", "B"), PlanStep("done", "")]
    assert path.cost == pytest.approx(10.0 + 5.0)


def test_building_an_automaton_writes_no_file(tmp_path: Path) -> None:
    """Safe on a read-only install and for concurrent builds: MONA's program never goes through a shared file."""
    script = tmp_path / "build.py"
    script.write_text(
        "import os, sys\n"
        "written = []\n"
        "def hook(event, args):\n"
        "    if event == 'open' and isinstance(args[0], str) and args[1] is not None and set(args[1]) & set('wax+'):\n"
        "        written.append(args[0])\n"
        "from sayplan_core.ltl import build_dfa, parse_prefix\n"
        "sys.addaudithook(hook)\n"
        "build_dfa(parse_prefix('& F a G ! b'))\n"
        "print(written)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_concurrent_builds_each_get_their_own_automaton() -> None:
    # X^k kitchen: kitchen at position k exactly; a build that read another's automaton would answer wrong
    texts = {k: "X " * k + "kitchen" for k in range(1, 9)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        dfas = dict(zip(texts, pool.map(lambda t: build_dfa(parse_prefix(t)), texts.values()), strict=True))
    for k, dfa in dfas.items():
        word = [frozenset()] * k + [frozenset({"kitchen"})]
        state = dfa.initial
        for letter in word:
            state = dfa.step(state, letter)
        assert state in dfa.accepting, k
