"""scripts/bench_stack_start.py starts the real sim stack on a small generated building and on the office, each in
a fresh process, and writes its table under the command that made it (docs/measured/stack_start.md comes from a
10k-node building)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from ros_domains import run_on_own_domain

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]


def test_the_stack_start_bench_brings_both_stacks_up_and_writes_its_table(tmp_path: Path) -> None:
    out = tmp_path / "stack_start.md"
    command = [sys.executable, "scripts/bench_stack_start.py", "--nodes", "600", "--rounds", "1", "--write", str(out)]
    done = run_on_own_domain(command, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Stack start-up: a large building against the office\n\nWritten by `scripts/ws_env.sh")
    office = next(line for line in text.splitlines() if line.startswith("| office |"))
    large = next(line for line in text.splitlines() if line.startswith("| large |"))
    assert office.split("|")[2].strip() == "238" and int(large.split("|")[2]) >= 600
    for row in (office, large):  # up, with every graph follower of the stack in sync
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[2]) > 0 and int(cells[5]) >= 2, row
    assert re.search(r"Large / office: wall \d+\.\d\dx", text)
