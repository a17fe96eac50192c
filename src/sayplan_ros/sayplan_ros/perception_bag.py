"""The synthetic RGB-D stream as a rosbag2 file, and replay of such a bag into the perception node.

scripts/ws_env.sh python -m sayplan_ros.perception_bag OUT_DIR [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.rosbag2 import StoragePlugin, Writer
from sensor_msgs.msg import CameraInfo, Image

from sayplan_core.perception.fusion import Frame
from sayplan_core.perception.synthetic import SyntheticConfig, make_stream
from sayplan_interfaces.msg import Detection2D, DetectionArray
from sayplan_ros.bag import bag_version, offered_qos, project_typestore, read_messages, type_name
from sayplan_ros.qos import EVENTS_QOS, SENSOR_QOS

TOPICS: dict[str, type] = {
    "/camera/camera_info": CameraInfo,
    "/camera/depth": Image,
    "/camera/pose": PoseStamped,
    "/detections": DetectionArray,
}
#: The QoS each topic is published with (camera streams best-effort like a real camera's; poses and detections
#: reliable), recorded in the bag as its offered QoS.
TOPIC_QOS: dict[str, Any] = {
    "/camera/camera_info": SENSOR_QOS,
    "/camera/depth": SENSOR_QOS,
    "/camera/pose": EVENTS_QOS,
    "/detections": EVENTS_QOS,
}
FRAME_PERIOD_NS = 100_000_000  # the synthetic camera runs at 10 Hz


def matrix_to_quaternion(r: np.ndarray) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation matrix (Shepperd's method)."""
    trace = np.trace(r)
    if trace > 0:
        s = 2 * np.sqrt(trace + 1)
        return ((r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4)
    i = int(np.argmax(np.diag(r)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2 * np.sqrt(1 + r[i, i] - r[j, j] - r[k, k])
    q = [0.0, 0.0, 0.0, 0.0]
    q[i] = s / 4
    q[j] = (r[j, i] + r[i, j]) / s
    q[k] = (r[k, i] + r[i, k]) / s
    q[3] = (r[k, j] - r[j, k]) / s
    return (q[0], q[1], q[2], q[3])


def _image(array: np.ndarray, encoding: str, stamp_ns: int) -> Image:
    msg = Image(height=array.shape[0], width=array.shape[1], encoding=encoding, is_bigendian=0)
    msg.step = int(array.strides[0])
    msg.data = array.tobytes()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    msg.header.frame_id = "camera_optical"
    return msg


def frame_messages(frame: Frame, stamp_ns: int) -> dict[str, Any]:
    k = frame.intrinsics
    info = CameraInfo(width=k.width, height=k.height)
    info.k = [k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0]
    info.header.stamp.sec, info.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    pose = PoseStamped()
    pose.header.stamp = info.header.stamp
    pose.header.frame_id = "map"
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in frame.pose[:3, 3])
    q = matrix_to_quaternion(frame.pose[:3, :3])
    pose.pose.orientation.x, pose.pose.orientation.y, pose.pose.orientation.z, pose.pose.orientation.w = q
    detections = DetectionArray()
    detections.header.stamp = info.header.stamp
    for det in frame.detections:
        item = Detection2D(label=det.label, score=det.score)
        if det.mask is not None:
            item.mask = _image(det.mask.astype(np.uint8) * 255, "mono8", stamp_ns)
        detections.detections.append(item)
    return {
        "/camera/camera_info": info,
        "/camera/depth": _image(frame.depth.astype(np.float32), "32FC1", stamp_ns),
        "/camera/pose": pose,
        "/detections": detections,
    }


def write_stream_bag(path: Path, config: SyntheticConfig | None = None) -> int:
    """Write the synthetic stream; returns the number of frames."""
    stream = make_stream(config)
    typestore = project_typestore()
    version = bag_version()
    with Writer(path, version=version, storage_plugin=StoragePlugin.MCAP) as writer:  # type: ignore[arg-type]
        connections = {
            topic: writer.add_connection(
                topic, type_name(cls), typestore=typestore, offered_qos_profiles=offered_qos(TOPIC_QOS[topic], version)
            )
            for topic, cls in TOPICS.items()
        }
        for index, frame in enumerate(stream.frames):
            stamp = (index + 1) * FRAME_PERIOD_NS
            for topic, msg in frame_messages(frame, stamp).items():
                writer.write(connections[topic], stamp, serialize_message(msg))
    return len(stream.frames)


class BagPlayer(Node):
    """Publishes a recorded perception bag in order (detections last within each frame)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("bag_player", **kwargs)
        self.publishers_by_topic = {
            topic: self.create_publisher(cls, topic.lstrip("/"), TOPIC_QOS[topic]) for topic, cls in TOPICS.items()
        }

    def play(self, path: Path, pause_s: float = 0.05, confirm: Any = None, retries: int = 3) -> int:
        """Publish every frame (camera info, depth, pose, then detections).

        With `confirm(frame_index) -> bool`, wait for the consumer after each frame and resend a frame it
        reports lost (camera topics are best-effort, like a real camera's); otherwise pace by `pause_s`.
        """
        order = {"/camera/camera_info": 0, "/camera/depth": 1, "/camera/pose": 2, "/detections": 3}
        frames: dict[int, list[tuple[int, str, bytes]]] = {}
        for topic, stamp, raw in read_messages(path, raw_topics=TOPICS):  # every file checked and bounded
            frames.setdefault(stamp, []).append((order[topic], topic, raw))
        for index, stamp in enumerate(sorted(frames)):
            for _ in range(retries + 1):
                for _, topic, raw in sorted(frames[stamp]):
                    self.publishers_by_topic[topic].publish(deserialize_message(raw, TOPICS[topic]))
                if confirm is None:
                    time.sleep(pause_s)  # a player thread, not a callback: pacing like a live camera
                    break
                if confirm(index):
                    break
        return len(frames)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the synthetic RGB-D stream as a rosbag2 (MCAP) folder")
    parser.add_argument("out", help="bag folder to create")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    frames = write_stream_bag(Path(args.out), SyntheticConfig(seed=args.seed))
    print(f"wrote {frames} frames to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
