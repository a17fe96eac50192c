"""The signals the action servers' waits are woken by (sayplan_ros.goals): a stop event that calls back, and a
wakeup a plain thread sets to end a coroutine's wait on the executor, with nothing left behind."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sayplan_ros.goals import StopEvent, Wakeup

pytestmark = pytest.mark.ros


def test_a_stop_event_calls_back_once_when_set_and_at_once_when_already_set() -> None:
    stop = StopEvent()
    calls: list[str] = []
    stop.on_set(lambda: calls.append("first"))
    forget = stop.on_set(lambda: calls.append("forgotten"))
    forget()
    assert calls == [] and not stop.is_set()
    setter = threading.Thread(target=stop.set)
    setter.start()
    assert stop.wait(5.0)  # still a threading.Event for the threads that wait on it
    setter.join()
    assert calls == ["first"]
    stop.set()  # a second set calls nobody again
    assert calls == ["first"]
    stop.on_set(lambda: calls.append("late"))
    assert calls == ["first", "late"]


def _await(ros: Any, node: Any, timeout_s: float, set_after_s: float | None) -> float:
    """Run one Wakeup.wait(timeout_s) as a coroutine on the executor, set from a plain thread after
    `set_after_s` (None: never); returns how long the wait took."""
    waited: list[float] = []
    wakeup = Wakeup(node)

    async def wait() -> None:
        started = time.monotonic()
        await wakeup.wait(timeout_s)
        waited.append(time.monotonic() - started)

    task = ros.executor.create_task(wait)
    if set_after_s is not None:
        threading.Timer(set_after_s, wakeup.set).start()
    ros.wait_for(task.done, timeout=30.0, what="the wait to end")
    return waited[0]


def test_a_wakeup_set_from_a_plain_thread_ends_the_wait_long_before_its_timeout(ros: Any) -> None:
    node = ros.node("waiter")
    guards, timers = len(list(node.guards)), len(list(node.timers))
    waited = _await(ros, node, timeout_s=20.0, set_after_s=0.3)
    assert 0.25 <= waited < 5.0, waited  # not before the set, and nowhere near the 20 s timeout
    assert len(list(node.guards)) == guards and len(list(node.timers)) == timers  # nothing left behind


def test_a_wakeup_nobody_sets_ends_at_its_timeout(ros: Any) -> None:
    node = ros.node("waiter")
    guards, timers = len(list(node.guards)), len(list(node.timers))
    waited = _await(ros, node, timeout_s=0.5, set_after_s=None)
    assert 0.45 <= waited < 5.0, waited
    assert len(list(node.guards)) == guards and len(list(node.timers)) == timers
