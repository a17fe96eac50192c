"""Files named by users, parameters and configs (issue 24 item 8): only regular files are read, never past a limit.
`/dev/zero` passed the old size check (its size reads as 0) and grew a run to about 24 GB; a FIFO would block the
reader forever. Each loader that takes a path is tried with both, and with a file one byte over its limit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sayplan_core import files
from sayplan_core.envs import load_env
from sayplan_core.graph.importers import import_graph
from sayplan_core.llm.replay import ReplayBackend
from sayplan_core.robots.binding import SiteBinding
from sayplan_core.sim.action_set import load_action_set
from sayplan_franka_omron.motions import TaughtMotions

LOADERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "environment": (load_env, ".json"),
    "graph import": (import_graph, ".json"),
    "stanford npz": (import_graph, ".npz"),
    "action set": (lambda p: load_action_set(p), ".yaml"),
    "site file": (SiteBinding.load, ".yaml"),
    "motion file": (TaughtMotions.load, ".yaml"),
    "transcript": (ReplayBackend.from_file, ".json"),
}


def special(tmp_path: Path, kind: str, suffix: str) -> Path:
    """A name with the loader's suffix that is /dev/zero, or a FIFO nobody writes to."""
    path = tmp_path / f"{kind}{suffix}"
    if kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    return path


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_devices_and_fifos_are_refused_at_once(tmp_path: Path, loader: str, kind: str) -> None:
    """Run in a child process with a deadline: the old code read /dev/zero until memory ran out and blocked on a
    FIFO; now each loader refuses in well under a second, naming the file."""
    suffix = LOADERS[loader][1]
    path = special(tmp_path, kind, suffix)
    load_action_set.cache_clear()
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]); from test_files import LOADERS\n"
        "load, _ = LOADERS[sys.argv[3]]\n"
        "try:\n    load(sys.argv[1])\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
        "else:\n    print('loaded')\n"
    )
    here = str(Path(__file__).parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([here, str(Path(here).parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), here, loader],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "not a regular file" in done.stdout and str(path) in done.stdout, done.stdout


def test_a_file_over_the_limit_is_refused_after_reading_one_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as fh:
        fh.truncate(1001)  # sparse: the read stops at the limit whatever stat says
    with pytest.raises(files.FileReadError, match="over the 1000 byte limit"):
        files.read_bytes(path, 1000, "test file")
    assert files.read_bytes(path, 1001, "test file") == b"\0" * 1001


def test_errors_name_the_file_and_the_reason(tmp_path: Path) -> None:
    with pytest.raises(files.FileReadError, match=f"cannot read site file {tmp_path / 'nope.yaml'}: No such file"):
        files.read_text(tmp_path / "nope.yaml", 10, "site file")
    with pytest.raises(files.FileReadError, match="it is a folder"):
        files.read_text(tmp_path, 10, "site file")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(files.FileReadError, match="not UTF-8 text"):
        files.read_text(bad, 10, "site file")
