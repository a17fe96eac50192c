"""What the world-state property tests share: small generated buildings, their hypothesis budget, and what a reader
can see of a graph (compared between the in-place and the copying ways of showing a state)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings

from sayplan_core.envs.generator import BuildingSpec, generate_building
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import graph_records

BOUNDED = settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUILDINGS = {seed: generate_building(BuildingSpec(floors=2, rooms_per_floor=3, seed=seed)) for seed in range(3)}


def shape(graph: SceneGraph) -> dict[str, Any]:
    """What a reader can see of a graph: every node with its fields, parent and relation, and the nav edges."""
    return {
        "nodes": {n: (graph.nodes[n], graph.parent(n), graph.relation(n)) for n in graph.nodes},
        "nav": sorted(tuple(sorted(e)) for e in graph.nav.edges),
        "records": graph_records(graph),
    }
