"""Plays a rosbag2 folder back onto DDS the way `ros2 bag play` does, from Python (rosbag2_py is not on PyPI).

    scripts/ws_env.sh python -m sayplan_ros.bag_player BAG [--rate 1.0] [--namespace NS]

Each topic gets one publisher with the QoS `ros2 bag play` would offer (rosbag2_storage/qos.cpp,
`adapt_offer_to_recorded_offers`): the recorded offered profile when every recorded publisher offered the same
compatibility policies, with rosbag2's default history (keep last 10); rosbag2's default profile (reliable,
volatile) when none was recorded or the offers differ. So a latched topic such as `/scene_graph` is replayed
transient-local and a subscriber that joins after the message was played still receives it. Messages are
published as recorded (CDR bytes), in order, paced by their recorded timestamps divided by `rate`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import rclpy
import yaml
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

from sayplan_core import files
from sayplan_ros.bag import MAX_METADATA_BYTES, read_messages

#: rmw_qos_profile_default.depth: the history `ros2 bag play` gives every publisher.
PLAYER_DEPTH = 10
_INFINITE_NS = 2**63 - 1
_POLICIES: dict[str, type] = {
    "history": HistoryPolicy,
    "reliability": ReliabilityPolicy,
    "durability": DurabilityPolicy,
    "liveliness": LivelinessPolicy,
}
#: Policies that decide whether a subscriber matches (rosbag2's `all_profiles_effectively_same`).
_COMPATIBILITY = ("reliability", "durability", "deadline", "liveliness", "liveliness_lease_duration")


def _policy(kind: str, value: Any) -> Any:
    """A policy written as rmw's name (version 9) or its number (older versions), as rosbag2 decodes both."""
    enum: Any = _POLICIES[kind]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"offered QoS {kind}: {value!r} is neither a name nor a number")
    if isinstance(value, int):
        return enum(value)
    name = value.strip().upper()
    if name not in enum.__members__:
        raise ValueError(f"offered QoS {kind}: unknown value {value!r}")
    return enum[name]


def _duration(kind: str, value: Any) -> Duration:
    if not isinstance(value, Mapping) or not all(isinstance(value.get(k), int) for k in ("sec", "nsec")):
        raise ValueError(f"offered QoS {kind}: expected {{sec, nsec}}, got {value!r}")
    nanoseconds = int(value["sec"]) * 1_000_000_000 + int(value["nsec"])
    return Duration(nanoseconds=min(max(nanoseconds, 0), _INFINITE_NS))


def profile_from_rosbag2(entry: Mapping[str, Any]) -> QoSProfile:
    """One `offered_qos_profiles` entry (any bag version) as an rclpy profile."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"offered QoS entry is not a mapping: {entry!r}")
    depth = entry.get("depth", 0)
    if not isinstance(depth, int) or depth < 0:
        raise ValueError(f"offered QoS depth: {depth!r}")
    return QoSProfile(
        history=_policy("history", entry.get("history", 0)),
        depth=depth,
        reliability=_policy("reliability", entry.get("reliability", 0)),
        durability=_policy("durability", entry.get("durability", 0)),
        deadline=_duration("deadline", entry.get("deadline", {"sec": 0, "nsec": 0})),
        lifespan=_duration("lifespan", entry.get("lifespan", {"sec": 0, "nsec": 0})),
        liveliness=_policy("liveliness", entry.get("liveliness", 0)),
        liveliness_lease_duration=_duration(
            "liveliness_lease_duration", entry.get("liveliness_lease_duration", {"sec": 0, "nsec": 0})
        ),
        avoid_ros_namespace_conventions=bool(entry.get("avoid_ros_namespace_conventions", False)),
    )


def offered_profiles(field: Any) -> list[QoSProfile]:
    """The `offered_qos_profiles` field of metadata.yaml: a list (version 9) or a YAML string of one (older)."""
    if field is None or field == "":
        return []
    if isinstance(field, str):
        field = files.load_yaml(field)
    if not isinstance(field, list):
        raise ValueError(f"offered_qos_profiles is not a list: {str(field)[:80]!r}")
    return [profile_from_rosbag2(entry) for entry in field]


def player_qos(profiles: list[QoSProfile]) -> QoSProfile:
    """The profile `ros2 bag play` offers for a topic recorded with these offers."""
    default = QoSProfile(depth=PLAYER_DEPTH)  # rosbag2's Rosbag2QoS{}: reliable, volatile
    if not profiles:
        return default
    first = profiles[0]
    if any(getattr(p, k) != getattr(first, k) for p in profiles[1:] for k in _COMPATIBILITY):
        return default
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=PLAYER_DEPTH,
        reliability=first.reliability,
        durability=first.durability,
        deadline=first.deadline,
        lifespan=first.lifespan,
        liveliness=first.liveliness,
        liveliness_lease_duration=first.liveliness_lease_duration,
        avoid_ros_namespace_conventions=first.avoid_ros_namespace_conventions,
    )


def read_topic_qos(bag: Path) -> dict[str, tuple[str, QoSProfile]]:
    """topic -> (type, player QoS) from the bag's metadata.yaml, as rosbag2's reader takes them."""
    try:
        text = files.read_text(bag / "metadata.yaml", MAX_METADATA_BYTES, "bag metadata")
        info = files.load_yaml(text)["rosbag2_bagfile_information"]
        topics = info["topics_with_message_count"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise ValueError(f"{bag} is not a rosbag2 folder with a readable metadata.yaml: {exc}") from exc
    result: dict[str, tuple[str, QoSProfile]] = {}
    for item in topics or []:
        meta = item["topic_metadata"]
        result[str(meta["name"])] = (str(meta["type"]), player_qos(offered_profiles(meta.get("offered_qos_profiles"))))
    return result


def message_class(type_name: str) -> type:
    """`pkg/msg/Type` -> the installed rclpy message class."""
    package, kind, name = [*type_name.split("/"), "", ""][:3]
    if kind != "msg" or not package or not name:
        raise ValueError(f"not a message type name: {type_name!r}")
    cls: type = getattr(importlib.import_module(f"{package}.msg"), name)
    return cls


class RosbagPlayer(Node):
    """Publishers for every playable topic of one bag; `play` sends the messages (call it from a thread of its
    own, not a callback: it paces by sleeping)."""

    def __init__(self, bag: str | Path, topics: Iterable[str] | None = None, **kwargs: Any) -> None:
        super().__init__(kwargs.pop("node_name", "rosbag_player"), **kwargs)
        self.bag = Path(bag)
        wanted = set(topics) if topics is not None else None
        self.qos: dict[str, QoSProfile] = {}
        self.publishers_by_topic: dict[str, Any] = {}
        for topic, (type_name, qos) in read_topic_qos(self.bag).items():
            if wanted is not None and topic not in wanted:
                continue
            try:
                cls = message_class(type_name)
            except (ImportError, AttributeError, ValueError) as exc:  # as rosbag2 does: skip it and say so
                self.get_logger().warning(f"ignoring topic {topic}: type {type_name} is not installed ({exc})")
                continue
            self.qos[topic] = qos
            self.publishers_by_topic[topic] = self.create_publisher(cls, topic.lstrip("/"), qos)
        self.published: dict[str, int] = {topic: 0 for topic in self.publishers_by_topic}
        self._stop = threading.Event()

    def play(self, rate: float = 1.0) -> int:
        """Publish every message in recorded order, `rate` times as fast as recorded (0: no pauses); returns the
        number published."""
        if rate < 0:
            raise ValueError("rate must be >= 0")
        start_wall, first_stamp = time.monotonic(), None
        count = 0
        # read as the replay reads a run: every file checked and bounded (sayplan_ros.bag.read_messages)
        for topic, stamp, raw in read_messages(self.bag, raw_topics=self.publishers_by_topic):
            if self._stop.is_set():
                break
            first_stamp = stamp if first_stamp is None else first_stamp
            if rate > 0:
                due = start_wall + (stamp - first_stamp) / 1e9 / rate
                self._stop.wait(max(0.0, due - time.monotonic()))
            self.publishers_by_topic[topic].publish(raw)
            self.published[topic] += 1
            count += 1
        return count

    def stop(self) -> None:
        self._stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bag_player", description="play a rosbag2 folder as `ros2 bag play` does")
    parser.add_argument("bag", help="rosbag2 folder")
    parser.add_argument("--rate", type=float, default=1.0, help="playback speed (0: as fast as possible)")
    parser.add_argument("--namespace", default="", help="publish under this namespace instead of the recorded names")
    parser.add_argument("--linger", type=float, default=0.0, help="seconds to keep latched topics served after")
    args = parser.parse_args(argv)
    rclpy.init()
    try:
        player = RosbagPlayer(args.bag, namespace=args.namespace)
        count = player.play(args.rate)
        print(f"played {count} messages from {args.bag}", flush=True)
        deadline = time.monotonic() + args.linger
        while time.monotonic() < deadline and rclpy.ok():
            rclpy.spin_once(player, timeout_sec=0.1)
        player.destroy_node()
    except KeyboardInterrupt:
        return 130
    except ExternalShutdownException:  # SIGTERM: rclpy shut the context down
        return 0
    except (ValueError, OSError) as exc:  # a bag refused (sayplan_ros.bag.read_messages; FileReadError is an OSError)
        print(f"bag_player: {exc}", file=sys.stderr)
        return 2
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
