"""config/sayplan.rviz works under `namespace:=`: every topic it shows is relative, and the stack, started under a
namespace as its own process, publishes each one there with a QoS the display can receive."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import rclpy
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]
RVIZ = ROOT / "config" / "sayplan.rviz"
TRANSCRIPT = ROOT / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"
STACK = shutil.which("sayplan_stack")
needs_stack = pytest.mark.skipif(STACK is None, reason="sayplan_stack is not on PATH: run through `make test`")


def rviz_topics(config: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(display, its Topic block) for every display at any depth of the config, however RViz nests them."""
    if isinstance(config, dict):
        topic = config.get("Topic")
        if topic is not None:
            block = topic if isinstance(topic, dict) else {"Value": topic}
            yield f"{where}/{config.get('Name', '?')}", block
        for key, value in config.items():
            if key != "Topic":
                yield from rviz_topics(value, f"{where}/{key}" if key != "Displays" else where)
    elif isinstance(config, list):
        for item in config:
            yield from rviz_topics(item, where)


def topics() -> list[tuple[str, dict[str, Any]]]:
    return list(rviz_topics(yaml.safe_load(RVIZ.read_text(encoding="utf-8"))))


def test_the_installed_config_is_this_file() -> None:
    """setup.py installs config/*.rviz from src/sayplan_ros/config, a link to the top-level config folder."""
    assert (ROOT / "src" / "sayplan_ros" / "config" / "sayplan.rviz").resolve() == RVIZ.resolve()


def test_every_rviz_topic_is_relative() -> None:
    found = topics()
    assert found, f"{RVIZ} shows no topic at all"
    for display, block in found:
        name = str(block.get("Value", ""))
        assert name and not name.startswith(("/", "~")), f"{display}: topic {name!r} ignores namespace:="


@needs_stack
def test_the_stack_under_a_namespace_publishes_every_rviz_topic(ros: Any, tmp_path: Path) -> None:
    assert STACK is not None
    namespace = "/rviz_robot"
    # a parameters file keyed by the node's full name (`-p planner:replay_transcript:=` reached the namespaced
    # planner only some of the time, and the stack then fell back to an LLM that is not installed here)
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump({f"{namespace}/planner": {"ros__parameters": {"replay_transcript": str(TRANSCRIPT)}}})
    )
    args = [STACK, "--ros-args", "-r", f"__ns:={namespace}", "--params-file", str(params)]
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    stack = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # RViz as the launch file starts it: a node in the stack's namespace, resolving the config's names there
        rviz = ros.add(rclpy.create_node("rviz_stand_in", namespace=namespace, context=ros.context))
        for display, block in topics():
            topic = f"{namespace}/{block['Value']}"
            ros.wait_for(
                lambda topic=topic: discovered(rviz, topic) or stack.poll() is not None,
                timeout=60.0,
                what=f"a publisher of {topic} (shown by {display})",
            )
            if stack.poll() is not None:
                output = stack.stdout.read() if stack.stdout is not None else ""
                raise AssertionError(f"the stack process ended ({stack.returncode}) before publishing:\n{output}")
            publishers = rviz.get_publishers_info_by_topic(topic)
            assert {p.node_namespace for p in publishers} == {namespace}, topic
            for publisher in publishers:
                assert_receivable(display, block, publisher.qos_profile)
    finally:
        stack.send_signal(signal.SIGINT)
        try:
            out, _ = stack.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            stack.kill()
            out, _ = stack.communicate()
    assert stack.returncode in (0, 130), out[-4000:]


def discovered(node: Any, topic: str) -> bool:
    """A publisher of `topic` is known, with its node: DDS announces an endpoint before the node that owns it
    (until then its namespace reads `_NODE_NAMESPACE_UNKNOWN_`)."""
    publishers = node.get_publishers_info_by_topic(topic)
    return bool(publishers) and all(not p.node_namespace.startswith("_NODE_") for p in publishers)


def assert_receivable(display: str, block: dict[str, Any], offered: Any) -> None:
    """The display's requested QoS must be one the publisher offers, or RViz silently shows nothing."""
    wants_latched = str(block.get("Durability Policy", "Volatile")).lower() == "transient local"
    wants_reliable = str(block.get("Reliability Policy", "Reliable")).lower() == "reliable"
    if wants_latched:
        assert offered.durability == DurabilityPolicy.TRANSIENT_LOCAL, f"{display}: the publisher is not latched"
    if wants_reliable:
        assert offered.reliability == ReliabilityPolicy.RELIABLE, f"{display}: the publisher is best effort"
