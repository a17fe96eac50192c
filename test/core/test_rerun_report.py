"""test/rerun_report.py, run as pytest runs it: a test that fails once and passes on its rerun is printed with its
first failure and counted in the summary; a test that fails on every try is reported as such, not counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_rerunfailures", reason="pytest-rerunfailures is not installed (requirements/dev.txt)")

TEST_DIR = Path(__file__).resolve().parents[1]

CASES = """
import pathlib
import pytest

@pytest.mark.flaky(reruns=2)
def test_once(tmp_path_factory):
    mark = pathlib.Path(__file__).with_name("tried")
    if not mark.exists():
        mark.write_text("1")
        assert 1 + 1 == 3, "the first try sees a stale value"

@pytest.mark.flaky(reruns=1)
def test_always():
    raise RuntimeError("the fake server is not there")

def test_fine():
    pass
"""


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "rerun_report", "-p", "no:cacheprovider", "-q", *args, str(folder)],
        cwd=folder,
        env={"PYTHONPATH": str(TEST_DIR), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_rerun_prints_its_first_failure_and_is_counted(tmp_path: Path) -> None:
    (tmp_path / "test_cases.py").write_text(CASES)
    done = run_pytest(tmp_path)
    out = done.stdout
    assert done.returncode == 1, out  # test_always still fails
    assert "RERUN test_cases.py::test_once (call failed):" in out and "the first try sees a stale value" in out, out
    assert "RERUN test_cases.py::test_always (call failed):" in out and "the fake server is not there" in out, out
    assert "test_cases.py::test_once: 1 rerun(s), passed on a rerun; first failure:" in out, out
    assert "test_cases.py::test_always: 1 rerun(s), failed on every try" in out, out
    assert "1 test(s) passed only on a rerun: test_cases.py::test_once" in out, out
    assert "test_fine" not in out.split("= reruns =")[-1], out


def test_no_rerun_no_section(tmp_path: Path) -> None:
    (tmp_path / "test_cases.py").write_text("def test_fine():\n    pass\n")
    done = run_pytest(tmp_path)
    assert done.returncode == 0 and "reruns" not in done.stdout and "RERUN" not in done.stdout, done.stdout
