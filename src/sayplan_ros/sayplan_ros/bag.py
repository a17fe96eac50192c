"""rosbag2 recording and reading through `rosbags` (rosbag2_py is not on PyPI).

The recorder subscribes with `raw=True`, so messages are written exactly as they
crossed DDS (CDR), with the project's message definitions registered so that any
rosbag2 reader can decode them. MCAP (the Jazzy default) or sqlite3 storage.
"""

from __future__ import annotations

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

from sayplan_interfaces.msg import ExecutionEvent, Plan, PlanReport, SceneGraph, SkillReport
from sayplan_ros.qos import EVENTS_QOS, LATCHED_STATE_QOS

#: topic -> (message class, latched?)
RECORDED_TOPICS: dict[str, tuple[type, bool]] = {
    "/scene_graph": (SceneGraph, True),
    "/active_plan": (Plan, True),
    "/plan_results": (PlanReport, False),
    "/execution_events": (ExecutionEvent, False),
    "/skill_results": (SkillReport, False),
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
    """Records the stack's topics to a rosbag2 folder until destroyed."""

    def __init__(self, node_name: str = "bag_recorder", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_parameter("output", "", ParameterDescriptor(description="bag folder to create (must not exist)"))
        self.declare_parameter("storage", "mcap", ParameterDescriptor(description="mcap or sqlite3"))
        output = str(self.get_parameter("output").value)
        storage = str(self.get_parameter("storage").value)
        if not output:
            raise ValueError("parameter 'output' must name the bag folder to write")
        if storage not in STORAGES:
            raise ValueError(f"parameter 'storage' must be mcap or sqlite3, got '{storage}'")
        if Path(output).exists():
            raise ValueError(f"bag folder {output} already exists; choose a new one")
        self.path = Path(output)
        self._lock = threading.Lock()
        self._writer: Writer | None = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        self._writer.open()
        typestore = project_typestore()
        self.counts: dict[str, int] = {}
        for topic, (cls, latched) in RECORDED_TOPICS.items():
            connection = self._writer.add_connection(topic, type_name(cls), typestore=typestore)
            self.counts[topic] = 0
            qos = LATCHED_STATE_QOS if latched else EVENTS_QOS
            self.create_subscription(cls, topic, self._writer_callback(topic, connection), qos, raw=True)

    def _writer_callback(self, topic: str, connection: Any) -> Any:
        def write(data: bytes) -> None:
            with self._lock:
                if self._writer is None:
                    return
                self._writer.write(connection, self.get_clock().now().nanoseconds, data)
                self.counts[topic] += 1

        return write

    def close(self) -> Path:
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
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
