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
    later = latch.later
    assert latch.clear() == [first, *later] and latch.fault is None and latch.later == []


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
    latch.latch(SkillCode.ESTOPPED, "e-stop pressed")
    mark = latch.mark()  # the operator's check begins
    latch.latch(SkillCode.NOT_POWERED, "motors cut")  # a watchdog, while clear_fault's check ran
    assert latch.clear(mark) is None and latch.fault is not None and len(latch.later) == 1
    assert [f.cause for f in latch.faults(since=mark)] == ["motors cut"]
    assert [f.cause for f in latch.clear(latch.mark()) or []] == ["e-stop pressed", "motors cut"]
    assert latch.fault is None and latch.later == []


def test_faults_latched_before_the_check_are_cleared_by_one_check() -> None:
    """Issue 38 #1: a skill ends estopped, then the base's e-stop broadcast latches a second fault; the old latch
    refused every clear while a later fault was kept, so only a restart freed the robot."""
    latch = FaultLatch("clear it")
    first = latch.latch(SkillCode.ESTOPPED, "Error: Emergency stop pressed", "goto(kitchen)")
    latch.latch(SkillCode.ESTOPPED, "the base broadcast 'Estop pressed' between skills", "between skills")
    cleared = latch.clear(latch.mark())
    assert cleared is not None and [f.cause for f in cleared] == [
        "Error: Emergency stop pressed",
        "the base broadcast 'Estop pressed' between skills",
    ]
    assert cleared[0] == first and latch.fault is None and latch.later == [] and latch.refusal("x") is None


#: One step of the property test: latch a fault, take the operator's mark (a check begins), or clear with the
#: mark taken last (a check that passed).
Op = tuple[str, SkillCode]


@settings(max_examples=120, derandomize=True, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("latch"), st.sampled_from(FAULTS)),
            st.tuples(st.just("mark"), st.just(SkillCode.ROBOT_FAULT)),
            st.tuples(st.just("clear"), st.just(SkillCode.ROBOT_FAULT)),
        ),
        max_size=40,
    )
)
def test_a_passed_check_clears_exactly_the_faults_latched_before_it_began(ops: list[Op]) -> None:
    """The rule against a model: a clear with a mark succeeds exactly when no fault was latched since the mark,
    and then returns every fault kept since the last clear (first, then later ones, bounded) and leaves nothing;
    a refused clear changes nothing. Once the faults stop, one mark-and-clear always frees the robot."""
    latch = FaultLatch("clear it")
    kept: list[SkillCode] = []  # the model: codes of the kept faults, in order
    since_mark: int | None = None  # faults latched since the last mark (None: no mark taken yet)
    for op, code in ops:
        if op == "latch":
            latch.latch(code, f"{code.label} fault")
            if len(kept) <= MAX_LATER_FAULTS:
                kept.append(code)
            since_mark = None if since_mark is None else since_mark + 1
        elif op == "mark":
            mark, since_mark = latch.mark(), 0
        elif since_mark is not None:
            before = (latch.fault, latch.later)
            cleared = latch.clear(mark)
            if since_mark:
                assert cleared is None and (latch.fault, latch.later) == before
            else:
                assert cleared is not None and [f.code for f in cleared] == kept
                assert latch.fault is None and latch.later == [] and latch.faults() == []
                kept = []
        assert [f.code for f in latch.faults()] == kept
        assert (latch.refusal("goto(pose8)") is None) == (not kept)
    cleared = latch.clear(latch.mark())  # no fault comes any more: one check that passes frees the robot
    assert cleared is not None and [f.code for f in cleared] == kept and latch.fault is None
