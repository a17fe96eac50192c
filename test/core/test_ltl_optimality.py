"""The product A* against brute force: Dijkstra (networkx) over an explicitly built product graph whose locations,
moves and labels are rebuilt here from the documented definitions, not taken from the planner's domain.

For random missions of every shape, on generated buildings and the bundled envs, from several start positions:
the returned cost equals the brute-force optimum, the path is a walk of the oracle's graph with that cost, its
trace (labelled by the oracle) satisfies the formula by the LTLf definition, and the plan verifies in the
simulator; when brute force finds no path, the planner reports the mission unsatisfiable."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections import Counter
from dataclasses import replace
from functools import partial
from itertools import pairwise
from typing import Any

import networkx as nx
import pytest

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.ltl import (
    Dfa,
    Formula,
    FormulaError,
    NoSatisfyingPathError,
    ProductSearch,
    build_dfa,
    dijkstra_to_each_goal,
    holds,
    parse_prefix,
)
from sayplan_core.planners.ltl import plan_formula
from sayplan_core.sim import verify_plan

if shutil.which("mona") is None:
    print("test_ltl_optimality: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)

REACHABLE = ("asset", "object", "workspace")
ACCESSIBLE = ("asset", "workspace")
Loc = Any  # a navigation node id, or ("stop", object id)


class Oracle:
    """The planning domain from its definition (docs/concepts/planners.md, "The ltl planner"), as a networkx graph."""

    def __init__(self, graph: SceneGraph, atoms: set[str], reach: float) -> None:
        self.graph, self.reach = graph, reach
        g = nx.Graph()
        self.pos: dict[Loc, tuple[float, float, float]] = {}
        self.room: dict[Loc, str | None] = {}
        self.floor: dict[Loc, str | None] = {}
        for n in graph.nav.nodes:
            p = graph.nodes[n].position
            assert p is not None
            self.pos[n] = p
            parent = graph.parent(n)
            own_room = n if graph.nodes[n].type == "room" else parent
            self.room[n] = own_room if own_room is not None and graph.nodes[own_room].type == "room" else None
            self.floor[n] = next((a for a in graph.ancestors(n) if graph.nodes[a].type == "floor"), None)
        for a, b, data in graph.nav.edges(data=True):
            straight = math.dist(self.pos[a], self.pos[b])
            g.add_edge(a, b, cost=max(straight, data["weight"]) if "weight" in data else straight)
        stops_in: dict[str, list[Loc]] = {}
        self.support: dict[str, str] = {}  # an object -> the asset or workspace it rests on or in
        for o in sorted(atoms):
            if graph.nodes[o].type not in REACHABLE:
                continue
            room = next(a for a in graph.ancestors(o) if graph.nodes[a].type == "room")
            support = next((a for a in graph.ancestors(o) if graph.nodes[a].type in ACCESSIBLE), None)
            if graph.nodes[o].type in ACCESSIBLE:
                places = [o]
            elif support is not None:
                places, self.support[o] = [support], support
            else:  # lying in the room: the robot can stand at any asset or workspace of the room within reach
                places = [a for a in graph.descendants(room) if graph.nodes[a].type in ACCESSIBLE]
                places = [a for a in places if self.apart(self.own_box(a), self.own_box(o)) <= reach]
            for place in places:
                stop = ("stop", place)
                if stop in self.pos:
                    continue
                p = graph.nodes[place].position
                assert p is not None
                self.pos[stop] = (p[0], p[1], self.pos[room][2])
                self.room[stop], self.floor[stop] = room, self.floor[room]
                for other in [room, *stops_in.get(room, [])]:
                    g.add_edge(stop, other, cost=math.dist(self.pos[stop], self.pos[other]))
                stops_in.setdefault(room, []).append(stop)
        self.g = g
        self.labels = {loc: frozenset(a for a in atoms if self.holds_at(a, loc)) for loc in g.nodes}

    def own_box(self, n: str) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """(x interval, y interval) of n's extent: its `bbox`, else `size` around its position, else the point."""
        node = self.graph.nodes[n]
        box = node.attributes.get("bbox")
        if box is not None:
            (ax, ay, _), (bx, by, _) = box["min"], box["max"]
            return (ax, bx), (ay, by)
        if node.position is None:
            return None
        x, y, _ = node.position
        dx, dy, _ = node.attributes.get("size", (0.0, 0.0, 0.0))
        return (x - dx / 2, x + dx / 2), (y - dy / 2, y + dy / 2)

    def box(self, n: str) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """n's extent, else that of the first asset, workspace or object above it; None past a room."""
        chain = [n, *self.graph.ancestors(n)]
        for here in chain:
            if here != n and self.graph.nodes[here].type not in REACHABLE:
                return None
            found = self.own_box(here)
            if found is not None:
                return found
        return None

    @staticmethod
    def apart(a: Any, b: Any) -> float:
        """Horizontal distance between two extents (or None: infinitely far)."""
        if a is None or b is None:
            return math.inf
        gaps = [max(lo2 - hi1, lo1 - hi2, 0.0) for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=True)]
        return math.hypot(*gaps)

    @staticmethod
    def places_walked(path: list[Loc]) -> list[str]:
        """Where the robot goes on each move of `path`: a navigation node, or the asset it accesses at a stop."""
        return [loc[1] if isinstance(loc, tuple) else loc for loc in path[1:]]

    def holds_at(self, atom: str, loc: Loc) -> bool:
        kind = self.graph.nodes[atom].type
        if kind == "room":
            return self.room[loc] == atom
        if kind == "floor":
            return self.floor[loc] == atom
        if kind == "pose":
            return loc == atom
        o_floor = next((a for a in self.graph.ancestors(atom) if self.graph.nodes[a].type == "floor"), None)
        x, y, _ = self.pos[loc]
        if loc in (("stop", atom), ("stop", self.support.get(atom))):
            return True  # accessing an asset reaches it and what rests on or in it
        return self.floor[loc] == o_floor and self.apart(((x, x), (y, y)), self.box(atom)) <= self.reach

    def loc(self, name: str) -> Loc:
        return name if name in self.g and isinstance(name, str) and name in self.graph.nav else ("stop", name)

    def optimum(self, dfa: Dfa, start: str) -> float | None:
        product = nx.DiGraph()
        for x, y, data in self.g.edges(data=True):
            for q in dfa.states:
                product.add_edge((x, q), (y, dfa.step(q, self.labels[y])), cost=data["cost"])
                product.add_edge((y, q), (x, dfa.step(q, self.labels[x])), cost=data["cost"])
        source = (start, dfa.step(dfa.initial, self.labels[start]))
        if source[1] in dfa.accepting:
            return 0.0
        if source not in product:
            return None
        dist = nx.single_source_dijkstra_path_length(product, source, weight="cost")
        costs = [d for (_, q), d in dist.items() if q in dfa.accepting]
        return min(costs) if costs else None


SHAPES = {
    "ordered reach": "F & {r1} F & {o1} F {r2}",
    "reach with avoid": "& & F {r1} F {o1} G ! {r2}",
    "enter a room, avoid an object in it": "& F {r1} G ! {o_r1}",
    "until": "& U ! {r2} {r1} F {o1}",
    "implication": "& F {r1} G -> {r2} F {o1}",
    "equivalence": "& F {r1} <-> F {r2} F {o1}",
    "release": "& F {r1} R {o1} ! {r2}",
    "next": "& F {r1} G -> {p1} X {p2}",
    "objects in one room": "& & & F {o_r1} F {o2_r1} F {o3_r1} G ! {r2}",
    "floors": "& F {f1} & F {o1} G ! {r2}",
    "end in a room": "& F {o2_r1} F G {r1}",
}


def lying_in_rooms(graph: SceneGraph) -> SceneGraph:
    """Every object put directly in its room, as the Stanford importer leaves them (no support relations)."""
    bare = graph.copy()
    for o in bare.ids_of_type("object"):
        room = bare.room_of(o)
        if room is not None and bare.parent(o) != room and o != bare.held_object():
            bare.set_parent(o, room)
    return bare


def with_extents(graph: SceneGraph, seed: int) -> SceneGraph:
    """Random extents: assets and workspaces 0.5-5 m (half as `bbox`, half as `size`), objects up to 0.5 m, and
    some objects on an asset without a position (reached through their support's extent, never their room's)."""
    rng = random.Random(seed)
    out = graph.copy()
    for n in out.ids_of_type(*ACCESSIBLE, "object"):
        node = out.nodes[n]
        if node.position is None or n == out.held_object():
            continue
        x, y, z = node.position
        big = node.type in ACCESSIBLE
        dx, dy = (rng.uniform(0.5, 5.0), rng.uniform(0.5, 5.0)) if big else (rng.uniform(0, 0.5), rng.uniform(0, 0.5))
        parent = out.parent(n)
        if not big and parent is not None and out.nodes[parent].type in ACCESSIBLE and rng.random() < 0.3:
            out.replace_node(replace(node, position=None))
        elif rng.random() < 0.5:
            bbox = {"min": [x - dx / 2, y - dy / 2, z], "max": [x + dx / 2, y + dy / 2, z + 1]}
            out.set_attributes(n, {"bbox": bbox})
        else:
            out.set_attributes(n, {"size": [dx, dy, 1.0]})
    return out


def envs() -> dict[str, SceneGraph]:
    out = {"office": load_env("office"), "home": load_env("home")}
    out["home, objects lying in their rooms"] = lying_in_rooms(out["home"])
    out["office with extents"] = with_extents(out["office"], 3)
    out["home with extents, objects lying in their rooms"] = with_extents(out["home, objects lying in their rooms"], 4)
    for seed in (1, 2):
        out[f"generated seed {seed}"] = generate_building(BuildingSpec(floors=2, rooms_per_floor=6, seed=seed))
    return out


ENVS = envs()


def fill(template: str, graph: SceneGraph, rng: random.Random) -> str:
    rooms = [
        r for r in graph.ids_of_type("room") if any(graph.nodes[d].type in REACHABLE for d in graph.descendants(r))
    ]
    room = rng.choice([r for r in rooms if sum(graph.nodes[d].type in REACHABLE for d in graph.descendants(r)) >= 3])
    in_room = rng.sample([d for d in graph.descendants(room) if graph.nodes[d].type in REACHABLE], 3)
    things = graph.ids_of_type("asset", "object")
    values = {
        "r1": room,
        "r2": rng.choice([r for r in graph.ids_of_type("room") if r != room]),
        "o1": rng.choice(things),
        "o_r1": in_room[0],
        "o2_r1": in_room[1],
        "o3_r1": in_room[2],
        "p1": rng.choice(graph.ids_of_type("pose")),
        "p2": rng.choice(graph.ids_of_type("pose")),
        "f1": rng.choice(graph.ids_of_type("floor")),
    }
    return template.format(**values)


@pytest.mark.parametrize("env", sorted(ENVS))
def test_the_product_search_is_optimal_on_random_missions_of_every_shape(env: str) -> None:
    graph = ENVS[env]
    rng = random.Random(f"ltl-{env}")
    outcomes: Counter[str] = Counter()
    for shape, template in SHAPES.items():
        for _ in range(8):
            text = fill(template, graph, rng)
            formula = parse_prefix(text)
            reach = rng.choice([0.5, 1.0, 2.0])
            start = rng.choice(sorted(graph.nav.nodes))
            try:
                dfa = build_dfa(formula)
            except FormulaError:
                outcomes["unsatisfiable formula"] += 1
                continue
            oracle = Oracle(graph, formula.atoms(), reach)
            best = oracle.optimum(dfa, start)
            if best is None:
                with pytest.raises(NoSatisfyingPathError, match="no path through the navigation graph satisfies"):
                    ProductSearch(graph, dfa, reach_distance=reach).search(start)
                outcomes[f"{shape}: no path"] += 1
                continue
            path = ProductSearch(graph, dfa, reach_distance=reach).search(start)
            blind = ProductSearch(graph, dfa, use_heuristic=False, reach_distance=reach).search(start)
            where = f"{env}: {text} from {start}, reach {reach}"
            assert path.cost == pytest.approx(best, abs=1e-4), where
            assert blind.cost == pytest.approx(best, abs=1e-4), where
            assert path.expansions <= blind.expansions, where
            locs = [oracle.loc(n) for n in path.nodes]
            assert locs[0] == start
            walked = sum(oracle.g.edges[a, b]["cost"] for a, b in pairwise(locs))
            assert walked == pytest.approx(path.cost, abs=1e-4), where
            assert holds(formula, [oracle.labels[loc] for loc in locs]), where
            walked_to = [(s.action, s.target) for s in path.steps]
            expected = [
                ("access" if isinstance(loc, tuple) else "goto", name)
                for loc, name in zip(locs[1:], oracle.places_walked(locs), strict=True)
            ]
            assert walked_to == [*expected, ("done", "")], where  # each charged move is a step, and only those
            moved = graph.copy()
            moved.set_attributes(moved.agent_id, {"location": start})  # type: ignore[arg-type]
            check = verify_plan(moved, path.steps, "sayplan", strict_navigation=True)
            assert check.success, f"{where}: {check.feedback}"
            outcomes[shape] += 1
    print(env, dict(outcomes))
    assert sum(outcomes[s] for s in SHAPES) >= 4 * len(SHAPES), outcomes  # most missions are satisfiable


def test_the_in_order_baseline_is_never_cheaper_on_reach_missions() -> None:
    graph = ENVS["office"]
    start = graph.agent_location()
    assert start is not None
    rng = random.Random(5)
    for _ in range(6):
        goals = [*rng.sample(graph.ids_of_type("room"), 2), rng.choice(graph.ids_of_type("object"))]
        best = ProductSearch(graph, build_dfa(parse_prefix("& F {} & F {} F {}".format(*goals)))).search(start)
        assert best.cost <= dijkstra_to_each_goal(graph, start, goals).cost + 1e-9


def list_notation(f: Formula, rng: random.Random) -> Any:
    """The formula as an LLM prompt in the literature writes it: nested lists of words, reach()/enter() atoms."""
    words = {"!": "NOT", "&": "AND", "|": "OR", "->": "IMPLY", "<->": "EQUAL", "X": "NEXT", "F": "EVENTUALLY"}
    words |= {"G": "ALWAYS", "U": "UNTIL", "R": "RELEASE"}
    if f.op == "atom":
        return rng.choice([f.atom, f"reach({f.atom})", f"enter({f.atom})"])
    if f.op in ("true", "false"):
        return f.op
    return [words[f.op], *(list_notation(a, rng) for a in f.args)]


@pytest.mark.parametrize("env", ["office", "home, objects lying in their rooms", "generated seed 1"])
def test_plan_formula_plans_a_given_formula_optimally_without_an_llm(env: str) -> None:
    """The Python API behind `sayplan plan --formula`: no backend at all, the cost is the brute-force optimum."""
    graph = ENVS[env]
    rng = random.Random(f"formula-{env}")
    planned = 0
    for shape, template in SHAPES.items():
        formula = parse_prefix(fill(template, graph, rng))
        reach = rng.choice([0.5, 1.0, 2.0])
        start = rng.choice(sorted(graph.nav.nodes))
        given: Any = rng.choice([formula, formula.prefix(), json.dumps(list_notation(formula, rng))])
        where = f"{env}, {shape}: {given} from {start}, reach {reach}"
        try:
            dfa = build_dfa(formula)
        except FormulaError:
            with pytest.raises(FormulaError, match="can never be satisfied"):
                plan_formula(graph, given, reach, start)
            continue
        best = Oracle(graph, formula.atoms(), reach).optimum(dfa, start)
        result = plan_formula(graph, given, reach, start)
        assert result.calls == [] and result.planner == "ltl", where
        if best is None:
            assert not result.success and "no path through the navigation graph satisfies" in result.message, where
            continue
        assert result.success and result.verified, f"{where}: {result.message}"
        oracle = Oracle(graph, formula.atoms(), reach)
        locs = [start] + [
            ("stop", s.target) if s.action == "access" else s.target for s in result.full_plan if s.action != "done"
        ]
        walked = sum(oracle.g.edges[a, b]["cost"] for a, b in pairwise(locs))
        assert walked == pytest.approx(best, abs=1e-4), where
        assert holds(formula, [oracle.labels[loc] for loc in locs]), where
        planned += 1
    assert planned >= len(SHAPES) // 2


def test_plan_formula_refuses_an_unknown_id_with_the_closest_ones() -> None:
    with pytest.raises(FormulaError, match=r"'kitchn' is not the id of .* \(did you mean kitchen"):
        plan_formula(ENVS["office"], '["EVENTUALLY", "enter(kitchn)"]')


def _heuristic_at(search: ProductSearch, index: dict[str, int], loc: Loc, q: int) -> float:
    return search.heuristic(index[loc[1] if isinstance(loc, tuple) else loc], q)


@pytest.mark.parametrize("env", ["office with extents", "home, objects lying in their rooms", "generated seed 1"])
def test_the_heuristic_never_overestimates_the_oracles_cost_to_accept_and_is_consistent(env: str) -> None:
    """h(x, q) against the brute-force product graph: at most the cheapest way from (x, q) to acceptance (reverse
    Dijkstra from every accepting state), and at most a move's cost plus h where the move leads (so the first
    accepting state A* pops is optimal)."""
    graph = ENVS[env]
    rng = random.Random(f"ltl-heuristic-{env}")
    checked = 0
    for shape, template in SHAPES.items():
        formula = parse_prefix(fill(template, graph, rng))
        try:
            dfa = build_dfa(formula)
        except FormulaError:
            continue
        reach, start = rng.choice([0.5, 1.0, 2.0]), rng.choice(sorted(graph.nav.nodes))
        oracle = Oracle(graph, formula.atoms(), reach)
        search = ProductSearch(graph, dfa, reach_distance=reach)
        try:
            search.search(start)  # prepares the heuristic for this start
        except NoSatisfyingPathError:
            continue
        product = nx.DiGraph()
        for x, y, data in oracle.g.edges(data=True):
            for q in dfa.states:
                product.add_edge((x, q), (y, dfa.step(q, oracle.labels[y])), cost=data["cost"])
                product.add_edge((y, q), (x, dfa.step(q, oracle.labels[x])), cost=data["cost"])
        goals = [state for state in product if state[1] in dfa.accepting]
        to_go = nx.multi_source_dijkstra_path_length(product.reverse(copy=False), goals, weight="cost")
        index = search.domain.index
        h = partial(_heuristic_at, search, index)
        for (x, q), cost in to_go.items():
            assert h(x, q) <= cost + 1e-6, f"{env}, {shape}: h{(x, q)} = {h(x, q)} > {cost}"
        for (x, q), (y, q2), data in product.edges(data=True):
            if q in dfa.live_states and q2 in dfa.live_states and h(y, q2) < math.inf:
                assert h(x, q) <= data["cost"] + h(y, q2) + 1e-6, f"{env}, {shape}: {(x, q)} -> {(y, q2)}"
        checked += 1
    assert checked >= 4


def test_a_mission_to_the_top_floor_and_back_expands_about_its_path() -> None:
    """The straight-line bound ignores the stairs: on a five-floor building A* expanded several times the path's
    length (15x at ten floors). The distance over the moves expands little more than the path."""
    graph = generate_building(BuildingSpec(floors=5, rooms_per_floor=12, seed=3))
    floors = sorted(graph.ids_of_type("floor"))
    top = next(r for r in graph.ids_of_type("room") if graph.enclosing(r, "floor") == floors[-1])
    bottom = next(r for r in graph.ids_of_type("room") if graph.enclosing(r, "floor") == floors[0])
    start = graph.agent_location()
    assert start is not None
    formula = parse_prefix(f"F & {top} F {bottom}")
    path = ProductSearch(graph, build_dfa(formula)).search(start)
    blind = ProductSearch(graph, build_dfa(formula), use_heuristic=False).search(start)
    assert path.cost == pytest.approx(blind.cost)
    assert path.expansions <= 2 * len(path.nodes), (path.expansions, len(path.nodes), blind.expansions)
