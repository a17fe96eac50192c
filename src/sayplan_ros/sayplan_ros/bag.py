"""rosbag2 recording and reading through `rosbags` (rosbag2_py is not on PyPI).

The recorder subscribes with `raw=True`, so messages are written exactly as they
crossed DDS (CDR), with the project's message definitions registered so that any
rosbag2 reader can decode them. MCAP (the Jazzy default) or sqlite3 storage.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ament_index_python.packages import get_package_share_directory
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from sayplan_interfaces.msg import ExecutionEvent, GraphUpdate, Plan, PlanReport, SceneGraph, SkillReport
from sayplan_ros.qos import EVENTS_QOS, GRAPH_UPDATES_QOS, LATCHED_STATE_QOS

#: topic -> (message class, QoS); recorded under these names whatever namespace the stack runs in.
RECORDED_TOPICS: dict[str, tuple[type, Any]] = {
    "/scene_graph": (SceneGraph, LATCHED_STATE_QOS),
    "/scene_graph_updates": (GraphUpdate, GRAPH_UPDATES_QOS),
    "/active_plan": (Plan, LATCHED_STATE_QOS),
    "/plan_results": (PlanReport, EVENTS_QOS),
    "/execution_events": (ExecutionEvent, EVENTS_QOS),
    "/skill_results": (SkillReport, EVENTS_QOS),
}
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}


def type_name(cls: type) -> str:
    module = cls.__module__.split(".")  # sayplan_interfaces.msg._scene_graph
    return f"{module[0]}/msg/{cls.__name__}"


def project_typestore() -> Typestore:
    """Jazzy's standard types plus every sayplan_interfaces message, from the installed .msg files."""
    store = get_typestore(Stores.ROS2_JAZZY)
    folder = Path(get_package_share_directory("sayplan_interfaces")) / "msg"
    types: dict[str, Any] = {}
    for path in sorted(folder.glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"sayplan_interfaces/msg/{path.stem}"))
    store.register(types)
    return store


class BagRecorder(Node):
    """Records the stack's topics to a rosbag2 folder until closed.

    One writer thread owns the storage (sqlite3 must stay on the thread that opened it);
    subscription callbacks only queue the raw messages.
    """

    def __init__(self, node_name: str = "bag_recorder", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        read_only = ParameterDescriptor(read_only=True)
        self.declare_parameter(
            "output", "", ParameterDescriptor(description="bag folder to create (must not exist)", read_only=True)
        )
        self.declare_parameter("storage", "mcap", read_only)
        output = str(self.get_parameter("output").value)
        storage = str(self.get_parameter("storage").value)
        if not output:
            raise ValueError("parameter 'output' must name the bag folder to write")
        if storage not in STORAGES:
            raise ValueError(f"parameter 'storage' must be mcap or sqlite3, got '{storage}'")
        if Path(output).exists():
            raise ValueError(f"bag folder {output} already exists; choose a new one")
        self.path = Path(output)
        self.counts: dict[str, int] = {topic: 0 for topic in RECORDED_TOPICS}
        self._queue: queue.Queue[tuple[str, int, bytes] | None] = queue.Queue()
        self._opened = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write_all, args=(STORAGES[storage],), daemon=True)
        self._thread.start()
        self._opened.wait()
        if self._error is not None:
            raise ValueError(f"cannot create the bag {output}: {self._error}")
        for topic, (cls, qos) in RECORDED_TOPICS.items():
            self.create_subscription(cls, topic.lstrip("/"), self._queue_callback(topic), qos, raw=True)

    def _queue_callback(self, topic: str) -> Any:
        def queue_message(data: bytes) -> None:
            self._queue.put((topic, self.get_clock().now().nanoseconds, data))

        return queue_message

    def _write_all(self, plugin: Any) -> None:
        try:
            writer = Writer(self.path, version=9, storage_plugin=plugin)
            writer.open()
            typestore = project_typestore()
            connections = {
                topic: writer.add_connection(topic, type_name(cls), typestore=typestore)
                for topic, (cls, _) in RECORDED_TOPICS.items()
            }
        except Exception as exc:  # reported by the constructor
            self._error = exc
            self._opened.set()
            return
        self._opened.set()
        try:
            while (item := self._queue.get()) is not None:
                topic, stamp, data = item
                writer.write(connections[topic], stamp, data)
                self.counts[topic] += 1
        finally:
            writer.close()

    def close(self) -> Path:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        return self.path

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def read_messages(path: str | Path) -> Iterator[tuple[str, int, Any]]:
    """(topic, timestamp, rclpy message) in recorded order."""
    with Reader(Path(path)) as reader:
        for connection, timestamp, raw in reader.messages():
            if connection.topic in RECORDED_TOPICS:
                cls = RECORDED_TOPICS[connection.topic][0]
                yield connection.topic, timestamp, deserialize_message(bytes(raw), cls)
