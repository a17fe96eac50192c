"""Scene-graph updates for the input-limit tests (core and over DDS): valid ones and ones that must be refused, drawn
op by op from hypothesis data on whatever graph the test holds."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph import limits
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert

OFFICE = load_env("office")


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def forged(node: Node, **fields: Any) -> Node:
    """`node` with fields its constructor refuses, as a peer's decoded message could hold (deliberately past the
    freeze: the graph must refuse it on arrival)."""
    out = copy.copy(node)
    for name, value in fields.items():
        object.__setattr__(out, name, value)
    return out


def moved(graph: SceneGraph, node_id: str, parent: str, **attributes: Any) -> NodeUpsert:
    node = graph.nodes[node_id]
    return NodeUpsert(replace(node, attributes={**node.attributes, **attributes}), parent, "ontop_of")


def some_object_and_asset(graph: SceneGraph) -> tuple[str, str]:
    obj = next(o for o in graph.ids_of_type("object") if graph.parent(o) in graph.ids_of_type("asset"))
    asset = next(a for a in graph.ids_of_type("asset") if a != graph.parent(obj))
    return obj, asset


def valid_op(graph: SceneGraph, added: list[str], draw: Any, serial: int) -> GraphUpdate:
    """One valid update of `graph`, drawn with `draw`: a move, new states, the agent moved, a probe object added
    (its id appended to `added`) or removed, or a room connection."""
    kind = draw(st.sampled_from(["move", "states", "agent", "add", "remove", "connect"]))
    assets = graph.ids_of_type("asset")
    if kind == "move":
        movable = [o for o in graph.ids_of_type("object") if graph.parent(o) in assets and o not in added]
        obj = draw(st.sampled_from(movable))
        return GraphUpdate(upsert=[moved(graph, obj, draw(st.sampled_from(assets)))])
    if kind == "states":
        obj = draw(st.sampled_from(graph.ids_of_type("object")))
        node = replace(
            graph.nodes[obj], states=draw(st.lists(st.sampled_from(["dirty", "clean", "full", "empty"]), max_size=3))
        )
        return GraphUpdate(upsert=[NodeUpsert(node, graph.parent(obj), graph.relation(obj) or "in")])
    if kind == "agent":
        agent = graph.agent_id
        assert agent is not None
        node = graph.nodes[agent]
        node = replace(
            node, attributes={**node.attributes, "location": draw(st.sampled_from(graph.ids_of_type("room", "pose")))}
        )
        return GraphUpdate(upsert=[NodeUpsert(node)])
    if kind == "remove" and added:
        victim = draw(st.sampled_from(added))
        added.remove(victim)
        return GraphUpdate(remove=[victim])
    if kind == "connect":
        rooms = graph.ids_of_type("room")
        a, b = draw(st.sampled_from(rooms)), draw(st.sampled_from(rooms))
        if a != b:
            return GraphUpdate(connect=[(a, b, draw(st.floats(0.1, 50.0)))])
    new_id = f"probe_{serial}"
    added.append(new_id)
    return GraphUpdate(upsert=[NodeUpsert(Node(new_id, "object", attributes={"n": serial}), assets[0], "ontop_of")])


def hostile_op(graph: SceneGraph, draw: Any) -> GraphUpdate:
    """One update of `graph` that must be refused: an attribute nested too deep, the agent without a location, a
    non-finite or negative weight, the agent removed, a missing node removed, an object retyped, an id too long."""
    kind = draw(st.sampled_from(["deep", "bare_agent", "nan_weight", "remove_agent", "missing", "retype", "long"]))
    agent = graph.agent_id
    assert agent is not None
    obj, asset = some_object_and_asset(graph)
    if kind == "deep":
        node = graph.nodes[obj]
        deep = nested(draw(st.integers(limits.MAX_JSON_DEPTH + 1, 700)))
        node = forged(node, attributes={**node.attributes, "deep": deep})
        return GraphUpdate(upsert=[NodeUpsert(node, asset, "ontop_of")])
    if kind == "bare_agent":
        node = graph.nodes[agent]
        node = replace(node, attributes={k: v for k, v in node.attributes.items() if k != "location"})
        return GraphUpdate(upsert=[NodeUpsert(node)])
    if kind == "nan_weight":
        a, b = graph.ids_of_type("room")[:2]
        return GraphUpdate(connect=[(a, b, draw(st.sampled_from([float("nan"), float("-inf"), -2.0])))])
    if kind == "remove_agent":
        return GraphUpdate(remove=[agent])
    if kind == "missing":
        return GraphUpdate(remove=["no_such_node"])
    if kind == "retype":
        node = replace(graph.nodes[obj], type="asset")
        return GraphUpdate(upsert=[NodeUpsert(node, graph.parent(asset), "in")])
    node = forged(Node("z" * 10, "object"), id="z" * (limits.MAX_ID_CHARS + 1))
    return GraphUpdate(upsert=[NodeUpsert(node, asset, "ontop_of")])
