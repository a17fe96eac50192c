"""Hierarchical 3D scene graph on networkx (its nodes: graph/node.py).

Two networkx graphs share one node table: a tree (parent -> child, with the child's relation to its parent) for
floors, rooms, workspaces, assets and objects, and an undirected navigation graph joining rooms and pose nodes.
Kept apart, the hierarchy checks and the path planner each look at only the edges they need.
"""

from __future__ import annotations

import gc
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import networkx as nx

from sayplan_core.graph import limits, shared
from sayplan_core.graph.node import (
    ALLOWED_PARENTS,
    CONTAINMENT_RELATIONS,
    EXCLUSIVE_STATES,
    HIERARCHY_RELATIONS,
    NAV_RELATION,
    NAV_TYPES,
    NESTING,
    NO_ATTRIBUTES,
    NODE_TYPES,
    PLACEMENTS,
    Attributes,
    GraphError,
    Node,
    Position,
    UnknownNodeError,
    a_or_an,
    check_labels,
    check_parent,
    prechecked_nodes,
    with_state,
)

#: The node's names, kept importable from here (most code imports them with SceneGraph).
__all__ = [
    "ALLOWED_PARENTS",
    "CONTAINMENT_RELATIONS",
    "EXCLUSIVE_STATES",
    "HIERARCHY_RELATIONS",
    "NAV_RELATION",
    "NAV_TYPES",
    "NESTING",
    "NODE_TYPES",
    "NO_ATTRIBUTES",
    "PLACEMENTS",
    "Attributes",
    "GraphError",
    "IndexedPlacements",
    "Link",
    "Node",
    "Position",
    "SceneGraph",
    "TypeRun",
    "UnknownNodeError",
    "a_or_an",
    "check_labels",
    "check_parent",
    "gc_paused",
    "prechecked_graph",
    "prechecked_nodes",
    "with_state",
]

#: Change stamps (SceneGraph.track_changes): unique in the process, so a stamp names one state of one node.
_STAMPS = itertools.count(1)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many objects at once.

    A bulk build allocates a container per node and edge; with the collector on,
    each generation-2 pass rescans everything built so far, which made loading a
    100k-node graph superlinear (half the time went to the GC).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class History:
    """One line of versions of a tracked graph, shared by its tracked copies: the key under which users keep what
    they derive from it (graph/caches.py), and the graph's own navigation components kept across versions."""

    def __init__(self) -> None:
        self.nav_components: tuple[int, dict[str, int]] | None = None  # (navigation-layer stamp, node -> index)


class SceneGraph:
    """A 3DSG: node table, hierarchy tree and navigation graph."""

    def __init__(self, name: str = "") -> None:
        if not limits.unicode_text(name):  # no file, payload or journal could carry it back
            raise GraphError(f"graph name {name!r:.80} holds a lone surrogate (not text UTF-8 can carry)")
        self.name = name
        self.nodes: dict[str, Node] = {}
        self.tree: nx.DiGraph = nx.DiGraph()
        self.nav: nx.Graph = nx.Graph()
        self._by_type: dict[str, set[str]] = {t: set() for t in NODE_TYPES}
        self._components: dict[str, int] | None = None
        self._nav_version = 0  # a new stamp whenever the navigation layer changes (nav_component's key)
        self._stamps: dict[str, int] | None = None
        self._history: History | None = None  # while tracking: shared with tracked copies
        self._log: list[str] = []  # ids as they are restamped, shared with tracked copies
        self._log_at: int | None = None  # a tracked copy: the log's length when it was taken

    # ------------------------------------------------------------------ change tracking
    def track_changes(self) -> None:
        """Stamp every node, and restamp a node whenever a mutator of this class changes it, so caches of text
        derived from nodes (graph/text.py) redo only what changed. A node counts as changed when its fields, its
        parent edge, its set of children or its navigation edges change (nodes are immutable: only the mutators
        change them). Copies are untracked unless asked (copy(tracked=True)).
        """
        if self._stamps is None:
            self._stamps = dict.fromkeys(self.nodes, next(_STAMPS))
            self._history, self._log, self._log_at = History(), [], None

    @property
    def change_stamps(self) -> dict[str, int] | None:
        """Node id -> stamp while tracking (read-only by contract), else None."""
        return self._stamps

    @property
    def history(self) -> History | None:
        """While tracking: the history this graph shares with its tracked copies (the key of caches their users
        keep, graph/caches.py); a new one when a copy's own change parts it from its source. Else None."""
        return self._history

    @property
    def change_log(self) -> tuple[list[str], int]:
        """The ids restamped so far, in order (shared with tracked copies), and how many of them this graph has
        seen: between two graphs of one log, only the ids logged between their two counts can differ."""
        return self._log, len(self._log) if self._log_at is None else self._log_at

    def __copy__(self) -> SceneGraph:
        """copy.copy(graph) is copy(): Python's default would share the node table and the networkx graphs, so a
        mutator on the "copy" would change the original behind its change stamps."""
        return self.copy()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled or deep-copied: untracked and open, as copy() is."""
        state = dict(self.__dict__)
        state.update(_stamps=None, _history=None, _log=[], _log_at=None)
        if nx.is_frozen(self.tree):  # a closed snapshot's layers (graph/shared.py)
            state.update(tree=_copy_tree(self.tree), nav=_copy_nav(self.nav))
        return state

    def _touch(self, *node_ids: str | None) -> None:
        stamps = self._stamps
        if stamps is not None:
            if self._log_at is not None or len(self._log) > 4 * len(self.nodes) + 1024:
                # a tracked copy changing leaves its source's history (and caches); a long log starts anew
                self._history = History() if self._log_at is not None else self._history
                self._log, self._log_at = [], None
            stamp = next(_STAMPS)
            for node_id in node_ids:
                if node_id in self.nodes:
                    stamps[node_id] = stamp
                    self._log.append(node_id)

    # ------------------------------------------------------------------ queries
    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, node_id: str) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise UnknownNodeError(node_id, self.nodes) from None

    def ids_of_type(self, *types: str) -> list[str]:
        out: list[str] = []
        for t in types:
            out.extend(sorted(self._by_type.get(t, ())))
        return out

    def type_index(self, node_type: str) -> frozenset[str] | set[str]:
        """The live id set of a type (read-only by contract, no copy, no sort)."""
        return self._by_type.get(node_type, set())

    def count(self, node_type: str) -> int:
        return len(self._by_type.get(node_type, ()))

    def iter_nodes(self, *types: str) -> Iterator[Node]:
        if not types:
            yield from self.nodes.values()
            return
        for node_id in self.ids_of_type(*types):
            yield self.nodes[node_id]

    def parent(self, node_id: str) -> str | None:
        preds = self.tree.pred[node_id] if node_id in self.tree else {}
        for p in preds:
            return str(p)
        return None

    def relation(self, node_id: str) -> str | None:
        parent = self.parent(node_id)
        if parent is None:
            return None
        return str(self.tree.edges[parent, node_id]["relation"])

    def children(self, node_id: str) -> list[str]:
        if node_id not in self.tree:
            return []
        return sorted(self.tree.succ[node_id])

    def descendants(self, node_id: str) -> list[str]:
        if node_id not in self.tree:
            return []
        return sorted(nx.descendants(self.tree, node_id))

    def ancestors(self, node_id: str) -> list[str]:
        """Parents from nearest to the root."""
        out: list[str] = []
        current = self.parent(node_id)
        while current is not None:
            out.append(current)
            current = self.parent(current)
        return out

    def enclosing(self, node_id: str, node_type: str) -> str | None:
        """The nearest ancestor (or the node itself) of a given type."""
        if node_id in self.nodes and self.nodes[node_id].type == node_type:
            return node_id
        for anc in self.ancestors(node_id):
            if self.nodes[anc].type == node_type:
                return anc
        return None

    def room_of(self, node_id: str) -> str | None:
        node = self.node(node_id)
        if node.type == "agent":
            loc = self.agent_location()
            return self.room_of(loc) if loc else None
        if node.type == "pose":
            parent = self.parent(node_id)
            return parent if parent and self.nodes[parent].type == "room" else None
        chain = [node_id, *self.ancestors(node_id)]
        for item in chain:
            t = self.nodes[item].type
            if t == "room":
                return item
            if t == "agent":
                return self.room_of(item)
        return None

    def nav_component(self, node_id: str) -> int:
        """Index of the connected navigation component (cached until the nav layer changes). The table is filled
        before it is published: readers of one snapshot on other threads must never see it half filled."""
        components, history = self._components, self._history
        if components is None:
            kept = history.nav_components if history is not None else None
            if kept is not None and kept[0] == self._nav_version:  # a tracked copy of the same navigation layer
                components = kept[1]
            else:
                components = {}
                for index, members in enumerate(nx.connected_components(self.nav)):
                    for member in members:
                        components[member] = index
                if history is not None:  # shared with the tracked copies (snapshots) of later versions
                    history.nav_components = (self._nav_version, components)
            self._components = components
        return components.get(node_id, -1)

    def neighbours(self, node_id: str) -> list[str]:
        if node_id not in self.nav:
            return []
        return sorted(self.nav.adj[node_id])

    # ------------------------------------------------------------------ agent
    @property
    def agent_id(self) -> str | None:
        agents = self._by_type["agent"]
        return next(iter(sorted(agents))) if agents else None

    def agent_location(self) -> str | None:
        agent = self.agent_id
        if agent is None:
            return None
        loc = self.nodes[agent].attributes.get("location")
        return str(loc) if loc else None

    def held_object(self) -> str | None:
        agent = self.agent_id
        if agent is None:
            return None
        kids = self.children(agent)
        return kids[0] if kids else None

    # ------------------------------------------------------------------ mutation
    def close_layers(self) -> None:
        """Refuse edits that go round the mutators, for a graph readers share (graph/shared.py)."""
        self.nodes = shared.ClosedNodes(self.nodes)
        shared.freeze(self.tree, self.nav)

    def add_node(self, node: Node, parent: str | None = None, relation: str = "in") -> Node:
        if node.id in self.nodes:
            raise GraphError(f"duplicate node id '{node.id}'", node.id)
        shared.put(self.nodes, node.id, node)
        self._by_type[node.type].add(node.id)
        with shared.opened(self.tree, self.nav):
            self.tree.add_node(node.id)
            if node.type in NAV_TYPES:
                self.nav.add_node(node.id)
                self._components, self._nav_version = None, next(_STAMPS)
        self._touch(node.id)
        if parent is not None:
            self.set_parent(node.id, parent, relation)
        return node

    def set_parent(self, node_id: str, parent: str, relation: str = "in") -> None:
        """Move a node under a new parent, checking the hierarchy rules."""
        node = self.node(node_id)
        parent_node = self.node(parent)
        check_parent(node, parent_node, relation)
        if parent == node_id or parent in self.descendants(node_id):
            raise GraphError(f"moving '{node_id}' under '{parent}' would create a cycle in the hierarchy", node_id)
        old = self.parent(node_id)
        with shared.opened(self.tree, self.nav):
            if old is not None:
                self.tree.remove_edge(old, node_id)
            self.tree.add_edge(parent, node_id, relation=relation)
        self._touch(node_id, old, parent)

    def remove_node(self, node_id: str) -> None:
        node = self.node(node_id)
        if self.children(node_id):
            raise GraphError(
                f"cannot remove '{node_id}': it still has children ({', '.join(self.children(node_id)[:5])})",
                node_id,
            )
        if self._stamps is not None:
            self._touch(node_id, self.parent(node_id), *self.neighbours(node_id))
            del self._stamps[node_id]
        shared.drop(self.nodes, node_id)
        self._by_type[node.type].discard(node_id)
        with shared.opened(self.tree, self.nav):
            self.tree.remove_node(node_id)
            if node_id in self.nav:
                self.nav.remove_node(node_id)
                self._components, self._nav_version = None, next(_STAMPS)

    def connect(self, a: str, b: str, weight: float | None = None) -> None:
        for end in (a, b):
            if self.node(end).type not in NAV_TYPES:
                raise GraphError(
                    f"navigation edge {a}<->{b}: '{end}' is {a_or_an(self.nodes[end].type)}, "
                    "only room and pose nodes are connected",
                    end,
                )
        if a == b:
            raise GraphError(f"navigation edge {a}<->{b} joins a node to itself", a)
        attrs: dict[str, float] = {}
        if weight is not None:
            try:  # an int past a float's range raises OverflowError, a string TypeError
                value = float(weight) if not isinstance(weight, (str, bytes)) else math.nan
            except (TypeError, ValueError, OverflowError):
                value = math.nan
            if not math.isfinite(value) or value < 0:
                raise GraphError(
                    f"navigation edge {a}<->{b}: weight must be a finite number >= 0, got {weight!r:.80}", a
                )
            attrs["weight"] = value
        with shared.opened(self.tree, self.nav):
            self.nav.add_edge(a, b, **attrs)
        self._components, self._nav_version = None, next(_STAMPS)
        self._touch(a, b)

    def disconnect(self, a: str, b: str) -> None:
        if not self.nav.has_edge(a, b):
            raise GraphError(f"no navigation edge {a}<->{b}", a)
        with shared.opened(self.tree, self.nav):
            self.nav.remove_edge(a, b)
        self._components, self._nav_version = None, next(_STAMPS)
        self._touch(a, b)

    def set_states(self, node_id: str, states: Iterable[str]) -> None:
        shared.put(self.nodes, node_id, self.node(node_id).with_states(states))
        self._touch(node_id)

    def set_attributes(self, node_id: str, values: Mapping[str, Any]) -> None:
        """Set some attributes of a node (the others kept), checked as Node checks them."""
        node = self.node(node_id)
        self.replace_node(replace(node, attributes={**node.attributes, **values}))

    def replace_node(self, node: Node) -> None:
        """Put `node` in place of the node with its id, keeping its edges; the type cannot change."""
        old = self.node(node.id)
        if old.type != node.type:
            raise GraphError(f"node '{node.id}' cannot change type from {old.type} to {node.type}", node.id)
        shared.put(self.nodes, node.id, node)
        self._touch(node.id)

    def copy(self, tracked: bool = False) -> SceneGraph:
        """A copy that shares the (immutable) nodes. tracked: keep tracking changes (if this graph does) and share
        its history (and so the caches kept for it), for a copy that readers use (graph/snapshots.py)."""
        out = SceneGraph(self.name)
        with gc_paused():
            out.nodes = dict(self.nodes)
            out.tree = _copy_tree(self.tree)
            out.nav = _copy_nav(self.nav)
        out._by_type = {k: set(v) for k, v in self._by_type.items()}
        out._components, out._nav_version = self._components, self._nav_version
        if tracked and self._stamps is not None:
            out._stamps = dict(self._stamps)
            out._history, (out._log, out._log_at) = self._history, self.change_log
        return out

    def subgraph(self, node_ids: Iterable[str]) -> SceneGraph:
        """Induced subgraph of the chosen nodes plus their ancestors, so it stays a valid hierarchy."""
        pred: dict[str, dict[str, dict[str, Any]]] = self.tree._pred  # networkx's dicts: no view per lookup
        keep: dict[str, int] = {}  # node -> its depth (its ancestors are kept before it: a walk stops at one)
        for node_id in node_ids:
            self.node(node_id)
            chain: list[str] = []
            current: str | None = node_id
            while current is not None and current not in keep:
                chain.append(current)
                current = next(iter(pred[current]), None)
            depth = -1 if current is None else keep[current]
            for item in reversed(chain):
                depth += 1
                keep[item] = depth
        # The parts a loader would pass (prechecked_graph): this graph's nodes and edges passed its checks.
        placed: tuple[list[str], list[str], list[str]] = ([], [], [])
        for node_id in keep:
            for parent, data in pred[node_id].items():
                placed[0].append(node_id)
                placed[1].append(parent)
                placed[2].append(data["relation"])
        links: list[Link] = []
        done: set[str] = set()  # each edge once, in self.nav.edges order
        for a, around in self.nav._adj.items():
            if a in keep:
                links.extend((a, b, data.get("weight")) for b, data in around.items() if b not in done and b in keep)
            done.add(a)
        with gc_paused():
            nodes = [self.nodes[n] for n in sorted(keep, key=keep.__getitem__)]
            return prechecked_graph(self.name, nodes, placed, links)


def _copy_tree(tree: nx.DiGraph) -> nx.DiGraph:
    """tree.copy(), the same dicts in the same order (each edge's data copied once, shared by both directions),
    filled directly: networkx's add_edges_from bookkeeping was most of a snapshot's copy at 10k nodes."""
    out = nx.DiGraph()
    out.graph.update(tree.graph)
    out._node.update({node: data.copy() for node, data in tree._node.items()})
    succ: dict[Any, dict[Any, dict[str, Any]]] = {node: {} for node in tree._node}
    pred: dict[Any, dict[Any, dict[str, Any]]] = {node: {} for node in tree._node}
    for parent, children in tree._succ.items():
        row = succ[parent]
        for child, data in children.items():
            row[child] = pred[child][parent] = data.copy()
    out._succ.update(succ)
    out._pred.update(pred)
    return out


def _copy_nav(nav: nx.Graph) -> nx.Graph:
    """nav.copy(), the same dicts in the same order (networkx's copy adds each edge from both ends: an end's
    neighbours come in the order the edges are first met), filled directly."""
    out = nx.Graph()
    out.graph.update(nav.graph)
    out._node.update({node: data.copy() for node, data in nav._node.items()})
    adj: dict[Any, dict[Any, dict[str, Any]]] = {node: {} for node in nav._node}
    for a, around in nav._adj.items():
        row = adj[a]
        for b, data in around.items():
            link = row.get(b)
            if link is None:
                row[b] = adj[b][a] = data.copy()
            else:
                link.update(data)
    out._adj.update(adj)
    return out


#: A navigation edge as loaders pass it: both ends and its weight, if any.
Link = tuple[str, str, float | None]


#: A run of consecutive nodes of one type: (type, first index, end index) into a loader's node list.
TypeRun = tuple[str, int, int]
#: How prechecked_graph checks hierarchy edges given as index columns (children and parents into the node list,
#: relations into a table), inside the loop that builds them instead of in whole-column passes before: each node's
#: type code; the relation table; [child type code][parent type code] -> the relation codes PLACEMENTS allows
#: there, for pairs that cannot nest and (next) for those that can (NESTING); and a list that gets the child index
#: of every nesting edge (the loader then walks those for cycles). An index that is not an int >= 0 raises
#: GraphError, one past the end IndexError.
IndexedPlacements = tuple[list[int], list[str], list[list[tuple[int, ...]]], list[list[tuple[int, ...]]], list[int]]


def prechecked_graph(
    name: str,
    nodes: list[Node],
    placements: tuple[list[Any], list[Any], list[Any]],
    links: list[tuple[Any, Any, float | None]],
    ids: list[str] | None = None,
    runs: list[TypeRun] | None = None,
    indexed: IndexedPlacements | None = None,
) -> SceneGraph:
    """A SceneGraph from parts a loader has checked: one parent at most per node, PLACEMENTS, no cycle, links
    between distinct room or pose nodes with valid weights. Raises GraphError if two nodes share an id or a node
    has two parents (the loader then names the culprit through its item-by-item path).

    Fills networkx's adjacency dicts directly, the same dicts add_node/add_edge would leave (one per node and
    edge, shared between both directions, in the same order), because the per-call bookkeeping of add_edge cost
    more than the edge. placements: (children, their parents, their relations), in file order. ids: the nodes'
    ids, if the loader has them. runs: the nodes as consecutive runs of one type each, in order, if the loader
    knows them (the per-type sets then take whole slices instead of a call per node). indexed: the placements
    are index columns (children and parents into `ids`, relations into a table) and the links' ends indices into
    `ids`, checked here, edge by edge (`IndexedPlacements`; a link's end off the navigation layer raises
    KeyError).
    """
    graph = SceneGraph(name)
    if ids is None:
        ids = [node.id for node in nodes]
    table = graph.nodes
    table.update(zip(ids, nodes, strict=True))
    if len(table) != len(nodes):
        raise GraphError("duplicate node id")
    by_type = graph._by_type
    places: list[str] = []
    if runs is None:
        for node in nodes:
            by_type[node.type].add(node.id)
        places = [node.id for node in nodes if node.type in NAV_TYPES]
    else:
        for node_type, start, stop in runs:
            by_type[node_type].update(ids[start:stop])  # in node order, as add() one at a time
            if node_type in NAV_TYPES:
                places += ids[start:stop]
    tree, nav = graph.tree, graph.nav
    pred: dict[str, dict[str, dict[str, Any]] | None] = dict.fromkeys(table)  # from a dict: presized, no rehash
    succ: dict[str, dict[str, dict[str, Any]]] = {node_id: {} for node_id in ids}
    if indexed is None:
        for child, parent, relation in zip(*placements, strict=True):
            data = {"relation": relation}
            succ[parent][child] = data
            pred[child] = {parent: data}
    else:
        codes, relations, allowed, nesting, nested = indexed
        for c, p, r in zip(*placements, strict=True):
            if type(c) is not int or type(p) is not int or type(r) is not int or c < 0 or p < 0:
                raise GraphError("an index that is not an int >= 0")  # cheaper here than three passes before
            if r not in allowed[codes[c]][codes[p]]:  # two list subscripts and a small tuple: no key to build
                if r not in nesting[codes[c]][codes[p]]:
                    raise GraphError("a placement PLACEMENTS refuses")
                nested.append(c)
            child, parent = ids[c], ids[p]
            data = {"relation": relations[r]}
            succ[parent][child] = data
            pred[child] = {parent: data}
    roots = [node_id for node_id, up in pred.items() if up is None]
    if len(roots) != len(ids) - len(placements[0]):
        raise GraphError("a node with two parents")
    for root in roots:
        pred[root] = {}
    # The dicts made here become networkx's own (its attributes take them, resetting any cached view; _adj and
    # _succ are one dict): an update() would copy each table, touching every entry again (page faults at 100k).
    tree._node = {node_id: {} for node_id in ids}
    tree._adj = tree._succ = succ
    tree._pred = pred
    nav._node = {node_id: {} for node_id in places}
    adj: dict[str, dict[str, dict[str, Any]]] = {node_id: {} for node_id in places}
    for a, b, weight in links:
        if indexed is not None:
            if type(a) is not int or type(b) is not int or a < 0 or b < 0 or a == b:
                raise GraphError("a link end that is not an int >= 0, or a link from a node to itself")
            a, b = ids[a], ids[b]  # adj[...] below: KeyError unless both are rooms or poses
        link: dict[str, Any] | None = adj[a].get(b)
        if link is None:
            link = adj[a][b] = adj[b][a] = {}
        if weight is not None:
            link["weight"] = weight
    nav._adj = adj
    return graph
