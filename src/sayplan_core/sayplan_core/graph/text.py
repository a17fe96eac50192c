"""Compact text serialisation of (parts of) a scene graph for LLM prompts.

The layout follows SayPlan appendix K/L: nodes grouped by type, then the links.
It is valid JSON (compact separators), so prompts can say "parse it with json".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sayplan_core.graph.model import NODE_TYPES, SceneGraph

_TYPE_ORDER = {t: i for i, t in enumerate(NODE_TYPES)}


def node_record(graph: SceneGraph, node_id: str, with_positions: bool = False) -> dict[str, Any]:
    """The prompt view of one node: only the fields an LLM planner needs."""
    node = graph.nodes[node_id]
    rec: dict[str, Any] = {"id": node.id}
    if node.name and node.name != node.id.replace("_", " "):
        rec["name"] = node.name
    parent = graph.parent(node_id)
    if node.type in ("asset", "workspace"):
        room = graph.room_of(node_id)
        if room:
            rec["room"] = room
        if parent and graph.nodes[parent].type == "workspace":
            rec["workspace"] = parent
    elif node.type == "object" and parent is not None:
        relation = graph.relation(node_id)
        rec["state"] = "inside_hand" if relation == "inside_hand" else f"{relation}({parent})"
    elif node.type in ("room", "pose") and parent and graph.nodes[parent].type == "floor":
        rec["floor"] = parent
    elif node.type == "agent":
        loc = graph.agent_location()
        if loc:
            rec["location"] = loc
        held = graph.held_object()
        if held:
            rec["holding"] = held
    if node.states:
        rec["states"] = list(node.states)
    if node.affordances:
        rec["affordances"] = list(node.affordances)
    attrs = {k: v for k, v in node.attributes.items() if not (node.type == "agent" and k == "location")}
    if attrs:
        rec["attributes"] = attrs
    if with_positions and node.position is not None:
        rec["position"] = [round(v, 2) for v in node.position]
    return rec


def graph_records(
    graph: SceneGraph, node_ids: Iterable[str] | None = None, with_positions: bool = False
) -> dict[str, Any]:
    ids = list(graph.nodes) if node_ids is None else [n for n in node_ids if n in graph.nodes]
    visible = set(ids)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for node_id in sorted(ids, key=lambda n: (_TYPE_ORDER[graph.nodes[n].type], n)):
        grouped.setdefault(graph.nodes[node_id].type, []).append(node_record(graph, node_id, with_positions))
    links: list[str] = []
    for node_id in sorted(visible):
        node = graph.nodes[node_id]
        if node.type in ("room", "pose"):
            for other in graph.neighbours(node_id):
                if other in visible and node_id < other:
                    links.append(f"{node_id}<->{other}")
        parent = graph.parent(node_id)
        if parent in visible and node.type in ("room", "asset", "workspace"):
            links.append(f"{parent}<->{node_id}")
    agent = graph.agent_id
    if agent in visible:
        loc = graph.agent_location()
        if loc in visible:
            links.append(f"{loc}<->{agent}")
    return {"nodes": grouped, "links": links}


def to_prompt_text(graph: SceneGraph, node_ids: Iterable[str] | None = None, with_positions: bool = False) -> str:
    return json.dumps(graph_records(graph, node_ids, with_positions), separators=(",", ":"), ensure_ascii=False)
