"""Bags survive their recorder (issue 24 item 6): after kill -9 everything received more than a second earlier can be
read (MCAP and sqlite3), and a disk that fills up ends the demo with an error instead of "success"."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from sayplan_interfaces.msg import ExecutionEvent
from sayplan_ros.bag import FLUSH_S, read_messages, recover_bag
from sayplan_ros.qos import EVENTS_QOS

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: kills and signals a recorder process, runs the demo

RECORDER = """
import sys, rclpy
from rclpy.parameter import Parameter
from sayplan_ros.bag import BagRecorder
rclpy.init()
node = BagRecorder(parameter_overrides=[Parameter("output", value=sys.argv[1]), Parameter("storage", value=sys.argv[2])])
print("recording", flush=True)
rclpy.spin(node)
"""


def limit_file_size(size: int) -> Any:
    """For a child process: files larger than `size` cannot be written (EFBIG), as on a full disk."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # kept across exec: a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def start_recorder(ros: Any, bag: Path, storage: str, preexec: Any = None) -> subprocess.Popen[str]:
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(bag), storage],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=preexec,
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline()]
    while lines[-1] and lines[-1].strip() != "recording" and len(lines) < 50:  # DDS may log first (no SHM under
        lines.append(proc.stdout.readline())  # the file-size limit: it falls back to UDP on loopback)
    assert lines[-1].strip() == "recording", "".join(lines)
    return proc


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_after_kill_9_everything_older_than_a_second_can_be_read(ros: Any, tmp_path: Path, storage: str) -> None:
    bag = tmp_path / "bag"
    recorder = start_recorder(ros, bag, storage)
    publisher = ros.node("executor").create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
    ros.wait_for(lambda: publisher.get_subscription_count() > 0, what="the recorder to subscribe")
    sent: list[float] = []
    try:
        for sequence in range(40):
            publisher.publish(ExecutionEvent(sequence=sequence, message="x" * 200))
            sent.append(time.monotonic())
            time.sleep(0.05)
        time.sleep(1.0 + FLUSH_S)
        killed = time.monotonic()
        recorder.send_signal(signal.SIGKILL)
        recorder.wait(timeout=10)
    finally:
        if recorder.poll() is None:
            recorder.kill()
        recorder.communicate(timeout=10)
    note = recover_bag(bag)
    assert ("recovered" in note) == (storage == "mcap"), note
    read = {m.sequence for topic, _, m in read_messages(bag) if topic == "/execution_events"}
    older = {i for i, at in enumerate(sent) if killed - at > 1.0}
    assert older and older <= read, f"lost {sorted(older - read)}"


def test_a_full_disk_stops_the_recording_and_the_recorder_says_so(ros: Any, tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    recorder = start_recorder(ros, bag, "mcap", limit_file_size(64 * 1024))
    publisher = ros.node("executor").create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
    ros.wait_for(lambda: publisher.get_subscription_count() > 0, what="the recorder to subscribe")
    for sequence in range(60):
        publisher.publish(ExecutionEvent(sequence=sequence, message="x" * 4000))
        time.sleep(0.02)
    time.sleep(1.0 + FLUSH_S)
    assert recorder.poll() is None, "the recorder died"
    recorder.send_signal(signal.SIGINT)
    out, _ = recorder.communicate(timeout=15)
    assert "recording to" in out and "stopped" in out and "File too large" in out, out


def test_the_demo_on_a_full_disk_fails_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        ["sayplan_demo", "--out", str(tmp_path), "--skill-delay", "0.01"],
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=limit_file_size(20 * 1024),
    )
    assert done.returncode != 0, done.stdout
    assert "File too large" in done.stderr, done.stderr + done.stdout
