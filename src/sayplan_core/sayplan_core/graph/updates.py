"""Incremental graph updates (from perception or skill results), applied atomically.

An update is applied to a copy and validated as a whole; on any error the caller
keeps its graph untouched and gets a GraphError naming the offending node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sayplan_core.graph import limits
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


def check_update_size(update: GraphUpdate) -> None:
    """The item count and the ids' types and lengths, before anything walks the update."""
    total = len(update.upsert) + len(update.remove) + len(update.connect) + len(update.disconnect)
    if total > limits.MAX_UPDATE_ITEMS:
        raise GraphError(f"update has {total} items, over the limit of {limits.MAX_UPDATE_ITEMS}")
    ids = [
        *update.remove,
        *(end for edge in update.connect for end in edge[:2]),
        *(e for d in update.disconnect for e in d),
    ]
    for node_id in ids:
        if not isinstance(node_id, str) or not node_id or len(node_id) > limits.MAX_ID_CHARS:
            raise GraphError(f"update names a node id that is empty, not a string or too long: {node_id!r:.80}")
    for a, b, weight in update.connect:
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
            raise GraphError(f"navigation edge {a}<->{b}: weight must be a number, got {weight!r:.80}", a)


def apply_update(graph: SceneGraph, update: GraphUpdate) -> SceneGraph:
    """Return a new graph with `update` applied; `graph` itself is never modified."""
    check_update_size(update)
    seen: set[str] = set()
    for item in update.upsert:
        item.node.check()
        if item.node.type == "agent" and not item.node.attributes.get("location"):
            # a robot nowhere cannot be planned for: every planner starts from the agent's location
            raise GraphError(
                f"agent '{item.node.id}' is upserted without a location (attributes.location: a room or pose)",
                item.node.id,
            )
        if item.node.id in seen:
            raise GraphError(f"update lists node '{item.node.id}' twice", item.node.id)
        seen.add(item.node.id)
    out = graph.copy()
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
