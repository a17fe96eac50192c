"""Bounded graph input: an update or a graph file over a limit (nesting depth, sizes, counts, id lengths, a
non-finite or negative weight, an agent without a location) is refused whole with a reason naming the limit, leaves
the graph as it was, and never makes a later valid update fail."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hostile_updates import OFFICE, forged, hostile_op, moved, nested, some_object_and_asset, valid_op
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph import GraphError, graph_to_dict, limits
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.native_format import loads
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_update


def test_an_attribute_nested_600_deep_is_refused_and_later_updates_still_apply() -> None:
    obj, asset = some_object_and_asset(OFFICE)
    node = OFFICE.nodes[obj]
    node = forged(node, attributes={**node.attributes, "payload": nested(600)})  # made past the constructor
    with pytest.raises(GraphError, match=r"attribute 'payload' is nested more than 32 levels deep") as caught:
        apply_update(OFFICE, GraphUpdate(upsert=[NodeUpsert(node, asset, "ontop_of")]))
    assert caught.value.node_id == obj
    after = apply_update(OFFICE, GraphUpdate(upsert=[moved(OFFICE, obj, asset)]))
    assert after.parent(obj) == asset
    assert apply_update(after, GraphUpdate(upsert=[moved(after, obj, asset, note="fine")])).parent(obj) == asset


def test_a_deep_attribute_in_a_graph_file_is_refused_with_its_node() -> None:
    data = graph_to_dict(OFFICE)
    victim = next(n for n in data["nodes"] if n["type"] == "object")
    victim["attributes"] = {"payload": nested(600)}
    with pytest.raises(GraphError, match=f"node '{victim['id']}': attribute 'payload' is nested more than"):
        loads(json.dumps(data))


def test_json_text_is_checked_for_depth_before_it_is_parsed() -> None:
    deep = "[" * 600 + "]" * 600
    with pytest.raises(limits.InputLimitError, match="nested more than 32 levels"):
        limits.check_json_text(deep, "attribute 'a'", limits.MAX_ATTRIBUTE_CHARS)
    limits.check_json_text(
        '{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "a string", 1000
    )  # brackets in a string
    with pytest.raises(limits.InputLimitError, match="over the limit of 10"):
        limits.check_json_text("[" * 11, "x", 10)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"attributes": {f"k{i}": i for i in range(limits.MAX_ATTRIBUTES + 1)}}, "attributes: 257 is over the limit"),
        ({"attributes": {"k": "x" * 10, "n": float("nan")}}, "not finite"),
        ({"attributes": {"k": list(range(limits.MAX_JSON_ITEMS + 1))}}, "more than 10000 items"),
        ({"attributes": {"k": {1, 2}}}, "holds a set, not a JSON value"),
        ({"name": "n" * (limits.MAX_NAME_CHARS + 1)}, "name is 1025 characters long"),
        ({"states": ("s",) * (limits.MAX_LABELS + 1)}, "states: 257 is over the limit"),
        ({"states": ("s" * (limits.MAX_ID_CHARS + 1),)}, "a state is 257 characters long"),
    ],
)
def test_oversized_node_fields_are_refused_with_the_limit(change: dict[str, Any], reason: str) -> None:
    obj, asset = some_object_and_asset(OFFICE)
    with pytest.raises(GraphError, match=reason):  # the constructor refuses it
        replace(OFFICE.nodes[obj], **change)
    node = forged(OFFICE.nodes[obj], **change)
    with pytest.raises(GraphError, match=reason):  # and so does an update holding one made past it
        apply_update(OFFICE, GraphUpdate(upsert=[NodeUpsert(node, asset, "ontop_of")]))


def test_an_update_with_too_many_items_or_bad_ids_is_refused_before_it_is_walked() -> None:
    with pytest.raises(GraphError, match="over the limit of 10000"):
        apply_update(OFFICE, GraphUpdate(remove=["x"] * (limits.MAX_UPDATE_ITEMS + 1)))
    with pytest.raises(GraphError, match="too long"):
        apply_update(OFFICE, GraphUpdate(remove=["r" * (limits.MAX_ID_CHARS + 1)]))
    with pytest.raises(GraphError, match="node id 'iiii"):
        Node("i" * (limits.MAX_ID_CHARS + 1), "object")


def test_an_agent_upserted_without_a_location_is_refused() -> None:
    agent = OFFICE.agent_id
    assert agent is not None
    bare = OFFICE.nodes[agent]
    bare = replace(bare, attributes={k: v for k, v in bare.attributes.items() if k != "location"})
    with pytest.raises(GraphError, match=f"agent '{agent}' is upserted without a location"):
        apply_update(OFFICE, GraphUpdate(upsert=[NodeUpsert(bare)]))
    odd = OFFICE.nodes[agent]
    odd = replace(odd, attributes={**odd.attributes, "location": ["kitchen"]})
    with pytest.raises(GraphError, match="location must be a node id"):
        apply_update(OFFICE, GraphUpdate(upsert=[NodeUpsert(odd)]))


@pytest.mark.parametrize("weight", [float("nan"), float("-inf"), float("inf"), -1.0])
def test_connect_with_a_weight_that_is_not_finite_or_negative_is_refused(weight: float) -> None:
    a, b = OFFICE.ids_of_type("room")[:2]
    with pytest.raises(GraphError, match="weight must be a finite number >= 0"):
        apply_update(OFFICE, GraphUpdate(connect=[(a, b, weight)]))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.data())
def test_random_valid_and_hostile_updates_refused_ones_change_nothing(data: st.DataObject) -> None:
    live = OFFICE.copy()
    added: list[str] = []
    accepted: list[GraphUpdate] = []
    for serial in range(data.draw(st.integers(4, 14))):
        if data.draw(st.booleans()):
            before = graph_to_dict(live)
            update = hostile_op(live, data.draw)
            with pytest.raises(GraphError):
                live = apply_update(live, update)
            assert graph_to_dict(live) == before, "a refused update changed the graph"
        else:
            update = valid_op(live, added, data.draw, serial)
            live = apply_update(live, update)  # a valid update after a refused one is applied
            accepted.append(update)
    replay = load_env("office")
    for update in accepted:
        replay = apply_update(replay, update)
    assert graph_to_dict(live) == graph_to_dict(replay)


LONE = "\ud800"  # what a JSON "\ud800" escape (or a YAML one) reads as: text no UTF-8 writer can carry


@pytest.mark.parametrize(
    "build",
    [
        lambda: SceneGraph(f"office{LONE}"),
        lambda: Node(f"cup{LONE}", "object"),
        lambda: Node("cup", "object", name=f"a cup{LONE}"),
        lambda: Node("cup", "object", states=[f"dirty{LONE}"]),
        lambda: Node("cup", "object", attributes={f"colour{LONE}": "red"}),
        lambda: Node("cup", "object", attributes={"colour": f"red{LONE}"}),
        lambda: Node("cup", "object", attributes={"tags": [{f"k{LONE}": 1}]}),
        lambda: Node("cup", "object", attributes={"count": 2**64}),
        lambda: Node("cup", "object", attributes={"count": -(2**63) - 1}),
    ],
    ids=["graph name", "id", "name", "state", "attribute name", "value", "nested key", "2**64", "-2**63-1"],
)
def test_text_or_a_number_no_file_payload_or_journal_could_carry_back_is_refused_in_one_line(build: Any) -> None:
    with pytest.raises(GraphError) as caught:
        build()
    text = str(caught.value)
    assert ("lone surrogate" in text or "64-bit range" in text) and "\n" not in text


def test_the_64_bit_bounds_themselves_are_held() -> None:
    node = Node("cup", "object", attributes={"low": -(2**63), "high": 2**64 - 1, "text": "é ☕"})
    assert node.attributes["high"] == 2**64 - 1
