"""The columnar layout of the native format against a reference decoder written here, and against the rows layout.

Valid random buildings saved as columns load back as the graph saved and as its rows file loads. Columns files
corrupted in one place (a column of the wrong length, an index out of range, a value of the wrong type, a cycle,
a duplicate or oversized id, a non-finite position, a bad weight...) load or are refused as the reference below
decides, always with a GraphError (never another exception); when the corruption belongs to a node, the error
names that node or one it is joined to. The reference reads each column item by item and builds the graph
through SceneGraph's public API (add_node, set_parent, connect), as a person would from the layout's docstring.

Hostile files built one by one load or are refused as the reference decides: every index column's first and
last entry set to a bool, -1, past the end, 10**30 or a float; a duplicate id, an object under two parents,
coordinates whose magnitudes overflow while their sums stay finite, a huge int coordinate (a GraphError naming
the node, from both layouts, not an OverflowError), ids of a str subclass or of an object with a strip method. A
relation table holding "connected_to" (a navigation link in a rows file) is refused in the hierarchy columns, as
the reference refuses it; `loads(..., progress=...)` counts a columns file's nodes.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_updates import two_rooms

from sayplan_core.cli import main as cli_main
from sayplan_core.envs import load_env
from sayplan_core.graph import GraphError, graph_from_dict, graph_to_dict, load, loads, native_format, save
from sayplan_core.graph.columns import bulk_graph
from sayplan_core.graph.model import NAV_TYPES, Node, SceneGraph

COLUMNS = {
    "format", "version", "layout", "name", "types", "relations", "ids", "type", "names", "states", "affordances",
    "attributes", "positions", "unplaced", "child", "parent", "relation", "links", "weights",
}  # fmt: skip


def _index(value: Any, end: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < end:
        raise GraphError(f"{value!r} is not an index below {end}")
    return value


def _list(data: dict[str, Any], key: str, length: int | None = None) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise GraphError(f"bad column {key}")
    return value


def _pairs(data: dict[str, Any], key: str, end: int) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for entry in _list(data, key):
        if not isinstance(entry, list) or len(entry) != 2 or _index(entry[0], end) in out:
            raise GraphError(f"bad entry in {key}")
        out[entry[0]] = entry[1]
    return out


def reference_load(data: Any) -> SceneGraph:
    """The columns layout's rules, one item at a time."""
    if not isinstance(data, dict) or set(data) - COLUMNS or data.get("format") != "sayplan-3dsg":
        raise GraphError("not a columns file")
    if data.get("version") != 2 or data.get("layout") != "columns":
        raise GraphError("bad version")
    ids, table = _list(data, "ids"), _list(data, "types")
    count = len(ids)
    codes = _list(data, "type", count)
    names, attributes = _pairs(data, "names", count), _pairs(data, "attributes", count)
    labels = {
        key: [None] * count if data.get(key) is None else _list(data, key, count) for key in ("states", "affordances")
    }
    unplaced = [_index(i, count) for i in _list(data, "unplaced")]
    if unplaced != sorted(set(unplaced)):
        raise GraphError("unplaced not ascending")
    flat = iter(_list(data, "positions", 3 * (count - len(unplaced))))
    graph = SceneGraph(str(data.get("name", "")))
    for i in range(count):
        position = None
        if i not in unplaced:
            try:
                position = tuple(float(next(flat)) for _ in range(3))
            except (TypeError, ValueError):
                raise GraphError("position not numbers") from None
            if not math.isfinite(sum(position)):
                raise GraphError("position not finite")
        kinds = {key: labels[key][i] for key in labels}
        for value in kinds.values():
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise GraphError("bad labels")
        given_attributes = attributes.get(i) or {}
        if not isinstance(given_attributes, dict) or not isinstance(names.get(i, ""), str):
            raise GraphError("bad attributes or name")
        node_type = table[_index(codes[i], len(table))]
        if not isinstance(ids[i], str) or not ids[i].strip():
            raise GraphError("bad id")
        node = Node(
            ids[i],
            str(node_type),
            names.get(i, ""),
            states=list(kinds["states"] or []),
            affordances=list(kinds["affordances"] or []),
            attributes=dict(given_attributes),
            position=position,  # type: ignore[arg-type]
        )
        graph.add_node(node)
    children = _list(data, "child")
    parents, relations = _list(data, "parent", len(children)), _list(data, "relation", len(children))
    relation_table = _list(data, "relations")
    placed: dict[str, tuple[str, str]] = {}
    for child, parent, code in zip(children, parents, relations, strict=True):
        child_id, parent_id = ids[_index(child, count)], ids[_index(parent, count)]
        relation = relation_table[_index(code, len(relation_table))]
        if child_id in placed or not isinstance(relation, str):
            raise GraphError("two parents or a relation that is no name")
        placed[child_id] = (parent_id, relation)
    for child_id, (parent_id, relation) in placed.items():
        graph.set_parent(child_id, parent_id, relation)  # the placement rules, and no cycle
    ends = _list(data, "links")
    if len(ends) % 2:
        raise GraphError("odd links")
    pairs = [(ids[_index(a, count)], ids[_index(b, count)]) for a, b in zip(ends[0::2], ends[1::2], strict=True)]
    weights = _pairs(data, "weights", len(pairs))
    for k, (a, b) in enumerate(pairs):
        weight = weights.get(k)
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
            raise GraphError("weight is not a number")
        graph.connect(a, b, None if weight is None else float(weight))  # ends, distinct, finite >= 0
    agents = graph.ids_of_type("agent")
    if len(agents) != 1:
        raise GraphError("not exactly one agent")
    location = graph.nodes[agents[0]].attributes.get("location")
    if location is not None and (
        not isinstance(location, str) or location not in graph or graph.nodes[location].type not in NAV_TYPES
    ):
        raise GraphError("agent location")
    if len(graph.children(agents[0])) > 1:
        raise GraphError("agent holds two things")
    return graph


def outcome(load_it: Callable[[Any], SceneGraph], data: Any) -> tuple[str, Any]:
    try:
        return "ok", graph_to_dict(load_it(copy.deepcopy(data)), exact=True)
    except GraphError:
        return "refused", None


COORD = st.floats(-50, 50, allow_nan=False)


@st.composite
def buildings(draw: st.DrawFn) -> SceneGraph:
    """A valid small building made through the public API: rooms and poses linked, assets, objects (some in
    objects, some without a position), names, states, weights, an agent that may hold an object."""
    graph = SceneGraph("b")
    graph.add_node(Node("floor_0", "floor"))
    places: list[str] = []
    objects: list[str] = []
    for r in range(draw(st.integers(1, 3))):
        room = graph.add_node(Node(f"room_{r}", "room", position=draw(st.tuples(COORD, COORD, COORD))), "floor_0")
        places.append(room.id)
        for p in range(draw(st.integers(0, 2))):
            places.append(graph.add_node(Node(f"pose_{r}_{p}", "pose", position=(r, p, 0.5)), room.id).id)
        for a in range(draw(st.integers(0, 2))):
            states = draw(st.sampled_from([[], ["closed"], ["open", "on"]]))
            affordances = ["open", "close"] if states else []
            asset = graph.add_node(Node(f"asset_{r}_{a}", "asset", states=states, affordances=affordances), room.id)
            for o in range(draw(st.integers(0, 2))):
                under = draw(st.sampled_from([asset.id, *objects]))
                position = draw(st.one_of(st.none(), st.tuples(COORD, COORD, COORD)))
                name = draw(st.sampled_from(["", "a cup", "obj x"]))
                obj = Node(f"obj_{r}_{a}_{o}", "object", name, affordances=["pickup"], position=position)
                graph.add_node(obj, under, draw(st.sampled_from(["ontop_of", "inside_of"])))
                objects.append(obj.id)
    for a, b in draw(st.lists(st.tuples(st.sampled_from(places), st.sampled_from(places)), max_size=4)):
        if a != b:
            graph.connect(a, b, draw(st.one_of(st.none(), st.floats(0, 10))))
    graph.add_node(Node("agent", "agent", attributes={"location": draw(st.sampled_from(places))}))
    if objects and draw(st.booleans()):
        graph.set_parent(objects[-1], "agent", "inside_hand")
    return graph


def columns_of(graph: SceneGraph) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(native_format.dumps(graph, layout="columns"))
    return data


@settings(max_examples=150, deadline=None)
@given(buildings())
def test_a_graph_saved_as_columns_loads_as_saved_and_as_its_rows_file(graph: SceneGraph) -> None:
    text = native_format.dumps(graph, layout="columns")
    from_columns = loads(text)
    from_rows = loads(native_format.dumps(graph))
    assert graph_to_dict(from_columns, exact=True) == graph_to_dict(from_rows, exact=True)
    assert graph_to_dict(from_columns) == graph_to_dict(graph)
    # the same networkx dicts, in the same order, so nothing downstream can tell the layouts apart
    assert list(from_columns.nodes) == list(from_rows.nodes)
    for ours, theirs in ((from_columns.tree._succ, from_rows.tree._succ), (from_columns.nav._adj, from_rows.nav._adj)):
        assert [(k, list(v.items())) for k, v in ours.items()] == [(k, list(v.items())) for k, v in theirs.items()]
    assert outcome(reference_load, orjson.loads(text)) == ("ok", graph_to_dict(from_rows, exact=True))
    assert bulk_graph(orjson.loads(text), owned=True) is not None  # a valid file never needs the slow path
    # nodes are immutable: their labels are tuples
    assert all(type(v) is tuple for node in from_columns.nodes.values() for v in (node.states, node.affordances))


ODD = st.sampled_from([
    None, "", " ", 0, 1, -1, 2, 99, True, 1.5, -1.5, [], {}, [1], ["x"], "x" * 300, ["x" * 300], ["s"] * 300,
    "room", "in", math.inf, math.nan, -0.0, "1.5", {"a": 1}, [[0, "n"]],
])  # fmt: skip


@st.composite
def corrupted(draw: st.DrawFn) -> tuple[dict[str, Any], set[str]]:
    """A columns file broken in one place, and the nodes an error about it may name (empty: no node)."""
    graph = draw(buildings())
    data = columns_of(graph)
    ids: list[str] = data["ids"]
    count = len(ids)
    node = draw(st.integers(0, count - 1))
    edge = draw(st.integers(0, len(data["child"]) - 1))
    kind = draw(st.sampled_from([
        "length", "type", "type table", "id", "duplicate", "name", "labels", "position", "parent", "child",
        "relation", "cycle", "link", "weight", "unplaced", "column", "pair",
    ]))  # fmt: skip
    culprits = {ids[node]}
    if kind == "length":
        key = draw(st.sampled_from(["type", "states", "affordances", "positions", "parent", "relation", "links"]))
        if draw(st.booleans()) and data[key]:
            data[key].pop()
        else:
            data[key].append(draw(st.sampled_from([0, [], 1.0])))
        culprits = set()
    elif kind in ("type", "labels"):
        key = {"type": "type", "labels": draw(st.sampled_from(["states", "affordances"]))}[kind]
        data[key][node] = draw(ODD)
    elif kind == "type table":
        code = draw(st.integers(0, len(data["types"]) - 1))
        data["types"][code] = draw(st.sampled_from(["spaceship", "room", "object", 3, None]))
        culprits = {i for i, c in zip(ids, data["type"], strict=True) if c == code}
    elif kind == "id":
        data["ids"][node] = draw(st.sampled_from(["x" * 300, "", "  ", 7, None, ["a"]]))
        culprits = {"x" * 40, f"nodes[{node}]"}  # an id that is no id is named by its place
    elif kind == "duplicate":
        other = draw(st.integers(0, count - 1))
        data["ids"][node] = ids[other]
        culprits = {ids[other]}
    elif kind == "name":
        data["names"].append([node, draw(st.sampled_from(["n" * 2000, 5, None, "", "fine"]))])
    elif kind == "position":
        if data["positions"]:
            data["positions"][draw(st.integers(0, len(data["positions"]) - 1))] = draw(ODD)
        placed = [i for i in range(count) if i not in data["unplaced"]]
        culprits = {ids[i] for i in placed}  # the one whose coordinate changed (found by the index)
    elif kind == "unplaced":
        data["unplaced"] = draw(st.sampled_from([[], [count], [-1], data["unplaced"][::-1], [0, 0]]))
        culprits = set()
    elif kind in ("parent", "child", "relation", "cycle"):
        child = data["child"][edge]
        culprits = {ids[child], ids[data["parent"][edge]]}
        if kind == "cycle":
            data["parent"][edge] = child
        else:
            data[kind][edge] = draw(st.one_of(ODD, st.integers(-2, count + 2)))
            if kind == "child" and isinstance(data["child"][edge], int) and 0 <= data["child"][edge] < count:
                culprits.add(ids[data["child"][edge]])
    elif kind == "link":
        if data["links"]:
            at = draw(st.integers(0, len(data["links"]) - 1))
            data["links"][at] = draw(st.one_of(ODD, st.integers(-1, count)))
            partner = data["links"][at ^ 1]
            culprits = {ids[partner]}
            if isinstance(data["links"][at], int) and 0 <= data["links"][at] < count:
                culprits.add(ids[data["links"][at]])
    elif kind == "weight":
        if data["links"]:
            k = draw(st.integers(0, len(data["links"]) // 2 - 1))
            data["weights"] = [w for w in data["weights"] if w[0] != k]
            data["weights"].append([k, draw(st.one_of(ODD, st.floats(), st.integers(-3, 3)))])
            culprits = {ids[data["links"][2 * k]], ids[data["links"][2 * k + 1]]}
    elif kind == "column":
        data[draw(st.sampled_from(["colour", "position", "edges"]))] = []
        culprits = set()
    else:
        key = draw(st.sampled_from(["names", "attributes", "weights"]))
        data[key].append(draw(st.sampled_from([[], [0], [0, "x", 1], "x", [count + 5, "x"], [True, "x"]])))
        culprits = set()
    return data, culprits


def _named(error: GraphError, culprits: set[str], graph: dict[str, Any]) -> bool:
    """The error names one of the culprits, or a node joined to one (a misplaced node's parent or children)."""
    near = set(culprits)
    ids = graph["ids"]
    for child, parent in zip(graph.get("child", []), graph.get("parent", []), strict=False):
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(ids) for v in (child, parent)):
            ends = (ids[child], ids[parent])
            if all(isinstance(end, str) for end in ends) and culprits.intersection(ends):
                near.update(ends)
    message = str(error)
    return error.node_id in near or any(f"'{name}'" in message or f"{name} " in message for name in near)


@settings(max_examples=400, deadline=None)
@given(corrupted())
def test_a_corrupted_columns_file_loads_or_fails_as_in_the_reference(case: tuple[dict[str, Any], set[str]]) -> None:
    data, culprits = case
    expected = outcome(reference_load, data)
    assert outcome(graph_from_dict, data) == expected
    try:
        text = json.dumps(data, allow_nan=False)
    except ValueError:
        text = None  # a NaN or infinity has no JSON spelling: the dict above was the file
    if text is not None:
        assert outcome(loads, text) == expected
    # the bulk path builds nothing the item-by-item path refuses (the whole-graph rules come after either path)
    built = bulk_graph(copy.deepcopy(data), owned=False)
    if built is not None:
        assert outcome(lambda _: (native_format.validate(built), built)[1], None) == expected
    if expected[0] == "refused" and culprits:
        with pytest.raises(GraphError) as caught:
            graph_from_dict(copy.deepcopy(data))
        message = str(caught.value)
        assert "\n" not in message
        assert _named(caught.value, culprits, data), (message, caught.value.node_id, culprits)


def test_each_column_error_says_what_is_wrong_and_where() -> None:
    graph = SceneGraph("b")
    graph.add_node(Node("floor_0", "floor"))
    graph.add_node(Node("kitchen", "room", position=(1.0, 2.0, 0.0)), "floor_0")
    graph.add_node(Node("hall", "room", position=(4.0, 2.0, 0.0)), "floor_0")
    graph.add_node(Node("cup", "object", position=(1.0, 2.0, 1.0)), "kitchen")
    graph.add_node(Node("agent", "agent", attributes={"location": "kitchen"}))
    graph.connect("kitchen", "hall", 3.0)
    good = columns_of(graph)
    ids = good["ids"]

    def error(change: Callable[[dict[str, Any]], None]) -> str:
        data = copy.deepcopy(good)
        change(data)
        with pytest.raises(GraphError) as caught:
            loads(orjson.dumps(data).decode(), source="g.json")
        return str(caught.value)

    cup, kitchen = ids.index("cup"), ids.index("kitchen")
    assert error(lambda d: d["type"].__setitem__(cup, 12)) == (
        "node 'cup': 'type' holds 12, not an index into 'types' (0 to 7)"
    )
    assert error(lambda d: d["type"].pop()) == "g.json: 'type' has 4 entries for 5 nodes"
    assert error(lambda d: d["parent"].__setitem__(d["child"].index(cup), 40)) == (
        "node 'cup': 'parent' holds 40, not an index into 'ids' (0 to 4)"
    )
    assert error(lambda d: d["parent"].__setitem__(d["child"].index(cup), cup)) == "cycle in the hierarchy: cup -> cup"
    assert error(lambda d: d["ids"].__setitem__(cup, "kitchen")) == "duplicate node id 'kitchen'"
    assert error(lambda d: d["weights"].__setitem__(0, [0, -1])) == (
        "edge hall<->kitchen: weight must be a finite number >= 0, got -1"
    )
    assert error(lambda d: d["links"].__setitem__(0, cup)).startswith("navigation edge cup<->")
    assert error(lambda d: d.update(colour=[])) == "g.json: unknown column(s): colour"
    assert error(lambda d: d.update(version=3)) == (
        "g.json: format version 3 with layout 'columns' is not supported (this build reads version 1 rows and "
        "version 2 columns)"
    )
    # nodes are written in type order, then by id: floor_0 (no position), hall, kitchen, cup, agent (none)
    assert kitchen == 2 and good["unplaced"] == [0, 4]
    assert error(lambda d: d["positions"].__setitem__(3, "x")) == (
        "node 'kitchen': position must hold numbers, got ['x', 2.0, 0.0]"
    )


def test_the_cli_converts_a_rows_file_to_columns(tmp_path: Path) -> None:
    rows = tmp_path / "office.json"
    save(load_env("office"), rows)
    out = tmp_path / "office.columns.json"
    assert cli_main(["env", "import", str(rows), str(out), "--layout", "columns"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["version"], data["layout"]) == (2, "columns")
    assert graph_to_dict(load(out), exact=True) == graph_to_dict(load(rows), exact=True)


def test_the_default_layout_is_rows_for_a_small_graph_and_columns_for_a_large_one(tmp_path: Path) -> None:
    """Without a flag a large building is written in the layout that loads fast; a small one stays readable."""
    small = load_env("office")
    large = SceneGraph("large")
    large.add_node(Node("floor_0", "floor"))
    large.add_node(Node("room_0", "room", position=(0.0, 0.0, 0.0)), "floor_0")
    large.add_node(Node("desk", "asset", position=(1.0, 0.0, 0.5)), "room_0")
    large.add_node(Node("agent", "agent", attributes={"location": "room_0"}))
    while len(large.nodes) < native_format.COLUMNS_FROM_NODES:
        large.add_node(Node(f"obj_{len(large.nodes)}", "object", position=(1.0, 0.0, 0.8)), "desk", "ontop_of")
    assert len(small.nodes) < native_format.COLUMNS_FROM_NODES == len(large.nodes)
    for graph, expected in ((small, None), (large, "columns")):
        path = tmp_path / f"{graph.name}.json"
        save(graph, path)
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data.get("layout") == expected, graph.name
        assert graph_to_dict(load(path), exact=True) == graph_to_dict(graph, exact=True)
        save(graph, path, layout="rows")  # asked for, rows at any size
        assert "layout" not in json.loads(path.read_text(encoding="utf-8"))
        # the CLI's import writes the same default, and `env show --native` prints rows to be read
        out = tmp_path / f"{graph.name}.imported.json"
        assert cli_main(["env", "import", str(path), str(out)]) == 0
        assert json.loads(out.read_text(encoding="utf-8")).get("layout") == expected
    with pytest.raises(ValueError, match="unknown layout 'sideways' \\(use auto or rows or columns\\)"):
        native_format.dumps(small, layout="sideways")


# ----------------------------------------------------------------------------------------------------- hostile files
def small_columns() -> dict[str, Any]:
    """floor_0 > room_0, room_1 (linked) > asset_0 > obj_0, obj_1; the agent in room_0 holding nothing."""
    graph = SceneGraph("b")
    graph.add_node(Node("floor_0", "floor"))
    for r in range(2):
        graph.add_node(Node(f"room_{r}", "room", position=(r, 1.0, 0.0)), "floor_0")
    graph.add_node(Node("asset_0", "asset", position=(1.0, 1.0, 0.5)), "room_0")
    for o in range(2):
        graph.add_node(Node(f"obj_{o}", "object", position=(o, 2.0, 0.8)), "asset_0", "ontop_of")
    graph.connect("room_0", "room_1", 2.0)
    graph.add_node(Node("agent", "agent", attributes={"location": "room_0"}))
    data: dict[str, Any] = orjson.loads(native_format.dumps(graph, layout="columns"))
    return data


def hostile_files() -> list[tuple[str, dict[str, Any]]]:
    base = small_columns()
    count = len(base["ids"])
    cases: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, **changes: Any) -> None:
        data = copy.deepcopy(base)
        data.update(changes)
        cases.append((name, data))

    for key in ("type", "child", "parent", "relation", "links", "unplaced"):
        column = base[key]
        if not column:
            continue
        for at in (0, len(column) - 1):
            for value in (True, False, -1, len(base["types"]) if key == "type" else count, 10**30, 1.0):
                changed = list(column)
                changed[at] = value
                case(f"{key}[{at}]={value!r}", **{key: changed})
    case("relation past its table", relation=[len(base["relations"])] * len(base["relation"]))
    ids = base["ids"]
    # a duplicate id, with the duplicate's placement dropped so the root count matches
    dup = list(ids)
    dup[ids.index("obj_1")] = "obj_0"
    case("duplicate id", ids=dup)
    at = base["child"].index(ids.index("obj_1"))
    case(
        "duplicate id and one placement fewer",
        ids=dup,
        child=[c for k, c in enumerate(base["child"]) if k != at],
        parent=[p for k, p in enumerate(base["parent"]) if k != at],
        relation=[r for k, r in enumerate(base["relation"]) if k != at],
    )
    # obj_0 under two parents, obj_1 with none: as many placements as before
    child = list(base["child"])
    child[at] = ids.index("obj_0")
    case("two parents and a missing one", child=child)
    parent = list(base["parent"])
    parent[at] = ids.index("room_1")
    case("two parents of different types", child=child, parent=parent, relation=[0] * len(child))
    case("position -0.0", positions=[-0.0 if v == 0.0 else v for v in base["positions"]])
    big = list(base["positions"])
    big[0:3] = [1.0e308, -1.0e308, 1.0e308]  # finite sum, magnitudes that overflow
    big[3:6] = [-1.0e308, 1.0e308, 1.0e308]
    case("magnitudes overflow, sums finite", positions=big)
    big = list(base["positions"])
    big[0:3] = [1.0e308, 1.0e308, -0.0]
    case("a sum that overflows", positions=big)
    huge = list(base["positions"])
    huge[4] = 10**400
    case("a huge int coordinate", positions=huge)
    case("an int coordinate", positions=[int(v) for v in base["positions"]])
    case("a bool coordinate", positions=[True, *base["positions"][1:]])

    class Id(str):
        """A str subclass (an API client's own string type) with a lying strip."""

        def strip(self, *args: Any) -> str:
            return "x"

    class NotId:
        def strip(self) -> str:
            return "x"

        def replace(self, *args: Any) -> str:
            return "x"

        def __len__(self) -> int:
            return 1

        def __hash__(self) -> int:
            return 1

    case("a str subclass id", ids=[Id(" "), *ids[1:]])
    case("an id with a strip method", ids=[NotId(), *ids[1:]])
    return cases


@pytest.mark.parametrize(("name", "data"), hostile_files(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_hostile_columns_file_loads_or_fails_as_in_the_reference(name: str, data: dict[str, Any]) -> None:
    """The loader and the reference agree; the bulk path alone builds nothing the reference refuses; errors are
    GraphErrors (the reference's own OverflowError on a huge int counts as a refusal)."""

    def reference(given: Any) -> SceneGraph:
        try:
            return reference_load(given)
        except OverflowError:
            raise GraphError("a coordinate too large for a float") from None

    expected = outcome(reference, data)
    assert outcome(graph_from_dict, data) == expected, name
    built = bulk_graph(copy.deepcopy(data), owned=False)
    if built is not None:
        assert outcome(lambda _: (native_format.validate(built), built)[1], None) == expected, name
    try:
        text = orjson.dumps(data).decode()
    except (TypeError, orjson.JSONEncodeError):
        return  # no JSON spelling (an object, an int past 64 bits): the dict was the file
    if any(type(node_id) is not str for node_id in data["ids"]):
        return  # JSON spells a str subclass as a plain str: another file
    assert outcome(loads, text) == expected, name


def test_magnitudes_that_overflow_are_no_reason_to_refuse_a_valid_file() -> None:
    data = small_columns()
    data["positions"][0:3] = [1.0e308, -1.0e308, 1.0e308]
    data["positions"][3:6] = [-1.0e308, 1.0e308, 1.0e308]  # each sum finite left to right (the rows test)
    graph = bulk_graph(copy.deepcopy(data), owned=False)
    assert graph is not None
    assert graph.nodes[data["ids"][1]].position == (1.0e308, -1.0e308, 1.0e308)


def test_a_huge_int_coordinate_is_a_graph_error_naming_the_node() -> None:
    """graph_from_dict once raised OverflowError (float(10**400) in _parse_position), from
    both layouts; a dict from an API client is as untrusted as a file."""
    data = small_columns()
    data["positions"][4] = 10**400
    placed = [node_id for k, node_id in enumerate(data["ids"]) if k not in data["unplaced"]]
    with pytest.raises(GraphError) as caught:
        graph_from_dict(data)
    assert caught.value.node_id == placed[1]
    rows: dict[str, Any] = orjson.loads(native_format.dumps(graph_from_dict(small_columns())))
    for node in rows["nodes"]:
        if node["id"] == placed[1]:
            node["position"] = [0.0, 10**400, 0.0]
    with pytest.raises(GraphError) as caught:
        graph_from_dict(rows)
    assert caught.value.node_id == placed[1]


# -------------------------------------------------------------------------------------------- relations and progress
def test_a_navigation_relation_in_the_hierarchy_columns_is_refused() -> None:
    graph = SceneGraph("t")
    graph.add_node(Node("r1", "room"))
    graph.add_node(Node("r2", "room"))
    graph.add_node(Node("robot", "agent", attributes={"location": "r1"}))
    data = orjson.loads(native_format.dumps(graph, layout="columns"))
    data["relations"].append("connected_to")
    data["child"].append(data["ids"].index("r1"))
    data["parent"].append(data["ids"].index("r2"))
    data["relation"].append(len(data["relations"]) - 1)
    assert outcome(reference_load, data)[0] == "refused"
    with pytest.raises(GraphError, match="unknown relation 'connected_to'"):
        native_format.loads(json.dumps(data))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(buildings(), st.data())
def test_any_relation_table_loads_or_fails_as_in_the_reference(graph: SceneGraph, data: st.DataObject) -> None:
    """The relation table rewritten with names from every relation there is (and one that is none)."""
    columns = orjson.loads(native_format.dumps(graph, layout="columns"))
    names = ["in", "ontop_of", "inside_of", "inside_hand", "connected_to", "beside"]
    columns["relations"] = data.draw(st.lists(st.sampled_from(names), min_size=4, max_size=5, unique=True))
    expected = outcome(reference_load, columns)
    got = outcome(lambda d: native_format.loads(json.dumps(d)), columns)
    assert got == expected


def test_progress_counts_the_nodes_of_a_columns_file() -> None:
    lines: list[str] = []
    native_format.loads(native_format.dumps(two_rooms(), layout="columns"), progress=lines.append)
    assert "parsed 5 nodes" in lines[0], lines
    lines.clear()
    with pytest.raises(GraphError):  # a rows file whose nodes are no list: the loader's error, not the progress's
        native_format.loads('{"nodes": 5}', progress=lines.append)
    assert "parsed 0 nodes" in lines[0]
