"""A command that does not use a heavy library does not import it: `sayplan --help`, every subcommand's `--help`,
`--version` and `env list` import no scipy, torch, sentence-transformers, faiss, scikit-learn, LLM SDK or HTTP
client, and no rclpy. scipy alone cost every program about half a second (node settings imported perception's
label lists through its scipy fusion code, and the LTL planner imported its k-d tree at module level). Each case
runs in a fresh interpreter, since this process has imported everything already."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from sayplan_core.cli import build_parser

HEAVY = (
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


def heavy_imports(argv: list[str]) -> list[str]:
    code = (
        "import json, sys\nfrom sayplan_core.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return names


def test_there_are_subcommands_to_check() -> None:
    assert {"env", "plan", "bench"} <= set(subcommands())


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["env", "list"], *([name, "--help"] for name in subcommands())], ids=str
)
def test_a_command_that_does_not_use_a_heavy_library_does_not_import_it(argv: list[str]) -> None:
    assert heavy_imports(argv) == [], f"sayplan {' '.join(argv)} imports them"
