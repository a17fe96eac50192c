"""What the robot last said of its e-stop, motors and gripper, kept by the session as it reads them and read by
`health` for /diagnostics without asking the robot."""

from __future__ import annotations

import threading
import time


class SpotSeen:
    """What the robot last said of its e-stop, motors and gripper, with the steady time: read by `health` (for
    /diagnostics), which must not ask the robot (every call here blocks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[bool, float]] = {}
        self._check_in: tuple[str, float] | None = None

    def note(self, what: str, value: bool) -> bool:
        with self._lock:
            self._seen[what] = (value, time.monotonic())
        return value

    def check_in_failed(self, why: str) -> None:
        """A lease check-in did not reach the robot (the keep-alive retries): the link may be down."""
        with self._lock:
            self._check_in = (why, time.monotonic())

    def check_in_failure(self) -> tuple[str, float] | None:
        """(why, age in seconds) of the last failed lease check-in, or None."""
        with self._lock:
            failed = self._check_in
        return None if failed is None else (failed[0], time.monotonic() - failed[1])

    def get(self, what: str) -> tuple[bool, float] | None:
        """(value, age in seconds), or None when never seen."""
        with self._lock:
            seen = self._seen.get(what)
        return None if seen is None else (seen[0], time.monotonic() - seen[1])
