"""The native format's columnar layout: one JSON list per field instead of one object per node, for large graphs.

A rows file spells every key of every node and edge and every edge's two ids; parsing that is most of what a
10k-node load can spend (docs/concepts/graph_loading.md). A columns file holds the same graph as parallel lists:

    {"format": "sayplan-3dsg", "version": 2, "layout": "columns", "name": ...,
     "types": [type names], "relations": [relation names],        # tables the index columns point into
     "ids": [...], "type": [index into types], "names": [[node, name], ...],   # only names unlike the id's
     "states": [[...], ...], "affordances": [[...], ...], "attributes": [[node, {...}], ...],
     "positions": [x, y, z, x, y, z, ...], "unplaced": [nodes without a position, ascending],
     "child": [node], "parent": [node], "relation": [index into relations],  # hierarchy edges, rows' order
     "links": [a, b, a, b, ...], "weights": [[link, weight], ...]}        # navigation edges, rows' order

Nodes are named by their index in `ids`. The file is untrusted like a rows file: `bulk_graph` checks whole
columns and builds the graph, or gives up (None) on anything unusual; `to_rows` then turns the columns into the
rows layout's nodes and edges, refusing a column of the wrong length or an index out of range with a GraphError
naming the node, and the rows loader's item-by-item path names any other culprit exactly as it would in a rows
file. So a columns file loads, or is refused, as the same graph written as rows would be.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import replace
from itertools import chain, repeat
from typing import Any

from sayplan_core.graph import limits
from sayplan_core.graph.acyclic import check_acyclic
from sayplan_core.graph.model import (
    HIERARCHY_RELATIONS,
    NAV_RELATION,
    NESTING,
    NODE_TYPES,
    PLACEMENTS,
    GraphError,
    IndexedPlacements,
    Position,
    SceneGraph,
    TypeRun,
    prechecked_graph,
    prechecked_nodes,
)

LAYOUT = "columns"
#: The format version of a columns file (rows files stay version 1, which every earlier build reads).
VERSION = 2
RELATIONS: tuple[str, ...] = ("in", "ontop_of", "inside_of", "inside_hand")
#: Every key a columns file may hold; a misspelt column would otherwise drop its data without a word.
KEYS = frozenset({
    "format", "version", "layout", "name", "types", "relations", "ids", "type", "names", "states", "affordances",
    "attributes", "positions", "unplaced", "child", "parent", "relation", "links", "weights",
})  # fmt: skip
_TYPES = frozenset(NODE_TYPES)
_NUMBERS = {int, float}
_LISTS = {list, type(None)}
#: Coordinates at most this far from 0 sum to a finite number three at a time (_positions).
_FAR = 1e300


def to_columns(graph: SceneGraph, header: Mapping[str, Any], exact: bool = False) -> dict[str, Any]:
    """The graph in the columns layout. A file: nodes and edges in the rows layout's order, positions rounded
    alike. exact (a graph sent whole to a copy of it): the graph's own order of nodes and edges, positions as they
    are, so the copy reads back as the graph it copies, as the node-by-node message did."""
    if exact:
        nodes = list(graph.nodes.values())
        tree = [(parent, child, data) for parent, child, data in graph.tree.edges(data=True)]
        links = list(graph.nav.edges(data=True))
    else:
        nodes = sorted(graph.nodes.values(), key=lambda n: (NODE_TYPES.index(n.type), n.id))
        tree = sorted(graph.tree.edges(data=True))
        links = sorted((min(a, b), max(a, b), d) for a, b, d in graph.nav.edges(data=True))
    index = {node.id: i for i, node in enumerate(nodes)}
    positions: list[float] = []
    for node in nodes:
        if node.position is not None:
            positions.extend(float(v) if exact else round(float(v), 4) for v in node.position)
    return {
        **header,
        "version": VERSION,
        "layout": LAYOUT,
        "name": graph.name,
        "types": list(NODE_TYPES),
        "relations": list(RELATIONS),
        "ids": [node.id for node in nodes],
        "type": [NODE_TYPES.index(node.type) for node in nodes],
        "names": [[i, n.name] for i, n in enumerate(nodes) if n.name != n.id.replace("_", " ")],
        "states": [list(node.states) for node in nodes],
        "affordances": [list(node.affordances) for node in nodes],
        "attributes": [[i, dict(n.attributes)] for i, n in enumerate(nodes) if n.attributes],
        "positions": positions,
        "unplaced": [i for i, node in enumerate(nodes) if node.position is None],
        "child": [index[child] for _, child, _ in tree],
        "parent": [index[parent] for parent, _, _ in tree],
        "relation": [RELATIONS.index(data["relation"]) for _, _, data in tree],
        "links": [index[end] for a, b, _ in links for end in (a, b)],
        "weights": [[k, d["weight"]] for k, (_, _, d) in enumerate(links) if "weight" in d],
    }


# ---------------------------------------------------------------------------------------------------- bulk path
def bulk_graph(data: Mapping[str, Any], owned: bool) -> SceneGraph | None:
    """The graph of a columns file whose every field passes the rows loader's checks, checked a column at a time;
    None as soon as anything is unusual or wrong (the caller then goes through `to_rows`). owned: the lists came
    from the parser just now, so each node may keep its states and affordances lists without a copy."""
    try:
        return _bulk_graph(data, owned)
    except (GraphError, TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError):
        return None


def _ints(column: Any, end: int) -> bool:
    """A list of ints (not bools) each in 0..end-1."""
    return _indices(column) and (not column or max(column) < end)


def _indices(column: Any) -> bool:
    """A list of ints (not bools) each >= 0: indices whose upper bound the list they index checks (IndexError)."""
    return type(column) is list and not set(map(type, column)) - {int} and (not column or min(column) >= 0)


def _bulk_graph(data: Mapping[str, Any], owned: bool) -> SceneGraph | None:
    if not KEYS.issuperset(data):
        return None
    ids = data["ids"]
    count = len(ids)
    if type(ids) is not list or (not owned and set(map(type, ids)) - {str}) or not all(map(str.strip, ids)):
        return None  # owned: the parser makes no str subclass, and str.strip refuses anything else (TypeError)
    if max(map(len, ids), default=0) > limits.MAX_ID_CHARS:
        return None  # duplicate ids: prechecked_graph refuses them when it fills the node table
    table = data["types"]
    if type(table) is not list or not _TYPES.issuperset(table) or set(map(type, table)) - {str}:
        return None
    codes = data["type"]
    if len(codes) != count or not _indices(codes):
        return None
    types = list(map(table.__getitem__, codes))
    names = _default_names(ids)
    given_names = _sparse(data.get("names", []), count, {str})
    if given_names is None or max(map(len, given_names.values()), default=0) > limits.MAX_NAME_CHARS:
        return None
    for index, name in given_names.items():
        if name:  # an empty name is the default one, as in rows
            names[index] = name
    states = _labels(data.get("states"), count, owned)
    affordances = _labels(data.get("affordances"), count, owned)
    positions = _positions(data.get("positions", []), data.get("unplaced", []), count)
    if states is None or affordances is None or positions is None:
        return None
    attributes = _sparse(data.get("attributes", []), count, {dict})
    if attributes is None:
        return None
    nodes = prechecked_nodes(zip(ids, types, names, states, affordances, positions, strict=True))
    for index, given in attributes.items():  # rare (the agent's location): checked as Node checks it
        nodes[index] = replace(nodes[index], attributes=given)
    placements = _placements(data, codes, table)
    links = _links(data)
    if placements is None or links is None:
        return None
    columns, indexed = placements
    graph = prechecked_graph(str(data.get("name", "")), nodes, columns, links, ids, _runs(codes, table), indexed)
    nested = indexed[-1]
    if nested:  # edges that may close a cycle (objects in objects), each child's one parent now in the tree
        pred = graph.tree._pred
        below = [ids[c] for c in nested]
        check_acyclic({child: next(iter(pred[child].items())) for child in below})
    return graph


def _default_names(ids: list[str]) -> list[str]:
    """Each id with "_" as " " (Node's default name): three C passes over one joined string cost less than a
    str.replace call per id, unless an id holds the separator."""
    names = "\0".join(ids).replace("_", " ").split("\0")
    if len(names) != len(ids):
        return list(map(str.replace, ids, repeat("_"), repeat(" ")))
    return names


def _runs(codes: list[int], table: list[str]) -> list[TypeRun] | None:
    """The nodes as runs of one type code each, if the codes ascend (as `to_columns` writes them); else None."""
    if codes != sorted(codes):
        return None
    runs: list[TypeRun] = []
    start = 0
    while start < len(codes):
        stop = bisect_right(codes, codes[start], start)
        runs.append((table[codes[start]], start, stop))
        start = stop
    return runs


def _sparse(column: Any, count: int, kinds: set[type]) -> dict[int, Any] | None:
    """{index: value} of [[index, value], ...] with distinct indices in 0..count-1 and values of `kinds`."""
    if type(column) is not list:
        return None
    out: dict[int, Any] = {}
    for entry in column:
        if type(entry) is not list or len(entry) != 2:
            return None
        index, value = entry
        if type(index) is not int or not 0 <= index < count or index in out or type(value) not in kinds:
            return None
        out[index] = value
    return out


def _labels(column: Any, count: int, owned: bool) -> list[tuple[str, ...]] | None:
    """The states or affordances column as tuples (None or missing -> ()), or None unless short lists of short
    strings."""
    if column is None:
        return [()] * count
    if type(column) is not list or len(column) != count:
        return None
    kinds = set(map(type, column))
    if kinds - _LISTS:
        return None
    given = column if kinds == {list} else [labels for labels in column if labels]
    if max(map(len, given), default=0) > limits.MAX_LABELS:
        return None
    words = list(chain.from_iterable(given))
    if owned:
        "".join(words)  # TypeError unless str (the parser makes no subclass): a tenth of a type pass's cost
    elif set(map(type, words)) - {str}:
        return None
    if max(map(len, words), default=0) > limits.MAX_ID_CHARS:
        return None
    if kinds == {list}:
        return list(map(tuple, column))
    return [tuple(labels) if labels else () for labels in column]


def _positions(flat: Any, unplaced: Any, count: int) -> list[Position | None] | None:
    """Triples from the flat column with None at the unplaced nodes, or None unless each triple's values pass the
    rows loader's test: `float()` of each (which also takes ints, bools and numeric strings, as rows does) and a
    finite sum.

    One conversion pass and one C pass over the numbers: math.hypot is at least the largest magnitude and is not
    finite if a value is not, so when it is at most _FAR no triple's sum can overflow; the per-triple test runs
    only for files with coordinates beyond that (or not finite). hypot reads ints and bools as float() does and
    refuses strings (TypeError: the item-by-item path then takes the file)."""
    if type(flat) is not list or not _ints(unplaced, count) or len(flat) != 3 * (count - len(unplaced)):
        return None
    if any(map(int.__ge__, unplaced, unplaced[1:])):
        return None  # not ascending
    values = map(float, flat)  # TypeError, ValueError, OverflowError where rows' float() raises them
    triples: list[Position | None] = list(zip(values, values, values, strict=True))
    if not math.hypot(*flat) <= _FAR and not all(map(math.isfinite, map(sum, triples))):  # type: ignore[arg-type]
        return None
    if not unplaced:
        return triples
    out: list[Position | None] = []  # a slice per run of placed nodes: an insert per unplaced node was quadratic
    taken = 0
    for k, hole in enumerate(unplaced):  # ascending: hole - k placed nodes come before it
        out += triples[taken : hole - k]
        out.append(None)
        taken = hole - k
    out += triples[taken:]
    return out


def _placements(
    data: Mapping[str, Any], codes: list[int], types: list[str]
) -> tuple[tuple[list[int], list[int], list[int]], IndexedPlacements] | None:
    """The hierarchy's index columns (child, parent, relation) and what prechecked_graph needs to check each edge
    as it builds it (PLACEMENTS in index space), or None unless they are lists of one length.
    codes: each node's index into `types`, the file's type table."""
    children, parents, relations = data.get("child", []), data.get("parent", []), data.get("relation", [])
    table = data.get("relations", [])
    if type(table) is not list or not HIERARCHY_RELATIONS.issuperset(table) or set(map(type, table)) - {str}:
        return None
    if len(set(table)) != len(table) or len(set(types)) != len(types):
        return None  # so the rule tables below stay small (to_rows reads tables with repeats)
    if not type(children) is type(parents) is type(relations) is list:
        return None  # their values: prechecked_graph checks each as it builds the edge
    if not len(children) == len(parents) == len(relations):
        return None  # a child with two parents: prechecked_graph refuses it when it counts the roots
    allowed, nesting = _rules(types, table, nesting=False), _rules(types, table, nesting=True)
    return (children, parents, relations), (codes, table, allowed, nesting, [])


def _rules(types: list[str], relations: list[str], nesting: bool) -> list[list[tuple[int, ...]]]:
    """[child type code][parent type code] -> the relation codes PLACEMENTS allows, for the (child, parent) type
    pairs in NESTING (nesting) or not in it: a placement test is two list subscripts and a small tuple's `in`."""
    return [
        [
            tuple(r for r, rel in enumerate(relations) if (below, above, rel) in PLACEMENTS)
            if ((below, above) in NESTING) == nesting
            else ()
            for above in types
        ]
        for below in types
    ]


def _links(data: Mapping[str, Any]) -> list[tuple[Any, Any, float | None]] | None:
    """The links as (end index, end index, weight); prechecked_graph checks the ends as it builds each link."""
    ends = data.get("links", [])
    if type(ends) is not list or len(ends) % 2:
        return None
    weights: list[float | None] = [None] * (len(ends) // 2)
    given = _sparse(data.get("weights", []), len(weights), _NUMBERS)
    if given is None:
        return None
    for k, weight in given.items():
        if not math.isfinite(weight) or weight < 0:
            return None
        weights[k] = float(weight)
    return list(zip(ends[0::2], ends[1::2], weights, strict=True))


# ---------------------------------------------------------------------------------------------------- rows
def to_rows(data: Mapping[str, Any], source: str) -> tuple[list[Any], list[Any]]:
    """The rows layout's nodes and edges of a columns file, for the item-by-item loader to check and build.

    Refuses with a GraphError what rows cannot express: an unknown key, a column that is not a list or has the
    wrong length, an index out of range (naming the node it belongs to). Any value is passed on as it is, so the
    rows loader names a bad one as it would in a rows file.
    """
    unknown = set(data) - KEYS
    if unknown:
        raise GraphError(f"{source}: unknown column(s): {', '.join(sorted(map(str, unknown)))[:200]}")
    ids = _column(data, "ids", source, required=True)
    count = len(ids)
    names = [node_id if isinstance(node_id, str) else f"ids[{i}]" for i, node_id in enumerate(ids)]
    table, codes = _column(data, "types", source, required=True), _column(data, "type", source, count)
    nodes: list[dict[str, Any]] = []
    for i, code in enumerate(codes):
        nodes.append({"id": ids[i], "type": table[_index(code, len(table), names[i], "type", "types")]})
    for key in ("states", "affordances"):
        if data.get(key) is not None:
            for item, labels in zip(nodes, _column(data, key, source, count), strict=True):
                item[key] = labels
    for key, field in (("names", "name"), ("attributes", "attributes")):
        for entry in _column(data, key, source):
            if not isinstance(entry, list) or len(entry) != 2:
                raise GraphError(f"{source}: '{key}' must hold [node, value] pairs, got {entry!r:.80}")
            item = nodes[_index(entry[0], count, None, key, "ids")]
            if field in item:
                raise GraphError(f"node '{names[entry[0]]}': two entries in '{key}'", names[entry[0]])
            item[field] = entry[1]
    _place(nodes, _column(data, "positions", source), _column(data, "unplaced", source), names, source)
    return nodes, _tree_rows(data, ids, names, source) + _link_rows(data, ids, names, source)


def _column(data: Mapping[str, Any], key: str, source: str, count: int = -1, required: bool = False) -> list[Any]:
    if key not in data and not required and count < 0:
        return []
    column = data.get(key)
    if not isinstance(column, list):
        raise GraphError(f"{source}: '{key}' must be a list, got {type(column).__name__}")
    if count >= 0 and len(column) != count:
        raise GraphError(f"{source}: '{key}' has {len(column)} entries for {count} nodes")
    return column


def _index(value: Any, end: int, node: str | None, key: str, table: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < end:
        where = f"node '{node}': " if node is not None else ""
        raise GraphError(f"{where}'{key}' holds {value!r:.40}, not an index into '{table}' (0 to {end - 1})", node)
    return value


def _name(index: Any, names: list[str]) -> str | None:
    """The node at `index` if it is one, to name in an error about the other end of its edge."""
    return names[index] if type(index) is int and 0 <= index < len(names) else None


def _place(nodes: list[dict[str, Any]], flat: list[Any], unplaced: list[Any], names: list[str], source: str) -> None:
    skip: set[int] = set()
    last = -1
    for value in unplaced:
        index = _index(value, len(nodes), None, "unplaced", "ids")
        if index <= last:
            raise GraphError(f"{source}: 'unplaced' must list nodes in ascending order (node '{names[index]}')")
        skip.add(index)
        last = index
    placed = [i for i in range(len(nodes)) if i not in skip]
    if len(flat) != 3 * len(placed):
        raise GraphError(f"{source}: 'positions' has {len(flat)} numbers for {len(placed)} placed nodes (x, y, z each)")
    for k, index in enumerate(placed):
        nodes[index]["position"] = flat[3 * k : 3 * k + 3]


def _tree_rows(data: Mapping[str, Any], ids: list[Any], names: list[str], source: str) -> list[dict[str, Any]]:
    children = _column(data, "child", source)
    parents, codes = _column(data, "parent", source, len(children)), _column(data, "relation", source, len(children))
    table = _column(data, "relations", source)
    edges: list[dict[str, Any]] = []
    for child, parent, code in zip(children, parents, codes, strict=True):
        c = _index(child, len(ids), _name(parent, names), "child", "ids")  # an edge with no child: its parent's
        p = _index(parent, len(ids), names[c], "parent", "ids")
        rel = table[_index(code, len(table), names[c], "relation", "relations")]
        if isinstance(rel, str) and rel == NAV_RELATION:  # rows would read it as a navigation link
            raise GraphError(f"edge {ids[c]} -{rel}-> {ids[p]}: unknown relation '{rel}'", names[c])
        edges.append({"source": ids[c], "target": ids[p], "relation": rel})
    return edges


def _link_rows(data: Mapping[str, Any], ids: list[Any], names: list[str], source: str) -> list[dict[str, Any]]:
    ends = _column(data, "links", source)
    if len(ends) % 2:
        raise GraphError(f"{source}: 'links' must hold pairs of nodes, got an odd count ({len(ends)})")
    edges: list[dict[str, Any]] = []
    for k in range(0, len(ends), 2):
        a = _index(ends[k], len(ids), _name(ends[k + 1], names), "links", "ids")
        b = _index(ends[k + 1], len(ids), names[a], "links", "ids")
        edges.append({"source": ids[a], "target": ids[b], "relation": NAV_RELATION})
    for entry in _column(data, "weights", source):
        if not isinstance(entry, list) or len(entry) != 2:
            raise GraphError(f"{source}: 'weights' must hold [link, weight] pairs, got {entry!r:.80}")
        edge = edges[_index(entry[0], len(edges), None, "weights", "links")]
        if "weight" in edge:
            raise GraphError(f"{source}: link {edge['source']}<->{edge['target']} has two weights", str(edge["source"]))
        edge["weight"] = entry[1]
    return edges
