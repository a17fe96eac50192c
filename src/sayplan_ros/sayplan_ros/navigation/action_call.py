"""One goal on a robot's action server (Nav2, a trajectory controller, a gripper), awaited inside the node's executor.

A skill server's `run_skill` is a coroutine on the node's executor, so it must never
block a thread: the goal is sent with `send_goal_async` and its futures are awaited;
a one-shot timer bounds each wait. `cancel()` may come from any thread (the skill
server's cancel callback): it cancels the goal now, or right after the server accepts
it if the request is still in flight. `stop_and_wait()` is for a plain thread (the
shutdown path): it cancels and waits, bounded, until the goal has ended.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.node import Node
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

from sayplan_ros.clocks import steady_timer
from sayplan_ros.server_watch import SERVER_CHECK_S, ServerWatch

#: How often a missing action server is looked for while waiting for it to appear (discovery has no event).
DISCOVERY_POLL_S = 0.05
#: How long a server may take to confirm a cancel before the goal is given up (a crashed server never will), when
#: the caller sets no deadline of its own.
CANCEL_GRACE_S = 5.0
#: The terminal statuses: only a result with one of them ends a goal. A result with STATUS_UNKNOWN (0) comes from a
#: server that does not know the goal (another server of the same action name, or one that restarted), never from
#: the one that runs it: the robot may still be moving.
TERMINAL_STATUSES = frozenset({GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_ABORTED})


async def wait_for(node: Node, future: Future, timeout_s: float, group: Any = None) -> bool:
    """True once `future` is done, False after `timeout_s`; woken by the future's callback or a timer, no polling."""
    if future.done():
        return True
    waiter: Future = Future()

    def finish(_: Any = None) -> None:
        if not waiter.done():
            waiter.set_result(True)

    timer = steady_timer(node, max(timeout_s, 0.001), finish, group)
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
    `problem` is set (and status 0) when the goal never ran: no server, refused, or no answer. `timed_out`: the goal
    outlived its deadline and was canceled. `unconfirmed`: a cancel the server never confirmed (status CANCELED,
    `problem` says so): the robot may still be moving. `lost`: the server that accepted the goal went away (died or
    restarted) before it ended it (`problem` says so): no result will come, and what the robot did is unknown."""

    status: int
    result: Any = None
    problem: str = ""
    timed_out: bool = False
    unconfirmed: bool = False
    lost: bool = False


#: How often a goal's wait looks at its deadlines (a timer wakes it; the result's own callback wakes it at once).
DEADLINE_CHECK_S = 0.25


class ActionCall:
    """Send one goal to `client` and await its result (see the module docstring).

    Deadlines, each its own: `server_wait_s` for the server to appear and to accept the goal (a goal accepted after
    that is canceled the moment its acceptance arrives), `result_timeout_s` for the goal itself (then it is canceled
    and the result says `timed_out`), `cancel_timeout_s` for the server to confirm a cancel (its result arriving).
    While it waits, the server that accepted the goal is watched (sayplan_ros.server_watch): once it is gone the
    goal ends at once, `lost`, instead of at a deadline.
    """

    def __init__(self, node: Node, client: ActionClient, what: str, group: Any = None) -> None:
        self._node = node
        self._client = client
        self._what = what
        self._group = group
        self._lock = threading.Lock()
        self._handle: Any = None
        #: the goal's id, chosen here before it is sent: a node going away before the acceptance arrives can still
        #: name the goal in a cancel
        self._goal_id: UUID | None = None
        self._cancel = False
        self._cancel_sent_at: float | None = None
        #: Set once this goal cannot move the robot: never sent, refused, or a result with a terminal status arrived.
        self._ended = threading.Event()
        #: A result answered without a terminal status (see TERMINAL_STATUSES): asked for again with the next cancel.
        self._unanswered = False

    async def run(
        self,
        goal: Any,
        server_wait_s: float,
        sleep: Callable[[float], Awaitable[None]],
        feedback: Callable[[Any], None] | None = None,
        result_timeout_s: float | None = None,
        cancel_timeout_s: float = CANCEL_GRACE_S,
    ) -> CallResult:
        sent_goal = False
        try:
            name = self._client._action_name
            waited = 0.0
            while not self._client.server_is_ready():
                if waited >= server_wait_s:
                    return CallResult(0, None, f"no {self._what} action server on '{name}' after {server_wait_s:g} s")
                if self.cancel_requested:
                    return CallResult(0, None, "canceled before the goal was sent")
                await sleep(DISCOVERY_POLL_S)
                waited += DISCOVERY_POLL_S
            if self.cancel_requested:
                return CallResult(0, None, "canceled before the goal was sent")
            with self._lock:
                self._goal_id = UUID(uuid=list(uuid.uuid4().bytes))
            sent = self._client.send_goal_async(
                goal,
                feedback_callback=(lambda msg: feedback(msg.feedback)) if feedback else None,
                goal_uuid=self._goal_id,
            )
            sent_goal = True
            if not await wait_for(self._node, sent, server_wait_s, self._group):
                sent.add_done_callback(self._late_answer)
                return CallResult(
                    0, None, f"the {self._what} server on '{name}' did not answer the goal in {server_wait_s:g} s"
                )
            handle = sent.result()
            if handle is None or not handle.accepted:
                self._ended.set()
                return CallResult(0, None, f"the {self._what} server on '{name}' rejected the goal")
            result = self._track(handle)
            watch = ServerWatch(self._node, name, self._what)
            started = checked = time.monotonic()
            timed_out = False
            while True:
                now = time.monotonic()
                if now - checked >= SERVER_CHECK_S and not result.done():
                    checked = now
                    if watch.check():  # nothing will end this goal now: it is over for this node
                        self._ended.set()
                        return CallResult(0, None, f"{watch.lost} ({name})", timed_out, lost=True)
                with self._lock:
                    cancel_sent_at = self._cancel_sent_at
                if cancel_sent_at is not None:
                    left = cancel_sent_at + cancel_timeout_s - now
                    if left <= 0.0:
                        return CallResult(
                            GoalStatus.STATUS_CANCELED,
                            None,
                            f"the {self._what} server did not confirm the cancel within {cancel_timeout_s:g} s: "
                            "the robot may still be moving",
                            timed_out,
                            unconfirmed=True,
                        )
                elif result_timeout_s is not None and now - started >= result_timeout_s:
                    timed_out = True
                    self.cancel()
                    continue
                else:
                    left = DEADLINE_CHECK_S if result_timeout_s is None else started + result_timeout_s - now
                if await wait_for(self._node, result, min(left, DEADLINE_CHECK_S), self._group):
                    break
            wrapped = result.result()
            if wrapped is None:
                return CallResult(0, None, f"the {self._what} server on '{name}' returned no result")
            return CallResult(int(wrapped.status), wrapped.result, timed_out=timed_out)
        finally:
            if not sent_goal:
                self._ended.set()

    def _track(self, handle: Any) -> Future:
        """Remember an accepted goal and ask for its result; a cancel asked for before acceptance is sent now."""
        result = self._ask_result(handle)
        with self._lock:
            self._handle = handle
            cancel_now = self._cancel and self._cancel_sent_at is None
            if cancel_now:
                self._cancel_sent_at = time.monotonic()
        if cancel_now:
            handle.cancel_goal_async()
        return result

    def _ask_result(self, handle: Any) -> Future:
        result: Future = handle.get_result_async()
        result.add_done_callback(self._result_arrived)
        return result

    def _result_arrived(self, future: Future) -> None:
        """Only a terminal status ends the goal: an UNKNOWN answer (a server that does not know it) is not a stop."""
        wrapped = None if future.cancelled() else future.result()
        if wrapped is not None and int(wrapped.status) in TERMINAL_STATUSES:
            self._ended.set()
            return
        with self._lock:
            self._unanswered = True

    def _late_answer(self, sent: Future) -> None:
        """The server accepted after `server_wait_s`, when the skill had already given up: cancel that goal."""
        handle = sent.result()
        if handle is None or not handle.accepted:
            self._ended.set()
            return
        self.cancel()
        self._track(handle)

    @property
    def cancel_requested(self) -> bool:
        with self._lock:
            return self._cancel

    @property
    def moving(self) -> bool:
        """Whether this goal may still move the robot: sent, and neither refused nor ended."""
        return not self._ended.is_set()

    def cancel(self, again: bool = False) -> None:
        """Ask the server to cancel the goal (now, or as soon as it is accepted). Never waits. With `again`, the
        request is sent even if one went out already (it may have been lost; the goal has not ended)."""
        with self._lock:
            self._cancel = True
            handle = self._handle
            send = handle is not None and (self._cancel_sent_at is None or (again and not self._ended.is_set()))
            if send and self._cancel_sent_at is None:
                self._cancel_sent_at = time.monotonic()
            ask = send and again and self._unanswered
            if ask:
                self._unanswered = False
        if send:
            handle.cancel_goal_async()
        if ask:  # the last result answer was not the goal's end: ask the servers again, so the right one can say
            self._ask_result(handle)

    def cancel_unanswered(self) -> None:
        """For a node going away: a goal sent whose acceptance has not arrived (it never will once the node is
        gone) is canceled by its id now, instead of when the acceptance would have come. Never waits. Best effort:
        a cancel that reaches the server before the goal is accepted there names a goal it does not know yet."""
        with self._lock:
            goal_id = self._goal_id if self._handle is None and not self._ended.is_set() else None
        if goal_id is not None:
            accepted = self._client._action_type.Impl.SendGoalService.Response(accepted=True)
            ClientGoalHandle(self._client, goal_id, accepted).cancel_goal_async()

    def stop_and_wait(self, timeout_s: float) -> bool:
        """Cancel the goal and wait (a plain thread, never an executor callback: the executor completes the result)
        at most `timeout_s` for it to end; True when it cannot move the robot any more."""
        if self._ended.is_set():
            return True
        self.cancel(again=True)  # a cancel sent earlier may have been lost
        return self._ended.wait(max(0.0, timeout_s))


class LatestGoal:
    """The latest goal a client sent, kept after its call returned: a goal whose cancel was never confirmed may
    still move the robot, so `clear_fault`, a shutdown and `destroy` look at it (Nav2 legs, arm and gripper goals)."""

    def __init__(self) -> None:
        self.call: ActionCall | None = None

    @property
    def moving(self) -> bool:
        call = self.call
        return call is not None and call.moving

    def cancel_again(self) -> None:
        """Send its cancel once more (a cancel request may have been lost)."""
        call = self.call
        if call is not None and call.moving:
            call.cancel(again=True)

    def stop_and_wait(self, timeout_s: float) -> bool:
        """Cancel it (again) and wait, bounded, for its end; True when it no longer moves (or there is none)."""
        call = self.call
        return call is None or call.stop_and_wait(timeout_s)

    def cancel_quietly(self) -> None:
        """Best effort while the node goes: the request is sent, its answer not awaited (DDS may be going down)."""
        call = self.call
        if call is not None and call.moving:
            with contextlib.suppress(Exception):
                call.cancel()
            with contextlib.suppress(Exception):  # even when the cancel above raised
                call.cancel_unanswered()
