"""A pytest plugin that ends the run with its wall time per test directory and its slowest files, so CI's output
says where the suite's time goes (issue 42: cut the slowest waits with no lost coverage).

Each test's setup, call and teardown count towards its file and its directory (the file's folder). The figures are
what this run took on this machine: they move with the load, so nothing here passes or fails a test.
test/conftest.py loads this module; test/core/test_time_report.py runs it on a small suite.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

#: how many of the slowest files the summary lists
SLOWEST_FILES = 10

_by_file: defaultdict[str, float] = defaultdict(float)
_tests: defaultdict[str, set[str]] = defaultdict(set)


def pytest_configure(config: pytest.Config) -> None:
    _by_file.clear()
    _tests.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _by_file[path] += report.duration
    _tests[path].add(report.nodeid)


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _by_file:
        return
    by_folder: defaultdict[str, float] = defaultdict(float)
    count: defaultdict[str, int] = defaultdict(int)
    for path, seconds in _by_file.items():
        by_folder[_folder(path)] += seconds
        count[_folder(path)] += len(_tests[path])
    total = sum(by_folder.values())
    terminalreporter.section("time per directory (setup + call + teardown, this run)", sep="=")
    for folder, seconds in sorted(by_folder.items(), key=lambda item: -item[1]):
        share = 100.0 * seconds / total if total else 0.0
        terminalreporter.write_line(f"{folder:<32} {seconds:9.1f} s {share:5.1f}%  {count[folder]} tests")
    terminalreporter.write_line(f"{'all':<32} {total:9.1f} s")
    terminalreporter.write_line("slowest files:")
    for path, seconds in sorted(_by_file.items(), key=lambda item: -item[1])[:SLOWEST_FILES]:
        terminalreporter.write_line(f"  {path:<60} {seconds:8.1f} s  {len(_tests[path])} tests")
