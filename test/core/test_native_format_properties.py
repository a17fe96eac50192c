"""The bulk loader against a reference loader written here: same graphs from valid files, a refusal for the rest.

graph_from_dict checks whole columns of a file at once and falls back to its item-by-item path to name a culprit.
The reference below follows the format's rules one item at a time through SceneGraph's public API (add_node,
set_parent, connect), as the first loader did, so a rule the bulk checks miss or over-apply shows up as a
difference. Files are random small buildings, valid or corrupted in one to three places.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.graph import GraphError, graph_from_dict, graph_to_dict, native_format
from sayplan_core.graph.model import HIERARCHY_RELATIONS, NAV_TYPES, Node, SceneGraph

NODE_FIELDS = {"id", "type", "name", "states", "affordances", "attributes", "position"}
EDGE_FIELDS = {"source", "target", "relation", "weight"}


def reference_load(data: Any, require_agent: bool = True) -> SceneGraph:
    """The format's rules, item by item, in the plainest form."""
    if not isinstance(data, Mapping) or data.get("format", "sayplan-3dsg") != "sayplan-3dsg":
        raise GraphError("not a native graph")
    if data.get("version", 1) != 1 or not isinstance(data.get("nodes"), list):
        raise GraphError("bad version or nodes")
    edges = data.get("edges", [])
    if not isinstance(edges, list):
        raise GraphError("edges must be a list")
    graph = SceneGraph(str(data.get("name", "")))
    for item in data["nodes"]:
        graph.add_node(reference_node(item))
    parents: dict[str, tuple[str, str]] = {}
    links: list[tuple[str, str, float | None]] = []
    for edge in edges:
        if not isinstance(edge, Mapping) or set(edge) - EDGE_FIELDS:
            raise GraphError("bad edge")
        source, target, relation = edge.get("source"), edge.get("target"), edge.get("relation")
        if not isinstance(source, str) or not isinstance(target, str) or source not in graph or target not in graph:
            raise GraphError("edge to a missing node")
        if relation == "connected_to":
            weight = edge.get("weight")
            if weight is not None:
                if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                    raise GraphError("weight is not a number")
                if not math.isfinite(weight) or weight < 0:
                    raise GraphError("weight out of range")
                weight = float(weight)
            links.append((source, target, weight))
        elif isinstance(relation, str) and relation in HIERARCHY_RELATIONS:
            if source in parents:
                raise GraphError("two parents")
            parents[source] = (target, relation)
        else:
            raise GraphError("unknown relation")
    for child, (parent, relation) in parents.items():
        graph.set_parent(child, parent, relation)  # checks the placement and refuses a cycle
    for a, b, weight in links:
        graph.connect(a, b, weight)
    agents = [node.id for node in graph.nodes.values() if node.type == "agent"]
    if len(agents) > 1 or (require_agent and not agents):
        raise GraphError("not exactly one agent")
    for agent in agents:
        location = graph.nodes[agent].attributes.get("location")
        if location is not None and (
            not isinstance(location, str) or location not in graph or graph.nodes[location].type not in NAV_TYPES
        ):
            raise GraphError("agent location")
        if len(graph.children(agent)) > 1:
            raise GraphError("agent holds two things")
    return graph


def reference_node(item: Any) -> Node:
    if not isinstance(item, Mapping) or set(item) - NODE_FIELDS:
        raise GraphError("bad node")
    node_id = item.get("id")
    if not isinstance(node_id, str) or not node_id.strip():
        raise GraphError("bad id")
    labels = {}
    for field in ("states", "affordances"):
        value = item.get(field)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise GraphError(f"bad {field}")
        labels[field] = list(value or [])
    attributes = item.get("attributes") or {}
    name = item.get("name", "")
    if not isinstance(attributes, Mapping) or not isinstance(name, str):
        raise GraphError("bad attributes or name")
    position = item.get("position")
    if position is not None:
        if not isinstance(position, (list, tuple)) or len(position) not in (2, 3):
            raise GraphError("bad position")
        try:
            values = [float(v) for v in position] + [0.0] * (3 - len(position))
        except (TypeError, ValueError):
            raise GraphError("position not numbers") from None
        if not math.isfinite(sum(values)):
            raise GraphError("position not finite")
        position = tuple(values)
    # Node's constructor holds the per-node rules (type, lengths, counts, attribute values)
    return Node(node_id, str(item.get("type")), name, attributes=dict(attributes), position=position, **labels)


def outcome(load: Callable[[Any], SceneGraph], data: Any) -> tuple[str, Any]:
    try:
        return "ok", graph_to_dict(load(copy.deepcopy(data)), exact=True)
    except GraphError as exc:
        return "refused", type(exc).__name__


@st.composite
def buildings(draw: st.DrawFn) -> dict[str, Any]:
    """A valid small building: floor, rooms and poses linked, assets, objects (some in objects), an agent."""
    coord = st.one_of(st.floats(-50, 50, allow_nan=False), st.integers(-50, 50))
    nodes: list[dict[str, Any]] = [{"id": "floor_0", "type": "floor"}]
    edges: list[dict[str, Any]] = []
    places: list[str] = []
    objects: list[str] = []
    for r in range(draw(st.integers(1, 3))):
        room = f"room_{r}"
        nodes.append({"id": room, "type": "room", "position": draw(st.lists(coord, min_size=3, max_size=3))})
        edges.append({"source": room, "relation": "in", "target": "floor_0"})
        places.append(room)
        for p in range(draw(st.integers(0, 2))):
            pose = f"pose_{r}_{p}"
            nodes.append({"id": pose, "type": "pose", "position": [float(r), float(p), 0.0]})
            edges.append({"source": pose, "relation": "in", "target": room})
            places.append(pose)
        for a in range(draw(st.integers(0, 2))):
            asset = f"asset_{r}_{a}"
            item: dict[str, Any] = {"id": asset, "type": "asset"}
            if draw(st.booleans()):
                item["states"] = ["closed"]
                item["affordances"] = ["open", "close"]
            nodes.append(item)
            edges.append({"source": asset, "relation": "in", "target": room})
            for o in range(draw(st.integers(0, 2))):
                obj = f"obj_{r}_{a}_{o}"
                under = draw(st.sampled_from([asset, *objects]))
                nodes.append({"id": obj, "type": "object", "name": draw(st.sampled_from(["", "a cup"]))})
                edges.append(
                    {"source": obj, "relation": draw(st.sampled_from(["ontop_of", "inside_of"])), "target": under}
                )
                objects.append(obj)
    for a, b in draw(st.lists(st.tuples(st.sampled_from(places), st.sampled_from(places)), max_size=4)):
        if a != b:
            link: dict[str, Any] = {"source": a, "relation": "connected_to", "target": b}
            if draw(st.booleans()):
                link["weight"] = draw(st.one_of(st.floats(0, 10), st.integers(0, 10)))
            edges.append(link)
    nodes.append({"id": "agent", "type": "agent", "attributes": {"location": draw(st.sampled_from(places))}})
    if objects and draw(st.booleans()):
        held = objects[-1]
        edges = [e for e in edges if e["source"] != held] + [
            {"source": held, "relation": "inside_hand", "target": "agent"}
        ]
    order = draw(st.permutations(range(len(nodes))))
    return {"format": "sayplan-3dsg", "version": 1, "name": "b", "nodes": [nodes[i] for i in order], "edges": edges}


#: Values that break a field in some way (wrong type, out of range, not finite, unhashable, a bool for a number).
ODD = st.sampled_from([
    None, "", " ", 0, 1, -1.5, True, [], {}, [1, 2], [1.0, 2.0], [1, "2", 3], [1.0, math.nan, 0.0],
    [1e308, 1e308, 0.0], [True, 0, 0], ["x"], [["x"]], "x" * 300, math.inf, "floor_0", "room_0", "agent",
    "ontop_of", "in", "inside_hand", "connected_to", "object", "pose", "asset", {"a": [1]}, (1.0, 2.0, 3.0),
])  # fmt: skip


@st.composite
def corrupted(draw: st.DrawFn) -> dict[str, Any]:
    data = draw(buildings())
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["node field", "edge field", "weight", "drop", "duplicate", "cycle", "extra"]))
        nodes, edges = data["nodes"], data["edges"]
        if kind == "node field":
            field = draw(st.sampled_from(sorted(NODE_FIELDS | {"colour"})))
            targets = [n for n in nodes if isinstance(n, dict)]
            if targets:
                draw(st.sampled_from(targets))[field] = draw(ODD)
        elif kind == "edge field" and any(isinstance(e, dict) for e in edges):
            field = draw(st.sampled_from(sorted(EDGE_FIELDS | {"colour"})))
            draw(st.sampled_from([e for e in edges if isinstance(e, dict)]))[field] = draw(ODD)
        elif kind == "weight":
            links = [e for e in edges if isinstance(e, dict) and e.get("relation") == "connected_to"]
            if links:
                draw(st.sampled_from(links))["weight"] = draw(st.one_of(ODD, st.floats(), st.integers(-3, 3)))
        elif kind == "drop":
            items = draw(st.sampled_from([nodes, edges]))
            if items:
                items.pop(draw(st.integers(0, len(items) - 1)))
        elif kind == "duplicate":
            items = draw(st.sampled_from([nodes, edges]))
            if items:
                items.append(copy.deepcopy(draw(st.sampled_from(items))))
        elif kind == "cycle":
            objects = [n["id"] for n in nodes if isinstance(n, dict) and n.get("type") == "object" and "id" in n]
            if objects:
                first = objects[0]
                edges[:] = [e for e in edges if not isinstance(e, dict) or e.get("source") != first]
                edges.append({"source": first, "relation": "ontop_of", "target": draw(st.sampled_from(objects))})
        else:
            where = draw(st.sampled_from(["node", "edge"]))
            (nodes if where == "node" else edges).append(draw(ODD))
    return data


@settings(max_examples=150, deadline=None)
@given(buildings())
def test_valid_buildings_load_as_the_reference_builds_them(data: dict[str, Any]) -> None:
    expected = outcome(reference_load, data)
    assert expected[0] == "ok"
    assert outcome(graph_from_dict, data) == expected
    # and it was the bulk path that built it (a valid file never needs the item-by-item one)
    assert native_format._bulk_graph("b", data["nodes"], data["edges"]) is not None


@settings(max_examples=400, deadline=None)
@given(corrupted())
def test_corrupted_buildings_load_or_fail_as_in_the_reference(data: dict[str, Any]) -> None:
    assert outcome(graph_from_dict, data) == outcome(reference_load, data)
    # the bulk path builds nothing the item-by-item path refuses, and builds it the same
    nodes, edges = copy.deepcopy(data["nodes"]), copy.deepcopy(data["edges"])
    bulk = native_format._bulk_graph("b", nodes, edges)
    if bulk is not None:
        assert outcome(lambda d: native_format._checked_graph("b", d[0], d[1], "x"), (nodes, edges)) == (
            "ok",
            graph_to_dict(bulk, exact=True),
        )


@pytest.mark.parametrize("require_agent", [True, False])
def test_a_graph_without_its_agent_follows_require_agent(require_agent: bool) -> None:
    data = {"nodes": [{"id": "floor_0", "type": "floor"}, {"id": "room_0", "type": "room"}], "edges": []}
    data["edges"].append({"source": "room_0", "relation": "in", "target": "floor_0"})

    def ours(d: Any) -> SceneGraph:
        return graph_from_dict(d, require_agent=require_agent)

    assert outcome(ours, data) == outcome(lambda d: reference_load(d, require_agent), data)
    assert outcome(ours, data)[0] == ("refused" if require_agent else "ok")
