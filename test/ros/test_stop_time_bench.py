"""scripts/bench_stop_time.py, CI-sized: one idle and one mid-task Ctrl-C of the real launch file, every node's end
read from launch's own lines, and the table written; bad options refused before anything starts. What is checked
is that the bench measures (every node of the stack seen finishing, exit 0, no escalation), never how fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from launch_support import needs_launch

from sayplan_ros.stack import stack_specs

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: bounds stops in seconds
ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "scripts" / "bench_stop_time.py"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


@needs_launch
def test_one_idle_and_one_mid_task_stop_are_measured_node_by_node(ros: Any, tmp_path: Path) -> None:
    out = tmp_path / "stop_time.md"
    done = bench("--reps", "1", "--states", "idle,mid-task", "--domain", str(ros.domain_id), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    text = out.read_text()
    assert text.startswith("# Stop time: `ros2 launch` on Ctrl-C\n\nWritten by `"), text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines() if line.startswith("| ")}  # fmt: skip
    for state in ("idle", "mid-task"):
        reps, _exited, escalations, _cut, codes = rows[state]
        assert (reps, escalations, codes) == ("1", "0", "0"), rows[state]
    for spec in stack_specs("sim"):  # every node of the stack finished, in both states
        assert "-" not in rows[spec.executable], (spec.executable, rows.get(spec.executable))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--reps", "0"], "--reps must be at least 1"),
        (["--states", "idle,asleep"], "--states: unknown asleep"),
        (["--states", ","], "--states: unknown (none given)"),
        (["--domain", "300"], "--domain must be 0-232"),
    ],
)
def test_bad_options_are_refused_before_any_launch(args: list[str], said: str) -> None:
    done = bench(*args)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "launch exit" not in done.stdout, done.stdout
