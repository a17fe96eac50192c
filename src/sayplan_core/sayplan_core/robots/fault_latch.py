"""The fault latch every robot's skill server keeps: after a fault nothing moves until an operator clears it.

A robot fault (an e-stop seen, motors cut, the lease lost, something stuck in the gripper, a stop that did not
confirm, a protocol error mid-motion, an exception in the backend) leaves the robot in a state nobody has checked.
Retrying, or letting the planner route around it, would move a robot that may be unsafe to move. So the first
such fault is latched; every later skill is refused before the robot moves (SkillCode.FAULT_LATCHED, naming the
cause), and only an operator clears it, through the skill server's `~/clear_fault` service, after the backend has
re-checked the robot. Nothing here re-powers, stands or moves a robot.

Clearing (issue 38): one robot event often latches more than one fault (a skill ends `estopped` on the base's
`Error: Emergency stop pressed`, and its `Estop pressed` broadcast, read a few tens of milliseconds later, latches a
second). Every latched fault gets a serial number; the clear service takes a `mark` before it starts the robot check,
and `clear(mark)` forgets every fault latched up to the mark (the check looked at the robot after all of them), but
nothing when a fault was latched after the mark: that one came while the robot was being checked, and nobody has
looked at it yet.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sayplan_core.execution.skills import SkillResult
from sayplan_core.outcomes import SkillCode

#: Later faults kept beside the first (a fault storm must not grow memory).
MAX_LATER_FAULTS = 8
#: Longest cause kept, characters (a robot's message is untrusted text).
MAX_CAUSE_CHARS = 500


@dataclass(frozen=True)
class Fault:
    """One latched fault: its code, what caused it, during which skill, and when (wall clock, for people)."""

    code: SkillCode
    cause: str
    step: str = ""
    at: float = 0.0
    serial: int = 0  # the latch's count of faults when this one was latched (see FaultLatch.mark)

    def describe(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.at)) if self.at else "start-up"
        during = f" during {self.step}" if self.step else ""
        return f"{self.code.label}{during} at {when}: {self.cause}"


@dataclass(frozen=True)
class Check:
    """What a backend found when it re-checked the robot for `clear_fault`: `ok` only when it is safe to move."""

    ok: bool
    found: str


class FaultLatch:
    """Thread-safe: skills, cancel callbacks, robot watchdogs and the clear service all touch it."""

    def __init__(self, clear_hint: str) -> None:
        self._lock = threading.Lock()
        self._fault: Fault | None = None
        self._later: list[Fault] = []
        self._serial = 0  # faults latched since the node started (the ones not kept beside the first included)
        self.clear_hint = clear_hint  # how an operator clears it, e.g. the `ros2 service call` line

    def latch(self, code: SkillCode, cause: str, step: str = "") -> Fault:
        """Latch a fault (the first one stays the reason; later ones are kept beside it, bounded, and counted
        even when not kept)."""
        if not code.robot_fault or code is SkillCode.FAULT_LATCHED:
            raise ValueError(f"only a robot fault can be latched, not {code.label}")
        cause = " ".join(cause.split())[:MAX_CAUSE_CHARS] or code.label
        with self._lock:
            self._serial += 1
            fault = Fault(code, cause, step, time.time(), self._serial)
            if self._fault is None:
                self._fault = fault
            elif len(self._later) < MAX_LATER_FAULTS:
                self._later.append(fault)
            return self._fault

    @property
    def fault(self) -> Fault | None:
        with self._lock:
            return self._fault

    @property
    def later(self) -> list[Fault]:
        with self._lock:
            return list(self._later)

    def faults(self, since: int = 0) -> list[Fault]:
        """The kept faults, first then later ones; with `since` (a `mark`), only those latched after it."""
        with self._lock:
            kept = ([self._fault] if self._fault is not None else []) + self._later
        return [f for f in kept if f.serial > since]

    def mark(self) -> int:
        """Where the latch stands now: taken before the robot check of `clear_fault`, handed back to `clear`."""
        with self._lock:
            return self._serial

    def clear(self, mark: int | None = None) -> list[Fault] | None:
        """Forget every latched fault (only after an operator asked and the robot checked out); returns them, first
        then later ones (empty when none was latched). With `mark` (taken before the robot check began), only if no
        fault was latched since: one that came during the check has not been looked at, so None is returned and
        everything stays latched."""
        with self._lock:
            if mark is not None and self._serial != mark:
                return None
            cleared = ([self._fault] if self._fault is not None else []) + self._later
            self._fault, self._later = None, []
            return cleared

    def note(self) -> str:
        """The sentence a fault's result ends with: latched, and how to clear it."""
        return f"latched: the robot will not move again until an operator clears it ({self.clear_hint})"

    def refusal(self, step: str) -> SkillResult | None:
        """The refusal of `step` while a fault is latched; None when none is."""
        fault = self.fault
        if fault is None:
            return None
        more = len(self.later)
        also = f" (and {more} later fault(s))" if more else ""
        return SkillResult(
            False,
            SkillCode.FAULT_LATCHED,
            f"{step} refused before the robot moved: fault latched: {fault.describe()}{also}; "
            f"the robot will not move again until an operator clears it ({self.clear_hint})",
        )
