"""scripts/bench_demo_local.py against a stand-in `sayplan_demo` on PATH (a shell script printing what the demo
prints and exiting with its codes): a run of the task is written whether it succeeded or not; any other end never
replaces the measurement before it, is written beside it as .failed.md, and exits 1; the nodes' own `[WARN] [...]`
lines are not taken for the step the run ended at; output holding backticks cannot end the code block early.
(The real demo with the bundled transcript: test/ros/test_demo.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_runs import ROOT

EVENTS = [
    "[      task] Make Niko a coffee and place the mug on his desk.",
    "[  planning] search kitchen, round 0, 1704 tokens: ```json {} ```",
    "[WARN] [1796012144.9] [planner]: a node's own line, not an event",
]


def fake_demo(folder: Path, code: int, summary: str) -> dict[str, str]:
    """An environment whose PATH finds a `sayplan_demo` that prints EVENTS and `summary`, writes one LLM exchange
    into its run folder, and exits `code`."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    lines = "\n".join(f"printf '%s\\n' {line!r}" for line in [*EVENTS, summary] if line)
    (bin_dir / "sayplan_demo").write_text(
        "#!/bin/sh\n"
        'out=""; while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done\n'
        'mkdir -p "$out/demo_1/llm" && echo "{}" > "$out/demo_1/llm/plan_task_0.json"\n'
        f"{lines}\nexit {code}\n"
    )
    (bin_dir / "sayplan_demo").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def record(env: dict[str, str], doc: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/bench_demo_local.py", "--llm", "replay", "--write", str(doc)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("code", [0, 1])
def test_a_run_of_the_task_is_written_whatever_its_outcome(tmp_path: Path, code: int) -> None:
    env = fake_demo(tmp_path, code, "summary: FAILED | out of LLM calls | goal NOT met")
    doc = tmp_path / "demo.md"
    done = record(env, doc)
    assert done.returncode == 0, done.stderr
    text = doc.read_text()
    assert f"Exit code {code}: the task " in text and "- summary: FAILED | out of LLM calls" in text
    assert f"- ended at: ```` {EVENTS[1]} ````" in text  # the demo's last event, not the node's [WARN] line after
    lines = text.splitlines()
    start = lines.index("````text")  # a longer fence than the ``` in the output
    assert lines[start + 1 : lines.index("````", start + 1)] == [
        *EVENTS,
        "summary: FAILED | out of LLM calls | goal NOT met",
    ]
    assert [p.name for p in (tmp_path / "demo_llm").iterdir()] == ["plan_task_0.json"]


@pytest.mark.parametrize("code", [2, 4, 130])
def test_a_run_that_is_no_run_of_the_task_leaves_the_measurement_before_it(tmp_path: Path, code: int) -> None:
    doc = tmp_path / "demo.md"
    doc.write_text("the measurement before\n")
    (tmp_path / "demo_llm").mkdir()
    (tmp_path / "demo_llm" / "plan_task_0.json").write_text("the exchange before\n")
    done = record(fake_demo(tmp_path, code, ""), doc)
    assert done.returncode == 1, done.stderr
    assert f"exit {code}: no run of the task; {doc} is left as it was" in done.stderr
    assert doc.read_text() == "the measurement before\n"
    assert (tmp_path / "demo_llm" / "plan_task_0.json").read_text() == "the exchange before\n"
    failed = (tmp_path / "demo.failed.md").read_text()
    assert f"Exit code {code}: no run of the task" in failed and "(the demo printed no summary)" in failed
    assert (tmp_path / "demo.failed_llm" / "plan_task_0.json").read_text() == "{}\n"


@pytest.mark.parametrize("write", ["notes", "missing/demo.md"])
def test_a_file_it_could_not_write_is_refused_before_the_demo_starts(tmp_path: Path, write: str) -> None:
    env = fake_demo(tmp_path, 0, "summary: success")
    done = record(env, tmp_path / write)
    assert done.returncode == 2 and "a .md file in a folder that exists" in done.stderr, done.stderr
    assert "[      task]" not in done.stdout  # the demo never ran


def test_an_unknown_model_is_refused_before_the_demo_starts(tmp_path: Path) -> None:
    env = fake_demo(tmp_path, 0, "summary: success")
    done = subprocess.run(
        [sys.executable, "scripts/bench_demo_local.py", "--model", "qwen-15b", "--write", str(tmp_path / "d.md")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "unknown model 'qwen-15b'" in done.stderr, done.stderr
    assert not (tmp_path / "d.md").exists() and "[      task]" not in done.stdout
