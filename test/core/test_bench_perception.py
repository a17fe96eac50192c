"""scripts/bench_perception.py runs end to end on a small map and writes what it printed under the command."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from bench_runs import ROOT, write_bench


def test_bench_perception_writes_its_figures_and_times_a_revision_side_by_side(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("--against reads a revision with git; this tree is not a git checkout")
    text, stdout = write_bench(
        "bench_perception.py", ["--objects", "40", "--frames", "4", "--against", "HEAD"], tmp_path / "perception.md"
    )
    assert text.startswith("# Perception fusion (detector excluded)\n\nWritten by `scripts/ws_env.sh python")
    cpu = re.search(r"median CPU time per frame \(one core\): ([\d.]+) ms -> ([\d.]+) frames/s", text)
    assert cpu is not None, text
    assert float(cpu.group(2)) == pytest.approx(1000 / float(cpu.group(1)), rel=0.02)  # the rate is the time's inverse
    own_hash = re.search(r"map hash ([0-9a-f]{16})", text)
    side = re.search(r"map hashes ([0-9a-f]{16}) vs ([0-9a-f]{16}) \((.*?)\)", text)
    assert own_hash is not None and side is not None, text
    # HEAD's fusion is the code under test only when the tree is clean; the hashes agree exactly when they say so
    assert (side.group(1) == side.group(2)) == (side.group(3) == "the same map")
    assert side.group(1) == own_hash.group(1)  # the side-by-side run of this tree rebuilt the same map
    assert "objects after the run" in stdout
