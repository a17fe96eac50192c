"""The main job as users run it: every planning and execution event reaches the output, in the same order on
every run (the events travel on a reliable topic, numbered, and are printed in sequence order), and two demos run at
once on one machine do not see each other (each its own output folder and bag)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

pytestmark = [
    pytest.mark.ros,
    pytest.mark.serial,
]  # alone: the demo's whole run, three in a row and two at once (a run failed once, alone, unexplained)


def demo_events(out: Path) -> list[str]:
    done = subprocess.run(
        ["sayplan_demo", "--out", str(out), "--skill-delay", "0.0"], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("[")]


def test_the_demo_prints_every_event_in_the_same_order_every_time(tmp_path: Path) -> None:
    runs = [demo_events(tmp_path / f"run{i}") for i in range(3)]
    assert runs[0] == runs[1] == runs[2], "\n".join(runs[0])
    lines = runs[0]
    assert lines[0] == "[      task] Make Niko a coffee and place the mug on his desk."
    planning = [line for line in lines if line.startswith("[  planning]")]
    assert any(" search kitchen, round 0" in line for line in planning)
    assert any("verify, round 0" in line and "cannot pickup(coffee_mug)" in line for line in planning)
    assert any("verify, round 1" in line and "plan verified" in line for line in planning)
    executing = [line for line in lines if line.startswith("[ executing]")]
    assert any("pickup(coffee_mug) failed (grasp_failed): grasp failed (injected)" in line for line in executing)
    assert any(line.startswith("[replanning]") and "plan verified" in line for line in lines)
    assert lines[-1].startswith("[      done] task done in")


def test_a_demo_whose_stack_does_not_start_leaves_no_unexplained_folder(tmp_path: Path) -> None:
    """Found as a new user: a dead LLM at start-up exited 2 and left a run folder with nothing saying why."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = subprocess.run(
        ["sayplan_demo", "--out", str(tmp_path), "--llm", "ollama", "--base-url", dead],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "planner failed to activate" in done.stderr and "summary:" not in done.stdout
    for folder in tmp_path.iterdir():  # removed, or kept with the reason beside what was recorded
        note = folder / "startup_failed.txt"
        assert note.is_file(), sorted(p.name for p in folder.rglob("*"))
        assert "the stack did not start: planner failed to activate" in note.read_text()
        assert str(folder) in done.stderr


def test_two_demos_on_one_machine_do_not_see_each_other(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            ["sayplan_demo", "--out", str(tmp_path), "--skill-delay", "0.01", "--storage", storage],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for storage in ("mcap", "sqlite3")
    ]
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out
        assert "summary: success" in out and "goal met" in out and "(/scene_graph 1," in out, out
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert len(folders) == 2 and len(set(folders)) == 2
    assert {yaml_storage(tmp_path / f / "bag") for f in folders} == {"mcap", "sqlite3"}


def yaml_storage(bag: Path) -> str:
    return str(yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]["storage_identifier"])


def test_the_demo_bench_writes_the_run_it_saw(tmp_path: Path) -> None:
    """scripts/bench_demo_local.py (docs/measured/demo_local.md), checked with the bundled transcript in seconds: the
    file holds the demo's summary, the step it ended at, every line it printed, and its LLM exchanges."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_demo_local.py"
    doc = tmp_path / "demo.md"
    done = subprocess.run(
        [sys.executable, str(script), "--llm", "replay", "--write", str(doc)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    assert f"wrote {doc}" in done.stderr
    text = doc.read_text()
    assert "A check of this script, not a measurement" in text and "with the embedded model" not in text
    summary = next(line for line in printed if line.startswith("summary: "))
    assert summary.startswith("summary: success") and f"- {summary}\n" in text
    events = [line for line in printed if line.startswith("[")]
    assert f"- ended at: `{events[-1]}`" in text and events[-1].startswith("[      done] task done in")
    block = text.split("```text\n")[1].split("```\n")[0].rstrip("\n").splitlines()
    assert block == printed  # every line the demo printed, in order
    assert "Exit code 0: the task succeeded" in text
    assert sorted(p.name for p in (tmp_path / "demo_llm").iterdir()), "no LLM exchange was kept"
