"""Compact text serialisation of (parts of) a scene graph for LLM prompts.

The layout follows SayPlan appendix K/L: nodes grouped by type, then the links.
It is valid JSON (compact separators), so prompts can say "parse it with json".

The whole graph of a 1,000-room building is 10k nodes: the writer reads each node's
parent edge once and the agent's location and held object once per text, and sorts
each type's ids once, instead of asking the graph per node (test_graph_text_equiv.py
checks it against the straightforward writer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sayplan_core.graph.model import NODE_TYPES, SceneGraph

#: Types whose hierarchy edge to a visible parent is a link of the text.
_PARENT_LINKED = frozenset({"room", "asset", "workspace"})
#: Types whose navigation edges are links of the text.
_NAV_LINKED = frozenset({"room", "pose"})


class GraphReader:
    """One-pass reads of a graph for prompt writers: the parent edge, the room or enclosing node and the subtree of
    many nodes, each walk up remembered for the next. Why: a whole-graph prompt reads 10k nodes, and each
    SceneGraph query pays for networkx's read-only views (a wrapper object per lookup). The graph must not change
    while a reader is in use."""

    def __init__(self, graph: SceneGraph) -> None:
        self.graph = graph
        self.nodes = graph.nodes
        # networkx's own dicts (SceneGraph builds them directly too, see prechecked_graph)
        self.pred: dict[str, dict[str, dict[str, Any]]] = graph.tree._pred
        self.succ: dict[str, dict[str, dict[str, Any]]] = graph.tree._succ
        self.nav_adj: dict[str, dict[str, Any]] = graph.nav._adj
        self._rooms: dict[str, str | None] = {}
        self._enclosing: dict[str, dict[str, str | None]] = {}

    def parent_edge(self, node_id: str) -> tuple[str | None, dict[str, Any]]:
        """The node's hierarchy parent and that edge's data (the first, as SceneGraph.parent reads it)."""
        for parent, data in self.pred.get(node_id, {}).items():
            return str(parent), data
        return None, {}

    def parent(self, node_id: str) -> str | None:
        return self.parent_edge(node_id)[0]

    def neighbours(self, node_id: str) -> list[str]:
        """SceneGraph.neighbours."""
        return sorted(self.nav_adj.get(node_id, ()))

    def descendants(self, node_id: str) -> list[str]:
        """SceneGraph.descendants, unsorted."""
        out: list[str] = []
        todo = list(self.succ.get(node_id, ()))
        while todo:
            child = todo.pop()
            out.append(child)
            todo.extend(self.succ[child])
        return out

    def room_of(self, node_id: str) -> str | None:
        """SceneGraph.room_of for a node that is neither an agent nor a pose."""
        return self._walk_up(node_id, self._rooms, "room", stop_at_agent=True)

    def enclosing(self, node_id: str, node_type: str) -> str | None:
        """SceneGraph.enclosing: the nearest ancestor (or the node itself) of a type."""
        if node_id not in self.nodes:  # SceneGraph.enclosing walks up from an unknown id too (it finds nothing)
            return self.graph.enclosing(node_id, node_type)
        return self._walk_up(node_id, self._enclosing.setdefault(node_type, {}), node_type, stop_at_agent=False)

    def _walk_up(self, node_id: str, memo: dict[str, str | None], node_type: str, stop_at_agent: bool) -> str | None:
        walked: list[str] = []
        current: str | None = node_id
        found: str | None = None
        while current is not None:
            if current in memo:
                found = memo[current]
                break
            current_type = self.nodes[current].type
            if current_type == node_type:
                found = current
                break
            if stop_at_agent and current_type == "agent":  # SceneGraph.room_of: a held thing is where the agent is
                found = self.graph.room_of(current)
                break
            walked.append(current)
            current = self.parent(current)
        for item in walked:
            memo[item] = found
        return found


class _Writer(GraphReader):
    """Records of one graph, sharing what every record of a text reads."""

    def __init__(self, graph: SceneGraph, with_positions: bool) -> None:
        super().__init__(graph)
        self.with_positions = with_positions
        self.agent_location = graph.agent_location()
        self.held = graph.held_object()

    def record(self, node_id: str) -> dict[str, Any]:
        node = self.nodes[node_id]
        rec: dict[str, Any] = {"id": node.id}
        if node.name and node.name != node.id.replace("_", " "):
            rec["name"] = node.name
        node_type = node.type
        if node_type in ("asset", "workspace"):
            parent, _ = self.parent_edge(node_id)
            room = self.room_of(node_id)
            if room:
                rec["room"] = room
            if parent and self.nodes[parent].type == "workspace":
                rec["workspace"] = parent
        elif node_type == "object":
            parent, edge = self.parent_edge(node_id)
            if parent is not None:
                relation = str(edge["relation"])
                rec["state"] = "inside_hand" if relation == "inside_hand" else f"{relation}({parent})"
        elif node_type in ("room", "pose"):
            parent, _ = self.parent_edge(node_id)
            if parent and self.nodes[parent].type == "floor":
                rec["floor"] = parent
        elif node_type == "agent":
            if self.agent_location:
                rec["location"] = self.agent_location
            if self.held:
                rec["holding"] = self.held
        if node.states:
            rec["states"] = list(node.states)
        if node.affordances:
            rec["affordances"] = list(node.affordances)
        if node.attributes:
            attrs = {k: v for k, v in node.attributes.items() if not (node_type == "agent" and k == "location")}
            if attrs:
                rec["attributes"] = attrs
        if self.with_positions and node.position is not None:
            rec["position"] = [round(v, 2) for v in node.position]
        return rec


def node_record(graph: SceneGraph, node_id: str, with_positions: bool = False) -> dict[str, Any]:
    """The prompt view of one node: only the fields an LLM planner needs."""
    return _Writer(graph, with_positions).record(node_id)


def graph_records(
    graph: SceneGraph, node_ids: Iterable[str] | None = None, with_positions: bool = False
) -> dict[str, Any]:
    nodes = graph.nodes
    by_type: dict[str, list[str]] = {t: [] for t in NODE_TYPES}
    if node_ids is None:
        for node_id, node in nodes.items():
            by_type[node.type].append(node_id)
    else:  # in the given order, repeats kept (each is listed again, as one sort of all the ids lists them)
        for node_id in node_ids:
            if node_id in nodes:
                by_type[nodes[node_id].type].append(node_id)
    writer = _Writer(graph, with_positions)
    grouped: dict[str, list[dict[str, Any]]] = {}
    visible: set[str] = set()
    for node_type, ids in by_type.items():
        if ids:
            ids.sort()
            visible.update(ids)
            grouped[node_type] = [writer.record(node_id) for node_id in ids]
    links: list[str] = []
    linked = {n for t in _NAV_LINKED | _PARENT_LINKED for n in by_type[t]}
    for node_id in sorted(linked):
        node_type = nodes[node_id].type
        if node_type in _NAV_LINKED and node_id in writer.nav_adj:
            for other in sorted(writer.nav_adj[node_id]):
                if other in visible and node_id < other:
                    links.append(f"{node_id}<->{other}")
        if node_type in _PARENT_LINKED:
            parent = writer.parent(node_id)
            if parent in visible:
                links.append(f"{parent}<->{node_id}")
    agent = graph.agent_id
    if agent in visible:
        loc = writer.agent_location
        if loc in visible:
            links.append(f"{loc}<->{agent}")
    return {"nodes": grouped, "links": links}


def to_prompt_text(graph: SceneGraph, node_ids: Iterable[str] | None = None, with_positions: bool = False) -> str:
    return json.dumps(graph_records(graph, node_ids, with_positions), separators=(",", ":"), ensure_ascii=False)
