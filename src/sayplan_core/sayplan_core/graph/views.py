"""Planner views of a scene graph: SayPlan's collapse / expand / contract with memory.

A view never copies the graph: it is the set of expanded nodes over a shared
graph, so collapsing a 100k-node building costs nothing and expanding a room
costs only that room's contents.

An expanded node reveals its contents only while it is itself visible, and
contracting a node also contracts what was expanded below it: contracting a floor
of a floor-level view hides its rooms and their contents together.
"""

from __future__ import annotations

from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph, a_or_an
from sayplan_core.graph.text import to_prompt_text

#: Levels shown when collapsed: floors, rooms and the agent (SayPlan appendix K). Pose nodes are left out by
#: default: the path planner fills in the moves between rooms, and they cost the office's collapsed prompt a
#: third of its tokens; `with_poses=True` keeps them (and their links) for planners that navigate themselves.
COLLAPSED_TYPES: tuple[str, ...] = ("building", "floor", "room", "agent")
#: Only floors (and the agent) when the building is collapsed to its very top.
TOP_ONLY_TYPES: tuple[str, ...] = ("building", "floor", "agent")
EXPANDABLE_TYPES: frozenset[str] = frozenset({"building", "floor", "room", "workspace", "asset"})
#: Expanding one of these shows its rooms (and poses, when kept), not everything below it.
LEVEL_TYPES: frozenset[str] = frozenset({"building", "floor"})


class GraphView:
    """The part of the graph a planner currently sees, plus its search memory."""

    def __init__(self, graph: SceneGraph, top_only: bool = False, with_poses: bool = False) -> None:
        self.graph = graph
        self.with_poses = with_poses
        self.top_only = top_only
        base = TOP_ONLY_TYPES if top_only else COLLAPSED_TYPES
        self.base_types = (*base, "pose") if with_poses and not top_only else base
        self.expanded: list[str] = []
        #: Every node ever expanded, in order (SayPlan's "Memory").
        self.memory: list[str] = []

    def collapse(self) -> GraphView:
        self.expanded = []
        return self

    def expand(self, node_id: str) -> list[str]:
        """Reveal what is below a node; returns the newly visible ids."""
        node = self.graph.node(node_id)
        if node.type not in EXPANDABLE_TYPES:
            raise GraphError(
                f"cannot expand '{node_id}': it is {a_or_an(node.type)}; "
                f"expand one of: {', '.join(sorted(EXPANDABLE_TYPES))}",
                node_id,
            )
        before = self.visible_ids()
        if node_id not in before:
            raise GraphError(f"cannot expand '{node_id}': it is not visible yet; expand its parent first", node_id)
        if node_id in self.expanded:
            raise GraphError(
                f"'{node_id}' is already expanded: its contents are in the graph; expand another node or plan",
                node_id,
            )
        if node_id not in self.expanded:
            self.expanded.append(node_id)
        if node_id not in self.memory:
            self.memory.append(node_id)
        return sorted(self.visible_ids() - before)

    def contract(self, node_id: str) -> list[str]:
        """Hide what is below a node again, with every node expanded below it; the memory keeps them."""
        self.graph.node(node_id)
        if node_id not in self.expanded:
            raise GraphError(f"cannot contract '{node_id}': it is not expanded", node_id)
        before = self.visible_ids()
        graph = self.graph
        self.expanded = [
            e for e in self.expanded if e != node_id and not (e in graph and node_id in graph.ancestors(e))
        ]
        return sorted(before - self.visible_ids())

    def visible_ids(self) -> set[str]:
        graph = self.graph
        visible: set[str] = set()
        for t in self.base_types:
            visible.update(graph.type_index(t))
        held = graph.held_object()
        if held:
            visible.add(held)
        # an expanded node reveals its contents only once it is visible itself (a room of a contracted floor
        # shows nothing): apply the expansions whose node is visible until none is left that is
        pending = [e for e in self.expanded if e in graph]
        while pending:
            ready = [e for e in pending if e in visible]
            if not ready:
                break
            pending = [e for e in pending if e not in visible]
            for node_id in ready:
                visible.update(self._revealed_by(node_id))
        return visible

    def _revealed_by(self, node_id: str) -> list[str]:
        """What expanding `node_id` shows: a floor's rooms (and poses, when kept), else everything below it.

        Unsorted (the caller adds them to a set): a walk over the tree's own dicts, not the sorted lists of
        `SceneGraph.children` and `descendants` (a planner's step applies every expansion again)."""
        nodes = self.graph.nodes
        below: dict[str, dict[str, Any]] = self.graph.tree._succ
        if nodes[node_id].type in LEVEL_TYPES:
            shown = ("room", "pose") if self.with_poses else ("room",)
            return [c for c in below[node_id] if nodes[c].type in shown]
        out: list[str] = []
        todo = list(below[node_id])
        while todo:
            node = todo.pop()
            if self.with_poses or nodes[node].type != "pose":
                out.append(node)
            todo.extend(below[node])
        return out

    def expandable_ids(self, visible: set[str] | None = None) -> list[str]:
        """Visible nodes that would reveal something if expanded.

        visible: `visible_ids()` of this view as it is now, when the caller has it (a planner's step needs the
        set three times: once is enough)."""
        graph = self.graph
        below: dict[str, dict[str, Any]] = graph.tree._succ  # whether a node has children, without listing them
        shown = self.visible_ids() if visible is None else visible
        found: list[str] = []
        for node_type in EXPANDABLE_TYPES:  # each type's visible nodes, by a set intersection in C
            found.extend(n for n in graph.type_index(node_type) & shown if below[n])
        return sorted(found)

    def revealing_ids(self, visible: set[str] | None = None) -> list[str]:
        """The expandable nodes whose expansion would show something not visible yet (not expanded, and not
        inside an expanded node that already shows everything below them); visible: as in `expandable_ids`."""
        shown = self.visible_ids() if visible is None else visible
        expanded = set(self.expanded)
        return [
            n
            for n in self.expandable_ids(shown)
            if n not in expanded and any(c not in shown for c in self._revealed_by(n))
        ]

    def text(self, with_positions: bool = False, visible: set[str] | None = None) -> str:
        """The prompt text of the visible nodes; visible: as in `expandable_ids`."""
        return to_prompt_text(self.graph, self.visible_ids() if visible is None else visible, with_positions)

    def subgraph(self) -> SceneGraph:
        return self.graph.subgraph(self.visible_ids())


def collapse(graph: SceneGraph, top_only: bool = False, with_poses: bool = False) -> GraphView:
    return GraphView(graph, top_only=top_only, with_poses=with_poses)


def floors_first(graph: SceneGraph, rooms_above: int) -> bool:
    """Whether a view of `graph` should start at its floors: it has more than `rooms_above` rooms (0: never),
    at least two floors, and every room is a floor's child (else a floor-level view would hide rooms for good)."""
    rooms = graph.type_index("room")
    if rooms_above <= 0 or len(rooms) <= rooms_above or graph.count("floor") < 2:
        return False
    # the floors' children, in C set operations, rather than each room's parent (1,000 rooms checked per plan)
    below = graph.tree.succ
    on_floors: set[str] = set()
    for floor in graph.type_index("floor"):
        on_floors.update(below[floor])
    return rooms <= on_floors
