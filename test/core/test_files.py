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
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.graph.importers import import_graph
from sayplan_core.graph.importers.common import read_connectivity
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


# ----------------------------------------------------------------------------- YAML aliases (issue 39 item 4)
#: Each loader that reads YAML from a file, with its suffix: all go through files.load_yaml.
YAML_LOADERS = {
    "environment": (load_env, ".yaml"),
    "action set": (lambda p: load_action_set(p), ".yaml"),
    "site file": (SiteBinding.load, ".yaml"),
    "motion file": (TaughtMotions.load, ".yaml"),
    "connectivity file": (read_connectivity, ".yaml"),
    "task file": (load_tasks, ".yaml"),
}
#: 1 kB that expands to 10**8 leaves when walked (an alias bomb; the reviewer's 277 KB metadata.yaml took 43 s and
#: 1.37 GB in rosbags): refused at the first alias, before any of it is walked.
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(7)
)


@pytest.mark.parametrize("loader", sorted(YAML_LOADERS))
def test_yaml_aliases_are_refused_by_every_loader(tmp_path: Path, loader: str) -> None:
    """Found as a hostile user: YAML aliases were expanded (safe_load allows them). Each loader now refuses the
    first alias with its line, naming the file."""
    load, suffix = YAML_LOADERS[loader]
    path = tmp_path / f"bomb{suffix}"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(Exception) as caught:
        load(str(path))
    assert "YAML alias *a at line 2, column" in str(caught.value) and "refused" in str(caught.value), caught.value
    assert str(path) in str(caught.value)


def test_load_yaml_reads_plain_yaml_and_refuses_aliases_and_deep_nesting() -> None:
    import yaml

    plain = "a: [1, {b: c}]\nd: &anchor e\n"  # an anchor alone is harmless
    assert files.load_yaml(plain) == yaml.safe_load(plain)
    with pytest.raises(yaml.YAMLError, match=r"YAML alias \*x at line 2, column 4 refused"):
        files.load_yaml("a: &x [1]\nb: *x\n")
    with pytest.raises(yaml.YAMLError, match=r"merge|alias"):
        files.load_yaml("a: &x {k: 1}\nb: {<<: *x}\n")
    deep = "[" * (files.MAX_YAML_DEPTH + 1) + "]" * (files.MAX_YAML_DEPTH + 1)
    with pytest.raises(yaml.YAMLError, match=f"nested deeper than {files.MAX_YAML_DEPTH} levels"):
        files.load_yaml(deep)
    assert files.load_yaml("[" * files.MAX_YAML_DEPTH + "]" * files.MAX_YAML_DEPTH) is not None
