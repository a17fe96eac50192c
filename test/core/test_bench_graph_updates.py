"""scripts/bench_graph_updates.py runs and writes its table under the header with the command that made it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_graph_updates_writes_its_table(tmp_path: Path) -> None:
    out = tmp_path / "graph_updates.md"
    args = ["--sizes", "0", "--repeats", "1", "--before-sample", "1", "--session", "10", "--write", str(out)]
    done = subprocess.run(
        [sys.executable, "scripts/bench_graph_updates.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Scene-graph updates: bytes and follower CPU per skill\n\nWritten by `scripts/ws_env.sh")
    row = next(line for line in text.splitlines() if line.startswith("| 0 | 238 |"))
    full, amortized, updates = (int(v.replace(",", "")) for v in re.findall(r"([\d,]+) B", row)[:3])
    # the start-up full graph (about the size of one before-side full graph) is counted, over 10 skills
    assert updates < amortized and abs(amortized - updates - full / 10) < 0.02 * full / 10, row
