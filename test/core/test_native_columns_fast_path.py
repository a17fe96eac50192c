"""The columns bulk path's shortcuts against the straightforward versions written here.

- A columns file loads as the item-by-item loader builds the same nodes and edges, with its nodes in the type
  order `to_columns` writes (per-type runs) or in any order: the same node table, per-type sets, networkx dicts
  and their order.
- Positions: the one magnitude sum that stands for the per-triple finiteness test, and the hole filling by
  slices, against a loop over the nodes that applies the rows loader's test to each triple; a file whose unplaced
  nodes come first (which once made the fill quadratic: `list.insert` per unplaced node) against the rows loader.
- Hostile columns against the rows path (`to_rows` and the item-by-item loader): a bad value anywhere in an edge
  column (negative aliases, huge ints, bools, floats), coordinates (NaN, inf, 1e308, values that pass the hypot
  bound one by one but not summed), ids holding the join separator or non-ASCII, repeated type or relation tables.
- The dicts handed to networkx by attribute (`prechecked_graph`): after every mutator, and after direct networkx
  edits, a columns-loaded graph's views, tables and caches are those of the same graph built node by node.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any

import networkx as nx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_caches import check_all, mutate, start
from test_native_columns import buildings, columns_of
from test_snapshot_copy import tables, views

from sayplan_core.graph import GraphError, graph_from_dict, limits, loads, native_format
from sayplan_core.graph.columns import _default_names, _labels, _positions, bulk_graph, to_columns, to_rows
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.native_format import graph_to_dict


def _shuffled(data: dict[str, Any], order: list[int]) -> dict[str, Any]:
    """The same graph with its nodes listed in `order` (every index column renumbered)."""
    new_of = {old: new for new, old in enumerate(order)}
    unplaced = set(data["unplaced"])
    placed = [i for i in range(len(data["ids"])) if i not in unplaced]
    triple = {i: data["positions"][3 * k : 3 * k + 3] for k, i in enumerate(placed)}
    out = dict(data)
    out["ids"] = [data["ids"][i] for i in order]
    out["type"] = [data["type"][i] for i in order]
    for key in ("states", "affordances"):
        out[key] = [data[key][i] for i in order]
    out["names"] = sorted([new_of[i], name] for i, name in data["names"])
    out["attributes"] = sorted(([new_of[i], value] for i, value in data["attributes"]), key=lambda e: e[0])
    out["unplaced"] = sorted(new_of[i] for i in unplaced)
    out["positions"] = [v for i in order if i not in unplaced for v in triple[i]]
    for key in ("child", "parent", "links"):
        out[key] = [new_of[i] for i in data[key]]
    return out


def _shape(graph: SceneGraph) -> list[Any]:
    """Everything whose content or order a caller could see."""
    return [
        [(k, v.id, v.type, v.name, v.states, v.affordances, v.attributes, v.position) for k, v in graph.nodes.items()],
        [(t, list(ids)) for t, ids in graph._by_type.items()],
        list(graph.tree._node.items()),
        [(k, list(v.items())) for k, v in graph.tree._succ.items()],
        [(k, list(v.items())) for k, v in graph.tree._pred.items()],
        list(graph.nav._node.items()),
        [(k, list(v.items())) for k, v in graph.nav._adj.items()],
        graph.tree._adj is graph.tree._succ,  # the bulk path hands networkx its own dicts: views must see them
        list(graph.tree.edges(data="relation")),
        list(graph.tree.pred.items()),
        list(graph.nav.edges(data="weight")),
        list(graph.nav.nodes),
    ]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(buildings(), st.randoms(use_true_random=False))
def test_nodes_in_any_order_load_as_the_item_by_item_loader_builds_them(graph: SceneGraph, rng: Any) -> None:
    data = orjson.loads(native_format.dumps(graph, layout="columns"))
    order = list(range(len(data["ids"])))
    rng.shuffle(order)
    for layout in (data, _shuffled(data, order)):  # in type order (runs of one type) and in any order
        built = bulk_graph(orjson.loads(orjson.dumps(layout)), owned=True)
        assert built is not None
        expected = native_format._checked_graph("b", *to_rows(layout, "<test>"), "<test>")
        assert _shape(built) == _shape(expected)


def _reference_positions(flat: list[Any], unplaced: list[int], count: int) -> list[Any] | None:
    """A node at a time, each triple through the rows loader's test (float() of each, a finite sum)."""
    out: list[Any] = []
    values = iter(flat)
    for index in range(count):
        if index in unplaced:
            out.append(None)
            continue
        triple = [next(values), next(values), next(values)]
        try:
            floats = tuple(float(v) for v in triple)  # the rows loader's conversion (_parse_position)
        except (TypeError, ValueError, OverflowError):
            return None  # the item-by-item path names it
        if not math.isfinite(sum(floats)):
            return None
        out.append(floats)
    return out


NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1.7e308, 0.0, -0.0, 5e-324]),
    st.integers(-(10**6), 10**6),
    st.sampled_from([True, False, None, "1.5", " 2 ", "nan", "-inf", "1e999", "x", [], 10**400, 3e300, -6e299]),
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(0, 12), st.data())
def test_positions_as_the_per_triple_test_decides(count: int, data: st.DataObject) -> None:
    unplaced = sorted(data.draw(st.sets(st.integers(0, max(count - 1, 0)), max_size=count)))
    flat = data.draw(st.lists(NUMBER, min_size=3 * (count - len(unplaced)), max_size=3 * (count - len(unplaced))))
    try:
        got = _positions(list(flat), list(unplaced), count)
    except (TypeError, ValueError, OverflowError):
        got = None  # bulk_graph gives up on these (the item-by-item path then names the node)
    expected = _reference_positions(flat, unplaced, count)
    if expected is None:
        assert got is None
    elif got is not None or not any(type(v) is str for v in flat):  # strings may take the item-by-item path
        assert got == expected
        assert all(type(v) is float for triple in got if triple is not None for v in triple)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(buildings(), st.data())
def test_a_cycle_of_objects_is_refused_by_the_walk_after_the_build(graph: SceneGraph, data: st.DataObject) -> None:
    """The bulk path checks placements while it builds the tree and walks the nesting edges for cycles after: a
    cycle of two or more objects (every edge of it a valid placement) must still send the file to the item-by-item
    path, which names it."""
    columns = orjson.loads(native_format.dumps(graph, layout="columns"))
    ids, types = columns["ids"], [columns["types"][code] for code in columns["type"]]
    nested = [k for k, (c, p) in enumerate(zip(columns["child"], columns["parent"], strict=True))
              if types[c] == types[p] == "object"]  # fmt: skip
    if not nested:
        assert bulk_graph(columns, owned=True) is not None
        return
    k = data.draw(st.sampled_from(nested))  # a in b: b's own edge now puts b in a
    a, b = columns["child"][k], columns["parent"][k]
    columns["parent"][columns["child"].index(b)] = a
    columns["relation"][columns["child"].index(b)] = columns["relations"].index("inside_of")
    assert bulk_graph(orjson.loads(orjson.dumps(columns)), owned=True) is None
    try:
        native_format._checked_graph("b", *to_rows(columns, "<test>"), "<test>")
    except native_format.GraphError as error:
        assert str(error).startswith("cycle in the hierarchy: ") and error.node_id in (ids[a], ids[b])
    else:
        raise AssertionError("a cycle loaded")


WORD = st.one_of(
    st.text(max_size=3),
    st.sampled_from(["w" * limits.MAX_ID_CHARS, "w" * (limits.MAX_ID_CHARS + 1), 3, None, True, 1.5, ["a"], {}]),
)
ENTRY = st.one_of(
    st.none(),
    st.lists(WORD, max_size=4),
    st.sampled_from([["a"] * limits.MAX_LABELS, ["a"] * (limits.MAX_LABELS + 1), "ab", {}, 0, ()]),
)


def _reference_labels(column: list[Any]) -> list[tuple[str, ...]] | None:
    """An entry at a time: None or a list of at most MAX_LABELS strings of at most MAX_ID_CHARS each (as tuples)."""
    out: list[tuple[str, ...]] = []
    for entry in column:
        if entry is None:
            out.append(())
            continue
        if type(entry) is not list or len(entry) > limits.MAX_LABELS:
            return None
        if any(type(word) is not str or len(word) > limits.MAX_ID_CHARS for word in entry):
            return None
        out.append(tuple(entry))
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(ENTRY, max_size=6), st.booleans())
def test_labels_as_an_entry_by_entry_test_decides(column: list[Any], owned: bool) -> None:
    try:
        got = _labels(copy.deepcopy(column), len(column), owned)
    except (TypeError, ValueError):
        got = None  # bulk_graph gives up on these (the item-by-item path then names the node)
    assert got == _reference_labels(column)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=st.sampled_from(["a", "_", " ", "\0", "é", "😀"]), max_size=5), max_size=6))
def test_default_names_are_each_id_with_spaces_for_underscores(ids: list[str]) -> None:
    assert _default_names(ids) == [node_id.replace("_", " ") for node_id in ids]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(buildings(), st.data())
def test_a_bad_index_in_an_edge_column_is_never_built(graph: SceneGraph, data: st.DataObject) -> None:
    """The bulk path checks the edges' index columns in the loops that build the edges: a negative index (which a
    list would read from its end), a bool (which a list reads as 0 or 1), a float, an index past the end, a link
    from a node to itself or to a node off the navigation layer must still send the file to the item-by-item path,
    which refuses it naming the edge's node. Each bad value in turn, at one drawn place of each column."""
    columns = orjson.loads(native_format.dumps(graph, layout="columns"))
    count = len(columns["ids"])
    off = [i for i, code in enumerate(columns["type"]) if columns["types"][code] not in ("room", "pose")]
    for key in ("child", "parent", "relation", "links"):
        if not columns[key]:
            continue
        at = data.draw(st.integers(0, len(columns[key]) - 1))
        end = count if key != "relation" else len(columns["relations"])
        good = columns[key][at]
        # good - end: the same node or relation to a list, which reads a negative index from its end
        bad: list[Any] = [good - end, -1, -2, -end, True, False, float(good), end, None, str(good)]
        if key == "links":
            bad += [columns[key][at ^ 1], *off[:1]]  # a link from a node to itself, to a node off the layer
        for value in bad:
            columns[key][at] = value
            assert bulk_graph(orjson.loads(orjson.dumps(columns)), owned=True) is None, (key, value)
            try:
                native_format._checked_graph("b", *to_rows(columns, "<test>"), "<test>")
            except native_format.GraphError as error:
                assert "\n" not in str(error) and error.node_id in columns["ids"]
            else:
                raise AssertionError(f"a bad index loaded: {key}[{at}] = {value!r}")
        columns[key][at] = good


# ---------------------------------------------------------------------------------------------- unplaced nodes first
def _objects_file(count: int, unplaced: list[int]) -> str:
    """A columns file of `count` objects (no agent), the nodes `unplaced` without a position, the others at x=i."""
    skip = set(unplaced)
    positions = [v for i in range(count) if i not in skip for v in (float(i), 0.0, 0.0)]
    data = {
        "format": "sayplan-3dsg",
        "version": 2,
        "layout": "columns",
        "types": ["object"],
        "ids": [f"o{i}" for i in range(count)],
        "type": [0] * count,
        "unplaced": unplaced,
        "positions": positions,
    }
    return json.dumps(data)


def test_unplaced_nodes_first_load_as_the_rows_reference_says() -> None:
    """The oracle is the rows loader on the same nodes written out one by one."""
    count = 50
    unplaced = [0, 1, 2, 7, 30, 49]
    graph = loads(_objects_file(count, unplaced), require_agent=False)
    rows = {
        "nodes": [
            {"id": f"o{i}", "type": "object", **({} if i in unplaced else {"position": [float(i), 0.0, 0.0]})}
            for i in range(count)
        ],
        "edges": [],
    }
    assert graph_to_dict(graph) == graph_to_dict(graph_from_dict(rows, require_agent=False))
    assert [graph.nodes[f"o{i}"].position is None for i in range(count)] == [i in unplaced for i in range(count)]


# ----------------------------------------------------------------------------- hostile columns against the rows path
def load_both(doc: dict[str, Any]) -> tuple[str, str]:
    """The columns loader and the rows path on the same nodes and edges (to_rows + the item-by-item loader):
    the rows file of the graph, or "refused"."""
    out = []
    for text in (json.dumps(doc), None):
        try:
            if text is not None:
                graph = native_format.loads(text)
            else:
                nodes, edges = to_rows(doc, "<test>")
                rows = {
                    "format": doc["format"],
                    "version": 1,
                    "name": doc.get("name", ""),
                    "nodes": nodes,
                    "edges": edges,
                }
                graph = native_format.graph_from_dict(rows)
            out.append(native_format.dumps(graph))
        except GraphError:
            out.append("refused")
    return out[0], out[1]


def loaded_sample() -> SceneGraph:
    graph = start()
    graph.add_node(Node("p_lab", "pose", position=(2.0, 1.0, 0.0)), "lab")
    graph.connect("p_lab", "lab", 3.0)
    return graph


EDGE_COLUMNS = ("child", "parent", "relation", "links")
BAD_VALUES = (-1, -2, 2**64, 2**63 - 1, True, False, 1.0, 0.0, None, "0", [0])


@pytest.mark.parametrize("column", EDGE_COLUMNS)
@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_bad_index_anywhere_in_an_edge_column_loads_as_the_rows_path_says(column: str, bad: Any) -> None:
    doc = columns_of(loaded_sample())
    for at in (0, len(doc[column]) - 1):
        hostile = copy.deepcopy(doc)
        hostile[column][at] = bad
        assert load_both(hostile)[0] == load_both(hostile)[1] == "refused"


@pytest.mark.parametrize(
    "values",
    [
        [math.nan, 0, 0], [math.inf, 0, 0], [1e308, 1e308, 0], [-1e308, -1e308, 0], [1e308, -1e308, 0],
        [1e300, 1e300, 1e300], [1e300, -1e300, 5], [1.7e308, 0, 0], [2**1023, 2**1023, 0], [10**400, 0, 0],
        [True, False, True], ["1", "2", "3"], ["nan", 0, 0], [1e-320, 0, 0],
    ],
)  # fmt: skip
def test_hostile_coordinates_load_as_the_rows_path_says(values: list[Any]) -> None:
    """hypot bounds every value; a triple whose values pass one by one but whose sum is not finite is refused by
    both, one whose sum is finite (1e308 - 1e308) is taken by both."""
    doc = columns_of(loaded_sample())
    for at in (0, len(doc["positions"]) - 3):
        hostile = copy.deepcopy(doc)
        hostile["positions"][at : at + 3] = values
        hostile_text = (
            json.dumps(hostile) if all(not isinstance(v, float) or math.isfinite(v) for v in values) else None
        )
        bulk, rows = load_both(hostile) if hostile_text is not None else (None, None)
        if hostile_text is None:  # NaN/inf are not JSON: through graph_from_dict
            try:
                bulk = native_format.dumps(native_format.graph_from_dict(hostile))
            except GraphError:
                bulk = "refused"
            rows = load_both(hostile)[1]
        assert bulk == rows


@pytest.mark.parametrize("ids", [["a\0b", "c"], ["\0", "x"], ["tür_1", "κουζίνα"], ["a b", " a"], ["_", "__"]])
def test_ids_with_the_separator_or_not_ascii_get_their_default_names(ids: list[str]) -> None:
    graph = SceneGraph("ids")
    graph.add_node(Node("building", "building"))
    graph.add_node(Node("robot", "agent", attributes={"location": ids[1]}))
    for k, node_id in enumerate(ids):
        graph.add_node(Node(node_id, "floor" if k == 0 else "room"), "building")
    doc = columns_of(graph)
    bulk, rows = load_both(doc)
    assert bulk == rows == native_format.dumps(graph)
    loaded = native_format.loads(json.dumps(doc))
    assert [loaded.nodes[n].name for n in ids] == [n.replace("_", " ") for n in ids]


@pytest.mark.parametrize("table", ["types", "relations"])
def test_a_repeated_table_entry_loads_as_the_rows_path_says(table: str) -> None:
    doc = columns_of(loaded_sample())
    doc[table] = [*doc[table], doc[table][0]]
    assert load_both(doc)[0] == load_both(doc)[1]
    doc[table] = [doc[table][1], *doc[table]]  # every index now names the entry before it
    assert load_both(doc)[0] == load_both(doc)[1]


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_loaded_graph_behaves_as_one_built_through_the_mutators(data: st.DataObject) -> None:
    """The dicts handed to networkx by attribute: after every mutator, the loaded graph's views, tables and
    caches are those of the same graph built node by node, changed the same way."""
    source = loaded_sample()
    loaded = native_format.loads(native_format.dumps(source, layout="columns"))
    built = native_format.loads(native_format.dumps(source))  # the rows layout: add_node/add_edge order
    assert tables(loaded.tree) == tables(built.tree) and tables(loaded.nav) == tables(built.nav)
    assert len(loaded.tree.pred) == len(loaded.tree.adj) and len(loaded.nav.adj) >= 0  # views made before the changes
    if data.draw(st.booleans()):
        loaded.track_changes()
    for _ in range(data.draw(st.integers(1, 10))):
        recorder = Recorder(data)
        mutate(recorder, loaded, [])
        mutate(Replayer(recorder.values), built, [])  # the same change (the two graphs are equal)
        assert tables(loaded.tree) == tables(built.tree) and tables(loaded.nav) == tables(built.nav)
        assert views(loaded.tree) == views(built.tree) and views(loaded.nav) == views(built.nav)
        assert views(loaded.tree) == views(nx.DiGraph(loaded.tree))
    check_all(loaded)
    assert to_columns(loaded, {}) == to_columns(built, {})


class Recorder:
    """Draws from hypothesis, kept to be replayed on a second graph."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.values: list[Any] = []

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        value = self.data.draw(strategy)
        self.values.append(value)
        return value


class Replayer:
    def __init__(self, values: list[Any]) -> None:
        self.values = iter(values)

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return next(self.values)


# ---------------------------------------------------------------------------------- networkx dicts of a columns load
def scene_views(graph: SceneGraph) -> list[Any]:
    tree, nav = graph.tree, graph.nav
    return [
        [(k, v.id, v.type, v.name, v.states, v.position) for k, v in graph.nodes.items()],
        [(t, sorted(ids)) for t, ids in graph._by_type.items()],
        list(tree.nodes),
        [(k, list(v.items())) for k, v in tree.succ.items()],
        [(k, list(v.items())) for k, v in tree.pred.items()],
        [(k, list(v.items())) for k, v in tree.adj.items()],
        list(tree.edges(data="relation")),
        list(tree.in_degree),
        list(tree.out_degree),
        list(nav.nodes),
        [(k, list(v.items())) for k, v in nav.adj.items()],
        list(nav.edges(data="weight")),
        list(nav.degree),
        tree._adj is tree._succ,
        [(k, list(v.items())) for k, v in tree._succ.items()] == [(k, list(v.items())) for k, v in tree.adj.items()],
    ]


CHANGES = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 10_000), st.integers(0, 10_000)), max_size=30)


def numbered_change(graph: SceneGraph, op: int, i: int, j: int, step: int) -> str:
    """One mutation picked by numbers, the same on any graph with the same nodes; its outcome as text."""
    ids = list(graph.nodes)
    a, b = ids[i % len(ids)], ids[j % len(ids)]
    places = [n for n in ids if graph.nodes[n].type in ("room", "pose")]
    try:
        if op == 0:
            graph.add_node(Node(f"new_{step}", "object"), a, "ontop_of")
        elif op == 1:
            graph.set_parent(a, b, "inside")
        elif op == 2:
            graph.remove_node(a)
        elif op == 3 and places:
            graph.connect(places[i % len(places)], places[j % len(places)], weight=float(i % 7))
        elif op == 4 and places:
            graph.disconnect(places[i % len(places)], places[j % len(places)])
        elif op == 5:
            graph.set_states(a, ["open"] if i % 2 else [])
        elif op == 6:
            graph.replace_node(dataclasses.replace(graph.nodes[a], name=f"n{step}"))
        elif op == 7:  # networkx directly (views must follow the dicts it edits)
            graph.tree.add_edge(f"x_{step}", a, relation="in")
            graph.tree.remove_node(f"x_{step}")
        elif op == 8 and places:
            graph.nav.add_edge(places[i % len(places)], f"y_{step}")
            graph.nav.remove_node(f"y_{step}")
        else:
            graph.tree.add_node(f"z_{step}")
            graph.tree.remove_node(f"z_{step}")
    except GraphError as exc:
        return f"refused: {exc}"
    return "ok"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(buildings(), CHANGES)
def test_networkx_views_of_a_columns_load_follow_every_mutator(graph: SceneGraph, ops: list[Any]) -> None:
    data = orjson.loads(native_format.dumps(graph, layout="columns"))
    bulk = bulk_graph(data, owned=True)
    assert bulk is not None
    rows = native_format._checked_graph("b", *to_rows(data, "<test>"), "<test>")
    assert scene_views(bulk) == scene_views(rows)  # the views cached now must follow every later change
    for step, (op, i, j) in enumerate(ops):
        assert numbered_change(bulk, op, i, j, step) == numbered_change(rows, op, i, j, step)
        assert scene_views(bulk) == scene_views(rows)
    for make in (lambda g: g.copy(), lambda g: g.subgraph(list(g.nodes)[::2])):
        assert scene_views(make(bulk)) == scene_views(make(rows))
