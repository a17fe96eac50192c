"""scripts/bench_skill_time.py, CI-sized (40 skills, windows of 10): it runs and reports the medians, their ratio,
the target and the timer counts, and writes them under the measured-file header. What is checked is that the
bench measures, never how fast: the figures move with the machine's load."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from ros_domains import claim_domain, release_domain

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]


def test_the_skill_time_bench_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "skill_time.md"
    domain, lock = claim_domain()
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_skill_time.py"), "--skills", "40", "--window", "10",
             "--domain", str(domain), "--write", str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        release_domain(lock)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"median of the first 10: [\d.]+ ms, last 10: [\d.]+ ms, ratio [\d.]+", done.stdout), done.stdout
    assert re.search(r"target \(last < 3x first \+ 10 ms\): (met|missed)", done.stdout), done.stdout
    timers = re.search(r"skill server timers: (\d+) before, (\d+) after", done.stdout)
    assert timers is not None and timers[1] == timers[2], done.stdout
    text = out.read_text()
    assert text.startswith("# Time per skill over a long run\n\nWritten by `") and "skills: 40" in text, text
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_skill_time.py"), "--skills", "10", "--window", "10"],
            capture_output=True, check=True, timeout=60,
        )  # fmt: skip
