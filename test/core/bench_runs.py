"""Running a bench script from the repository root as the docs show it, for the tests that check what it writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, args: list[str]) -> str:
    """Run `scripts/<script> <args>` from the repository root; it must exit 0. Returns what it printed."""
    done = subprocess.run(
        [sys.executable, f"scripts/{script}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def write_bench(script: str, args: list[str], out: Path) -> tuple[str, str]:
    """Run `scripts/<script> <args> --write <out>`; it must exit 0. Returns the file written and what it printed."""
    printed = run_bench(script, [*args, "--write", str(out)])
    return out.read_text(encoding="utf-8"), printed
