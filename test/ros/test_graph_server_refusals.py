"""The live scene_graph_server over DDS refuses hostile input whole, with the reason: an update that would break the
graph (the agent or the pose it stands on removed, a non-finite position), an attribute nested 600 deep, a connection
weight that is not finite or is negative, and verify_plan, graph_view and get_scene_graph requests over the limits.
A refused update leaves the graph and its version as they were, and later valid updates still apply."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from diagnostic_msgs.msg import KeyValue
from hostile_updates import hostile_op, valid_op
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_to_dict, limits
from sayplan_core.graph.updates import apply_update
from sayplan_interfaces.msg import GraphUpdate, PlanStep, SceneGraphEdge
from sayplan_interfaces.srv import ApplyGraphUpdate, GetSceneGraph, GraphView, VerifyPlan
from sayplan_ros.conversions import node_to_msg, update_to_msg
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def apply(ros: Any, client: Any, update: GraphUpdate) -> Any:
    return ros.call(client, ApplyGraphUpdate.Request(update=update))


def test_a_600_deep_attribute_is_refused_and_later_updates_apply(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    office = load_env("office")
    deep = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    deep.attributes = [KeyValue(key="payload", value="[" * 600 + "]" * 600)]
    answer = apply(ros, client, GraphUpdate(source="peer", upsert=[deep]))
    assert not answer.success and "nested more than 32 levels deep" in answer.message, answer.message
    assert server.version == 1
    fine = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    fine.states = ["peeled"]
    answer = apply(ros, client, GraphUpdate(source="peer", upsert=[fine]))
    assert answer.success, answer.message
    answer = apply(ros, client, GraphUpdate(source="peer", remove=["orange"]))
    assert answer.success, answer.message
    assert server.version == 3 and "orange" not in server.graph


@pytest.mark.parametrize("weight", [float("nan"), float("-inf"), -3.0])
def test_connect_with_a_weight_that_is_not_finite_is_refused(ros: Any, weight: float) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    a, b = load_env("office").ids_of_type("room")[:2]
    edge = SceneGraphEdge(source=a, target=b, relation="connected_to", weight=weight)
    answer = apply(ros, client, GraphUpdate(source="peer", connect=[edge]))
    assert not answer.success and "weight must be a finite number >= 0" in answer.message, answer.message
    assert server.version == 1


def test_updates_that_would_break_the_graph_are_refused_whole(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    for remove in (["agent"], ["pose7"]):
        answer = ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(source="peer", remove=remove)))
        assert not answer.success and "agent" in answer.message, answer.message
    office = load_env("office")
    bad = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    bad.has_position, bad.position.x = True, float("nan")
    answer = ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(source="peer", upsert=[bad])))
    assert not answer.success and "'orange': position must be finite" in answer.message
    assert server.version == 1 and server.graph.agent_location() == "pose7"


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_valid_and_hostile_updates_to_the_live_server(ros: Any, data: st.DataObject) -> None:
    """Through the message conversion and the apply_graph_update service: a refused update leaves the server's
    graph and version as they were, every valid one after it is applied, and the server's graph equals a replay
    of only the valid updates on a fresh copy."""
    if not hasattr(ros, "live_server"):  # one server for all examples: its graph carries over, as in a long run
        ros.live_server = ros.add(SceneGraphServer(context=ros.context))
        ros.live_client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
        ros.live_accepted, ros.live_added = [], []
    server, client = ros.live_server, ros.live_client
    for serial in range(data.draw(st.integers(3, 8))):
        serial += 100 * len(ros.live_accepted)
        before, version = graph_to_dict(server.graph), server.version
        if data.draw(st.booleans()):
            answer = apply(ros, client, update_to_msg(hostile_op(server.graph, data.draw)))
            assert not answer.success, "a hostile update was applied"
            assert server.version == version and graph_to_dict(server.graph) == before, answer.message
        else:
            update = valid_op(server.graph, ros.live_added, data.draw, serial)
            answer = apply(ros, client, update_to_msg(update))
            assert answer.success, answer.message
            assert server.version == version + 1
            ros.live_accepted.append(update)
    replay = load_env("office")
    for update in ros.live_accepted:
        replay = apply_update(replay, update)
    assert graph_to_dict(server.graph) == graph_to_dict(replay)


def test_oversized_service_requests_are_refused_with_the_limit(ros: Any) -> None:
    """verify_plan, graph_view and get_scene_graph refuse a request over the limits with the reason, not
    "internal error", and the server goes on answering."""
    ros.add(SceneGraphServer(context=ros.context))
    node = ros.node("peer")
    plan = [PlanStep(action="goto", target="pose8")] * (limits.MAX_PLAN_STEPS + 1)
    verify = ros.call(node.create_client(VerifyPlan, "verify_plan"), VerifyPlan.Request(plan=plan))
    assert not verify.success and f"over the limit of {limits.MAX_PLAN_STEPS}" in verify.feedback
    many = ["pose8"] * (limits.MAX_UPDATE_ITEMS + 1)
    view = ros.call(node.create_client(GraphView, "graph_view"), GraphView.Request(operation="collapse", expanded=many))
    assert not view.success and "GraphView.expanded" in view.message
    get = node.create_client(GetSceneGraph, "get_scene_graph")
    assert "GetSceneGraph.node_ids" in ros.call(get, GetSceneGraph.Request(node_ids=many)).message
    assert ros.call(get, GetSceneGraph.Request()).success
