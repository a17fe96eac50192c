"""sayplan_ros.served_graphs: a graph message's digest depends on its content only (the same graph fetched again,
or read back from the wire, has the same digest; any change of a field changes it), and the server confirms only
what it served. The digest used to be of the serialized bytes, which CDR's unzeroed padding made differ between
two serializations of one graph: every second fetch of the same version failed its confirmation."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message

from sayplan_core.envs import load_env
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_ros.conversions import graph_to_msg
from sayplan_ros.served_graphs import KEPT_ANSWERS, ServedGraphs, graph_digest

OFFICE = load_env("office")


@settings(max_examples=25)
@given(st.integers(0, 237), st.sampled_from(["name", "states", "position", "parent"]), st.integers(1, 10))
def test_the_digest_follows_the_content_not_the_bytes(index: int, field: str, version: int) -> None:
    msg = graph_to_msg(OFFICE, version)
    digest = graph_digest(msg)
    for _ in range(3):  # read back from the wire: equal content, equal digest
        again = deserialize_message(serialize_message(msg), SceneGraphMsg)
        assert graph_digest(again) == digest
    assert graph_digest(graph_to_msg(OFFICE, version)) == digest  # the same graph converted again
    node = msg.nodes[index]
    if field == "name":
        node.name += "x"
    elif field == "states":
        node.states = [*node.states, "open"]
    elif field == "position":
        node.has_position, node.position.x = True, node.position.x + 1e-9
    else:
        node.parent = "" if node.parent else "kitchen"
    assert graph_digest(msg) != digest


def test_the_server_confirms_only_what_it_served_and_forgets_the_oldest() -> None:
    served = ServedGraphs()
    served.record(1, b"a" * 16)
    assert served.confirms(1, b"a" * 16)
    assert not served.confirms(1, b"b" * 16) and not served.confirms(2, b"a" * 16)
    for version in range(2, KEPT_ANSWERS + 2):
        served.record(version, bytes([version % 256]) * 16)
    assert not served.confirms(1, b"a" * 16)  # the oldest answer was forgotten
    assert served.confirms(KEPT_ANSWERS + 1, bytes([(KEPT_ANSWERS + 1) % 256]) * 16)
