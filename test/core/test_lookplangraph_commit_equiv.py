"""LookPlanGraph commits each step into its memory graph (`WorldState.commit`) instead of showing a copy with the
state's changes applied; the visible set reads the state's placements (`WorldState.descendants` / `ancestors`).

Oracles written out here: a second state over its own memory graph that never commits, shown through `apply_to()`
(a fresh copy with the changes applied, what the planner showed before), and the visible set computed on that copy
by the straightforward definition, and the text of that set written from scratch on that copy (the planner keeps
each node's text across steps, `ShownMemory`). Random step sequences (most of them feasible) on generated buildings, some with
an object in the robot's hand from the start, looks included.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from world_shapes import BOUNDED, BUILDINGS, shape

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.native_format import graph_to_dict
from sayplan_core.graph.text import graph_records
from sayplan_core.planners.lookplangraph import ShownMemory, memory_graph, truth_reveal_hook, visible_nodes
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step, check_step
from sayplan_core.sim.world_state import WorldState


def visible_reference(state: WorldState, touched: list[str]) -> list[str]:
    """The visible set by its definition, on a copy of the memory graph with the state's changes applied."""
    graph = state.apply_to()
    room = state.agent_room()
    ids = set(graph.ids_of_type("room"))
    if room:
        ids |= {room, *graph.descendants(room)}
    for node in touched:
        if node in graph.nodes:
            ids.add(node)
            ids.update(a for a in graph.ancestors(node) if graph.nodes[a].type in ("asset", "object"))
    if graph.agent_id:
        ids.add(graph.agent_id)
    if state.holding:
        ids.add(state.holding)
    return sorted(ids)


def text_reference(state: WorldState, touched: list[str]) -> str:
    """The prompt's graph text written from scratch on a fresh copy with the state's changes applied."""
    graph = state.apply_to()
    return json.dumps(graph_records(graph, visible_reference(state, touched)), separators=(",", ":"))


def start(seed: int, held: int | None) -> SceneGraph:
    truth = BUILDINGS[seed]
    if held is None:
        return truth
    truth = truth.copy()
    objects = truth.ids_of_type("object")
    assert truth.agent_id is not None
    truth.set_parent(objects[held % len(objects)], truth.agent_id, "inside_hand")
    return truth


@BOUNDED
@given(
    seed=st.sampled_from(sorted(BUILDINGS)),
    held=st.one_of(st.none(), st.integers(0, 10_000)),
    moves=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.booleans()), max_size=30),
)
def test_a_committed_memory_graph_shows_what_a_fresh_copy_shows(
    seed: int, held: int | None, moves: list[tuple[int, int, bool]]
) -> None:
    truth = start(seed, held)
    before = graph_to_dict(truth)
    actions = load_action_set("lookplangraph")
    names = actions.names()
    committed = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
    reference = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
    kept = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
    shown = ShownMemory(kept)
    touched: list[str] = []
    assert shown.step(touched) == (visible_reference(reference, touched), text_reference(reference, touched))
    for action_index, target_index, feasible_only in moves:
        targets = sorted(reference.graph.nodes)
        step = PlanStep(names[action_index % len(names)], targets[target_index % len(targets)])
        if feasible_only:  # most random steps are refused: pick among the ones the simulator accepts
            accepted = [
                PlanStep(a, t)
                for a in names
                if a != "done"
                for t in targets
                if check_step(reference, PlanStep(a, t), actions).ok
            ]
            step = accepted[target_index % len(accepted)] if accepted else step
        outcome = apply_step(reference, step, actions)
        assert apply_step(committed, step, actions) == outcome, step
        assert apply_step(kept, step, actions) == outcome, step
        if outcome.ok and step.target:
            touched.append(step.target)
        visible = visible_reference(reference, touched)
        assert visible_nodes(reference, touched) == visible, step  # uncommitted: the state's own reads
        committed.commit()
        assert shape(committed.graph) == shape(reference.apply_to()), step
        assert visible_nodes(committed, touched) == visible, step
        assert shown.step(touched) == (visible, text_reference(reference, touched)), step
        assert (committed.location, committed.holding, committed.accessed) == (
            reference.location,
            reference.holding,
            reference.accessed,
        )
    assert graph_to_dict(truth) == before  # the truth's nodes were copied, never changed
