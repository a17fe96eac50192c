"""One goal on a robot's action server (Nav2, a trajectory controller, a gripper), awaited inside the node's executor.

A skill server's `run_skill` is a coroutine on the node's executor, so it must never
block a thread: the goal is sent with `send_goal_async` and its futures are awaited;
a one-shot timer bounds each wait. `cancel()` may come from any thread (the skill
server's cancel callback): it cancels the goal now, or right after the server accepts
it if the request is still in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.task import Future

#: How often a missing action server is looked for while waiting for it to appear (discovery has no event).
DISCOVERY_POLL_S = 0.05
#: How long a server may take to confirm a cancel before the goal is given up (a crashed server never will).
CANCEL_GRACE_S = 5.0
#: action_msgs/GoalStatus.STATUS_CANCELED
STATUS_CANCELED = 5


async def wait_for(node: Node, future: Future, timeout_s: float, group: Any = None) -> bool:
    """True once `future` is done, False after `timeout_s`; woken by the future's callback or a timer, no polling."""
    if future.done():
        return True
    waiter: Future = Future()

    def finish(_: Any = None) -> None:
        if not waiter.done():
            waiter.set_result(True)

    timer = node.create_timer(max(timeout_s, 0.001), finish, callback_group=group)
    future.add_done_callback(finish)
    try:
        await waiter
    finally:
        node.destroy_timer(timer)
    return bool(future.done())


async def sleep(node: Node, seconds: float, group: Any = None) -> None:
    """Wait on a one-shot timer: the executor thread is free meanwhile."""
    await wait_for(node, Future(), seconds, group)


@dataclass(frozen=True)
class CallResult:
    """How a goal ended: `status` is an action_msgs/GoalStatus value, `result` the action's result message.
    `problem` is set (and status 0) when the goal never ran: no server, refused, or no answer."""

    status: int
    result: Any = None
    problem: str = ""


class ActionCall:
    """Send one goal to `client` and await its result (see the module docstring)."""

    def __init__(self, node: Node, client: ActionClient, what: str, group: Any = None) -> None:
        self._node = node
        self._client = client
        self._what = what
        self._group = group
        self._lock = threading.Lock()
        self._handle: Any = None
        self._cancel = False

    async def run(
        self,
        goal: Any,
        server_wait_s: float,
        sleep: Callable[[float], Awaitable[None]],
        feedback: Callable[[Any], None] | None = None,
    ) -> CallResult:
        name = self._client._action_name
        waited = 0.0
        while not self._client.server_is_ready():
            if waited >= server_wait_s:
                return CallResult(0, None, f"no {self._what} action server on '{name}' after {server_wait_s:g} s")
            if self.cancel_requested:
                return CallResult(0, None, "canceled before the goal was sent")
            await sleep(DISCOVERY_POLL_S)
            waited += DISCOVERY_POLL_S
        sent = self._client.send_goal_async(
            goal, feedback_callback=(lambda msg: feedback(msg.feedback)) if feedback else None
        )
        if not await wait_for(self._node, sent, server_wait_s, self._group):
            return CallResult(
                0, None, f"the {self._what} server on '{name}' did not answer the goal in {server_wait_s:g} s"
            )
        handle = sent.result()
        if handle is None or not handle.accepted:
            return CallResult(0, None, f"the {self._what} server on '{name}' rejected the goal")
        with self._lock:
            self._handle = handle
            cancel_now = self._cancel
        if cancel_now:
            handle.cancel_goal_async()
        result = handle.get_result_async()
        canceled_at: float | None = None
        while not await wait_for(self._node, result, 1.0, self._group):
            if self.cancel_requested:
                canceled_at = canceled_at or time.monotonic()
                if time.monotonic() - canceled_at > CANCEL_GRACE_S:
                    with self._lock:
                        self._handle = None
                    return CallResult(STATUS_CANCELED, None, f"the {self._what} server never confirmed the cancel")
        with self._lock:
            self._handle = None
        wrapped = result.result()
        if wrapped is None:
            return CallResult(0, None, f"the {self._what} server on '{name}' returned no result")
        return CallResult(int(wrapped.status), wrapped.result)

    @property
    def cancel_requested(self) -> bool:
        with self._lock:
            return self._cancel

    def cancel(self) -> None:
        """Ask the server to cancel the goal (now, or as soon as it is accepted)."""
        with self._lock:
            self._cancel = True
            handle = self._handle
        if handle is not None:
            handle.cancel_goal_async()
