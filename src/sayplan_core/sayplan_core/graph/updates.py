"""Incremental graph updates (from perception or skill results), applied atomically.

An update is applied all or nothing: on any error the caller keeps its graph exactly as it was and gets a
GraphError naming the offending node. Two ways to apply one:

- `apply_in_place(graph, update)` changes `graph` itself in time proportional to the nodes the update touches
  (what a follower and the server do with every update). Each change is recorded in an undo log as it is made,
  through the SceneGraph mutation API only, and the log is played backwards on any error; the whole-graph rules
  of native_format.validate are about the agent only, so they are checked on the result, cheaply, every time.
  Whoever shares the graph with other threads must hand them copies (sayplan_core.graph.snapshots).
- `apply_update(graph, update)` returns a new graph and never touches `graph`: for callers that keep both (the
  graph a skill ran on and the one after it, a simulated world's state that a planner may still hold).

docs/concepts/graph_updates.md tells the whole design.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sayplan_core.graph import limits
from sayplan_core.graph.model import GraphError, Node, SceneGraph, check_parent
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
    for item in update.upsert:
        if item.parent is not None and (not isinstance(item.parent, str) or len(item.parent) > limits.MAX_ID_CHARS):
            raise GraphError(f"update places a node under a parent that is not a node id: {item.parent!r:.80}")
        if not isinstance(item.relation, str):
            raise GraphError(f"update places a node with a relation that is not a string: {item.relation!r:.80}")
    for a, b, weight in update.connect:
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
            raise GraphError(f"navigation edge {a}<->{b}: weight must be a number, got {weight!r:.80}", a)


def apply_update(graph: SceneGraph, update: GraphUpdate) -> SceneGraph:
    """Return a new graph with `update` applied; `graph` itself is never modified (O(graph): a copy)."""
    _check_items(update)  # refused before the copy is paid for
    out = graph.copy()
    apply_in_place(out, update)
    return out


def apply_in_place(graph: SceneGraph, update: GraphUpdate) -> AppliedUpdate:
    """Apply `update` to `graph` itself, in time proportional to what it touches; on GraphError `graph` is as before.

    Returns the applied update, whose `rollback()` takes it back (the server does when the journal cannot record
    it). The order of the steps, and so which error a bad update gets, is the order of the copy-based version this
    replaced: upserts, then parents, removals (children first), disconnections, connections, the agent's rules.
    """
    _check_items(update)
    seen = {item.node.id for item in update.upsert}
    removing = set(update.remove)
    for node_id in removing:
        if node_id not in graph:
            raise GraphError(f"cannot remove '{node_id}': it does not exist", node_id)
        if node_id in seen:
            raise GraphError(f"update both upserts and removes '{node_id}'", node_id)
    # a graph that holds the robot keeps holding it: an update may move the agent, never delete it
    had_agent = graph.agent_id is not None
    applied = AppliedUpdate(graph)
    try:
        _apply(applied, update, removing)
        validate(graph, require_agent=had_agent)
    except BaseException:
        applied.rollback()
        raise
    return applied


def _check_items(update: GraphUpdate) -> None:
    """The rules an update obeys whatever graph it meets (sizes, each node, no id twice)."""
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


def _apply(applied: AppliedUpdate, update: GraphUpdate, removing: set[str]) -> None:
    graph = applied.graph
    for item in update.upsert:
        node = item.node
        if node.id in graph:
            old = graph.nodes[node.id]
            if old.type != node.type:
                raise GraphError(f"node '{node.id}' cannot change type from {old.type} to {node.type}", node.id)
            applied.replace(node)
        else:
            applied.add(node)
    for item in update.upsert:
        if item.parent:
            if item.parent not in graph:
                raise GraphError(
                    f"node '{item.node.id}' is placed under '{item.parent}', which does not exist", item.node.id
                )
            applied.set_parent(item.node.id, item.parent, item.relation)
    # after the upserts (which may move children elsewhere); children before parents,
    # so a subtree can be removed in one update
    for node_id in sorted(removing, key=lambda n: -len(graph.ancestors(n))):
        leftover = [c for c in graph.children(node_id) if c not in removing]
        if leftover:
            raise GraphError(
                f"cannot remove '{node_id}': it still has children this update does not remove "
                f"({', '.join(leftover[:5])})",
                node_id,
            )
        applied.remove(node_id)
    for a, b in update.disconnect:
        applied.disconnect(a, b)
    for a, b, weight in update.connect:
        for end in (a, b):
            if end not in graph:
                raise GraphError(f"cannot connect {a}<->{b}: '{end}' does not exist", end)
        applied.connect(a, b, weight)


def _nav_edge(graph: SceneGraph, a: str, b: str) -> tuple[bool, float | None]:
    """Whether a navigation edge a<->b exists, and its weight (the one read the mutation API does not offer)."""
    data = graph.nav.get_edge_data(a, b)
    if data is None:
        return False, None
    weight = data.get("weight")
    return True, None if weight is None else float(weight)


@dataclass
class _Saved:
    """A subtree taken out of a graph, to be put back: nodes top-down with their parents, and nav edges."""

    nodes: list[tuple[Node, str | None, str]]
    edges: list[tuple[str, str, float | None]]


def _take_out(graph: SceneGraph, root: str) -> _Saved:
    """Remove `root` and everything under it (deepest first), saving what puts it back."""
    order = [root]
    for node_id in order:  # breadth first: parents before their children
        order.extend(graph.children(node_id))
    inside = set(order)
    saved = _Saved([], [])
    for node_id in order:
        saved.nodes.append((graph.nodes[node_id], graph.parent(node_id), graph.relation(node_id) or "in"))
        for other in graph.neighbours(node_id):
            if other not in inside or node_id < other:  # each edge inside the subtree once
                saved.edges.append((node_id, other, _nav_edge(graph, node_id, other)[1]))
    for node_id in reversed(order):
        graph.remove_node(node_id)
    return saved


def _put_back(graph: SceneGraph, saved: _Saved, root_parent: str | None) -> None:
    for index, (node, parent, relation) in enumerate(saved.nodes):
        graph.add_node(node, root_parent if index == 0 else parent, relation)
    for a, b, weight in saved.edges:
        graph.connect(a, b, weight)


class AppliedUpdate:
    """An update applied in place, with the undo log that takes it back.

    Every change goes through the SceneGraph mutation API and pushes the step that reverses it; `rollback()` runs
    them newest first, so each reversal meets the graph exactly as its change left it and cannot fail. Taking back
    a parent given to a node that had none (a graph without building or floors) re-adds its subtree: the API has
    no detach, and that case is rare and small.
    """

    def __init__(self, graph: SceneGraph) -> None:
        self.graph = graph
        self._undo: list[Callable[[], None]] = []
        self._added: set[str] = set()

    def rollback(self) -> None:
        """Put the graph back as it was before the update (graph_to_dict equal; a second call does nothing)."""
        while self._undo:
            self._undo.pop()()
        self._added.clear()

    def replace(self, node: Node) -> None:
        graph, old = self.graph, self.graph.nodes[node.id]
        graph.replace_node(node)
        self._undo.append(lambda: graph.replace_node(old))

    def add(self, node: Node) -> None:
        graph = self.graph
        graph.add_node(node)
        self._added.add(node.id)
        self._undo.append(lambda: graph.remove_node(node.id))

    def set_parent(self, node_id: str, parent: str, relation: str) -> None:
        graph = self.graph
        old_parent, old_relation = graph.parent(node_id), graph.relation(node_id) or "in"
        if node_id not in self._added and old_parent == parent and old_relation == relation:
            # where it is already: the rule still holds for the (maybe replaced) node, and no cycle can appear
            # (its parent is an ancestor), so the subtree walk set_parent does for cycles is skipped
            check_parent(graph.nodes[node_id], graph.nodes[parent], relation)
            return
        graph.set_parent(node_id, parent, relation)
        if node_id in self._added:
            return  # removing the node takes its parent edge with it
        if old_parent is not None:
            self._undo.append(lambda: graph.set_parent(node_id, old_parent, old_relation))
        else:
            self._undo.append(lambda: _put_back(graph, _take_out(graph, node_id), None))

    def remove(self, node_id: str) -> None:
        graph = self.graph
        saved = _Saved(
            [(graph.nodes[node_id], graph.parent(node_id), graph.relation(node_id) or "in")],
            [(node_id, other, _nav_edge(graph, node_id, other)[1]) for other in graph.neighbours(node_id)],
        )
        graph.remove_node(node_id)
        self._undo.append(lambda: _put_back(graph, saved, saved.nodes[0][1]))

    def disconnect(self, a: str, b: str) -> None:
        graph = self.graph
        _, weight = _nav_edge(graph, a, b)
        graph.disconnect(a, b)
        self._undo.append(lambda: graph.connect(a, b, weight))

    def connect(self, a: str, b: str, weight: float | None) -> None:
        graph = self.graph
        existed, old_weight = _nav_edge(graph, a, b)
        graph.connect(a, b, weight)
        if not existed:
            self._undo.append(lambda: graph.disconnect(a, b))
            return

        def reweigh() -> None:
            graph.disconnect(a, b)
            graph.connect(a, b, old_weight)

        self._undo.append(reweigh)
