"""The columns bulk path's shortcuts against the straightforward versions written here.

- A columns file loads as the item-by-item loader builds the same nodes and edges, with its nodes in the type
  order `to_columns` writes (per-type runs) or in any order: the same node table, per-type sets, networkx dicts
  and their order.
- Positions: the one magnitude sum that stands for the per-triple finiteness test, and the hole filling by
  slices, against a loop over the nodes that applies the rows loader's test to each triple.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from test_native_columns import buildings

from sayplan_core.graph import limits, native_format
from sayplan_core.graph.columns import _default_names, _labels, _positions, bulk_graph, to_rows
from sayplan_core.graph.model import SceneGraph


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


def _reference_labels(column: list[Any]) -> list[list[str]] | None:
    """An entry at a time: None or a list of at most MAX_LABELS strings of at most MAX_ID_CHARS each."""
    out: list[list[str]] = []
    for entry in column:
        if entry is None:
            out.append([])
            continue
        if type(entry) is not list or len(entry) > limits.MAX_LABELS:
            return None
        if any(type(word) is not str or len(word) > limits.MAX_ID_CHARS for word in entry):
            return None
        out.append(list(entry))
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
