"""Transcripts are never overwritten (issue 24 item 7): a restarted planner recording into the same folder numbers
its goals after what is there, and a transcript that does not fit on the disk leaves no truncated file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_interfaces.action import PlanTask
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def plan_once(ros: Any, records: Path, transcript: Path) -> None:
    params = [Parameter("replay_transcript", value=str(transcript)), Parameter("record_transcript", value=str(records))]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    ros.wait_for(lambda: planner.graph_version > 0, what="the graph")
    client = ActionClient(ros.node(f"operator_{len(ros._nodes)}"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(PlanTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(sent.done, what="acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=30.0, what="the plan")
    assert result.result().result.outcome.success
    ros.executor.remove_node(planner)
    ros._nodes.remove(planner)
    planner.destroy_node()  # the planner stops; a new one starts on the same folder


def test_a_restarted_planner_does_not_overwrite_the_transcripts_before_it(ros: Any, tmp_path: Path) -> None:
    ros.add(SceneGraphServer(context=ros.context))
    transcript = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    records = tmp_path / "records"
    plan_once(ros, records, transcript)
    first = (records / "plan_task_001.json").read_bytes()
    plan_once(ros, records, transcript)
    assert sorted(p.name for p in records.iterdir()) == ["plan_task_001.json", "plan_task_002.json"]
    assert (records / "plan_task_001.json").read_bytes() == first
    assert json.loads((records / "plan_task_002.json").read_text())["instruction"] == INSTRUCTION


def test_a_transcript_that_does_not_fit_leaves_no_truncated_file(tmp_path: Path) -> None:
    script = """
import resource, signal, sys
from sayplan_core.llm.replay import TRANSCRIPT_FORMAT, RecordingBackend, ReplayBackend
recorder = RecordingBackend(ReplayBackend({"format": TRANSCRIPT_FORMAT, "calls": []}))
recorder.start_task("x" * 100_000)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))
try:
    recorder.save_new(sys.argv[1], "plan_task", 1)
except OSError as exc:
    print("refused:", exc)
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert "refused:" in done.stdout and "File too large" in done.stdout, done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []
