"""The fault latch itself (sayplan_core.robots.fault_latch): what it keeps, what it refuses, and its bounds."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.fault_latch import MAX_CAUSE_CHARS, MAX_LATER_FAULTS, FaultLatch

FAULTS = [c for c in SkillCode if c.latches]


def test_which_codes_latch() -> None:
    """Every robot fault latches (the 300 range, by the interface's own comment); nothing the planner or the caller
    can act on does, and a refusal for an already latched fault does not latch it twice."""
    assert {c for c in SkillCode if c.latches} == {c for c in SkillCode if c.value >= 300} - {SkillCode.FAULT_LATCHED}
    latch = FaultLatch("clear it")
    for code in (SkillCode.GRASP_FAILED, SkillCode.CANCELED, SkillCode.INVALID_TARGET, SkillCode.FAULT_LATCHED):
        with pytest.raises(ValueError, match="only a robot fault"):
            latch.latch(code, "x")
    assert latch.fault is None and latch.refusal("goto(pose8)") is None


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FAULTS), st.text(max_size=800)), min_size=1, max_size=20))
def test_the_first_fault_is_the_reason_and_later_ones_are_bounded(faults: list[tuple[SkillCode, str]]) -> None:
    latch = FaultLatch("ros2 service call /robot/clear_fault std_srvs/srv/Trigger")
    for code, cause in faults:
        latch.latch(code, cause, "pickup(mug)")
    first = latch.fault
    assert first is not None and first.code is faults[0][0]
    assert len(first.cause) <= MAX_CAUSE_CHARS and "\n" not in first.cause
    assert [f.code for f in latch.later] == [c for c, _ in faults[1:]][:MAX_LATER_FAULTS]
    refusal = latch.refusal("goto(pose8)")
    assert refusal is not None and not refusal.success and refusal.code is SkillCode.FAULT_LATCHED
    assert refusal.message.startswith("goto(pose8) refused before the robot moved")
    assert first.code.label in refusal.message and "/robot/clear_fault" in refusal.message
    assert not refusal.update.upsert and not refusal.update.remove
    assert latch.clear() == first and latch.fault is None and latch.later == []


def test_concurrent_latches_keep_exactly_one_reason() -> None:
    latch = FaultLatch("clear it")
    threads = [threading.Thread(target=latch.latch, args=(SkillCode.ROBOT_FAULT, f"fault {i}")) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert latch.fault is not None and len(latch.later) == MAX_LATER_FAULTS


def test_a_fault_latched_while_the_robot_was_checked_is_not_cleared_unseen() -> None:
    latch = FaultLatch("clear it")
    checked = latch.latch(SkillCode.ESTOPPED, "e-stop pressed")
    latch.latch(SkillCode.NOT_POWERED, "motors cut")  # a watchdog, while clear_fault's check ran
    assert latch.clear(checked) is None and latch.fault is checked and len(latch.later) == 1
    assert latch.clear() is checked and latch.fault is None
    again = latch.latch(SkillCode.ROBOT_FAULT, "stuck")
    assert latch.clear(checked) is None and latch.fault is again  # not the fault that was checked
