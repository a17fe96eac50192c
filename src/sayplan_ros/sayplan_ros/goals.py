"""How every action server of the stack ends a goal, and the signals its waits are woken by (never a poll).

`finish_goal` is the one end of an executing goal: CANCELED when the work ended canceled and the goal's cancel was
accepted, SUCCEEDED when it succeeded, ABORTED otherwise (README: "An accepted cancel always ends as CANCELED").

rclpy marks a goal CANCELING only once the cancel callback returned, and the callback is where the work is told to
stop: the work can end before the mark, and ending then would abort a goal whose cancel was accepted.
`CancelMarks` lets the goal wait for the mark: rclpy publishes every change of a goal's state on the action's
status topic, so the server listens to its own status and sets the goal's event when it reads CANCELING.

`StopEvent` is a threading.Event that also calls back when set, and `Wakeup` resolves the future a coroutine awaits
from any thread (through a guard condition, so the executor wakes): together they let a skill wait for a graph
version, a worker or a stop without looking again every few milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from action_msgs.msg import GoalStatus, GoalStatusArray
from rclpy.action.server import ServerGoalHandle
from rclpy.node import Node
from rclpy.qos import qos_profile_action_status_default
from rclpy.task import Future

from sayplan_ros.clocks import steady_timer

#: How long a goal whose cancel was accepted waits for rclpy to mark it CANCELING before it ends, seconds.
CANCEL_SETTLE_MAX_S = 1.0

_MARKED = (GoalStatus.STATUS_CANCELING, GoalStatus.STATUS_CANCELED)
T = TypeVar("T")


def finish_goal(handle: ServerGoalHandle, success: bool, canceled: bool) -> str:
    """End `handle`: CANCELED when the work ended `canceled` and the goal's cancel was accepted, SUCCEEDED on
    `success`, else ABORTED. Returns the end state's name (for the log)."""
    if canceled and handle.is_cancel_requested:
        handle.canceled()
        return "canceled"
    if success:
        handle.succeed()
        return "succeeded"
    handle.abort()
    return "aborted"


class StopEvent(threading.Event):
    """A threading.Event (threads wait on it) that also calls the callbacks registered with `on_set` (a
    coroutine's wakeup) when it is set; a callback registered after the set is called at once."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks_lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._callbacks_lock:
            super().set()
            callbacks, self._callbacks = self._callbacks, []  # each is called once
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` once the event is set; returns the function that unregisters it."""
        return call_when(self._callbacks_lock, self._callbacks, callback, self.is_set, callback)


def call_when(
    lock: threading.Lock, waiting: list[T], entry: T, now: Callable[[], bool], callback: Callable[[], None]
) -> Callable[[], None]:
    """Keep `entry` in `waiting` (under `lock`) for its owner to call back later, unless `now()` holds (checked
    under the lock): then `callback` runs at once. Returns the function that takes the entry out again."""
    with lock:
        at_once = now()
        if not at_once:
            waiting.append(entry)
    if at_once:
        callback()

    def remove() -> None:
        with lock:
            if entry in waiting:
                waiting.remove(entry)

    return remove


class Wakeup:
    """One wait of a coroutine on an executor: `set()` (from any thread) or `timeout_s` ends `wait`. The set
    triggers a guard condition whose callback, on an executor thread, resolves the awaited future, so the
    executor wakes whichever thread set it. Made for one wait; `wait` destroys the guard and the timer."""

    def __init__(self, node: Node, group: Any = None) -> None:
        self._node = node
        self._group = group
        self._future: Future = Future()
        self._lock = threading.Lock()  # a set never triggers a guard condition that close destroyed
        self._guard: Any = node.create_guard_condition(self._fire, callback_group=group)

    def set(self) -> None:
        with self._lock:
            if self._guard is not None:
                self._guard.trigger()

    def _fire(self) -> None:
        if not self._future.done():
            self._future.set_result(True)

    async def wait(self, timeout_s: float | None) -> None:
        """Until `set()`, or `timeout_s` passed (None: no timeout; the setter is bounded itself)."""
        holder: list[Any] = []

        def expire() -> None:
            if holder:
                holder[0].cancel()
            self._fire()

        if timeout_s is not None:
            holder.append(steady_timer(self._node, max(timeout_s, 0.001), expire, self._group))
        try:
            await self._future
        finally:
            if holder:
                self._node.destroy_timer(holder[0])
            self.close()

    def close(self) -> None:
        """Destroy the guard condition (a wakeup that was never waited on, too); a later `set` does nothing."""
        with self._lock:
            guard, self._guard = self._guard, None
        if guard is not None:
            self._node.destroy_guard_condition(guard)


class CancelMarks:
    """Tells an action server's goals when rclpy has marked them CANCELING (see the module docstring): the
    server's own status topic, read by a subscription in the server's node. `on_mark` is called whenever a goal
    is seen CANCELING (a blocked wait whose stop condition is `is_cancel_requested` then looks again)."""

    def __init__(self, node: Node, action: str, group: Any = None, on_mark: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._on_mark = on_mark
        self._goals: dict[bytes, tuple[threading.Event, list[Callable[[], None]]]] = {}
        node.create_subscription(
            GoalStatusArray,
            f"{action}/_action/status",
            self._on_status,
            qos_profile_action_status_default,
            callback_group=group,
        )

    def _on_status(self, msg: GoalStatusArray) -> None:
        woken: list[Callable[[], None]] = []
        with self._lock:
            for status in msg.status_list:
                if status.status not in _MARKED:
                    continue
                if self._on_mark is not None and status.status == GoalStatus.STATUS_CANCELING:
                    woken.append(self._on_mark)
                entry = self._goals.get(bytes(status.goal_info.goal_id.uuid))
                if entry is not None and not entry[0].is_set():
                    entry[0].set()
                    woken.extend(entry[1])
        for callback in woken:
            callback()

    def _watch(self, handle: ServerGoalHandle, callback: Callable[[], None] | None) -> threading.Event:
        key = bytes(handle.goal_id.uuid)
        with self._lock:
            entry = self._goals.setdefault(key, (threading.Event(), []))
            if callback is not None:
                entry[1].append(callback)
        if handle.is_cancel_requested:  # marked before the watch began: its status may have been read already
            entry[0].set()
        return entry[0]

    def _forget(self, handle: ServerGoalHandle) -> None:
        with self._lock:
            self._goals.pop(bytes(handle.goal_id.uuid), None)

    def wait(self, handle: ServerGoalHandle, timeout_s: float = CANCEL_SETTLE_MAX_S) -> bool:
        """Block this goal's thread (never an executor callback) until `handle` is marked CANCELING, at most
        `timeout_s`; True when it is."""
        try:
            self._watch(handle, None).wait(timeout_s)
        finally:
            self._forget(handle)
        return bool(handle.is_cancel_requested)

    async def until(
        self, node: Node, group: Any, handle: ServerGoalHandle, timeout_s: float = CANCEL_SETTLE_MAX_S
    ) -> bool:
        """`wait` for a coroutine on an executor: the executor thread is free meanwhile."""
        wakeup = Wakeup(node, group)
        try:
            if not self._watch(handle, wakeup.set).is_set():
                await wakeup.wait(timeout_s)
        finally:
            self._forget(handle)
            wakeup.close()
        return bool(handle.is_cancel_requested)
