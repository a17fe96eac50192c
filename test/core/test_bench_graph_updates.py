"""scripts/bench_graph_updates.py runs and writes its table under the header with the command that made it."""

from __future__ import annotations

import re
from pathlib import Path

from bench_runs import write_bench


def test_bench_graph_updates_writes_its_table(tmp_path: Path) -> None:
    args = ["--sizes", "0", "--repeats", "1", "--before-sample", "1", "--session", "10"]
    text, _ = write_bench("bench_graph_updates.py", args, tmp_path / "graph_updates.md")
    assert text.startswith("# Scene-graph updates: bytes and follower CPU per skill\n\nWritten by `scripts/ws_env.sh")
    row = next(line for line in text.splitlines() if line.startswith("| 0 | 238 |"))
    full, amortized, updates = (int(v.replace(",", "")) for v in re.findall(r"([\d,]+) B", row)[:3])
    # the start-up full graph (about the size of one before-side full graph) is counted, over 10 skills
    assert updates < amortized and abs(amortized - updates - full / 10) < 0.02 * full / 10, row
