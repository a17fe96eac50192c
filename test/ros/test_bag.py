"""rosbag2 files written by a recorded run: readable by rosbags, replayable to the same plan and graph, with each
topic's offered QoS recorded as rosbag2 writes it, so a replayed bag latches the scene graph for a late joiner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from ros_domains import claim_domain, release_domain
from rosbags.rosbag2 import Reader
from transcripts import GOAL

from sayplan_core.graph import graph_to_dict, save
from sayplan_core.graph.updates import apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim import check_goals
from sayplan_interfaces.action import PlanTask
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.bag import RECORDED_TOPICS, BagRecorder, project_typestore, qos_to_rosbag2, read_messages
from sayplan_ros.bag_player import RosbagPlayer, offered_profiles
from sayplan_ros.conversions import msg_to_graph, msg_to_update
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.qos import LATCHED_STATE_QOS
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def run_in_own_domain(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A program run to its end on a DDS domain no other test holds meanwhile."""
    domain, lock = claim_domain()
    try:
        return subprocess.run(
            command, env={**os.environ, "ROS_DOMAIN_ID": str(domain)}, capture_output=True, text=True, timeout=timeout
        )
    finally:
        release_domain(lock)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One recorded run of the main job (a separate process, a domain of its own)."""
    out = tmp_path_factory.mktemp("runs")
    done = run_in_own_domain(["sayplan_demo", "--out", str(out), "--skill-delay", "0.01"], timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "summary: success" in done.stdout and "goal met" in done.stdout
    (run_dir,) = list(out.iterdir())
    yield run_dir


def test_bag_is_readable_with_rosbags_typestore(demo_run: Path) -> None:
    typestore = project_typestore()
    topics: dict[str, int] = {}
    info = yaml.safe_load((demo_run / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap" and info["version"] == 9
    with Reader(demo_run / "bag") as reader:
        for connection, _, raw in reader.messages():
            msg = typestore.deserialize_cdr(raw, connection.msgtype)
            topics[connection.topic] = topics.get(connection.topic, 0) + 1
            if connection.topic == "/scene_graph":
                assert msg.name == "office" and len(msg_to_graph(msg)) == 238  # one payload (rosbags: a numpy array)
    assert set(topics) == {
        "/scene_graph", "/scene_graph_updates", "/active_plan", "/plan_results", "/execution_events", "/skill_results"
    }  # fmt: skip
    assert topics["/plan_results"] == 2 and topics["/skill_results"] == 24


def final_graph_from_updates(messages: list[Any]) -> tuple[Any, list[int]]:
    """The first full graph patched with every recorded update, in version order."""
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    updates = {m.version: m for topic, _, m in messages if topic == "/scene_graph_updates"}
    graph, version = msg_to_graph(graphs[0]), graphs[0].version
    for v in sorted(updates):
        assert updates[v].base_version == version == v - 1, "updates must chain version by version"
        graph, version = apply_update(graph, msg_to_update(updates[v])), v
    return graph, sorted(updates)


def test_replaying_the_updates_reproduces_the_skill_results_and_meets_the_goal(demo_run: Path) -> None:
    messages = list(read_messages(demo_run / "bag"))
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    skills = [m for topic, _, m in messages if topic == "/skill_results"]
    from_updates, versions = final_graph_from_updates(messages)
    # every version once, none missing: one update per skill result that changed the graph
    assert versions == list(range(graphs[0].version + 1, graphs[0].version + len(skills) + 1))
    from_skills = msg_to_graph(graphs[0])
    for report in skills:
        from_skills = apply_update(from_skills, msg_to_update(report.outcome.graph_update))
    assert graph_to_dict(from_updates) == graph_to_dict(from_skills)
    assert check_goals(from_updates, [GOAL]).success
    failed = [SkillCode(r.outcome.error_code) for r in skills if not r.outcome.success]
    assert failed == [SkillCode.GRASP_FAILED]


def test_bag_fed_back_into_server_and_planner_gives_the_same_plan_and_graph(
    demo_run: Path, ros: Any, tmp_path: Path
) -> None:
    messages = list(read_messages(demo_run / "bag"))
    graphs = [m for topic, _, m in messages if topic == "/scene_graph"]
    skills = [m for topic, _, m in messages if topic == "/skill_results"]
    recorded_plans = [m for topic, _, m in messages if topic == "/plan_results"]
    start = tmp_path / "start.json"
    save(msg_to_graph(graphs[0]), start)
    server = ros.add(SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value=str(start))]))
    planner = ros.add(
        PlannerNode(
            context=ros.context,
            parameter_overrides=[Parameter("replay_transcript", value=str(demo_run / "llm" / "plan_task_001.json"))],
        )
    )
    ros.wait_for(lambda: planner.graph_version > 0, what="planner to receive the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    handle_future = client.send_goal_async(PlanTask.Goal(instruction=recorded_plans[0].instruction))
    ros.wait_for(handle_future.done, what="goal accepted")
    result_future = handle_future.result().get_result_async()
    ros.wait_for(result_future.done, what="plan result")
    replayed = result_future.result().result
    recorded = recorded_plans[0].outcome
    assert [(s.action, s.target) for s in replayed.outcome.full_plan] == [
        (s.action, s.target) for s in recorded.full_plan
    ]
    assert list(replayed.outcome.feedback_history) == list(recorded.feedback_history)
    updates = ros.node("replayer").create_client(ApplyGraphUpdate, "apply_graph_update")
    for report in skills:
        assert ros.call(updates, ApplyGraphUpdate.Request(update=report.outcome.graph_update)).success
    assert graph_to_dict(server.graph) == graph_to_dict(final_graph_from_updates(messages)[0])


#: The fields rosbag2 writes for each offered profile (rosbag2_storage/src/rosbag2_storage/qos.cpp, encode).
ROSBAG2_QOS_KEYS = {
    "history", "depth", "reliability", "durability", "deadline", "lifespan", "liveliness",
    "liveliness_lease_duration", "avoid_ros_namespace_conventions",
}  # fmt: skip
INFINITE = {"sec": 9223372036, "nsec": 854775807}  # RMW_DURATION_INFINITE


def topic_metadata(bag: Path) -> dict[str, Any]:
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return {t["topic_metadata"]["name"]: t["topic_metadata"] for t in info["topics_with_message_count"]}


def test_the_demo_bag_records_the_offered_qos_of_every_topic(demo_run: Path) -> None:
    topics = topic_metadata(demo_run / "bag")
    assert set(topics) == set(RECORDED_TOPICS)
    with Reader(demo_run / "bag") as reader:  # rosbags' own parse of the same metadata
        parsed = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    for topic, (_, profile) in RECORDED_TOPICS.items():
        (entry,) = topics[topic]["offered_qos_profiles"]  # version 9: a YAML list, rmw's names
        assert set(entry) == ROSBAG2_QOS_KEYS, topic
        assert entry["history"] == profile.history.name.lower() and entry["depth"] == profile.depth
        assert entry["reliability"] == profile.reliability.name.lower()
        assert entry["durability"] == profile.durability.name.lower()
        assert entry["liveliness"] == "automatic" and entry["avoid_ros_namespace_conventions"] is False
        assert entry["deadline"] == entry["lifespan"] == entry["liveliness_lease_duration"] == INFINITE
        (qos,) = parsed[topic]
        assert (qos.durability.name, qos.reliability.name, qos.depth) == (
            profile.durability.name, profile.reliability.name, profile.depth
        ), topic  # fmt: skip
    assert topics["/scene_graph"]["offered_qos_profiles"][0]["durability"] == "transient_local"


@pytest.mark.parametrize(("distro", "version"), [("jazzy", 9), ("humble", 8)])
def test_recorded_qos_is_what_dds_offers_in_the_form_of_each_distro(
    distro: str, version: int, ros: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle is DDS: what the stack's publishers offer, as rosbag2's recorder would read it from the graph.
    History and depth are the publisher's own (DDS reports them as unknown, 0)."""
    monkeypatch.setenv("ROS_DISTRO", distro)
    recorder = ros.add(
        BagRecorder(context=ros.context, parameter_overrides=[Parameter("output", value=str(tmp_path / "bag"))])
    )
    talker = ros.node("talker")
    publishers = [talker.create_publisher(cls, topic.lstrip("/"), qos) for topic, (cls, qos) in RECORDED_TOPICS.items()]
    offered: dict[str, Any] = {}
    for topic in RECORDED_TOPICS:
        ros.wait_for(lambda t=topic: bool(talker.get_publishers_info_by_topic(t)), what=f"{topic} in the graph")
        offered[topic] = talker.get_publishers_info_by_topic(topic)[0].qos_profile
    # while recording: the recorder's own metadata.yaml (what a killed recorder leaves); once closed: rosbags'
    for moment in ("recording", "closed"):
        if moment == "closed":
            recorder.close()
        info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert info["version"] == version, moment
        for topic, meta in topic_metadata(tmp_path / "bag").items():
            field = meta["offered_qos_profiles"]
            if version >= 9:
                assert isinstance(field, list), moment
            else:  # Humble reads the field as a string, and the policies as numbers
                assert isinstance(field, str), moment
                field = yaml.safe_load(field)
                assert all(isinstance(field[0][k], int) for k in ("history", "reliability", "durability", "liveliness"))
            (entry,) = field
            expected = qos_to_rosbag2(offered[topic], version)
            for key in ROSBAG2_QOS_KEYS - {"history", "depth"}:
                assert entry[key] == expected[key], (moment, topic, key)
            assert entry["depth"] == RECORDED_TOPICS[topic][1].depth
            (profile,) = offered_profiles(meta["offered_qos_profiles"])  # what the player reads back
            assert profile.durability == RECORDED_TOPICS[topic][1].durability
    del publishers


def wait_latched_graph(ros: Any, timeout: float) -> list[Any]:
    """Join late with the latched QoS and collect the scene graphs served within `timeout` s."""
    received: list[Any] = []
    late = ros.node(f"late_joiner_{time.monotonic_ns()}")
    late.create_subscription(SceneGraphMsg, "scene_graph", received.append, LATCHED_STATE_QOS)
    deadline = time.monotonic() + timeout
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    return received


def test_a_replayed_bag_latches_the_scene_graph_for_a_late_joiner(demo_run: Path, ros: Any) -> None:
    recorded = [m for topic, _, m in read_messages(demo_run / "bag") if topic == "/scene_graph"]
    player = ros.add(RosbagPlayer(demo_run / "bag", context=ros.context))
    assert player.qos["/scene_graph"].durability == DurabilityPolicy.TRANSIENT_LOCAL
    info = yaml.safe_load((demo_run / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert player.play(rate=0) == info["message_count"] and player.published["/scene_graph"] == len(recorded) >= 1
    time.sleep(0.5)  # the graph was played well before anyone subscribes
    received = wait_latched_graph(ros, timeout=10.0)
    assert received, "a transient-local subscriber that joined after the replay got no scene graph"
    assert received[-1].version == recorded[-1].version
    assert len(msg_to_graph(received[-1])) == len(msg_to_graph(recorded[-1])) == 238


def test_without_recorded_qos_the_late_joiner_gets_nothing(demo_run: Path, ros: Any, tmp_path: Path) -> None:
    """The control: the bags of before (empty offered_qos_profiles) replay volatile, and the graph is lost."""
    bag = tmp_path / "bag"
    shutil.copytree(demo_run / "bag", bag)
    metadata = yaml.safe_load((bag / "metadata.yaml").read_text())
    for topic in metadata["rosbag2_bagfile_information"]["topics_with_message_count"]:
        topic["topic_metadata"]["offered_qos_profiles"] = []
    (bag / "metadata.yaml").write_text(yaml.safe_dump(metadata))
    player = ros.add(RosbagPlayer(bag, context=ros.context))
    assert player.qos["/scene_graph"].durability == DurabilityPolicy.VOLATILE
    player.play(rate=0)
    time.sleep(0.5)
    assert wait_latched_graph(ros, timeout=3.0) == []


def test_the_player_program_latches_the_graph_for_a_late_joiner(demo_run: Path, ros: Any) -> None:
    """The player as a program of its own (docs/howto/replay.md), on the test's domain: it plays, says so, lingers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sayplan_ros.bag_player", str(demo_run / "bag"), "--rate", "0", "--linger", "20"],
        env={**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("played "):
            line = proc.stdout.readline()
        info = yaml.safe_load((demo_run / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert line.startswith(f"played {info['message_count']} messages"), line
        time.sleep(0.5)
        received = wait_latched_graph(ros, timeout=10.0)
        assert received and len(msg_to_graph(received[-1])) == 238
    finally:
        proc.terminate()
        proc.wait(timeout=10)
