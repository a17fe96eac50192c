"""Incremental graph updates (from perception or skill results), applied atomically.

An update is applied to a copy and validated as a whole; on any error the caller
keeps its graph untouched and gets a GraphError naming the offending node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.native_format import validate


@dataclass
class NodeUpsert:
    node: Node
    parent: str | None = None
    relation: str = "in"


@dataclass
class GraphUpdate:
    upsert: list[NodeUpsert] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    connect: list[tuple[str, str, float | None]] = field(default_factory=list)
    disconnect: list[tuple[str, str]] = field(default_factory=list)
    source: str = ""

    def is_empty(self) -> bool:
        return not (self.upsert or self.remove or self.connect or self.disconnect)


def apply_update(graph: SceneGraph, update: GraphUpdate) -> SceneGraph:
    """Return a new graph with `update` applied; `graph` itself is never modified."""
    out = graph.copy()
    seen: set[str] = set()
    for item in update.upsert:
        item.node.check()
        if item.node.id in seen:
            raise GraphError(f"update lists node '{item.node.id}' twice", item.node.id)
        seen.add(item.node.id)
    removing = set(update.remove)
    for node_id in removing:
        if node_id not in out:
            raise GraphError(f"cannot remove '{node_id}': it does not exist", node_id)
        if node_id in seen:
            raise GraphError(f"update both upserts and removes '{node_id}'", node_id)
    for item in update.upsert:
        node = item.node
        if node.id in out:
            old = out.nodes[node.id]
            if old.type != node.type:
                raise GraphError(f"node '{node.id}' cannot change type from {old.type} to {node.type}", node.id)
            out.nodes[node.id] = node
        else:
            out.add_node(node)
    for item in update.upsert:
        if item.parent:
            if item.parent not in out:
                raise GraphError(
                    f"node '{item.node.id}' is placed under '{item.parent}', which does not exist", item.node.id
                )
            out.set_parent(item.node.id, item.parent, item.relation)
    # after the upserts (which may move children elsewhere); children before parents,
    # so a subtree can be removed in one update
    for node_id in sorted(removing, key=lambda n: -len(out.ancestors(n))):
        leftover = [c for c in out.children(node_id) if c not in removing]
        if leftover:
            raise GraphError(
                f"cannot remove '{node_id}': it still has children this update does not remove "
                f"({', '.join(leftover[:5])})",
                node_id,
            )
        out.remove_node(node_id)
    for a, b in update.disconnect:
        out.disconnect(a, b)
    for a, b, weight in update.connect:
        for end in (a, b):
            if end not in out:
                raise GraphError(f"cannot connect {a}<->{b}: '{end}' does not exist", end)
        out.connect(a, b, weight)
    # a graph that holds the robot keeps holding it: an update may move the agent, never delete it
    validate(out, require_agent=graph.agent_id is not None)
    return out
