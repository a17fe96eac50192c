"""Compact text serialisation of (parts of) a scene graph for LLM prompts.

The layout follows SayPlan appendix K/L: nodes grouped by type, then the links.
It is valid JSON (compact separators), so prompts can say "parse it with json".

The whole graph of a 1,000-room building is 10k nodes: the writer reads each node's
parent edge once and the agent's location and held object once per text, and sorts
each type's ids once, instead of asking the graph per node (test_graph_text_equiv.py
checks it against the straightforward writer).

A planner node keeps its graph across goals, with small updates between them. On a tracked graph
(SceneGraph.track_changes: the live copy and its snapshots, see graph/snapshots.py) the whole-graph text is kept
as one JSON fragment per node, each valid for the node's change stamp: a later text redoes the records of the
nodes whose stamps changed (and of those whose record reads them) and joins the rest
(test_prompt_cache.py checks it against the uncached writer after random mutations).
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Callable, Iterable
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any

from sayplan_core.graph.caches import PerHistory
from sayplan_core.graph.model import NODE_TYPES, SceneGraph

#: Types whose hierarchy edge to a visible parent is a link of the text.
_PARENT_LINKED = frozenset({"room", "asset", "workspace"})
#: Types whose navigation edges are links of the text.
_NAV_LINKED = frozenset({"room", "pose"})
_LINKED = sorted(_NAV_LINKED | _PARENT_LINKED)
_LINKED_SET = frozenset(_LINKED)


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

    def record_text(self, node_id: str, ascii_only: bool = False) -> str:
        """dumps(record(node_id)) (compact; ASCII-escaped when `ascii_only`), written as text directly: a
        whole-graph write makes 10.5k records, and the dict plus an encoder call per record cost a third more."""
        strings = encode_basestring_ascii if ascii_only else encode_basestring
        dumps = dumps_ascii if ascii_only else _dumps
        node = self.nodes[node_id]
        parts = ['{"id":', strings(node.id)]
        name = node.name
        if name and name != node.id.replace("_", " "):
            parts += [',"name":', strings(name)]
        node_type = node.type
        if node_type == "object":
            for parent, edge in self.pred.get(node_id, _NO_EDGES).items():
                relation = str(edge["relation"])
                state = "inside_hand" if relation == "inside_hand" else f"{relation}({parent})"
                parts += [',"state":', strings(state)]
                break
        elif node_type in ("asset", "workspace"):
            room = self.room_of(node_id)
            if room:
                parts += [',"room":', strings(room)]
            for parent in self.pred.get(node_id, _NO_EDGES):
                if parent and self.nodes[parent].type == "workspace":
                    parts += [',"workspace":', strings(parent)]
                break
        elif node_type in ("room", "pose"):
            for parent in self.pred.get(node_id, _NO_EDGES):
                if parent and self.nodes[parent].type == "floor":
                    parts += [',"floor":', strings(parent)]
                break
        elif node_type == "agent":
            if self.agent_location:
                parts += [',"location":', strings(self.agent_location)]
            if self.held:
                parts += [',"holding":', strings(self.held)]
        if node.states:
            parts += [',"states":', dumps(node.states)]
        if node.affordances:
            parts += [',"affordances":', dumps(node.affordances)]
        if node.attributes:
            attrs = {k: v for k, v in node.attributes.items() if not (node_type == "agent" and k == "location")}
            if attrs:
                parts += [',"attributes":', dumps(attrs)]
        if self.with_positions and node.position is not None:
            parts += [',"position":', dumps([round(v, 2) for v in node.position])]
        parts.append("}")
        return "".join(parts)


#: No hierarchy edges (a node missing from the tree's dicts).
_NO_EDGES: dict[str, dict[str, Any]] = {}


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
    if node_ids is None and graph.change_stamps is not None:
        return (_TEXT_WITH_POSITIONS if with_positions else _TEXT).of(graph).text(graph)
    return json.dumps(graph_records(graph, node_ids, with_positions), separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------------------- fragments kept across versions
def _encoder(ensure_ascii: bool) -> Callable[[Any], str]:
    """json.dumps(value, separators=(",", ":"), ensure_ascii=...) for one value of many: through the C encoder
    made once, since json.dumps makes an encoder per call (2.5x slower per record)."""
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii)
    if c_make_encoder is None:
        return encoder.encode
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    chunks = c_make_encoder(None, encoder.default, strings, None, ":", ",", False, False, True)
    return lambda value: "".join(chunks(value, 0))


_dumps = _encoder(ensure_ascii=False)
#: The same with ensure_ascii (json.dumps's default).
dumps_ascii = _encoder(ensure_ascii=True)


class NodeFragments:
    """Text per node of a tracked graph, each kept with the change stamp of the node it was written for.

    Kept per history (graph/caches.py), shared by a tracked graph and its tracked copies, so the fragments
    written for one version serve the next: an entry is used only while the graph at hand has the same stamp for
    that node, which names one state of it (stamps are unique in the process). `sync` finds what differs by
    comparing the stamp tables (C-level set operations, no Python loop over the nodes), keeps each type's ids sorted,
    and `redo(graph, ids)` (subclasses) rewrites the entries of the changed nodes and of those whose text reads them.
    A lock serialises users: planners on several snapshots at once share one cache.
    """

    #: The types whose ids are kept sorted in `order` (None: every type; the others' lists stay empty).
    types: frozenset[str] | None = None

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stamps: dict[str, int] = {}
        self.kind: dict[str, str] = {}
        self.order: dict[str, list[str]] = {t: [] for t in NODE_TYPES}
        self.revision: dict[str, int] = dict.fromkeys(NODE_TYPES, 0)  # bumped when a type's order changes
        self.log: list[str] | None = None  # the change log (SceneGraph.change_log) synced to, and how far
        self.count = 0

    def sync(self, graph: SceneGraph) -> set[str]:
        """Catch up with `graph`'s stamps: forget the nodes it no longer has, place the new ones, and return the
        ids that are new or restamped (their entries must be redone; the caller stores their stamps after)."""
        stamps = graph.change_stamps
        assert stamps is not None
        seen = self.stamps.get
        log, count = graph.change_log
        if not self.stamps:  # first use: everything, with no pass in Python over the nodes but the types'
            self.log, self.count, self.stamps = log, count, dict(stamps)
            self.kind = self._kinds(graph)
            self.order = self._sorted(graph)
            for node_type in NODE_TYPES:
                self.revision[node_type] += 1
            return set(stamps)
        if log is self.log:  # one history: only what was logged between the two counts can differ
            logged = set(log[min(count, self.count) : max(count, self.count)])
            changed = {node_id for node_id in logged if seen(node_id) != stamps.get(node_id)}
            gone = {node_id for node_id in changed if node_id not in stamps}
            changed -= gone
        else:
            changed = {node_id for node_id, stamp in stamps.items() if seen(node_id) != stamp}
            arrived = sum(1 for node_id in changed if node_id not in self.stamps)
            gone = self.stamps.keys() - stamps.keys() if len(self.stamps) + arrived != len(stamps) else set()
        self.log, self.count = log, count
        nodes, kind, order = graph.nodes, self.kind, self.order
        # a node moves between the kept lists when its type differs from the one kept for it (untyped: not kept)
        moved = gone | {n for n in changed if kind.get(n) != (t := nodes[n].type) and (n in kind or self._kept(t))}
        if len(moved) > 64:  # a fresh graph (or a large change): sort each type once
            self.kind = kind = self._kinds(graph)
            self.order = order = self._sorted(graph)
            for node_type in NODE_TYPES:
                self.revision[node_type] += 1
        else:
            for node_id in moved:
                old = kind.pop(node_id, None)
                if old is not None and self._kept(old):
                    ids = order[old]
                    del ids[bisect.bisect_left(ids, node_id)]
                    self.revision[old] += 1
                if node_id in nodes:
                    new = kind[node_id] = nodes[node_id].type
                    if self._kept(new):
                        bisect.insort(order[new], node_id)
                        self.revision[new] += 1
        for node_id in gone:
            del self.stamps[node_id]
            self.drop(node_id)
        return changed

    def _kept(self, node_type: str) -> bool:
        return self.types is None or node_type in self.types

    def _kinds(self, graph: SceneGraph) -> dict[str, str]:
        """Node -> type, for the nodes of the kept types (every node when `types` is None)."""
        if self.types is None:
            return {node_id: node.type for node_id, node in graph.nodes.items()}
        return {node_id: t for t in self.types for node_id in graph.type_index(t)}

    def _sorted(self, graph: SceneGraph) -> dict[str, list[str]]:
        return {t: sorted(graph.type_index(t)) if self._kept(t) else [] for t in NODE_TYPES}

    def stored(self, graph: SceneGraph, ids: set[str]) -> None:
        """The entries of `ids` (nodes of the graph) were redone: they now hold for the graph's stamps."""
        stamps = graph.change_stamps
        assert stamps is not None
        if len(ids) == len(stamps):  # every node: one copy in C
            self.stamps = dict(stamps)
            return
        for node_id in ids:
            self.stamps[node_id] = stamps[node_id]

    def drop(self, node_id: str) -> None:
        """Forget the entries of a node the graph no longer has."""


class _SortedIds:
    """Every node id, sorted, and the id set it was sorted from: redone only when the set differs (a C-level
    comparison of the key sets, so it cannot go stale whatever changed the graph)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.members: set[str] = set()
        self.ids: list[str] = []

    def sorted_ids(self, graph: SceneGraph) -> list[str]:
        with self.lock:
            if graph.nodes.keys() != self.members:
                self.members = set(graph.nodes)
                self.ids = sorted(self.members)
            return self.ids


def sorted_ids(graph: SceneGraph) -> list[str]:
    """sorted(graph.nodes), kept across versions of a tracked graph (the caller must not change the list)."""
    if graph.change_stamps is None:
        return sorted(graph.nodes)
    return _IDS.of(graph).sorted_ids(graph)


def room_readers(graph: SceneGraph, changed: set[str]) -> set[str]:
    """The assets and workspaces below the changed nodes whose room (room_of) is read through them."""
    succ: dict[str, dict[str, Any]] = graph.tree._succ
    nodes = graph.nodes
    out: set[str] = set()
    todo = [n for n in changed if n in succ]
    while todo:
        for child in succ[todo.pop()]:
            if nodes[child].type in _WALKED_FOR_ROOM and child not in out:
                out.add(child)
                todo.append(child)
    return out


#: Records that read their room through their ancestors (room_of walks up through these types).
_WALKED_FOR_ROOM = frozenset({"asset", "workspace"})


class _TextFragments(NodeFragments):
    """The whole-graph prompt text: each node's record and its links, as JSON."""

    def __init__(self, with_positions: bool) -> None:
        super().__init__()
        self.with_positions = with_positions
        self.records: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.linked: list[str] = []
        self.linked_revision: tuple[int, ...] = ()
        self.joined: dict[str, str] = dict.fromkeys(NODE_TYPES, "")  # per type: '"room":[...]' ('' when none)
        self.joined_revision: dict[str, int] = {}
        self.joined_links = ""
        # per type, its records joined in blocks of BLOCK in `order`, and each id's place there: a record that
        # changed while the type's order did not re-joins its block, not the type's 5,000 records
        self.blocks: dict[str, list[str]] = {}
        self.places: dict[str, dict[str, int]] = {}
        self.block = self.BLOCK  # fixed for the cache's life: `places` are counted in it

    def drop(self, node_id: str) -> None:
        self.records.pop(node_id, None)
        self.links.pop(node_id, None)

    @staticmethod
    def links_of(writer: _Writer, node_id: str) -> str:
        """The node's links as JSON strings joined by commas: its navigation edges to greater ids, its parent."""
        node_type = writer.nodes[node_id].type
        mine: list[str] = []
        if node_type in _NAV_LINKED and node_id in writer.nav_adj:
            mine += [f"{node_id}<->{other}" for other in sorted(writer.nav_adj[node_id]) if node_id < other]
        if node_type in _PARENT_LINKED:
            parent = writer.parent(node_id)
            if parent is not None:
                mine.append(f"{parent}<->{node_id}")
        return ",".join([encode_basestring(link) for link in mine])

    def text(self, graph: SceneGraph) -> str:
        with self.lock:
            changed = self.sync(graph)
            if len(changed) < len(graph.nodes):
                changed |= room_readers(graph, changed)
            writer = _Writer(graph, self.with_positions)
            records, links, nodes = self.records, self.links, graph.nodes
            dirty = {t for t in NODE_TYPES if self.revision[t] != self.joined_revision.get(t)}
            links_dirty = bool(dirty & _LINKED_SET)
            record = writer.record_text
            if len(changed) == len(nodes):  # the first write: every entry, no comparisons
                self.records = records = {node_id: record(node_id) for node_id in nodes}
                self.links = links = {n: self.links_of(writer, n) for t in _LINKED for n in self.order[t]}
                dirty, links_dirty = set(NODE_TYPES), True
                self.blocks.clear()  # every record is new: no block is kept
            rewritten: dict[str, set[str]] = {}  # type -> ids whose record changed
            for node_id in changed if len(changed) < len(nodes) else ():
                node_type = nodes[node_id].type
                text = record(node_id)
                if records.get(node_id) != text:  # restamped for its children only: the same record
                    records[node_id] = text
                    dirty.add(node_type)
                    rewritten.setdefault(node_type, set()).add(node_id)
                if node_type not in _LINKED_SET:
                    links.pop(node_id, None)
                    continue
                text = self.links_of(writer, node_id)
                if links.get(node_id) != text:
                    links[node_id] = text
                    links_dirty = True
            self.stored(graph, changed)
            for node_type in dirty:  # each type's records joined once per change of that type
                self._join(node_type, rewritten.get(node_type, set()))
            if links_dirty:
                revision = tuple(self.revision[t] for t in _LINKED)
                if self.linked_revision != revision:
                    self.linked = sorted(n for t in _LINKED for n in self.order[t])
                    self.linked_revision = revision
                self.joined_links = ",".join([text for text in [links[n] for n in self.linked] if text])
            groups = []
            for node_type in NODE_TYPES:
                if node_type == "agent":  # an agent's record reads the first agent's place and hand: always redone
                    ids = self.order[node_type]
                    if ids:
                        groups.append(f'"agent":[{",".join([writer.record_text(n) for n in ids])}]')
                elif self.joined[node_type]:
                    groups.append(self.joined[node_type])
            edges = self.joined_links
            agent, location = graph.agent_id, writer.agent_location
            if agent is not None and location is not None and location in nodes:
                agent_link = _dumps(f"{location}<->{agent}")
                edges = f"{edges},{agent_link}" if edges else agent_link
            return f'{{"nodes":{{{",".join(groups)}}},"links":[{edges}]}}'

    #: records per block of `blocks` (a new cache's; tests make it small to cross block edges)
    BLOCK = 128

    def _join(self, node_type: str, rewritten: set[str]) -> None:
        """'"<type>":[<records>]' in `order`: the blocks holding a rewritten record re-joined when the type's order
        is the one the blocks were made for, every block otherwise."""
        ids, records, size = self.order[node_type], self.records, self.block
        blocks, places = self.blocks.get(node_type), self.places.get(node_type)
        kept = self.joined_revision.get(node_type) == self.revision[node_type]
        if not kept or blocks is None or places is None or not rewritten <= places.keys():
            blocks = [",".join([records[n] for n in ids[i : i + size]]) for i in range(0, len(ids), size)]
            places = {node_id: i // size for i, node_id in enumerate(ids)}
            self.blocks[node_type], self.places[node_type] = blocks, places
        else:
            for block in {places[n] for n in rewritten}:
                blocks[block] = ",".join([records[n] for n in ids[block * size : (block + 1) * size]])
        self.joined[node_type] = f'"{node_type}":[{",".join(blocks)}]' if ids else ""
        self.joined_revision[node_type] = self.revision[node_type]


class ShownRecords:
    """The text of a subset of one graph's nodes (graph_records + json.dumps, ASCII), for a graph that its owner
    changes in place between texts and shows again at every step (LookPlanGraph's memory graph): each node's
    record and its candidate links are kept until the owner says the node changed (`forget`). Why: every step
    shows every room (1,000 records at 1,000 rooms) and a step changes a handful of nodes.

    A record reads the node, its parent edge and, for assets and workspaces, the room above them; its links read
    the node's navigation edges and parent. The agent's record reads the first agent's place and hand, so it is
    always redone. test_lookplangraph_commit_equiv.py checks it against the uncached writer at every step.
    """

    def __init__(self, graph: SceneGraph) -> None:
        self.graph = graph
        self.records: dict[str, str] = {}
        self.links: dict[str, tuple[list[str], str | None]] = {}  # nav neighbours above the node, its parent
        # node -> the nodes whose kept links name it: a removed node's neighbours are no longer in the graph's
        # navigation dicts when `forget` hears of it, and a node added back with its id would get their old links
        self.named_by: dict[str, set[str]] = {}

    def forget(self, changed: Iterable[str]) -> None:
        """The nodes whose fields, parent edge or navigation edges changed (or that were added or removed) since
        the last text: drop what reads them (their records and links, their neighbours' links, the records of the
        assets and workspaces that read their room through them)."""
        graph = self.graph
        nav_adj: dict[str, dict[str, Any]] = graph.nav._adj
        ids = set(changed)
        for node_id in list(ids):
            ids.update(nav_adj.get(node_id, ()))
            ids.update(self.named_by.pop(node_id, ()))
        ids |= room_readers(graph, {node_id for node_id in ids if node_id in graph.nodes})
        for node_id in ids:
            self.records.pop(node_id, None)
            self.links.pop(node_id, None)

    def text(self, node_ids: Iterable[str]) -> str:
        """json.dumps(graph_records(graph, node_ids), separators=(",", ":")), from the kept records."""
        graph = self.graph
        nodes = graph.nodes
        by_type: dict[str, list[str]] = {t: [] for t in NODE_TYPES}
        for node_id in node_ids:  # in the given order, repeats kept, as graph_records
            if node_id in nodes:
                by_type[nodes[node_id].type].append(node_id)
        records, writer = self.records, None
        groups: list[str] = []
        visible: set[str] = set()
        for node_type, ids in by_type.items():
            if not ids:
                continue
            ids.sort()
            visible.update(ids)
            texts: list[str] = []
            for node_id in ids:
                text = records.get(node_id) if node_type != "agent" else None
                if text is None:
                    writer = writer or _Writer(graph, False)
                    text = writer.record_text(node_id, ascii_only=True)
                    if node_type != "agent":
                        records[node_id] = text
                texts.append(text)
            groups.append(f'"{node_type}":[{",".join(texts)}]')
        links: list[str] = []
        kept = self.links
        linked = [n for t in _LINKED for n in by_type[t]]
        linked.sort()
        for node_id in dict.fromkeys(linked):  # graph_records: each linked node once
            entry = kept.get(node_id)
            if entry is None:
                entry = kept[node_id] = self._link_candidates(node_id)
                for other in entry[0]:
                    self.named_by.setdefault(other, set()).add(node_id)
            above, parent = entry
            for other in above:
                if other in visible:
                    links.append(f"{node_id}<->{other}")
            if parent is not None and parent in visible:
                links.append(f"{parent}<->{node_id}")
        agent = graph.agent_id
        if agent in visible:
            location = graph.agent_location()
            if location in visible:
                links.append(f"{location}<->{agent}")
        edges = ",".join([dumps_ascii(link) for link in links])
        return f'{{"nodes":{{{",".join(groups)}}},"links":[{edges}]}}'

    def _link_candidates(self, node_id: str) -> tuple[list[str], str | None]:
        graph = self.graph
        node_type = graph.nodes[node_id].type
        nav_adj: dict[str, dict[str, Any]] = graph.nav._adj
        above = (
            sorted(o for o in nav_adj[node_id] if node_id < o)
            if node_type in _NAV_LINKED and node_id in nav_adj
            else []
        )
        parent = None
        if node_type in _PARENT_LINKED:
            for up in graph.tree._pred.get(node_id, {}):
                parent = str(up)
                break
        return above, parent


#: Kept per history of tracked graphs (graph/caches.py): the prompt text without and with positions, the sorted ids.
_TEXT = PerHistory("text", lambda: _TextFragments(False))
_TEXT_WITH_POSITIONS = PerHistory("text with positions", lambda: _TextFragments(True))
_IDS = PerHistory("sorted ids", _SortedIds)
