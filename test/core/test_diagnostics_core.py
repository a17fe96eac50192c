"""The status builders of sayplan_core.diagnostics: what each node's /diagnostics says about the state it holds."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sayplan_core.diagnostics import (
    MAX_TEXT_CHARS,
    Level,
    Status,
    executor_status,
    fault_latch_status,
    graph_status,
    journal_status,
    lifecycle_status,
    link_status,
    llm_status,
    worst,
)
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.fault_latch import FaultLatch


@dataclass(frozen=True)
class Probe:
    """Test data shaped as an LLM probe's result (any object with ok, backend and detail)."""

    ok: bool
    backend: str
    detail: str


def test_levels_are_diagnostic_msgs_bytes() -> None:
    # diagnostic_msgs/msg/DiagnosticStatus.msg: OK=0, WARN=1, ERROR=2, STALE=3
    assert [int(level) for level in (Level.OK, Level.WARN, Level.ERROR, Level.STALE)] == [0, 1, 2, 3]


def test_worst_ranks_stale_above_error() -> None:
    statuses = [Status("a", Level.OK, ""), Status("b", Level.ERROR, ""), Status("c", Level.WARN, "")]
    assert worst(statuses) is Level.ERROR
    assert worst([*statuses, Status("d", Level.STALE, "")]) is Level.STALE
    assert worst([]) is Level.OK


def test_status_text_is_one_bounded_line() -> None:
    status = Status("x", Level.OK, "a\nb\t c" + "z" * 2000, {"k": "v\r\n" + "y" * 2000})
    assert "\n" not in status.message and status.message.startswith("a b c")
    assert len(status.message) == MAX_TEXT_CHARS and len(status.values["k"]) == MAX_TEXT_CHARS


def test_fault_latch_error_names_the_fault_and_how_to_clear_it() -> None:
    latch = FaultLatch("ros2 service call /sim/clear_fault std_srvs/srv/Trigger")
    assert fault_latch_status(latch).level is Level.OK
    latch.latch(SkillCode.ESTOPPED, "the e-stop was pressed", "goto(kitchen)")
    latch.latch(SkillCode.ROBOT_FAULT, "then this", "")
    status = fault_latch_status(latch, "robot-1")
    assert status.level is Level.ERROR and status.hardware_id == "robot-1"
    assert "the e-stop was pressed" in status.message and "goto(kitchen)" in status.message
    assert status.values["code"] == SkillCode.ESTOPPED.label
    assert status.values["later faults"] == "1"
    assert status.values["clear with"] == latch.clear_hint
    latch.clear()
    cleared = fault_latch_status(latch)
    assert cleared.level is Level.OK and cleared.values["latched"] == "false"


@pytest.mark.parametrize(("ok", "level"), [(True, Level.OK), (False, Level.ERROR)])
def test_llm_status_follows_a_fresh_probe(ok: bool, level: Level) -> None:
    detail = "answered in 0.2 s" if ok else "cannot connect to http://127.0.0.1:9/v1: connection refused"
    status = llm_status(Probe(ok, "openai", detail), 2.0, 30.0)
    assert status.level is level
    assert detail in status.message and status.message.startswith("openai")
    assert status.values == {"backend": "openai", "reachable": str(ok).lower(), "last probe": "2.0 s ago"}


def test_llm_status_is_stale_before_a_probe_and_when_the_probe_is_old() -> None:
    assert llm_status(None, None, 30.0).level is Level.STALE
    old = llm_status(Probe(True, "replay", "transcript loaded"), 31.0, 30.0)
    assert old.level is Level.STALE and "31.0 s ago" in old.message and "transcript loaded" in old.message


def test_graph_status_reports_version_epoch_size_and_journal() -> None:
    status = graph_status(7, 12345, 40, "/var/journal")
    assert status.level is Level.OK and "version 7" in status.message
    assert status.values == {"version": "7", "epoch": "12345", "nodes": "40", "journal": "/var/journal"}
    assert graph_status(1, 1, 0, "").values["journal"] == "off"


def test_journal_status() -> None:
    assert journal_status("", "").level is Level.OK
    assert journal_status("/j", "").level is Level.OK
    failed = journal_status("/j", "cannot write the snapshot: disk full")
    assert failed.level is Level.ERROR and "disk full" in failed.message


def test_executor_status_warns_on_missing_servers() -> None:
    idle = executor_status("", [])
    assert idle.level is Level.OK and idle.values["task"] == "idle"
    busy = executor_status("make coffee", ["plan_task", "execute_skill"])
    assert busy.level is Level.WARN and "execute_skill, plan_task" in busy.message
    assert busy.values["task"] == "make coffee"
    claim = "2 nodes offer '/describe_skills': /helper_rogue, /sim_skill_server"
    rival = executor_status("", ["plan_task"], [claim])
    assert rival.level is Level.ERROR and claim in rival.message and rival.values["rival servers"] == claim


def test_link_status_down_level() -> None:
    assert link_status("base link", True, "up").level is Level.OK
    assert link_status("base link", False, "lost").level is Level.ERROR
    assert link_status("base link", False, "not yet", down_level=Level.WARN).level is Level.WARN


def test_lifecycle_status() -> None:
    assert lifecycle_status("active", "").level is Level.OK
    waiting = lifecycle_status("unconfigured", "")
    assert waiting.level is Level.WARN and waiting.values == {"state": "unconfigured"}
    refused = lifecycle_status("inactive", "planner: cannot activate: ollama at http://127.0.0.1:9 cannot connect")
    assert refused.level is Level.ERROR and "cannot activate" in refused.message
