"""Issue 28's planner speed-ups against the straightforward versions they replaced, written out here.

- LookPlanGraph shows its memory graph at every step: `WorldState.refresh` brings the previous step's graph up to
  date in place instead of `apply_to()` copying the whole memory graph. Oracle: `apply_to()` (a fresh copy with the
  state's changes) after every step of random step sequences, reveals included.
- `PathPlanner` computes edge costs when a search first needs them and keeps the paths it found. Oracle: every edge
  cost computed up front from the docstring's definition, and networkx's Dijkstra on it.
- `SceneGraph.subgraph` walks each node's ancestors once and copies nodes without deepcopy. Oracle: the
  ancestors-of-every-node, deepcopy version it replaced.
"""

from __future__ import annotations

import copy
import math

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st
from world_shapes import BOUNDED, BUILDINGS, accepted_steps, shape

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.native_format import graph_to_dict
from sayplan_core.nav.path_planner import DEFAULT_EDGE_COST, PathPlanner
from sayplan_core.planners.lookplangraph import memory_graph, truth_reveal_hook
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step, check_step
from sayplan_core.sim.world_state import WorldState


# ----------------------------------------------------------------------------- WorldState.refresh vs apply_to
@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    moves=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.booleans()), max_size=40),
)
def test_refresh_shows_what_a_fresh_copy_shows(seed: int, moves: list[tuple[int, int, bool]]) -> None:
    truth = BUILDINGS[seed]
    before = graph_to_dict(truth)
    actions = load_action_set("lookplangraph")
    names = actions.names()
    state = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
    shown = state.apply_to()
    for action_index, target_index, feasible_only in moves:
        targets = sorted(state.graph.nodes)
        steps = [PlanStep(names[action_index % len(names)], targets[target_index % len(targets)])]
        if feasible_only:  # most random steps are refused: pick among the ones the simulator accepts
            accepted = [
                PlanStep(a, t)
                for a in names
                if a != "done"  # done takes any node: it would crowd out the rest
                for t in targets
                if check_step(state, PlanStep(a, t), actions).ok
            ]
            steps = [accepted[target_index % len(accepted)]] if accepted else []
        for step in steps:
            apply_step(state, step, actions)
            shown = state.refresh(shown)
            assert shape(shown) == shape(state.apply_to()), step
    assert graph_to_dict(truth) == before  # the truth's nodes were copied, never changed


def test_refresh_keeps_up_through_moves_state_changes_and_reveals() -> None:
    """A walk sure to meet what refresh has to carry (moves, state changes, reveals, placements): the random
    sequences above need not hit every kind, so here each step prefers an action not taken yet."""
    wanted = {"go_to", "pick_up", "open", "look_on", "put_on"}
    for truth in BUILDINGS.values():
        actions = load_action_set("lookplangraph")
        state = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
        shown = state.apply_to()
        taken: set[str] = set()
        for turn in range(60):
            accepted = accepted_steps(state, actions)
            if not accepted:
                break
            choices = [step for step in accepted if step.action not in taken] or accepted
            step = choices[turn % len(choices)]
            assert apply_step(state, step, actions).ok, step
            taken.add(step.action)
            shown = state.refresh(shown)
            assert shape(shown) == shape(state.apply_to()), step
        assert wanted <= taken, taken


# ----------------------------------------------------------------------------- PathPlanner vs eager costs
def eager_costs(graph: SceneGraph) -> dict[tuple[str, str], float]:
    """Every edge's cost from the module's definition: the straight line, or the stored weight when larger."""
    costs: dict[tuple[str, str], float] = {}
    for a, b, data in graph.nav.edges(data=True):
        pa, pb, weight = graph.nodes[a].position, graph.nodes[b].position, data.get("weight")
        if pa is None or pb is None:
            cost = float(weight) if weight is not None else DEFAULT_EDGE_COST
        else:
            straight = math.dist(pa, pb)
            cost = max(straight, float(weight)) if weight is not None else max(straight, 1e-6)
        costs[(a, b)] = costs[(b, a)] = cost
    return costs


@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    pairs=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=12),
    method=st.sampled_from(["dijkstra", "astar"]),
)
def test_lazy_costs_and_kept_paths_match_the_eager_planner(
    seed: int, pairs: list[tuple[int, int]], method: str
) -> None:
    graph = BUILDINGS[seed]
    costs = eager_costs(graph)
    nav = sorted(graph.nav.nodes)
    planner = PathPlanner(graph)
    for i, j in [*pairs, *pairs]:  # every pair twice: the second answer comes from what the planner kept
        start, goal = nav[i % len(nav)], nav[j % len(nav)]
        found = planner.shortest_path(start, goal, method)
        expected = nx.dijkstra_path_length(graph.nav, start, goal, weight=lambda a, b, _: costs[(a, b)])
        assert math.isclose(found.cost, expected, rel_tol=1e-9, abs_tol=1e-9)
        assert found.nodes[0] == start and found.nodes[-1] == goal
        walked = sum(costs[(a, b)] for a, b in zip(found.nodes, found.nodes[1:], strict=False))
        assert math.isclose(walked, expected, rel_tol=1e-9, abs_tol=1e-9)
        assert found == PathPlanner(graph).shortest_path(start, goal, method)  # a fresh planner agrees


# ----------------------------------------------------------------------------- subgraph vs the deepcopy version
def subgraph_reference(graph: SceneGraph, node_ids: list[str]) -> SceneGraph:
    """The chosen nodes and all their ancestors, deep copies, added top-down through the public API."""
    keep = set(node_ids) | {a for n in node_ids for a in graph.ancestors(n)}
    out = SceneGraph(graph.name)
    for node_id in sorted(keep, key=lambda n: len(graph.ancestors(n))):
        parent = graph.parent(node_id)
        out.add_node(copy.deepcopy(graph.nodes[node_id]), parent, graph.relation(node_id) or "in")
    for a, b, weight in graph.nav.edges(data="weight"):
        if a in keep and b in keep:
            out.connect(a, b, weight)
    return out


@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    picks=st.lists(st.integers(0, 10_000), max_size=30),
    places=st.booleans(),
)
def test_subgraph_matches_the_deepcopy_version(seed: int, picks: list[int], places: bool) -> None:
    graph = BUILDINGS[seed]
    ids = sorted(graph.nodes)
    chosen = [ids[p % len(ids)] for p in picks]
    if places:  # every room and pose, so navigation edges are kept
        chosen += sorted(graph.nav.nodes)
    fast, reference = graph.subgraph(chosen), subgraph_reference(graph, chosen)
    assert graph_to_dict(fast, exact=True) == graph_to_dict(reference, exact=True)
    assert shape(fast) == shape(reference)
    assert all(fast.nodes[node_id] is graph.nodes[node_id] for node_id in fast.nodes)  # shared: nodes are immutable
