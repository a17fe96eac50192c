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
    # the ratios are the ones of the times printed beside them: times are rounded to 0.05 ms either way as
    # printed (a large share of a 300-node load's ~1 ms), ratios to 0.005
    for ratio, spark in ((ratio_json, spark_json), (ratio_binary, spark_binary)):
        assert (ours - 0.05) / (spark + 0.05) - 0.005 <= ratio <= (ours + 0.05) / max(spark - 0.05, 1e-9) + 0.005
