"""The soak script docs/howto/testing.md shows runs (on 200 skills here; docs/measured/soak.md comes from 1,000)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from ros_domains import claim_domain, release_domain

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]


def test_the_soak_script_runs_and_reports(tmp_path: Path) -> None:
    domain, lock = claim_domain()
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "soak.py"), "--skills", "200", "--domain", str(domain),
             "--write", str(tmp_path / "soak.md")],
            capture_output=True, text=True, timeout=300, env=dict(os.environ),
        )  # fmt: skip
    finally:
        release_domain(lock)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "skills: 200, graph version 201" in done.stdout
    assert "per-skill time, median of the first 100" in done.stdout and "open files" in done.stdout
    assert "skills: 200, graph version 201" in (tmp_path / "soak.md").read_text()
