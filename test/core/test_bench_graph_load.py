"""scripts/bench_graph_load.py runs end to end on a small building and writes its table under the command."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_runs import write_bench

pytest.importorskip("spark_dsg", reason="spark-dsg (requirements/interop.txt) is not installed")


def test_bench_graph_load_writes_its_table_with_both_spark_formats(tmp_path: Path) -> None:
    text, stdout = write_bench("bench_graph_load.py", ["--sizes", "300", "--repeat", "1"], tmp_path / "graph_load.md")
    assert text.startswith("# Graph load: native format and spark_dsg\n\nWritten by `scripts/ws_env.sh python")
    assert text.split("\n", 4)[4] in stdout  # the file holds what the script printed, under its header
    lines = text.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith("|---")) + 1]  # the one building
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    ours, spark_json, spark_binary, ratio_json, ratio_binary = (float(c) for c in (*cells[1:2], *cells[3:7]))
    # the ratios are the ones of the times printed beside them (rounded as printed)
    assert ratio_json == pytest.approx(ours / spark_json, abs=0.02 + ours / spark_json * 0.05)
    assert ratio_binary == pytest.approx(ours / spark_binary, abs=0.02 + ours / spark_binary * 0.05)
