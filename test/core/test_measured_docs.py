"""The measured figures in docs/measured/ are written by the bench scripts, and the exact ones match the code today."""

from __future__ import annotations

from pathlib import Path

from bench_runs import write_bench

from sayplan_core.cli.env_commands import token_table
from sayplan_core.envs import load_env

ROOT = Path(__file__).resolve().parents[2]


def test_bench_graph_writes_its_tables_with_the_command_that_made_them(tmp_path: Path) -> None:
    text, stdout = write_bench("bench_graph.py", ["--sizes", "300", "--repeat", "1"], tmp_path / "graph.md")
    assert text.startswith(
        "# Scene-graph figures\n\nWritten by `scripts/ws_env.sh python scripts/bench_graph.py --sizes"
    )
    assert text.split("\n", 4)[4] in stdout  # the file holds what the script printed, under its header
    # SayPlan's own cut, computed here from the paper's token counts (the script once printed 82.1% / 60.4%)
    for env, full, collapsed in (("office", 6731, 878), ("home", 6598, 1817)):
        assert f"{env} {full} -> {collapsed} ({100 * (full - collapsed) / full:.1f}%)" in text


def test_the_token_figures_in_the_docs_are_those_of_the_bundled_envs() -> None:
    """Token counts are exact: the committed docs/measured/graph.md must hold today's (rerun the script if not)."""
    text = (ROOT / "docs" / "measured" / "graph.md").read_text(encoding="utf-8")
    for env in ("office", "home"):
        for encoding in ("cl100k_base", "o200k_base"):
            table = token_table(load_env(env), encoding)
            row = next(line for line in text.splitlines() if line.startswith(f"| {env} | {encoding} |"))
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            assert cells[6:9] == [
                str(table["full_tokens"]),
                str(table["collapsed_tokens"]),
                f"{table['reduction_percent']}%",
            ], f"docs/measured/graph.md is stale for {env}/{encoding}: run scripts/bench_graph.py --write"


def test_the_measured_index_agrees_with_graph_loading_md() -> None:
    measured = (ROOT / "docs/measured/README.md").read_text()
    assert "JSON parsing alone is about 30 ms" not in measured
    assert "the cause is not yet found" not in measured
    assert "it is not reached yet" not in measured  # perception's target, met since
