"""One goal at a time: the policy every action server of the stack follows.

A goal that arrives while another runs is rejected at acceptance (the caller may
cancel the running one and resend), so a robot never runs two skills or two plans
at once and a result never answers the wrong goal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rclpy.action import GoalResponse


class SingleGoal:
    """Accepts a goal only when none is running; `release()` when the goal's execute callback ends."""

    def __init__(self, logger: Any, action: str) -> None:
        self._lock = threading.Lock()
        self._busy = False
        self._idle = threading.Event()  # set while no goal holds the slot: what a stop waits on
        self._idle.set()
        self._logger = logger
        self._action = action

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._busy

    def accept(self, goal: Any, refuse: Callable[[Any], str | None] = lambda _goal: None) -> GoalResponse:
        """A goal callback: reject when busy or when `refuse(goal)` names a reason, else accept and hold the slot."""
        reason = refuse(goal)
        with self._lock:
            if reason is None and self._busy:
                reason = "another goal is running"
            if reason is None:
                self._busy = True
                self._idle.clear()
                return GoalResponse.ACCEPT
        self._logger.warning(f"rejecting {self._action} goal: {reason}")
        return GoalResponse.REJECT

    def release(self) -> None:
        with self._lock:
            self._busy = False
            self._idle.set()

    def wait_idle(self, timeout_s: float) -> bool:
        """Block a plain thread (never an executor callback) until no goal holds the slot, at most `timeout_s`;
        True when none does."""
        return self._idle.wait(max(0.0, timeout_s))
