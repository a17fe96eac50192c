"""What the world-state property tests share: small generated buildings, their hypothesis budget, and what a reader
can see of a graph (compared between the in-place and the copying ways of showing a state)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, settings

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import graph_records
from sayplan_core.nav.path_planner import DEFAULT_EDGE_COST

BOUNDED = settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUILDINGS = {seed: generate_building(BuildingSpec(floors=2, rooms_per_floor=3, seed=seed)) for seed in range(3)}


def shape(graph: SceneGraph) -> dict[str, Any]:
    """What a reader can see of a graph: every node with its fields, parent and relation, and the nav edges."""
    return {
        "nodes": {n: (graph.nodes[n], graph.parent(n), graph.relation(n)) for n in graph.nodes},
        "nav": sorted(tuple(sorted(e)) for e in graph.nav.edges),
        "records": graph_records(graph),
    }


def link_cost_reference(graph: SceneGraph, a: str, b: str) -> float:
    """A navigation edge's cost as path_planner's module docstring defines it: the straight line, or the stored
    weight when it is larger (an oracle for the planner's and the ltl domain's own cost code)."""
    pa, pb, weight = graph.nodes[a].position, graph.nodes[b].position, graph.nav.edges[a, b].get("weight")
    if pa is None or pb is None:
        return float(weight) if weight is not None else DEFAULT_EDGE_COST
    straight = math.dist(pa, pb)
    return max(straight, float(weight)) if weight is not None else max(straight, 1e-6)


def accepted_steps(state: Any, actions: Any) -> list[Any]:
    """Every step (action, node) but `done` that the simulator accepts in `state`, in a fixed order: the moves a
    random walk through a task picks from."""
    from sayplan_core.sim.plan import PlanStep
    from sayplan_core.sim.simulator import check_step

    return [
        PlanStep(a, t)
        for a in actions.names()
        if a != "done"
        for t in sorted(state.graph.nodes)
        if check_step(state, PlanStep(a, t), actions).ok
    ]
