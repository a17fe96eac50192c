"""scripts/bench_graph_memory.py runs on a small building and writes its table under the command that made it."""

from __future__ import annotations

from pathlib import Path

from bench_runs import write_bench


def test_bench_graph_memory_writes_a_figure_for_every_role(tmp_path: Path) -> None:
    text, _ = write_bench("bench_graph_memory.py", ["--sizes", "2000", "--where", "2000"], tmp_path / "graph_memory.md")
    assert text.startswith("# Graph memory: bytes per node held\n\nWritten by `scripts/ws_env.sh")
    row = next(line for line in text.splitlines() if line[:3] in {f"| {d}" for d in "123456789"})
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[0]) >= 1500
    server, follower, snapshot = (float(c) for c in cells[1:4])
    # a graph holds something per node, and a snapshot is a second copy held beside the follower's
    assert 0.05 < server < 50 and 0.05 < follower < 50 and snapshot > follower, row

    # where the follower's bytes go: the largest allocating lines first, together no more than the total traced
    section = text.split("## Where a follower's bytes go (")[1]
    total = float(section.split("Python allocations held: ")[1].split(" B/node")[0])
    sites = [line for line in section.splitlines() if line[:2] == "| " and line[2:3].isdigit()]
    per_node = [float(line.split("|")[1]) for line in sites]
    assert len(sites) >= 5 and per_node == sorted(per_node, reverse=True) and 0 < sum(per_node) <= total + len(sites)
    assert any("graph/model.py" in line for line in sites), sites  # the graph's own tables are among them
