"""Hostile bags for `sayplan_replay` (issue 39 items 3, 4, 5 and 9): every file of a run folder is untrusted. Bags are
written here with `rosbags`; bombs are 64 MiB of zeros read with a 1 MiB bound, and memory is measured with
tracemalloc (which sees the decompressors' buffers), so nothing depends on the machine's speed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.serialization import serialize_message
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode
from rosbags.typesys import Stores, get_typestore

from sayplan_core.envs import load_env
from sayplan_interfaces.msg import ExecutionEvent, SkillReport
from sayplan_ros.bag import (
    LATEST_BAG_VERSION,
    MAX_STORAGE_FILES,
    RECORDED_TOPICS,
    project_typestore,
    read_messages,
    storage_bound,
    type_name,
)
from sayplan_ros.conversions import graph_to_msg
from sayplan_ros.replay import RecordedRun, unread_note

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.ros

MIB = 1 << 20
BOMB_BYTES = 64 * MIB  # a 4 GiB bomb is the same file with more zeros: what matters is that it is not expanded
BOUND = MIB


def run_messages() -> list[tuple[str, bytes]]:
    """The least a replayable run holds: a start graph and a task that ended."""
    graph = graph_to_msg(load_env("home"), version=1)
    done = ExecutionEvent(sequence=0, instruction="make coffee", stage="done", status="succeeded")
    return [("/scene_graph", serialize_message(graph)), ("/execution_events", serialize_message(done))]


def write_bag(
    bag: Path,
    messages: list[tuple[str, bytes]],
    types: dict[str, str] | None = None,
    compress: Callable[[bytes], bytes] | None = None,
    chunk_zstd: bool = False,
) -> None:
    """A bag of `messages` (topic, CDR) in MCAP; `types` overrides a topic's type name; `compress` is applied to
    each message as written (MESSAGE compression; the metadata is set to say so); `chunk_zstd` compresses the
    MCAP chunks (as `ros2 bag record` does by default)."""
    store, std = project_typestore(), get_typestore(Stores.ROS2_JAZZY)
    writer = Writer(bag, version=LATEST_BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    if chunk_zstd:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        connections: dict[str, Any] = {}
        for topic, data in messages:
            if topic not in connections:
                kind = (types or {}).get(topic) or type_name(RECORDED_TOPICS[topic][0])
                connections[topic] = writer.add_connection(
                    topic, kind, typestore=store if kind.startswith("sayplan") else std
                )
            writer.write(connections[topic], 1000 + len(connections), compress(data) if compress else data)
    if compress:
        meta = bag / "metadata.yaml"
        text = meta.read_text().replace("compression_format: ''", "compression_format: zstd")
        meta.write_text(text.replace("compression_mode: ''", "compression_mode: MESSAGE"))


def zeros_zst(nbytes: int) -> bytes:
    """zstd of `nbytes` zeros, compressed 1 MiB at a time (the zeros are never held whole)."""
    compressor, block, parts = zstd.ZstdCompressor(level=3), bytes(MIB), []
    for _ in range(nbytes // MIB):
        parts.append(compressor.compress(block))
    parts.append(compressor.flush())
    return b"".join(parts)


def peak_of(read: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """What `read` raised, and the most memory Python allocated meanwhile."""
    tracemalloc.start()
    try:
        read()
        error = None
    except Exception as exc:
        error = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return error, peak


# ----------------------------------------------------------------------------- item 3: decompression bombs
def test_a_zstd_message_bomb_is_never_decompressed_past_the_bound(tmp_path: Path) -> None:
    """Found as a hostile user: a bag with every message zstd'd (compression_mode MESSAGE) and one message that was
    4 GiB of zeros in 131 KB took 8.5 GB: the byte bound was checked after rosbags had decompressed it."""
    bomb = zeros_zst(BOMB_BYTES)
    good = tmp_path / "good"
    write_bag(good, run_messages(), compress=zstd.compress)
    assert [t for t, _, _ in read_messages(good, max_bytes=BOUND)] == ["/scene_graph", "/execution_events"]
    bag = tmp_path / "bomb"
    write_bag(
        bag, [run_messages()[0], ("/active_plan", b"")], compress=lambda data: zstd.compress(data) if data else bomb
    )
    error, peak = peak_of(lambda: list(read_messages(bag, max_bytes=BOUND)))
    assert isinstance(error, ValueError) and f"more than {BOUND:,} bytes" in str(error), error
    assert peak < 8 * MIB, f"{peak:,} bytes allocated to refuse a {BOMB_BYTES:,}-byte message"


def test_a_zstd_file_bomb_is_decompressed_only_up_to_the_bound(tmp_path: Path) -> None:
    """Found as a hostile user: with compression_mode FILE a 131 KB bag.mcap.zstd wrote 4 GiB to /tmp before
    anything was checked. Now it is decompressed streaming, never past the bound, on disk or in memory."""
    good = tmp_path / "good"
    write_bag(good, run_messages())
    (good / "good.mcap.zstd").write_bytes(zstd.compress((good / "good.mcap").read_bytes()))
    (good / "good.mcap").unlink()
    meta = good / "metadata.yaml"
    text = (
        meta.read_text().replace("- good.mcap", "- good.mcap.zstd").replace("path: good.mcap", "path: good.mcap.zstd")
    )
    text = text.replace("compression_format: ''", "compression_format: zstd")
    meta.write_text(text.replace("compression_mode: ''", "compression_mode: FILE"))
    assert len(list(read_messages(good, max_bytes=BOUND))) == 2  # a compressed bag within the bound is read
    bag = tmp_path / "bomb"
    shutil.copytree(good, bag)
    (bag / "good.mcap.zstd").write_bytes(zeros_zst(BOMB_BYTES))
    error, peak = peak_of(lambda: list(read_messages(bag, max_bytes=BOUND)))
    assert isinstance(error, ValueError), error
    assert f"good.mcap.zstd decompresses to more than {storage_bound(BOUND):,} bytes" in str(error), error
    assert peak < 8 * MIB, peak


def test_an_mcap_chunk_bomb_is_refused_by_its_declared_size(tmp_path: Path) -> None:
    """rosbags decompresses an MCAP chunk whole: a chunk of zeros is refused by the size it declares."""
    bag = tmp_path / "bomb"
    write_bag(bag, [*run_messages(), ("/active_plan", bytes(BOMB_BYTES))], chunk_zstd=True)
    assert (bag / "bomb.mcap").stat().st_size < MIB  # the zeros compressed
    error, peak = peak_of(lambda: list(read_messages(bag, max_bytes=BOUND)))
    assert isinstance(error, ValueError) and "uncompressed; at most" in str(error), error
    assert peak < 8 * MIB, peak
    assert len(list(read_messages(bag, max_bytes=2 * BOMB_BYTES))) == 3  # compressed chunks are read


def test_a_storage_file_listed_twice_or_too_many_files_are_refused(tmp_path: Path) -> None:
    """Found by a second hostile review: an 89 KB zstd storage file listed 2,000 times was decompressed 2,000
    times into temporary folders kept to the end (the bound was per file, so the disk was not bounded), and every
    copy's messages were read again. A name listed twice is refused, and so are more than MAX_STORAGE_FILES."""
    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    meta = bag / "metadata.yaml"
    text = meta.read_text()
    (line,) = [x for x in text.splitlines() if x.strip() == "- bag.mcap"]  # relative_file_paths' one entry
    indent = line[: line.index("-")]
    meta.write_text(text.replace(line, f"{line}\n{line}", 1))
    with pytest.raises(ValueError, match=r"lists the storage file 'bag.mcap' more than once"):
        list(read_messages(bag))
    many = "\n".join(f"{indent}- part{i}.mcap" for i in range(MAX_STORAGE_FILES + 1))
    meta.write_text(text.replace(line, many, 1))
    with pytest.raises(ValueError, match=rf"lists {MAX_STORAGE_FILES + 1:,} storage files; at most"):
        list(read_messages(bag))


# ----------------------------------------------------------------------------- item 4: YAML aliases
def test_an_alias_in_the_bag_metadata_is_refused(tmp_path: Path) -> None:
    """Found as a hostile user: a 277 KB metadata.yaml whose aliases rosbags expanded took 43 s and 1.37 GB."""
    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    meta = bag / "metadata.yaml"
    meta.write_text("x_profile: &p {depth: 1}\nx_list: [*p, *p]\n" + meta.read_text())
    with pytest.raises(ValueError, match=r"metadata.yaml is not valid YAML: YAML alias \*p at line 2"):
        list(read_messages(bag))


# ----------------------------------------------------------------------------- item 5: files of the bag folder
def test_a_fifo_storage_file_is_refused_at_once(tmp_path: Path) -> None:
    """Found as a hostile user: `mkfifo bag/bag.mcap` hung sayplan_replay forever (--timeout was not checked while
    opening). Run in a child process with a deadline, so the old behaviour fails instead of hanging the suite."""
    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    (bag / "bag.mcap").unlink()
    os.mkfifo(bag / "bag.mcap")
    code = "import sys; from sayplan_ros.bag import read_messages\ntry:\n    list(read_messages(sys.argv[1]))\n"
    code += "except Exception as exc:\n    print(exc)\n"
    done = subprocess.run([sys.executable, "-c", code, str(bag)], capture_output=True, text=True, timeout=60)
    assert f"cannot read bag storage file {bag / 'bag.mcap'}: not a regular file" in done.stdout, done


def test_the_players_read_a_bag_as_the_replay_does(tmp_path: Path, ros: Any) -> None:
    """Found by a second hostile review: bag_player (and the perception stream player) read bags through rosbags'
    folder reader, with none of the checks above. They now read through read_messages: a storage file linked to
    /dev/zero is refused naming it, and a good bag still plays every message of its topics."""
    from sayplan_ros.bag_player import RosbagPlayer

    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    player = ros.add(RosbagPlayer(bag, context=ros.context))
    assert player.play(rate=0) == len(run_messages())
    (bag / "bag.mcap").unlink()
    (bag / "bag.mcap").symlink_to("/dev/zero")
    with pytest.raises(OSError, match=r"bag.mcap: it leads outside"):  # files.FileReadError, as the replay's
        player.play(rate=0)


@pytest.mark.parametrize(
    "case",
    ["storage -> /dev/zero", "storage -> /etc/passwd", "metadata names /etc/passwd", "metadata -> outside"],
)
def test_a_bag_file_leading_outside_the_folder_is_refused(tmp_path: Path, case: str) -> None:
    """Found as a hostile user: `bag.mcap -> /dev/zero` was opened; every file read must be a regular file of the
    bag folder, refused with one line naming it."""
    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    meta = bag / "metadata.yaml"
    if case.startswith("storage"):
        (bag / "bag.mcap").unlink()
        (bag / "bag.mcap").symlink_to(case.split(" -> ")[1])
        expected = f"cannot read bag storage file {bag / 'bag.mcap'}: it leads outside {bag}"
    elif case == "metadata names /etc/passwd":
        meta.write_text(meta.read_text().replace("- bag.mcap", "- /etc/passwd"))
        expected = "names storage file '/etc/passwd': only a file of the bag folder is read"
    else:
        outside = tmp_path / "elsewhere.yaml"
        meta.rename(outside)
        meta.symlink_to(outside)
        expected = f"cannot read bag metadata {meta}: it leads outside {bag}"
    with pytest.raises(Exception) as caught:
        list(read_messages(bag))
    assert expected in str(caught.value), caught.value


def replayable_run(folder: Path, messages: list[tuple[str, bytes]] | None = None, **kwargs: Any) -> Path:
    write_bag(folder / "bag", messages or run_messages(), **kwargs)
    (folder / "llm").mkdir()
    (folder / "llm" / "plan_task_001.json").write_text('{"instruction": "make coffee", "calls": []}')
    return folder


def test_a_transcript_leading_outside_the_run_folder_is_refused_naming_it(tmp_path: Path) -> None:
    """Found as a hostile user: `llm/plan_task_001.json -> /etc/passwd` was read (the error, "Expecting value...",
    named no file)."""
    run = replayable_run(tmp_path / "run")
    RecordedRun(run)  # readable as it is
    (run / "llm" / "plan_task_001.json").unlink()
    (run / "llm" / "plan_task_001.json").symlink_to("/etc/passwd")
    with pytest.raises(OSError, match=f"cannot read transcript {run}/llm/plan_task_001.json: it leads outside"):
        RecordedRun(run)
    (run / "llm" / "plan_task_001.json").unlink()
    (run / "llm" / "plan_task_001.json").write_text("not json")
    with pytest.raises(ValueError, match=f"transcript {run}/llm/plan_task_001.json is not JSON"):
        RecordedRun(run)


# ----------------------------------------------------------------------------- item 9: clear errors, nothing dropped
def test_a_truncated_mcap_is_said_to_be_truncated_with_how_to_recover(tmp_path: Path) -> None:
    """Found as a new user: a cut MCAP file gave "File end magic is invalid." and nothing more."""
    bag = tmp_path / "bag"
    write_bag(bag, run_messages())
    mcap = bag / "bag.mcap"
    os.truncate(mcap, mcap.stat().st_size * 6 // 10)
    with pytest.raises(ValueError, match="is truncated or incomplete") as caught:
        list(read_messages(bag))
    assert str(mcap) in str(caught.value) and "ros2 bag reindex" in str(caught.value)


def test_a_topic_of_another_type_names_the_topic_and_both_types(tmp_path: Path) -> None:
    """Found as a hostile user: a bag whose topics were recorded as std_msgs/msg/String failed with a raw Fast CDR
    exception naming neither the topic nor the recorded type."""
    bag = tmp_path / "bag"
    write_bag(
        bag, [("/scene_graph", b"\x00\x01\x00\x00\x02\x00\x00\x00x\x00")], types={"/scene_graph": "std_msgs/msg/String"}
    )
    with pytest.raises(ValueError) as caught:
        list(read_messages(bag))
    assert (
        "topic /scene_graph was recorded as std_msgs/msg/String; it is read as sayplan_interfaces/msg/SceneGraph"
        in (str(caught.value))
    )
    swapped = tmp_path / "swapped"  # the right type's name, another message's bytes
    write_bag(swapped, [("/scene_graph", run_messages()[1][1][:12])])
    with pytest.raises(
        ValueError, match="message #1 on /scene_graph does not decode as sayplan_interfaces/msg/SceneGraph"
    ):
        list(read_messages(swapped))


def test_topics_the_replay_does_not_read_are_named(tmp_path: Path) -> None:
    """Found as a new user: skill results recorded on /ns/skill_results were dropped without a word and the replay
    then blamed the stack (exit 1, differs). Now the run says which topics it did not read and why."""
    report = serialize_message(SkillReport())
    run = replayable_run(
        tmp_path / "run",
        [*run_messages(), ("/ns/skill_results", report), ("/ns/skill_results", report)],
        types={"/ns/skill_results": type_name(SkillReport)},
    )
    recorded = RecordedRun(run)
    assert recorded.unread == {"/ns/skill_results": ("sayplan_interfaces/msg/SkillReport", 2)}
    note = unread_note(recorded.unread)
    assert "not read from the bag: /ns/skill_results (2 sayplan_interfaces/msg/SkillReport)" in note
    assert "a run recorded in a namespace is not replayed" in note
    assert unread_note({}) == ""
