"""`sayplan_replay` as a CI job runs it: a recorded demo run replays through the current stack with exit 0; the same
run in another world or with an edited LLM transcript exits 1 and names the first difference; a folder that is no
run exits 2."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from ros_domains import claim_domain, release_domain
from test_bag import demo_run, run_in_own_domain  # noqa: F401  (demo_run: the recorded run, a module fixture)

from sayplan_core.execution.run_diff import RunSummary, diff_runs, injected_failures, merge_transcripts
from sayplan_ros.bag import read_messages

pytestmark = pytest.mark.ros


def replay(run: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_in_own_domain(["sayplan_replay", str(run), "--out", str(out), *extra], timeout=300)


def test_a_recorded_run_replays_the_same(demo_run: Path, tmp_path: Path) -> None:  # noqa: F811
    done = replay(demo_run, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "same: plans, skill outcomes, events and the final scene graph match the recording" in done.stdout
    assert "plans: recorded 2, now 2" in done.stdout and "outcomes: recorded 24, now 24" in done.stdout
    (replayed,) = tmp_path.iterdir()
    assert len(list((replayed / "llm").glob("plan_task_*.json"))) == 2  # the replay is a run folder itself


def test_a_run_in_another_world_differs_at_the_grasp(demo_run: Path, tmp_path: Path) -> None:  # noqa: F811
    """No injected grasp failure this time: the first difference is the pickup that failed in the recording."""
    done = replay(demo_run, tmp_path, "--failure", "")
    assert done.returncode == 1, done.stdout + done.stderr
    first = next(line for line in done.stdout.splitlines() if "first difference" in line)
    assert "events #" in first
    assert "pickup(coffee_mug) failed (grasp_failed)" in first and "pickup(coffee_mug) succeeded" in first
    assert "plans: recorded 2, now 1" in done.stdout  # no replan was needed


def test_an_edited_transcript_differs(demo_run: Path, tmp_path: Path) -> None:  # noqa: F811
    """The LLM now explores another room first: the run no longer makes the recorded plan."""
    run = tmp_path / "run"
    shutil.copytree(demo_run, run)
    path = run / "llm" / "plan_task_001.json"
    transcript = json.loads(path.read_text())
    first = transcript["calls"][0]["response"]
    assert '"node_name": "kitchen"' in first["text"]
    first["text"] = first["text"].replace('"node_name": "kitchen"', '"node_name": "nikos_office"')
    path.write_text(json.dumps(transcript))
    done = replay(run, tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIFFERS" in done.stdout and "first difference: " in done.stdout


def test_a_folder_that_is_not_a_run_cannot_be_replayed(tmp_path: Path) -> None:
    done = replay(tmp_path, tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no bag/metadata.yaml" in done.stderr


def test_the_diff_names_each_sections_first_difference() -> None:
    graph = {"nodes": [{"id": "mug", "type": "asset", "state": "on"}], "edges": [{"source": "mug", "relation": "in",
             "target": "kitchen"}]}  # fmt: skip
    moved = {"nodes": [{"id": "mug", "type": "asset", "state": "off"}], "edges": [{"source": "mug", "relation": "in",
             "target": "office"}]}  # fmt: skip
    a = RunSummary("go", ["verified: goto(a)"], ["goto(a): succeeded"], ["executing: 1/1 goto(a) succeeded"], graph)
    b = RunSummary("go", ["verified: goto(a)"], ["goto(a): succeeded", "x(y): succeeded"], list(a.events), moved)
    assert diff_runs(a, RunSummary("go", list(a.plans), list(a.outcomes), list(a.events), dict(graph))) == []
    found = diff_runs(a, b)
    assert [d.section for d in found] == ["outcomes", "graph"]
    assert (found[0].index, found[0].recorded, found[0].replayed) == (1, "<none>", "x(y): succeeded")
    assert "node mug state: 'on' -> 'off'" in found[1].replayed and "edge mug -in-> office added" in found[1].replayed
    assert injected_failures([("pickup", "mug", 2, "pickup(mug) failed: grasp failed (injected)"),
                              ("goto", "a", 5, "unreachable")]) == "pickup:mug:grasp_failed"  # fmt: skip
    with pytest.raises(ValueError, match="different instructions"):
        merge_transcripts([{"instruction": "a", "calls": []}, {"instruction": "b", "calls": []}])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_replay_ends_it_with_130_within_5_s(demo_run: Path, tmp_path: Path, sig: int) -> None:  # noqa: F811
    domain, lock = claim_domain()
    try:
        proc = subprocess.Popen(
            ["sayplan_replay", str(demo_run), "--out", str(tmp_path), "--skill-delay", "0.5"],
            env={**os.environ, "ROS_DOMAIN_ID": str(domain)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        lines = [proc.stdout.readline()]  # up to the task line: the stack is up and the goal on its way
        while lines[-1] and "[      task]" not in lines[-1] and len(lines) < 50:  # DDS may log first
            lines.append(proc.stdout.readline())
        assert "[      task]" in lines[-1], "".join(lines)
        time.sleep(1.0)
        proc.send_signal(sig)
        started = time.monotonic()
        code = proc.wait(timeout=30)
        assert code == 130 and time.monotonic() - started < 5.0, (code, proc.stdout.read())
        (replayed,) = tmp_path.iterdir()
        topics = {topic for topic, _, _ in read_messages(replayed / "bag")}  # closed: readable as it is
        assert {"/scene_graph", "/execution_events"} <= topics
    finally:
        if proc.poll() is None:
            proc.kill()
        release_domain(lock)
