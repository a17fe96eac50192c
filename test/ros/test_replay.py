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

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: runs the demo and the replay; an exit bounded in seconds


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


# ----------------------------------------------------------------------------- bounds and runs that did not end
def test_an_oversized_metadata_file_is_refused_before_it_is_parsed(demo_run: Path, tmp_path: Path) -> None:  # noqa: F811
    """Found as a hostile user: a 300 MB metadata.yaml took 1 GB of memory, and --timeout did not cover it."""
    from sayplan_ros.bag import MAX_METADATA_BYTES

    run = tmp_path / "run"
    shutil.copytree(demo_run, run)
    with (run / "bag" / "metadata.yaml").open("a", encoding="utf-8") as meta:
        meta.write(("#" + "x" * 1023 + "\n") * (MAX_METADATA_BYTES // 1024 + 1))
    done = replay(run, tmp_path / "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"a bag's metadata is read up to {MAX_METADATA_BYTES:,}" in done.stderr
    assert not (tmp_path / "out").exists()  # refused before any replay began


def test_reading_a_bag_stops_at_its_byte_bound_and_its_deadline(demo_run: Path) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="holds more than 100 bytes of messages"):
        list(read_messages(demo_run / "bag", max_bytes=100))
    with pytest.raises(ValueError, match="took longer than the time given"):
        list(read_messages(demo_run / "bag", deadline=time.monotonic() - 1.0))
    assert list(read_messages(demo_run / "bag"))  # the bounds leave a real run alone


def test_a_run_canceled_mid_task_is_said_so_not_reported_as_a_difference(tmp_path: Path) -> None:
    """Found as a new user: replaying a run stopped by Ctrl-C always exited 1 ("differs")."""
    domain, lock = claim_domain()
    try:
        env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
        demo = subprocess.Popen(
            ["sayplan_demo", "--out", str(tmp_path / "runs"), "--skill-delay", "0.5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert demo.stdout is not None
        lines = [demo.stdout.readline()]
        while lines[-1] and "[ executing]" not in lines[-1] and len(lines) < 200:  # a skill is under way
            lines.append(demo.stdout.readline())
        assert "[ executing]" in lines[-1], "".join(lines)
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=60) == 130, demo.stdout.read()
    finally:
        release_domain(lock)
    (run,) = list((tmp_path / "runs").iterdir())
    done = replay(run, tmp_path / "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "was canceled mid-task" in done.stderr and "differ" not in done.stdout


def test_a_run_whose_skill_ended_canceled_replays_the_same(tmp_path: Path) -> None:
    """Found in review: a task that ended CANCELED because a skill did (an injected failure, reproduced by the
    replay) was refused as if an operator had canceled it."""
    done = run_in_own_domain(
        [
            "sayplan_demo",
            "--out",
            str(tmp_path / "runs"),
            "--skill-delay",
            "0.01",
            "--failure",
            "pickup:coffee_mug:canceled",
        ],
        timeout=240,
    )
    assert done.returncode == 1 and "summary: canceled" not in done.stdout, done.stdout + done.stderr
    (run,) = list((tmp_path / "runs").iterdir())
    again = replay(run, tmp_path / "out")
    assert again.returncode == 0, again.stdout + again.stderr
