"""The project's native JSON format for scene graphs: lossless and validated on load.

A file is rejected as a whole with a GraphError naming the offending node: the
graph is built in a fresh object and only returned once every check has passed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from itertools import chain, compress, repeat
from operator import eq, itemgetter
from pathlib import Path
from typing import Any

import orjson

from sayplan_core import files
from sayplan_core.graph import columns, limits
from sayplan_core.graph.acyclic import check_acyclic
from sayplan_core.graph.model import (
    HIERARCHY_RELATIONS,
    NAV_RELATION,
    NAV_TYPES,
    NESTING,
    NODE_TYPES,
    PLACEMENTS,
    GraphError,
    Node,
    Position,
    SceneGraph,
    check_parent,
    gc_paused,
    prechecked_graph,
    prechecked_nodes,
)

FORMAT_NAME = "sayplan-3dsg"
#: The version of a rows file; a columns file is version columns.VERSION and says "layout": "columns".
FORMAT_VERSION = 1
#: The layouts `save`/`dumps` write: rows (one object per node and edge, indented, for people and diffs) and
#: columns (one list per field, compact: loads in about half the time; docs/concepts/graph_loading.md).
LAYOUTS = ("rows", columns.LAYOUT)
#: The default: rows for a graph people may read and edit by hand, columns from this many nodes on (a building
#: nobody reads node by node, where load time counts), so a large graph loads fast without a flag.
AUTO = "auto"
COLUMNS_FROM_NODES = 2_000


def chosen_layout(graph: SceneGraph, layout: str = AUTO) -> str:
    """The layout `layout` writes `graph` in: itself, or for AUTO the one the graph's size calls for."""
    if layout == AUTO:
        return columns.LAYOUT if len(graph.nodes) >= COLUMNS_FROM_NODES else "rows"
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (use {' or '.join((AUTO, *LAYOUTS))})")
    return layout


#: The largest graph file read (a 100k-node building is about 20 MB); bigger files are refused before reading.
MAX_FILE_BYTES = 256 * 1024 * 1024
#: Files at least this big report progress while they load.
PROGRESS_BYTES = 8 * 1024 * 1024

Progress = Callable[[str], None]
_NODE_KEYS = {"id", "type", "name", "states", "affordances", "attributes", "position"}
_EDGE_KEYS = {"source", "target", "relation", "weight"}
_TYPES = frozenset(NODE_TYPES)
_RELATIONS = HIERARCHY_RELATIONS | {NAV_RELATION}
_NUMBERS = {int, float}
_LISTS = {list, type(None)}
#: (source type, target type, relation) of every edge the format allows: placements and navigation links.
_EDGE_TRIPLES = PLACEMENTS | {(a, b, NAV_RELATION) for a in NAV_TYPES for b in NAV_TYPES}


def node_to_dict(node: Node, exact: bool = False) -> dict[str, Any]:
    """One node as the native format writes it; positions rounded to 0.1 mm unless `exact` (the journal)."""
    item: dict[str, Any] = {"id": node.id, "type": node.type}
    if node.name != node.id.replace("_", " "):
        item["name"] = node.name
    if node.states:
        item["states"] = list(node.states)
    if node.affordances:
        item["affordances"] = list(node.affordances)
    if node.attributes:
        item["attributes"] = dict(node.attributes)
    if node.position is not None:
        item["position"] = [float(v) if exact else round(float(v), 4) for v in node.position]
    return item


def graph_to_dict(graph: SceneGraph, exact: bool = False) -> dict[str, Any]:
    nodes = [
        node_to_dict(node, exact)
        for node in sorted(graph.nodes.values(), key=lambda n: (NODE_TYPES.index(n.type), n.id))
    ]
    edges: list[dict[str, Any]] = []
    for parent, child, data in sorted(graph.tree.edges(data=True)):
        edges.append({"source": child, "relation": data["relation"], "target": parent})
    for a, b, data in sorted((min(a, b), max(a, b), d) for a, b, d in graph.nav.edges(data=True)):
        edge: dict[str, Any] = {"source": a, "relation": NAV_RELATION, "target": b}
        if "weight" in data:
            edge["weight"] = data["weight"]
        edges.append(edge)
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": graph.name, "nodes": nodes, "edges": edges}


def dumps(graph: SceneGraph, indent: int | None = 1, layout: str = AUTO, exact: bool = False) -> str:
    """The graph as native JSON in `layout` (chosen_layout); columns are written compact whatever `indent` says.
    exact: columns only, the graph's own order and unrounded positions (columns.to_columns)."""
    layout = chosen_layout(graph, layout)
    if exact and layout != columns.LAYOUT:
        raise ValueError("native_format.dumps: exact is for the columns layout")
    if layout == columns.LAYOUT:
        data = columns.to_columns(graph, {"format": FORMAT_NAME}, exact)
        try:
            return orjson.dumps(data).decode()
        except orjson.JSONEncodeError:  # an attribute holding an int beyond 64 bits, which json writes
            return json.dumps(data, separators=(",", ":"))
    return json.dumps(graph_to_dict(graph), indent=indent, sort_keys=False)


def save(graph: SceneGraph, path: str | Path, layout: str = AUTO) -> None:
    Path(path).write_text(dumps(graph, layout=layout) + "\n", encoding="utf-8")


def read_text(path: str | Path, what: str = "scene graph file", limit: int = MAX_FILE_BYTES) -> str:
    """A text file's content, refused with a GraphError if it is missing, not a regular file (a folder, a device
    such as /dev/zero, a FIFO), over `limit` or not UTF-8 (sayplan_core.files)."""
    try:
        return files.read_text(path, limit, what)
    except files.FileReadError as exc:
        raise GraphError(str(exc)) from exc


def parse_json(text: str | bytes, source: str) -> Any:
    """JSON with the decoder's errors (and inputs nested too deeply to parse) as one-line GraphErrors.

    orjson: it parses a 100k-node file in about half the time of the json module (docs/measured/graph_load.md).
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg:
            raise GraphError(f"{source}: JSON nested too deeply to be a scene graph") from None
        if "not valid UTF-8" in exc.msg:  # orjson says "str is not valid UTF-8: surrogates not allowed" of any bad byte
            raise GraphError(f"{source}: not UTF-8 text") from None
        raise GraphError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc


def load(path: str | Path, require_agent: bool = True, progress: Progress | None = None) -> SceneGraph:
    """Read and validate a native file. progress: called with a line per stage for files of 8 MB or more."""
    path = Path(path)
    start = time.perf_counter()
    text = read_text(path)
    report = progress if progress is not None and len(text) >= PROGRESS_BYTES else None
    if report is not None:
        report(f"{path}: read {len(text) / 1e6:.0f} MB in {time.perf_counter() - start:.1f} s")
    return loads(text, source=str(path), require_agent=require_agent, progress=report)


def loads(
    text: str | bytes,
    source: str = "<string>",
    require_agent: bool = True,
    progress: Progress | None = None,
    layout: str | None = None,
) -> SceneGraph:
    """A native document (str, or bytes of UTF-8) as a graph. layout: the one the document must be in (a message
    that names the layout of its payload), or None for any this build reads."""
    with gc_paused():
        start = time.perf_counter()
        data = parse_json(text, source)
        if progress is not None:
            listed = data.get("nodes", data.get("ids")) if isinstance(data, dict) else None  # rows or columns
            count = len(listed) if isinstance(listed, list) else 0
            progress(f"{source}: parsed {count} nodes in {time.perf_counter() - start:.1f} s; building and checking")
            start = time.perf_counter()
        graph = _graph_from_dict(data, source, require_agent, owned=True, layout=layout)
        del data  # before the collector resumes, so its first pass does not walk the parsed document
        if progress is not None:
            progress(f"{source}: {len(graph)} nodes checked in {time.perf_counter() - start:.1f} s")
        return graph


def _parse_position(raw: Any, node_id: str) -> tuple[float, float, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or len(raw) not in (2, 3):
        raise GraphError(f"node '{node_id}': position must be [x, y] or [x, y, z], got {raw!r}", node_id)
    try:
        values = [float(v) for v in raw]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past a float's range
        raise GraphError(f"node '{node_id}': position must hold numbers, got {raw!r}", node_id) from None
    if not math.isfinite(sum(values)):
        raise GraphError(f"node '{node_id}': position must be finite, got {raw!r}", node_id)
    if len(values) == 2:
        values.append(0.0)
    return (values[0], values[1], values[2])


def _str_list(raw: Any, what: str, node_id: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise GraphError(f"node '{node_id}': {what} must be a list of strings, got {raw!r}", node_id)
    return list(raw)


def node_from_dict(item: Any, index: int = 0) -> Node:
    if not isinstance(item, Mapping):
        raise GraphError(f"nodes[{index}] must be an object, got {type(item).__name__}")
    node_id = item.get("id")
    if not isinstance(node_id, str) or not node_id.strip():
        raise GraphError(f"nodes[{index}] has no valid 'id' (got {node_id!r})")
    unknown = set(item) - _NODE_KEYS
    if unknown:
        raise GraphError(f"node '{node_id}' has unknown field(s): {', '.join(sorted(unknown))}", node_id)
    attributes = item.get("attributes") or {}
    if not isinstance(attributes, Mapping):
        raise GraphError(f"node '{node_id}': attributes must be an object, got {attributes!r}", node_id)
    name = item.get("name", "")
    if not isinstance(name, str):
        raise GraphError(f"node '{node_id}': name must be a string", node_id)
    return Node(
        id=node_id,
        type=str(item.get("type")),
        name=name,
        states=_str_list(item.get("states"), "states", node_id),
        affordances=_str_list(item.get("affordances"), "affordances", node_id),
        attributes=dict(attributes),
        position=_parse_position(item.get("position"), node_id),
    )


def graph_from_dict(data: Any, source: str = "<dict>", require_agent: bool = True) -> SceneGraph:
    """Build and validate a graph; raises GraphError and returns nothing half-built.

    require_agent: a graph the robot plans on needs exactly one agent; pass False for
    partial graphs (a subgraph, a map without the robot yet).
    """
    with gc_paused():
        return _graph_from_dict(data, source, require_agent, owned=False)


def _graph_from_dict(data: Any, source: str, require_agent: bool, owned: bool, layout: str | None = None) -> SceneGraph:
    """owned: `data` was parsed just now and nothing else holds its lists (a columns load may keep them).
    layout: the one `data` must be in (None: any)."""
    if not isinstance(data, Mapping):
        raise GraphError(f"{source}: a scene graph file must hold a JSON object")
    fmt = data.get("format", FORMAT_NAME)
    if fmt != FORMAT_NAME:
        raise GraphError(
            f"{source}: format is {fmt!r:.40}, expected '{FORMAT_NAME}' (use an importer for other formats)"
        )
    version = data.get("version", FORMAT_VERSION)
    found = data.get("layout", "rows" if version == FORMAT_VERSION else columns.LAYOUT)
    if layout is not None and found != layout:
        raise GraphError(f"{source}: the document is in layout {found!r:.40}, where {layout!r:.40} was named")
    layout = found
    if (version, layout) == (columns.VERSION, columns.LAYOUT):
        links = data.get("links")
        _check_size(data.get("ids"), len(links) // 2 if isinstance(links, list) else 0, source)
        graph = columns.bulk_graph(data, owned)
        if graph is None:
            graph = _checked_graph(str(data.get("name", "")), *columns.to_rows(data, source), source)
        validate(graph, require_agent)
        return graph
    if (version, layout) != (FORMAT_VERSION, "rows"):
        raise GraphError(
            f"{source}: format version {version!r:.20} with layout {layout!r:.20} is not supported (this build "
            f"reads version {FORMAT_VERSION} rows and version {columns.VERSION} {columns.LAYOUT})"
        )
    raw_nodes = data.get("nodes")
    raw_edges = data.get("edges", [])
    if not isinstance(raw_nodes, list):
        raise GraphError(f"{source}: 'nodes' must be a list")
    if not isinstance(raw_edges, list):
        raise GraphError(f"{source}: 'edges' must be a list")

    _check_size(raw_nodes, len(raw_edges) - len(raw_nodes), source)  # at most one placement per node
    name = str(data.get("name", ""))
    graph = _bulk_graph(name, raw_nodes, raw_edges)
    if graph is None:
        graph = _checked_graph(name, raw_nodes, raw_edges, source)
    validate(graph, require_agent)
    return graph


def _check_size(ids: Any, edges: int, source: str) -> None:
    """Refuse a file with more nodes or navigation edges than any graph may have (limits.MAX_GRAPH_NODES, _EDGES) before
    building it: a node costs some 50 times its bytes in a columns file (24 in rows), so a file under
    MAX_FILE_BYTES could otherwise take tens of GB."""
    count = len(ids) if isinstance(ids, list) else 0
    if count > limits.MAX_GRAPH_NODES:
        raise GraphError(f"{source}: {count} nodes is over the {limits.MAX_GRAPH_NODES} node limit")
    if edges > limits.MAX_GRAPH_EDGES:
        raise GraphError(f"{source}: {edges} navigation edges is over the {limits.MAX_GRAPH_EDGES} edge limit")


def _checked_graph(name: str, raw_nodes: list[Any], raw_edges: list[Any], source: str) -> SceneGraph:
    """Item by item, each check in file order: the definition of what loads, and the path that names the first
    culprit of a file the bulk path turned down."""
    graph = SceneGraph(name)
    for index, item in enumerate(raw_nodes):
        graph.add_node(node_from_dict(item, index))

    parents: dict[str, tuple[str, str]] = {}
    nav_edges: list[tuple[str, str, float | None]] = []
    for index, edge in enumerate(raw_edges):
        if not isinstance(edge, Mapping):
            raise GraphError(f"{source}: edges[{index}] must be an object")
        unknown = set(edge) - _EDGE_KEYS
        if unknown:
            raise GraphError(f"{source}: edges[{index}] has unknown field(s): {', '.join(sorted(unknown))}")
        src, dst, rel = edge.get("source"), edge.get("target"), edge.get("relation")
        for end in (src, dst):
            if not isinstance(end, str) or end not in graph:
                raise GraphError(f"edge {src} -{rel}-> {dst} refers to node '{end}', which does not exist", str(end))
        assert isinstance(src, str) and isinstance(dst, str)
        if rel == NAV_RELATION:
            weight = edge.get("weight")
            number = isinstance(weight, (int, float)) and not isinstance(weight, bool)
            if weight is not None and (not number or not math.isfinite(weight) or weight < 0):
                raise GraphError(f"edge {src}<->{dst}: weight must be a finite number >= 0, got {weight!r}", src)
            nav_edges.append((src, dst, None if weight is None else float(weight)))
            continue
        if not isinstance(rel, str) or rel not in HIERARCHY_RELATIONS:
            raise GraphError(f"edge {src} -{rel}-> {dst}: unknown relation '{rel}'", src)
        if src in parents:
            other, other_rel = parents[src]
            raise GraphError(
                f"node '{src}' has two parents: {other_rel} '{other}' and {rel} '{dst}'; "
                "a node can only be in one place",
                src,
            )
        parents[src] = (dst, str(rel))

    check_acyclic(parents)
    for child, (parent, rel) in parents.items():
        check_parent(graph.nodes[child], graph.nodes[parent], rel)
        graph.tree.add_edge(parent, child, relation=rel)
    for a, b, weight in nav_edges:
        graph.connect(a, b, weight)
    return graph


def _bulk_graph(name: str, raw_nodes: list[Any], raw_edges: list[Any]) -> SceneGraph | None:
    """The graph of a file whose every node and edge passes the checks of _checked_graph, checked a column at a
    time (whole-file set and type tests instead of calls per item); None as soon as anything is unusual or wrong,
    and _checked_graph then builds it or names the culprit. Accepts nothing that _checked_graph refuses (a property
    test holds the two to the same graphs and refusals)."""
    try:
        nodes = _bulk_nodes(raw_nodes)
        if nodes is None:
            return None
        return _bulk_edges(name, nodes, raw_edges)
    except (GraphError, TypeError, ValueError, KeyError, AttributeError, OverflowError):
        return None  # an item of an unexpected shape (unhashable, missing): the checked path explains it


def _labels(column: list[Any]) -> list[tuple[str, ...]] | None:
    """A states or affordances column as tuples (None -> ()), or None if any is not a short list of short
    strings."""
    if set(map(type, column)) - _LISTS:
        return None  # a falsy value that is not a list ("", 0, {}) included: the checked path refuses it
    given = [labels for labels in column if labels]
    if max(map(len, given), default=0) > limits.MAX_LABELS:
        return None
    words = list(chain.from_iterable(given))
    if set(map(type, words)) - {str} or max(map(len, words), default=0) > limits.MAX_ID_CHARS:
        return None
    return [tuple(labels) if labels else () for labels in column]


def _positions(column: list[Any]) -> list[Position | None] | None:
    """Positions as float triples (None stays None), or None unless each is [x, y, z] of numbers whose sum is
    finite (the checked path's test); 2D positions take the checked path."""
    given = [p for p in column if p is not None]
    if set(map(type, given)) - {list} or set(map(len, given)) - {3}:
        return None
    kinds = set(map(type, chain.from_iterable(given)))
    if kinds - _NUMBERS or not all(map(math.isfinite, map(sum, given))):
        return None
    if int in kinds:
        return [None if p is None else (float(p[0]), float(p[1]), float(p[2])) for p in column]
    return [p and tuple(p) for p in column]


def _bulk_nodes(raw_nodes: list[Any]) -> list[Node] | None:
    if set(map(type, raw_nodes)) - {dict} or not _NODE_KEYS.issuperset(set().union(*raw_nodes)):
        return None
    ids = list(map(itemgetter("id"), raw_nodes))
    if set(map(type, ids)) - {str} or not all(map(str.strip, ids)):
        return None
    if max(map(len, ids), default=0) > limits.MAX_ID_CHARS or len(set(ids)) != len(ids):
        return None
    types = list(map(itemgetter("type"), raw_nodes))
    if not _TYPES.issuperset(types):
        return None
    names = list(map(dict.get, raw_nodes, repeat("name"), repeat("")))
    if set(map(type, names)) - {str} or max(map(len, names), default=0) > limits.MAX_NAME_CHARS:
        return None
    states = _labels(list(map(dict.get, raw_nodes, repeat("states"))))
    affordances = _labels(list(map(dict.get, raw_nodes, repeat("affordances"))))
    positions = _positions(list(map(dict.get, raw_nodes, repeat("position"))))
    if states is None or affordances is None or positions is None:
        return None
    names = [name or node_id.replace("_", " ") for node_id, name in zip(ids, names, strict=True)]
    attributes = list(map(dict.get, raw_nodes, repeat("attributes")))
    nodes = prechecked_nodes(zip(ids, types, names, states, affordances, positions, strict=True))
    for index, given in enumerate(attributes):
        if given:  # rare (the agent's location): the whole node through the checked path
            nodes[index] = node_from_dict(raw_nodes[index], index)
    return nodes


def _bulk_edges(name: str, nodes: list[Node], raw_edges: list[Any]) -> SceneGraph | None:
    if set(map(type, raw_edges)) - {dict} or not _EDGE_KEYS.issuperset(set().union(*raw_edges)):
        return None
    sources: list[Any] = list(map(dict.get, raw_edges, repeat("source")))
    targets: list[Any] = list(map(dict.get, raw_edges, repeat("target")))
    relations: list[Any] = list(map(dict.get, raw_edges, repeat("relation")))
    type_of: dict[Any, str] = {node.id: node.type for node in nodes}
    below = list(map(type_of.get, sources))  # None: no such node (or not a string)
    above = list(map(type_of.get, targets))
    triples = set(zip(below, above, relations, strict=True))
    if not _EDGE_TRIPLES.issuperset(triples):
        return None  # an unknown end or relation, a misplaced child, a link to a node off the navigation layer
    tree = list(map(NAV_RELATION.__ne__, relations))
    children = list(compress(sources, tree))
    if len(set(children)) != len(children):
        return None  # a node with two parents
    placements = (children, list(compress(targets, tree)), list(compress(relations, tree)))
    if not NESTING.isdisjoint((child, parent) for child, parent, _ in triples):
        types = (list(compress(below, tree)), list(compress(above, tree)))
        check_nested_acyclic(placements, types)
    navigation = list(map(NAV_RELATION.__eq__, relations))
    ends_a = list(compress(sources, navigation))
    ends_b = list(compress(targets, navigation))
    if any(map(eq, ends_a, ends_b)):
        return None
    weights = list(map(dict.get, compress(raw_edges, navigation), repeat("weight")))
    given = [w for w in weights if w is not None]
    if set(map(type, given)) - _NUMBERS or not all(map(math.isfinite, given)) or min(given, default=0) < 0:
        return None
    if given:
        weights = [None if w is None else float(w) for w in weights]
    return prechecked_graph(name, nodes, placements, list(zip(ends_a, ends_b, weights, strict=True)))


def check_nested_acyclic(
    placements: tuple[list[str], list[str], list[str]], types: tuple[list[Any], list[Any]]
) -> None:
    """No cycle among checked placements (children, parents, relations) whose (child, parent) types are `types`.

    A cycle of nodes is a cycle of types, so it is made of NESTING edges only (objects in objects): only those are
    walked, and the walk finds the cycle the whole hierarchy's walk would report first."""
    edges = zip(*placements, *types, strict=True)
    check_acyclic({child: (parent, rel) for child, parent, rel, *pair in edges if tuple(pair) in NESTING})


def validate(graph: SceneGraph, require_agent: bool = True) -> None:
    """Whole-graph rules that single edges cannot check (also applied to every live update)."""
    agents = graph.ids_of_type("agent")
    if require_agent and not agents:
        raise GraphError(
            "the graph has no agent node: the robot must be in the graph (add a node of type 'agent' "
            "with attributes.location set to a room or pose)"
        )
    if len(agents) > 1:
        raise GraphError(f"more than one agent node: {', '.join(agents)}", agents[1])
    for agent in agents:
        loc = graph.nodes[agent].attributes.get("location")
        if loc is not None and not isinstance(loc, str):
            raise GraphError(f"agent '{agent}': location must be a node id, got {loc!r:.80}", agent)
        if loc is not None:
            if loc not in graph:
                raise GraphError(f"agent '{agent}' is at '{loc}', which does not exist", agent)
            if graph.nodes[loc].type not in NAV_TYPES:
                raise GraphError(f"agent '{agent}' is at '{loc}', which is not a room or pose", agent)
        held = graph.children(agent)
        if len(held) > 1:
            raise GraphError(f"agent '{agent}' holds more than one object: {', '.join(held)}", agent)
