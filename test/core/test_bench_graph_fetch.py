"""scripts/bench_graph_fetch.py runs on a small building and writes its table under the command that made it."""

from __future__ import annotations

from pathlib import Path

from bench_runs import write_bench


def test_bench_graph_fetch_writes_its_table(tmp_path: Path) -> None:
    text, _ = write_bench("bench_graph_fetch.py", ["--sizes", "300", "--repeat", "1"], tmp_path / "graph_fetch.md")
    assert text.startswith("# Graph fetch: a follower's take of the whole graph\n\nWritten by `scripts/ws_env.sh")
    row = next(line for line in text.splitlines() if line.startswith("| 3"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[0]) >= 300 and all(float(c) > 0 for c in cells[1:5]), row
    before, now, rows_text = (float(v) for v in cells[8].removesuffix(" kB").replace(",", "").split(" / "))
    assert now < before and now < rows_text, row  # the payload is smaller than both other forms
