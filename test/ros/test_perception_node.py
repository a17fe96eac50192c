"""The perception node fed a rosbag2 of the synthetic RGB-D stream builds the ground-truth scene graph; a malformed
sensor message is dropped and the node lives."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import yaml
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from sayplan_core.graph import save
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.perception.synthetic import ROOM_REGIONS, SyntheticConfig, make_stream
from sayplan_ros.perception_bag import BagPlayer, matrix_to_quaternion, write_stream_bag
from sayplan_ros.perception_node import PerceptionNode, pose_to_matrix
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def test_pose_round_trip() -> None:
    from geometry_msgs.msg import PoseStamped

    from sayplan_core.perception.geometry import look_at

    pose = look_at(np.array([1.0, 2.0, 1.5]), np.array([4.0, -1.0, 0.3]))
    msg = PoseStamped()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = pose[:3, 3]
    q = matrix_to_quaternion(pose[:3, :3])
    msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = q
    assert np.allclose(pose_to_matrix(msg), pose, atol=1e-9)


@pytest.mark.parametrize("server_from_frame", [0, 5], ids=["graph-first", "graph-late"])
def test_bag_replay_builds_the_ground_truth_graph(ros: Any, tmp_path: Path, server_from_frame: int) -> None:
    """graph-late: the graph server comes up at frame 5; the updates it missed are sent then, not lost."""
    config = SyntheticConfig(seed=3)
    bag = tmp_path / "rgbd"
    assert write_stream_bag(bag, config) == 15
    start = SceneGraph("perceived")
    start.add_node(Node("floor1", "floor"))
    save(start, tmp_path / "start.json")
    regions = tmp_path / "rooms.yaml"
    regions.write_text(yaml.safe_dump({room: [list(lo), list(hi)] for room, (lo, hi) in ROOM_REGIONS.items()}))
    servers: list[SceneGraphServer] = []

    def start_server() -> None:
        overrides = [Parameter("env", value=str(tmp_path / "start.json")), Parameter("allow_no_agent", value=True)]
        servers.append(ros.add(SceneGraphServer(context=ros.context, parameter_overrides=overrides)))
        ros.wait_for(lambda: node._updates.service_is_ready(), what="apply_graph_update")
        ros.wait_for(lambda: node._follower.latest()[0] is not None, what="perception to see the graph")

    node = ros.add(
        PerceptionNode(context=ros.context, parameter_overrides=[Parameter("room_regions_file", value=str(regions))])
    )
    player = ros.add(BagPlayer(context=ros.context))
    ros.wait_for(
        lambda: player.count_subscribers("detections") > 0 and player.count_subscribers("camera/depth") > 0,
        what="subscribers",
    )
    if server_from_frame == 0:
        start_server()

    def confirm(index: int) -> bool:
        """Wait until the node handled frame `index`; False (resend) if it had to skip it."""
        ros.wait_for(
            lambda: node.frames_fused + node.frames_skipped > index + resent[0], timeout=30, what=f"frame {index}"
        )
        if node.frames_fused != index + 1:
            resent[0] += 1
            return False
        if index + 1 == server_from_frame:
            start_server()
        return True

    resent = [0]
    played = []
    thread = threading.Thread(target=lambda: played.append(player.play(bag, confirm=confirm)))
    thread.start()
    thread.join(timeout=180)
    assert played == [15] and node.frames_fused == 15, f"fused {node.frames_fused}, skipped {node.frames_skipped}"
    server = servers[0]
    version_before, sent_before = server.version, node.updates_sent
    answer = ros.call(ros.node("operator").create_client(Trigger, "perception/finalize"), Trigger.Request())
    assert answer.success, answer.message
    if node.updates_sent > sent_before:  # finalize found something to change (noise to drop, duplicates to merge)
        ros.wait_for(lambda: server.version > version_before, what="the final update")

    graph = server.graph
    truth = make_stream(config).ground_truth()
    found = list(graph.iter_nodes("asset", "object"))
    assert len(found) == len(truth), f"found {[n.id for n in found]}"
    match = {}
    for entity in truth:
        near = [
            n for n in found if n.name == entity.label and np.linalg.norm(np.array(n.position) - entity.center) < 0.10
        ]
        assert len(near) == 1, f"{entity.id}: {len(near)} matches within 10 cm"
        match[entity.id] = near[0].id
    expected = {(match[e.id], e.relation, match[e.parent]) for e in truth if e.kind == "object"}
    got = {(n.id, graph.relation(n.id), graph.parent(n.id)) for n in found if n.type == "object"}
    assert len(expected & got) / len(got) >= 0.9 and len(expected & got) / len(expected) >= 0.9
    assert all(graph.room_of(match[e.id]) == e.room for e in truth)


def test_malformed_sensor_messages_are_dropped_and_the_node_lives(ros: Any) -> None:
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import CameraInfo, Image

    from sayplan_interfaces.msg import Detection2D, DetectionArray
    from sayplan_ros.qos import EVENTS_QOS, SENSOR_QOS

    node = ros.add(PerceptionNode(context=ros.context))
    peer = ros.node("camera")
    publishers = {
        "info": peer.create_publisher(CameraInfo, "camera/camera_info", SENSOR_QOS),
        "depth": peer.create_publisher(Image, "camera/depth", SENSOR_QOS),
        "pose": peer.create_publisher(PoseStamped, "camera/pose", EVENTS_QOS),
        "det": peer.create_publisher(DetectionArray, "detections", EVENTS_QOS),
    }
    ros.wait_for(lambda: all(p.get_subscription_count() for p in publishers.values()), what="the perception node")
    info = CameraInfo(width=4, height=4)
    info.k = [2.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 0.0, 1.0]
    depth = Image(width=640, height=480, encoding="32FC1", data=b"\x00" * 10)  # far too short for its size
    pose = PoseStamped()
    pose.pose.orientation.w = 1.0
    detections = DetectionArray(detections=[Detection2D(label="mug", score=0.9, box=[0, 0, 2, 2])])
    for msg in (depth, pose, detections):
        msg.header.stamp.sec = 7
    for _ in range(20):  # best-effort camera topics: resend until the node has all three
        publishers["info"].publish(info)
        publishers["depth"].publish(depth)
        publishers["pose"].publish(pose)
        time.sleep(0.05)
    publishers["det"].publish(detections)
    time.sleep(0.5)
    answer = ros.call(ros.node("operator").create_client(Trigger, "/perception/finalize"), Trigger.Request())
    assert answer.success and node.frames_fused == 0  # the bad frame was dropped; the node answers
