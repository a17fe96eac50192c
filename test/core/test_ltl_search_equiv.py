"""Issue 28's ltl speed-ups against the straightforward versions they replaced, written out here.

- `SearchDomain` reads the navigation nodes' rooms and floors through one GraphReader and the edge costs through
  `nav_edge_costs` (networkx's dicts). Oracle: SceneGraph's own queries per node and PathPlanner.edge_cost per edge
  of `graph.nav.edges`, in that order (the order of the moves decides between equal-cost paths).
- `ProductSearch.search` reads the automaton's successor of each location and the heuristic from per-state lists.
  Oracle: the A* loop calling `dfa.step` and `heuristic` per move. The same path, cost, expansions and trace.
"""

from __future__ import annotations

import heapq
import math
import random
import shutil
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.ltl import FormulaError, NoSatisfyingPathError, ProductSearch, build_dfa, parse_prefix
from sayplan_core.ltl.domain import SearchDomain
from sayplan_core.nav.path_planner import PathPlanner

if shutil.which("mona") is None:
    print("test_ltl_search_equiv: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)

BOUNDED = settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def unplaced(graph: SceneGraph) -> SceneGraph:
    """Some poses and a room with no position, one stored weight: the edge costs' other cases."""
    out = graph.copy()
    poses = out.ids_of_type("pose")
    for node_id in [*poses[::3], out.ids_of_type("room")[1]]:
        out.replace_node(replace(out.nodes[node_id], position=None))
    a, b = next(iter(out.nav.edges))
    out.nav.edges[a, b]["weight"] = 25.0
    return out


ENVS = {
    "office": load_env("office"),
    "home": load_env("home"),
    "generated": generate_building(BuildingSpec(floors=2, rooms_per_floor=5, seed=3)),
}
ENVS["generated, unplaced poses"] = unplaced(ENVS["generated"])
TEMPLATES = [
    "F & {a} F {b}",
    "& F {a} G ! {b}",
    "& U ! {b} {a} F {c}",
    "& F {a} G -> {b} X {c}",
    "& & F {a} F {b} F {c}",
    "& F {a} F G {b}",
]


def domain_reference(
    graph: SceneGraph,
) -> tuple[list[tuple[str, str | None, str | None]], list[list[tuple[int, float]]]]:
    """The navigation locations (name, room, floor) and their moves, node by node through SceneGraph."""
    names = sorted(graph.nav.nodes)
    index = {n: i for i, n in enumerate(names)}
    locations = [
        (n, n if graph.nodes[n].type == "room" else graph.room_of(n), graph.enclosing(n, "floor")) for n in names
    ]
    moves: list[list[tuple[int, float]]] = [[] for _ in names]
    planner = PathPlanner(graph)
    for a, b in graph.nav.edges:
        cost = planner.edge_cost(a, b)
        moves[index[a]].append((index[b], cost))
        moves[index[b]].append((index[a], cost))
    return locations, moves


def search_reference(search: ProductSearch, start: str, weight: float) -> tuple[list[int], float, int]:
    """A* over (location, automaton state), one `dfa.step` and one `heuristic` call per move."""
    domain, dfa = search.domain, search.dfa
    s = domain.location_of(start)
    search._prepare(s)
    q0 = dfa.step(dfa.initial, search.labels[s])
    frontier = [(weight * search.heuristic(s, q0), 0.0, 0, s, q0)]
    best_g = {(s, q0): 0.0}
    parent: dict[tuple[int, int], tuple[int, int] | None] = {(s, q0): None}
    closed: set[tuple[int, int]] = set()
    counter = expansions = 0
    while frontier:
        _, g, _, x, q = heapq.heappop(frontier)
        if (x, q) in closed:
            continue
        closed.add((x, q))
        expansions += 1
        if q in dfa.accepting:
            path = [x]
            back = parent[(x, q)]
            while back is not None:
                path.append(back[0])
                back = parent[back]
            return path[::-1], g, expansions
        for y, cost in domain.moves[x]:
            q2 = dfa.step(q, search.labels[y])
            if q2 not in dfa.live_states:
                continue
            g2 = g + cost
            if g2 < best_g.get((y, q2), math.inf):
                h2 = search.heuristic(y, q2)
                if h2 == math.inf:
                    continue
                best_g[(y, q2)] = g2
                parent[(y, q2)] = (x, q)
                counter += 1
                heapq.heappush(frontier, (g2 + weight * h2, g2, counter, y, q2))
    raise NoSatisfyingPathError("no path")


@BOUNDED
@given(
    env=st.sampled_from(sorted(ENVS)),
    template=st.sampled_from(TEMPLATES),
    seed=st.integers(0, 10_000),
    reach=st.sampled_from([0.5, 1.0, 3.0]),
    heuristic=st.booleans(),
    weight=st.sampled_from([1.0, 1.5]),
)
def test_the_domain_and_the_search_match_the_straightforward_versions(
    env: str, template: str, seed: int, reach: float, heuristic: bool, weight: float
) -> None:
    graph = ENVS[env]
    rng = random.Random(seed)
    atoms = graph.ids_of_type("room", "pose", "floor", "asset", "object", "workspace")
    text = template.format(**{k: rng.choice(atoms) for k in "abc"})
    start = rng.choice(sorted(graph.nav.nodes))
    try:
        dfa = build_dfa(parse_prefix(text))
    except FormulaError:
        return  # unsatisfiable: no search
    domain = SearchDomain(graph, dfa.atoms, reach)
    locations, moves = domain_reference(graph)
    count = len(locations)
    assert [(loc.name, loc.room, loc.floor) for loc in domain.locations[:count]] == locations, text
    assert [loc.position for loc in domain.locations[:count]] == [graph.nodes[n].position for n, _, _ in locations]
    assert [m[: len(moves[i])] for i, m in enumerate(domain.moves[:count])] == moves  # stops' moves come after
    new = ProductSearch(graph, dfa, use_heuristic=heuristic, domain=domain)
    old = ProductSearch(graph, dfa, use_heuristic=heuristic, domain=SearchDomain(graph, dfa.atoms, reach))
    try:
        expected = search_reference(old, start, weight)
    except NoSatisfyingPathError:
        with pytest.raises(NoSatisfyingPathError):
            new.search(start, weight)
        return
    found = new.search(start, weight)
    path, cost, expansions = expected
    assert (found.nodes, found.cost, found.expansions) == (domain.names(path), cost, expansions), text
    assert found.trace == [domain.labels[i] for i in path]
