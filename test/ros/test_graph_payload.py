"""A whole graph as one bytes payload (SceneGraph.layout/payload): what a follower fetches from get_scene_graph.

Random graphs (the office changed by random valid updates, under random names) sent as a payload, CDR-serialized
and read back equal the graph sent, and equal what the nodes-and-edges message of the same graph reads back as
(the loader's other path). Hostile payloads (a valid one truncated, with bytes flipped or inserted, not UTF-8,
nested too deep) are refused with one GraphError line, or read as the same bytes saved to a file and loaded would
be: a message is checked as a file is. A payload in another layout than it names, with nodes beside it, without a
layout or over the size limit is refused naming the fault. Over DDS, the server refuses a
layout it does not know and a follower's copy, fetched as a payload, equals the server's graph.
"""

from __future__ import annotations

import array
import contextlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from diagnostic_msgs.msg import KeyValue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_updates import exact, updates
from rclpy.serialization import deserialize_message, serialize_message

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_from_dict, native_format
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.updates import apply_update
from sayplan_interfaces.msg import GraphUpdate, SceneGraphNode
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import ApplyGraphUpdate, GetSceneGraph
from sayplan_ros.conversions import WIRE_LAYOUT, graph_to_msg, msg_to_graph, node_to_msg
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.scene_graph_server import SceneGraphServer

OFFICE = load_env("office")


def _wire(msg: SceneGraphMsg) -> SceneGraphMsg:
    """The message as a subscriber gets it: CDR bytes and back."""
    got: SceneGraphMsg = deserialize_message(serialize_message(msg), SceneGraphMsg)
    return got


@st.composite
def graphs(draw: st.DrawFn) -> SceneGraph:
    graph = OFFICE
    for update in draw(st.lists(updates(), max_size=6)):
        with contextlib.suppress(GraphError):  # a refused update leaves the graph as it was
            graph = apply_update(graph, update)
    name = draw(st.text(st.characters(exclude_characters="\x00"), max_size=12))  # a ROS string ends at a NUL
    return graph_from_dict({**exact(graph), "name": name}, require_agent=False)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(graphs())
def test_a_graph_sent_as_a_payload_reads_back_as_the_graph_sent(graph: SceneGraph) -> None:
    sent = graph_to_msg(graph, 7, WIRE_LAYOUT)
    assert sent.layout == WIRE_LAYOUT and not sent.nodes and not sent.edges and len(sent.payload) > 0
    got = msg_to_graph(_wire(sent), require_agent=False)
    assert got.name == graph.name
    assert exact(got) == exact(graph)
    by_nodes = msg_to_graph(_wire(graph_to_msg(graph, 7)), require_agent=False)
    assert exact(got) == exact(by_nodes)
    # the graph's own order, as the node-by-node message keeps it: planners list nodes in it
    assert list(got.nodes) == list(graph.nodes) == list(by_nodes.nodes)
    for ours, theirs in ((got.tree._succ, graph.tree._succ), (got.nav._adj, by_nodes.nav._adj)):
        assert [(k, list(v.items())) for k, v in ours.items()] == [(k, list(v.items())) for k, v in theirs.items()]


def _payload() -> bytes:
    return bytes(graph_to_msg(OFFICE, 1, WIRE_LAYOUT).payload)


VALID = _payload()


@st.composite
def hostile_payloads(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "not utf-8", "deep", "empty"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            data[at] = draw(st.sampled_from(b'0129,:[]{}"-.eE \\x'))
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from([b",", b"1", b'"x"', b"[]", b"null", b"-1", b"1e999", b'"\\ud800"']))
        elif kind == "not utf-8":
            data[at:at] = b"\xff\xfe"
        elif kind == "deep":
            data = bytearray(b"[" * 5000 + b"]" * 5000)
        else:
            data = bytearray()
    return bytes(data)


def _file_outcome(payload: bytes, tmp: Path) -> tuple[str, Any]:
    path = tmp / "graph.json"
    path.write_bytes(payload)
    try:
        return "ok", exact(native_format.load(path, require_agent=False))
    except GraphError:
        return "refused", None


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payload=hostile_payloads())
def test_a_hostile_payload_is_refused_in_one_line_or_read_as_the_same_file_would_be(
    payload: bytes, tmp_path: Path
) -> None:
    msg = SceneGraphMsg(name=OFFICE.name, layout=WIRE_LAYOUT)
    msg.payload = array.array("B", payload)
    try:
        outcome: tuple[str, Any] = ("ok", exact(msg_to_graph(_wire(msg), require_agent=False)))
    except GraphError as exc:
        text = str(exc)
        assert "\n" not in text and 0 < len(text) <= 2_000, text
        outcome = ("refused", None)
    assert outcome == _file_outcome(payload, tmp_path)


def _refusal(msg: SceneGraphMsg) -> str:
    with pytest.raises(GraphError) as caught:
        msg_to_graph(_wire(msg), require_agent=False)
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_a_payload_in_another_layout_than_it_names_is_refused() -> None:
    msg = SceneGraphMsg(name=OFFICE.name, layout=WIRE_LAYOUT)
    msg.payload = array.array("B", native_format.dumps(OFFICE, layout="rows").encode())
    assert "in layout 'rows', where 'columns' was named" in _refusal(msg)


@pytest.mark.parametrize("layout", ["rows", "x" * 500, "COLUMNS"])
def test_a_layout_this_build_does_not_read_is_refused_naming_it_briefly(layout: str) -> None:
    msg = SceneGraphMsg(name=OFFICE.name, layout=layout)
    msg.payload = array.array("B", VALID)
    text = _refusal(msg)
    assert "is not one this build reads" in text and len(text) < 300


def test_a_payload_with_nodes_beside_it_or_without_its_layout_is_refused() -> None:
    msg = SceneGraphMsg(name=OFFICE.name, layout=WIRE_LAYOUT, nodes=[SceneGraphNode(id="x", type="object")])
    msg.payload = array.array("B", VALID)
    assert "leaves nodes and edges empty (got 1 nodes" in _refusal(msg)
    bare = SceneGraphMsg(name=OFFICE.name)
    bare.payload = array.array("B", VALID)
    assert "a payload needs its layout" in _refusal(bare)


def test_a_payload_over_the_size_limit_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_format, "MAX_FILE_BYTES", len(VALID) - 1)
    msg = SceneGraphMsg(name=OFFICE.name, layout=WIRE_LAYOUT)
    msg.payload = array.array("B", VALID)
    assert f"payload of {len(VALID):,} bytes (at most {len(VALID) - 1:,})" in _refusal(msg)


# ----------------------------------------------------------------------------- over DDS
@pytest.mark.ros
def test_the_server_refuses_a_layout_it_does_not_read_and_answers_a_payload_fetch(ros: Any) -> None:
    ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("peer").create_client(GetSceneGraph, "get_scene_graph")
    answer = ros.call(client, GetSceneGraph.Request(layout="bson"))
    assert not answer.success and "layout 'bson' is not one this build reads" in answer.message, answer.message
    answer = ros.call(client, GetSceneGraph.Request(layout=WIRE_LAYOUT))
    assert answer.success and answer.graph.layout == WIRE_LAYOUT and not answer.graph.nodes
    assert exact(msg_to_graph(answer.graph)) == exact(OFFICE)


@pytest.mark.ros
def test_a_followers_copy_fetched_as_a_payload_equals_the_servers_graph(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    follower = GraphFollower(ros.node("follower"))
    ros.wait_for(lambda: follower.graph_at(1) is not None, timeout=60.0, what="the follower's first graph")
    graph, version = follower.latest()
    assert version == server.version and graph is not None and exact(graph) == exact(server.graph)
    assert follower.stats()["fetches"] >= 1 and not follower.problem()


@pytest.mark.ros
@pytest.mark.parametrize(
    "value", ['"\\ud800"', '{"\\udc00": 1}', "1000000000000000000000000000001", "-9223372036854775809"]
)
def test_an_update_no_payload_could_carry_is_refused_and_a_late_follower_still_syncs(ros: Any, value: str) -> None:
    """A lone surrogate (a JSON escape) or an integer past 64 bits was accepted into the graph; every later payload
    fetch then failed for good (orjson refuses the surrogate) or read 1e30 where the server held the integer."""
    server = ros.add(SceneGraphServer(context=ros.context))
    graph = server.graph
    moved = node_to_msg(graph.nodes["apple1"], graph.parent("apple1"), graph.relation("apple1"))
    moved.attributes = [*moved.attributes, KeyValue(key="label", value=value)]
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    answer = ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(upsert=[moved])))
    assert not answer.success and ("lone surrogate" in answer.message or "64-bit range" in answer.message), (
        answer.message
    )
    assert server.version == 1
    fine = node_to_msg(graph.nodes["apple1"], graph.parent("apple1"), graph.relation("apple1"))
    fine.attributes = [*fine.attributes, KeyValue(key="label", value='"a label"')]
    assert ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(upsert=[fine]))).success
    late = GraphFollower(ros.node("late_follower"))
    ros.wait_for(lambda: late.graph_at(2) is not None, timeout=60.0, what="the late follower's copy")
    copy, _ = late.latest()
    assert copy is not None and exact(copy) == exact(server.graph)
