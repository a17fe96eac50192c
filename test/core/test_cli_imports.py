"""A command that does not use a heavy library does not import it: `sayplan --help`, every subcommand's `--help`,
`--version` and `env list` import no numpy, scipy, torch, sentence-transformers, faiss, scikit-learn, LLM SDK or HTTP
client, and no rclpy. scipy alone cost every program about half a second (node settings imported perception's
label lists through its scipy fusion code, and the LTL planner imported its k-d tree at module level); numpy
cost a quarter of `--help` (the retrieval and LTL planners imported their index and product search to declare
their options). Each case
runs in a fresh interpreter, since this process has imported everything already."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_runs import write_bench

from sayplan_core.cli import build_parser

HEAVY = (
    "numpy",
    "scipy",
    "torch",
    "sentence_transformers",
    "faiss",
    "sklearn",
    "openai",
    "ollama",
    "llama_cpp",
    "httpx",
    "rclpy",
)


def subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(name for action in actions for name in action.choices)


def imported(argv: list[str]) -> set[str]:
    """The modules `sayplan ARGV` has imported by the time it ends, in a fresh interpreter."""
    code = (
        "import json, sys\nfrom sayplan_core.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return set(names)


def heavy_imports(argv: list[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in imported(argv)} & set(HEAVY))


def test_there_are_subcommands_to_check() -> None:
    assert {"env", "plan", "bench"} <= set(subcommands())


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["env", "list"], *([name, "--help"] for name in subcommands())], ids=str
)
def test_a_command_that_does_not_use_a_heavy_library_does_not_import_it(argv: list[str]) -> None:
    assert heavy_imports(argv) == [], f"sayplan {' '.join(argv)} imports them"


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["env", "list"], ["env", "--help"], ["llm", "--help"]], ids=str
)
def test_the_top_level_help_and_env_list_load_no_graph_model_and_no_planner(argv: list[str]) -> None:
    """What keeps them within 1.3x of `import networkx` (docs/measured/cli_start.md): a command's flags are
    declared, and its module imported, only once it is chosen."""
    names = imported(argv)
    loaded = sorted(
        n for n in names if n == "networkx" or n.startswith(("sayplan_core.graph", "sayplan_core.planners"))
    )
    assert loaded == [], f"sayplan {' '.join(argv)} imports them"


def test_the_start_up_bench_measures_every_command_against_the_yardstick(tmp_path: Path) -> None:
    """scripts/bench_cli_start.py as docs/measured/README.md shows it, one round: a row per command, the yardstick
    at 1.00x and every other figure a ratio to it (the figures themselves depend on the machine, so no bound)."""
    text, _ = write_bench("bench_cli_start.py", ["--reps", "1"], tmp_path / "cli_start.md")
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| `")]
    assert [r[0].strip() for r in rows] == [
        "`python -c 'import networkx'`",
        "`sayplan --help`",
        "`sayplan env list`",
        "`sayplan plan --help`",
    ]
    assert rows[0][4].strip() == "1.00x"
    base = float(rows[0][1])
    for row in rows[1:]:  # the ratio of the unrounded medians: within rounding of the printed ones' ratio
        assert float(row[4].strip().removesuffix("x")) == pytest.approx(float(row[1]) / base, abs=0.02), row
