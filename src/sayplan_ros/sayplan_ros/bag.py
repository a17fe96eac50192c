"""rosbag2 recording and reading through `rosbags` (rosbag2_py is not on PyPI).

The recorder subscribes with `raw=True`, so messages are written exactly as they
crossed DDS (CDR), with the project's message definitions registered so that any
rosbag2 reader can decode them. MCAP (the Jazzy default) or sqlite3 storage.

Crash safety: rosbags keeps an MCAP chunk in memory and commits sqlite3 only at close, so a recorder killed with
kill -9 left a 0-byte MCAP file or an empty database. The writer thread therefore flushes every FLUSH_S: the pending
MCAP chunk is written and fsynced (sqlite3: committed), then `metadata.yaml` is rewritten with the counts so far. A
bag whose recorder died is made readable by `recover_bag` (an MCAP file gets the end records a clean close writes;
sqlite3 needs nothing). A write that fails (a full disk) stops the recording and is kept as `error`, which the demo
reports with a non-zero exit.

Offered QoS: every topic's `offered_qos_profiles` holds the profile its publishers offer (from sayplan_ros.qos, the
one place the stack's publishers take it from), in the form rosbag2 itself writes for the bag's format version
(rosbag2_storage/qos.cpp and yaml.hpp): version 9 (Jazzy, Kilted) a YAML list of dicts with the rmw policy names
("keep_last", "transient_local", ...); version 8 (Humble, where the field is a string) that list dumped to a YAML
string with the rmw enum values. Unset durations and liveliness are written as DDS reports them to rosbag2's recorder
(infinite, automatic); history and depth are the publisher's own (DDS reports "unknown", 0; players ignore them).
`ros2 bag play` then offers the recorded durability, so a late joiner still gets the latched scene graph.

Reading (`read_messages`, for sayplan_replay) takes every file of a bag as untrusted: rosbags' folder reader is not
used (it parses metadata.yaml with aliases, opens any path it names, and decompresses whole files, messages and
MCAP chunks before anything can be checked); the metadata and each storage file are checked first, and nothing is
decompressed past the byte bound (docs/howto/replay.md lists the bounds).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import queue
import stat
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from ament_index_python.packages import get_package_share_directory
from lz4.frame import LZ4FrameDecompressor  # type: ignore[import-untyped]
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import ReaderError, StoragePlugin, Writer
from rosbags.rosbag2 import storage_mcap as _mcap
from rosbags.rosbag2.metadata import parse_qos
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from sayplan_core import files
from sayplan_core.node_options import BagRecorderOptions
from sayplan_interfaces.msg import ExecutionEvent, GraphUpdate, Plan, PlanReport, SceneGraph, SkillReport
from sayplan_ros.parameters import declare_options
from sayplan_ros.qos import EVENTS_QOS, GRAPH_UPDATES_QOS, LATCHED_STATE_QOS

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

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
#: Longest time a received message stays only in memory, seconds (what kill -9 can lose).
FLUSH_S = 0.5
_TICK = ("", 0, b"")  # a queue timeout: time to look whether a flush is due
MCAP_MAGIC = b"\x89MCAP0\r\n"


#: rosbag2's metadata format per ROS distribution. Jazzy and Kilted write 9; Humble writes 5 and cannot read 9 (it
#: reads `offered_qos_profiles` as a string), so its bags get 8, the oldest `rosbags` writes, which Humble's reader
#: parses with the same code as its own 5 (rosbag2_storage/metadata_io.cpp on the humble branch).
BAG_VERSIONS = {"humble": 8}
LATEST_BAG_VERSION = 9
#: rmw's RMW_DURATION_INFINITE as rosbag2 writes it ({sec, nsec}): what DDS reports for a duration left unset.
INFINITE_DURATION = {"sec": 9223372036, "nsec": 854775807}
#: The names rmw gives each policy value (rmw/src/qos_string_conversions.c), "unknown" added by rosbag2.
_POLICY_NAMES: dict[type, dict[int, str]] = {
    HistoryPolicy: {0: "system_default", 1: "keep_last", 2: "keep_all", 3: "unknown"},
    ReliabilityPolicy: {0: "system_default", 1: "reliable", 2: "best_effort", 3: "unknown", 4: "best_available"},
    DurabilityPolicy: {0: "system_default", 1: "transient_local", 2: "volatile", 3: "unknown", 4: "best_available"},
    LivelinessPolicy: {0: "system_default", 1: "automatic", 3: "manual_by_topic", 4: "unknown", 5: "best_available"},
}


def bag_version(distro: str | None = None) -> int:
    """The metadata version rosbag2 of `distro` (default: $ROS_DISTRO) writes and reads."""
    name = (distro if distro is not None else os.environ.get("ROS_DISTRO", "")).strip().lower()
    return BAG_VERSIONS.get(name, LATEST_BAG_VERSION)


def _duration(value: Duration) -> dict[str, int]:
    nanoseconds = value.nanoseconds
    if nanoseconds <= 0 or nanoseconds >= 9223372036854775807:  # unset (DDS default) or infinite
        return dict(INFINITE_DURATION)
    return {"sec": nanoseconds // 1_000_000_000, "nsec": nanoseconds % 1_000_000_000}


def qos_to_rosbag2(profile: QoSProfile, version: int = LATEST_BAG_VERSION) -> dict[str, Any]:
    """One entry of `offered_qos_profiles`, as rosbag2's `convert<rclcpp::QoS>::encode` writes it for `version`."""

    def policy(value: Any, kind: type) -> Any:
        return _POLICY_NAMES[kind][int(value)] if version >= 9 else int(value)

    liveliness = profile.liveliness
    if liveliness == LivelinessPolicy.SYSTEM_DEFAULT:  # what every DDS offers for it, and what rosbag2 records
        liveliness = LivelinessPolicy.AUTOMATIC
    return {
        "history": policy(profile.history, HistoryPolicy),
        "depth": int(profile.depth),
        "reliability": policy(profile.reliability, ReliabilityPolicy),
        "durability": policy(profile.durability, DurabilityPolicy),
        "deadline": _duration(profile.deadline),
        "lifespan": _duration(profile.lifespan),
        "liveliness": policy(liveliness, LivelinessPolicy),
        "liveliness_lease_duration": _duration(profile.liveliness_lease_duration),
        "avoid_ros_namespace_conventions": bool(profile.avoid_ros_namespace_conventions),
    }


def offered_qos_field(profiles: list[QoSProfile], version: int) -> Any:
    """The `offered_qos_profiles` value of metadata.yaml: a list (version 9) or that list as a YAML string."""
    entries = [qos_to_rosbag2(p, version) for p in profiles]
    if version >= 9:
        return entries
    return yaml.safe_dump(entries, default_flow_style=False, sort_keys=False) if entries else ""


def offered_qos(profile: QoSProfile, version: int) -> list[Any]:
    """`offered_qos_profiles` for `Writer.add_connection` (rosbags' form, read from the same dicts)."""
    return list(parse_qos(offered_qos_field([profile], version)))


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
        options = declare_options(self, BagRecorderOptions)  # a bad storage is refused naming the choices
        output, storage = options.output, options.storage
        if not output:
            raise ValueError("parameter 'output' must name the bag folder to write")
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
            version = bag_version()
            writer = Writer(self.path, version=version, storage_plugin=plugin)  # type: ignore[arg-type]
            writer.open()
            typestore = project_typestore()
            connections = {
                topic: writer.add_connection(
                    topic, type_name(cls), typestore=typestore, offered_qos_profiles=offered_qos(qos, version)
                )
                for topic, (cls, qos) in RECORDED_TOPICS.items()
            }
            self._flush(writer)
        except Exception as exc:  # reported by the constructor
            self._error = exc
            self._opened.set()
            return
        self._opened.set()
        flushed, dirty = time.monotonic(), False
        try:
            while True:
                try:
                    item = self._queue.get(timeout=FLUSH_S)
                except queue.Empty:
                    item = _TICK
                if item is None:
                    break
                if self._error is not None:
                    continue  # recording stopped at the failure; later messages are dropped, not queued up
                try:
                    if item is not _TICK:
                        topic, stamp, data = item
                        writer.write(connections[topic], stamp, data)
                        self.counts[topic] += 1
                        dirty = True
                    if dirty and time.monotonic() - flushed >= FLUSH_S:
                        self._flush(writer)
                        flushed, dirty = time.monotonic(), False
                except Exception as exc:  # a full disk, most likely: stop recording and say so
                    self._fail(exc)
        finally:
            try:
                writer.close()
            except Exception as exc:
                self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc
            self.get_logger().error(f"recording to {self.path} stopped: {exc}")

    def _flush(self, writer: Writer) -> None:
        """Put everything received so far on disk, then a metadata.yaml that describes it."""
        storage: Any = writer.storage
        if plugin_is_mcap(writer):
            if storage.chunk.bio.tell():
                storage.close_chunk()
            storage.bio.flush()
            os.fsync(storage.bio.fileno())
        else:
            storage.conn.commit()
        write_metadata(writer)

    @property
    def error(self) -> BaseException | None:
        """Why the recording stopped early (the bag holds what was flushed before), or None."""
        return self._error

    def close(self) -> Path:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        return self.path

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def plugin_is_mcap(writer: Writer) -> bool:
    return bool(writer.storage_plugin == StoragePlugin.MCAP)


def write_metadata(writer: Writer) -> None:
    """metadata.yaml for what has been flushed (rosbag2 format 9), replaced atomically: a reader can open the bag
    even if the recorder never gets to close it. A clean close writes the final one."""
    storage: Any = writer.storage
    start = writer.min_timestamp if writer.counts and any(writer.counts.values()) else 0
    duration = max(0, writer.max_timestamp - writer.min_timestamp) if start else 0
    count = sum(writer.counts.values())
    name = Path(storage.path).name
    info = {
        "version": writer.version,
        "storage_identifier": "mcap" if plugin_is_mcap(writer) else "sqlite3",
        "relative_file_paths": [name],
        "duration": {"nanoseconds": duration},
        "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": count,
        "topics_with_message_count": [
            {
                "topic_metadata": {
                    "name": c.topic,
                    "type": c.msgtype,
                    "serialization_format": "cdr",
                    "offered_qos_profiles": offered_qos_field(
                        [RECORDED_TOPICS[c.topic][1]] if c.topic in RECORDED_TOPICS else [], writer.version
                    ),
                    "type_description_hash": c.digest,
                },
                "message_count": writer.counts[c.id],
            }
            for c in writer.connections
        ],
        "compression_format": "",
        "compression_mode": "",
        "files": [
            {
                "path": name,
                "starting_time": {"nanoseconds_since_epoch": start},
                "duration": {"nanoseconds": duration},
                "message_count": count,
            }
        ],
        "custom_data": None,
        "ros_distro": "rosbags",
    }
    path = writer.path / "metadata.yaml"
    tmp = path.with_suffix(".yaml.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        yaml.safe_dump({"rosbag2_bagfile_information": info}, fh, default_flow_style=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def recover_bag(path: str | Path) -> str:
    """Make the bag of a recorder that died readable; says what it did. An MCAP file cut off by the crash is
    truncated after its last whole record and given the data-end and footer records a clean close writes (no
    summary: readers then scan it); a closed bag or a sqlite3 bag (committed rows are readable) is left as it is."""
    path = Path(path)
    mcaps = sorted(path.glob("*.mcap"))
    if not mcaps:
        return f"{path}: nothing to recover (no MCAP file)"
    mcap = mcaps[0]
    data = mcap.read_bytes()
    if data.endswith(MCAP_MAGIC) and len(data) > 2 * len(MCAP_MAGIC):
        return f"{mcap}: closed cleanly, nothing to recover"
    if not data.startswith(MCAP_MAGIC):
        raise ValueError(f"{mcap} is not an MCAP file (no magic)")
    end = len(MCAP_MAGIC)
    while end + 9 <= len(data):  # records: opcode (1 byte), length (uint64), body
        (length,) = struct.unpack_from("<Q", data, end + 1)
        if end + 9 + length > len(data):
            break
        end += 9 + length
    with mcap.open("r+b") as fh:
        fh.truncate(end)
        fh.seek(end)
        fh.write(b"\x0f" + struct.pack("<Q", 4) + struct.pack("<I", 0))  # DataEnd, no CRC
        fh.write(b"\x02" + struct.pack("<Q", 20) + struct.pack("<QQI", 0, 0, 0))  # Footer: no summary
        fh.write(MCAP_MAGIC)
        fh.flush()
        os.fsync(fh.fileno())
    return f"{mcap}: recovered {end} of {len(data)} bytes"


#: The largest metadata.yaml read (a run's is a few kB).
MAX_METADATA_BYTES = 1 << 20
#: storage files a bag's metadata may list (rosbag2 splits a recording into files of a size or duration)
MAX_STORAGE_FILES = 1024
#: The most message bytes read from one bag, decompressed (sayplan_replay keeps a run's messages in memory); its
#: storage files are bounded by storage_bound of it.
MAX_READ_BYTES = 1 << 30
#: What a storage file holds besides its messages, beyond their own size again (schemas, channels, indexes).
STORAGE_SLACK = 1 << 20


def storage_bound(max_bytes: int) -> int:
    """The largest storage file (or decompressed storage file, or sum of MCAP chunks) read for `max_bytes` of
    messages: 2 GiB + 1 MiB for the default bound."""
    return 2 * max_bytes + STORAGE_SLACK


#: How a bag's compression is undone where it cannot be read bounded.
DECOMPRESS_HINT = "`ros2 bag convert -i BAG -o OUT.yaml` (OUT.yaml without compression), or `zstd -d` a storage file"
#: The decompression bound of one MCAP chunk while a bag is read (rosbags decompresses a chunk whole).
_CHUNK_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar(
    "chunk_limit", default=2 * MAX_READ_BYTES + STORAGE_SLACK
)


def _bounded(decompressor: Any, data: bytes, size: int, what: str) -> bytes:
    """At most `size` bytes out of `data`; ReaderError if `data` holds more than that."""
    out: bytes = decompressor.decompress(data, max_length=size)
    if len(out) == size and not decompressor.eof and decompressor.decompress(b"", max_length=1):
        raise ReaderError(f"{what} holds more than the {size:,} bytes it declares")
    return out


def _chunk_decompressor(factory: Any) -> Any:
    def decompress(data: bytes, size: int) -> bytes:
        limit = _CHUNK_LIMIT.get()
        if size > limit:
            raise ReaderError(f"an MCAP chunk declares {size:,} bytes uncompressed; at most {limit:,} are read")
        return _bounded(factory(), data, size, "an MCAP chunk")

    return decompress


# rosbags decompresses an MCAP chunk whole, trusting nothing (a 131 KB chunk of zeros made 4 GiB): its chunk
# decompressors are replaced by ones that check the declared size against the bound, and never make more than that
_mcap.DECOMPRESSORS["zstd"] = _chunk_decompressor(zstd.ZstdDecompressor)
_mcap.DECOMPRESSORS["lz4"] = _chunk_decompressor(LZ4FrameDecompressor)


class _Storage:
    """One storage file of a bag, checked: a regular file of the bag folder, not a link leading elsewhere."""

    def __init__(self, bag: Path, name: Any, max_bytes: int) -> None:
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
            raise ValueError(
                f"{bag}/metadata.yaml names storage file {str(name)[:200]!r}: only a file of the bag folder is read"
            )
        self.path = bag / name
        files.inside(self.path, bag, "bag storage file")
        fd = files.open_regular(self.path, "bag storage file")  # a FIFO or a device: refused, never waited on
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        self.identity = (info.st_dev, info.st_ino)
        if info.st_size > storage_bound(max_bytes):
            raise ValueError(
                f"{self.path} has {info.st_size:,} bytes; a bag's storage file is read up to "
                f"{storage_bound(max_bytes):,}"
            )


def _decompress_file(source: Path, folder: Path, limit: int, deadline: float | None) -> Path:
    """`source` (a zstd file) decompressed into `folder`, streaming, never past `limit` bytes (disk and memory)."""
    target = folder / source.stem
    written = 0
    fd = files.open_regular(source, "bag storage file")
    with os.fdopen(fd, "rb") as raw, zstd.open(raw, "rb") as infile, target.open("wb") as out:
        try:
            while chunk := infile.read(min(1 << 20, limit + 1 - written)):
                written += len(chunk)
                if written > limit:
                    raise ValueError(f"{source} decompresses to more than {limit:,} bytes; at most that is read")
                out.write(chunk)
                if deadline is not None and time.monotonic() > deadline:
                    raise ValueError(f"decompressing {source} took longer than the time given")
        except zstd.ZstdError as exc:
            raise ValueError(f"{source} is not a whole zstd file: {exc}") from None
    return target


def _metadata(bag: Path) -> dict[str, Any]:
    meta = bag / "metadata.yaml"
    try:
        info = meta.lstat()
    except OSError as exc:
        raise ValueError(f"{meta}: cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISREG(info.st_mode) and info.st_size > MAX_METADATA_BYTES:
        raise ValueError(f"{meta} has {info.st_size:,} bytes; a bag's metadata is read up to {MAX_METADATA_BYTES:,}")
    files.inside(meta, bag, "bag metadata")
    text = files.read_text(meta, MAX_METADATA_BYTES, "bag metadata")  # regular files only, bounded
    try:
        data = files.load_yaml(text)  # aliases refused: an alias bomb is 277 KB that rosbags expanded to 1.37 GB
    except yaml.YAMLError as exc:
        raise ValueError(f"{meta} is not valid YAML: {str(exc).splitlines()[0][:300]}") from None
    info_ = data.get("rosbag2_bagfile_information") if isinstance(data, dict) else None
    if not isinstance(info_, dict):
        raise ValueError(f"{meta} has no rosbag2_bagfile_information: not a rosbag2 bag")
    return info_


def _open_storage(storage: _Storage, path: Path, kind: str, stack: contextlib.ExitStack) -> Any:
    """The rosbags reader of one storage file (`path`: the file itself, or its decompressed copy)."""
    reader: Any = McapReader(path) if kind == "mcap" else Sqlite3Reader(path)
    try:
        reader.open()
    except ReaderError as exc:
        if kind == "mcap" and "end magic" in str(exc):
            raise ValueError(
                f"{storage.path} is truncated or incomplete (no MCAP end record: its recorder stopped before closing "
                f"it); recover it with `ros2 bag reindex {storage.path.parent}` or `mcap recover {storage.path} -o "
                "FIXED.mcap`"
            ) from None
        raise ValueError(f"{storage.path} is not a readable {kind} file: {exc}") from None
    stack.callback(reader.close)
    if kind == "mcap" and path == storage.path:
        info = os.fstat(reader.bio.fileno())
        if (info.st_dev, info.st_ino) != storage.identity:
            raise ValueError(f"{storage.path} changed while it was opened")
    return reader


def read_messages(
    path: str | Path,
    deadline: float | None = None,
    max_bytes: int = MAX_READ_BYTES,
    unread: dict[str, tuple[str, int]] | None = None,
    raw_topics: Iterable[str] = (),
) -> Iterator[tuple[str, int, Any]]:
    """(topic, timestamp, rclpy message) of the stack's topics (RECORDED_TOPICS), in recorded order per storage file;
    for `raw_topics` (a player's, any type) the serialized bytes instead of a message, read with the same bounds.

    Every file read is bounded and checked before it is opened: metadata.yaml (a regular file of at most
    MAX_METADATA_BYTES, no YAML aliases) and each storage file it names (a regular file of the bag folder, not a
    FIFO, device or link leading outside it). ValueError, naming the file, for any of these; while reading, once
    more than `max_bytes` of messages were read or would be decompressed (zstd per message or per file, MCAP chunks:
    the declared sizes are checked first and decompression stops at the bound), the monotonic `deadline` passed, a
    topic of the stack's was recorded with another type, or a message does not decode. Topics the stack does not
    publish are not decoded: `unread` gets topic -> (recorded type, messages), so the caller can say so.
    """
    bag = Path(path)
    as_bytes = frozenset(raw_topics)
    info = _metadata(bag)
    kind = info.get("storage_identifier")
    if kind not in STORAGES:
        raise ValueError(f"{bag}/metadata.yaml: storage {str(kind)[:80]!r} is not one of {', '.join(STORAGES)}")
    mode = str(info.get("compression_mode") or "").lower()
    mode = "" if mode == "none" else mode
    if mode and (mode not in ("file", "message") or info.get("compression_format") != "zstd"):
        raise ValueError(
            f"{bag}: compression {info.get('compression_format')!r} by {mode!r} cannot be read; decompress it with "
            f"{DECOMPRESS_HINT}"
        )
    names = info.get("relative_file_paths")
    if not isinstance(names, list) or not names:
        raise ValueError(f"{bag}/metadata.yaml lists no storage file (relative_file_paths)")
    if len(names) > MAX_STORAGE_FILES:
        raise ValueError(
            f"{bag}/metadata.yaml lists {len(names):,} storage files; at most {MAX_STORAGE_FILES:,} are read"
        )
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:  # each copy would be read (and decompressed) again
        raise ValueError(f"{bag}/metadata.yaml lists the storage file {str(twice)[:200]!r} more than once")
    storages = [_Storage(bag, name, max_bytes) for name in names]
    disk_left = storage_bound(max_bytes)  # what FILE decompression may write in all, over every storage file
    token = _CHUNK_LIMIT.set(storage_bound(max_bytes))
    read = 0
    try:
        with contextlib.ExitStack() as stack:
            for storage in storages:
                path_ = storage.path
                if mode == "file":
                    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sayplan_bag_")))
                    path_ = _decompress_file(storage.path, folder, disk_left, deadline)
                    disk_left -= path_.stat().st_size
                reader = _open_storage(storage, path_, str(kind), stack)
                if kind == "mcap":
                    size = path_.stat().st_size
                    if any(c.compressed_size > size or c.compressed_size < 0 for c in reader.chunks):
                        raise ValueError(f"{storage.path}: its chunk index names chunks larger than the file")
                    declared = sum(c.uncompressed_size for c in reader.chunks)
                    if declared > storage_bound(max_bytes):
                        raise ValueError(
                            f"{storage.path}'s chunks declare {declared:,} bytes uncompressed; at most "
                            f"{storage_bound(max_bytes):,} are read"
                        )
                for connection in reader.connections:
                    if connection.topic in RECORDED_TOPICS:
                        expected = type_name(RECORDED_TOPICS[connection.topic][0])
                        if connection.msgtype != expected:
                            raise ValueError(
                                f"{storage.path}: topic {connection.topic} was recorded as {connection.msgtype}; "
                                f"it is read as {expected}"
                            )
                counts: dict[int, int] = {}
                for connection, timestamp, raw in reader.messages(reader.connections):
                    data = raw
                    if mode == "message":  # never more out than the bound leaves, plus one byte to tell
                        try:
                            decompressor = zstd.ZstdDecompressor()
                            data = decompressor.decompress(raw, max_length=max_bytes - read + 1)
                            if not decompressor.eof and len(data) <= max_bytes - read:
                                raise zstd.ZstdError("not a whole zstd frame")
                        except zstd.ZstdError as exc:
                            raise ValueError(f"{storage.path}: a message on {connection.topic}: {exc}") from None
                    read += len(data)
                    if read > max_bytes:
                        raise ValueError(f"{bag} holds more than {max_bytes:,} bytes of messages; at most that is read")
                    if deadline is not None and time.monotonic() > deadline:
                        raise ValueError(f"reading {bag} took longer than the time given ({read:,} bytes read)")
                    counts[connection.id] = counts.get(connection.id, 0) + 1
                    if connection.topic in as_bytes:
                        yield connection.topic, timestamp, bytes(data)
                        continue
                    if connection.topic not in RECORDED_TOPICS:
                        if unread is not None:
                            _, seen = unread.get(connection.topic, (connection.msgtype, 0))
                            unread[connection.topic] = (connection.msgtype, seen + 1)
                        continue
                    cls = RECORDED_TOPICS[connection.topic][0]
                    try:
                        message = deserialize_message(bytes(data), cls)
                    except Exception as exc:
                        raise ValueError(
                            f"{storage.path}: message #{counts[connection.id]} on {connection.topic} does not decode "
                            f"as {connection.msgtype}: {' '.join(str(exc).split())[:200] or type(exc).__name__}"
                        ) from None
                    yield connection.topic, timestamp, message
    except ReaderError as exc:
        raise ValueError(f"{bag} cannot be read: {exc}") from None
    finally:
        with contextlib.suppress(ValueError):
            _CHUNK_LIMIT.reset(token)
