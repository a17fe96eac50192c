"""What every `sayplan` command shares: exit codes, the one-line user error, output, and writing files whole.

Light on purpose (standard library only): `sayplan --help` imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sayplan_core.graph.model import SceneGraph

EXIT_USAGE = 2
EXIT_FAILED = 1
#: `sayplan bench`: every run was recorded, but some raised (error rows in the report)
EXIT_RUN_ERRORS = 3
#: `sayplan env import` of a task list: the good tasks were written, some bad ones skipped (each named on stderr)
EXIT_TASKS_SKIPPED = 4


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    """`--json`: the payload; otherwise the text."""
    print(json.dumps(payload, indent=1) if args.json else text)


def progress(line: str) -> None:
    print(f"sayplan: {line}", file=sys.stderr, flush=True)


def load_graph(env: str, require_agent: bool = True) -> SceneGraph:
    """A bundled environment or a graph file, with stage lines on stderr while a big file loads."""
    from sayplan_core.envs import load_env

    return load_env(env, require_agent=require_agent, progress=progress)


def check_writable(path: Path, what: str) -> None:
    if not path.parent.is_dir():
        raise CliError(f"cannot write {what} {path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise CliError(f"cannot write {what} {path}: it is a folder")


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, so a failed write leaves the old file whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
