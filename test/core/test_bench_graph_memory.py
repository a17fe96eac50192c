"""scripts/bench_graph_memory.py runs on a small building and writes its table under the command that made it."""

from __future__ import annotations

from pathlib import Path

from bench_runs import write_bench


def test_bench_graph_memory_writes_a_figure_for_every_role(tmp_path: Path) -> None:
    text, _ = write_bench("bench_graph_memory.py", ["--sizes", "2000"], tmp_path / "graph_memory.md")
    assert text.startswith("# Graph memory: bytes per node held\n\nWritten by `scripts/ws_env.sh")
    row = next(line for line in text.splitlines() if line[:3] in {f"| {d}" for d in "123456789"})
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[0]) >= 1500
    server, follower, snapshot = (float(c) for c in cells[1:4])
    # a graph holds something per node, and a snapshot is a second copy held beside the follower's
    assert 0.05 < server < 50 and 0.05 < follower < 50 and snapshot > follower, row
