"""A pytest plugin that makes every rerun (pytest-rerunfailures) loud: the failure that caused it is printed when it
happens, and the terminal summary counts the tests that passed only on a rerun and says why each failed first.

pytest-rerunfailures alone keeps a rerun's report out of the output (`-ra` shows an `R` letter and the test's name,
never its first failure), so a flaky test that passes on its second try hides its reason. test/conftest.py loads
this module; test/core/test_rerun_report.py runs it on a test that fails once.
"""

from __future__ import annotations

from typing import Any

import pytest

#: How much of a rerun's first failure is printed (its crash line, else the end of its report).
REASON_CHARS = 300

_first_failure: dict[str, str] = {}  # nodeid -> the first failure's reason
_reruns: dict[str, int] = {}  # nodeid -> how many times it was rerun
_config: list[pytest.Config] = []


def short_reason(report: pytest.TestReport) -> str:
    """The failure's crash line (`file:line: message`), or the last lines of its report, on one line."""
    longrepr: Any = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        text = f"{crash.path}:{crash.lineno}: {crash.message}"
    else:
        text = " | ".join(line for line in str(longrepr).strip().splitlines()[-3:] if line.strip())
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def pytest_configure(config: pytest.Config) -> None:
    _config.append(config)
    _first_failure.clear()
    _reruns.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome != "rerun":  # type: ignore[comparison-overlap]  (rerunfailures sets its own outcome)
        return
    reason = short_reason(report)
    _first_failure.setdefault(report.nodeid, reason)
    _reruns[report.nodeid] = _reruns.get(report.nodeid, 0) + 1
    reporter = _config[-1].pluginmanager.get_plugin("terminalreporter") if _config else None
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(f"RERUN {report.nodeid} ({report.when} failed): {reason}", yellow=True, bold=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _reruns:
        return
    failed = {r.nodeid for r in terminalreporter.stats.get("failed", []) + terminalreporter.stats.get("error", [])}
    passed = [nodeid for nodeid in _reruns if nodeid not in failed]
    terminalreporter.section("reruns", sep="=", yellow=True)
    for nodeid, count in _reruns.items():
        verdict = "failed on every try" if nodeid in failed else "passed on a rerun"
        terminalreporter.write_line(f"{nodeid}: {count} rerun(s), {verdict}; first failure: {_first_failure[nodeid]}")
    if passed:
        terminalreporter.write_line(
            f"{len(passed)} test(s) passed only on a rerun: {', '.join(passed)}", yellow=True, bold=True
        )
