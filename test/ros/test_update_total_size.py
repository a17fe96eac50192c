"""A graph update whose every field is within its own limit but whose total is huge (1,000 nodes with one 60 KB
attribute each: 60 MB) is refused by the live scene_graph_server at once, naming the total limit, and another
peer's valid update right behind it is applied: one peer's flood does not hold the server (it once held it for
17 minutes, and applied the flood). An update just under the total limit is still applied. Real DDS; the only
time limits are hang guards."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from diagnostic_msgs.msg import KeyValue

from sayplan_core.envs import load_env
from sayplan_core.graph import limits
from sayplan_interfaces.msg import GraphUpdate
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.conversions import node_to_msg
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros
GUARD_S = 120.0  # moving 60 MB over loopback DDS on a loaded machine: a hang guard, not a target


def objects_with(payload_chars: int, count: int) -> GraphUpdate:
    """`count` new objects on the kitchen counter, each with one attribute of `payload_chars` JSON characters."""
    office = load_env("office")
    template = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    value = '"' + "x" * (payload_chars - 2) + '"'
    upsert = []
    for index in range(count):
        msg = node_to_msg(office.nodes["orange"], template.parent, template.relation)
        msg.id = msg.name = f"flood_{index}"
        msg.attributes = [KeyValue(key="payload", value=value)]
        upsert.append(msg)
    return GraphUpdate(source="flooding_peer", upsert=upsert)


def test_a_flood_within_each_field_limit_is_refused_whole_and_the_next_update_applies(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    flood_client = ros.node("flooding_peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    flood = objects_with(60 * 1000, 1000)
    assert all(len(n.attributes[0].value) <= limits.MAX_ATTRIBUTE_CHARS for n in flood.upsert)  # each one fits
    assert len(flood.upsert) <= limits.MAX_UPDATE_ITEMS
    sent = flood_client.call_async(ApplyGraphUpdate.Request(update=flood))
    office = load_env("office")
    fine = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    fine.states = ["peeled"]
    valid = client.call_async(ApplyGraphUpdate.Request(update=GraphUpdate(source="peer", upsert=[fine])))
    ros.wait_for(lambda: sent.done() and valid.done(), timeout=GUARD_S, what="both answers")
    refused, applied = sent.result(), valid.result()
    assert not refused.success, refused.message
    assert f"over {limits.MAX_UPDATE_CHARS} characters in all" in refused.message, refused.message
    assert applied.success, applied.message
    assert server.version == 2 and not any(n.startswith("flood_") for n in server.graph.nodes)
    assert "peeled" in server.graph.nodes["orange"].states


def test_an_update_just_under_the_total_limit_is_applied(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    per_node = 60 * 1000
    count = limits.MAX_UPDATE_CHARS // (per_node + 200)  # 200: the id, name, type, parent and keys of each node
    answer = ros.call(client, ApplyGraphUpdate.Request(update=objects_with(per_node, count)), timeout=GUARD_S)
    assert answer.success, answer.message
    assert server.version == 2 and f"flood_{count - 1}" in server.graph.nodes
