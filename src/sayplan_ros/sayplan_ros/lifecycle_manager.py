"""lifecycle_manager: brings the stack's managed nodes up in order and takes them down, as Nav2's manager does.

`node_names` (start-up order) are reached over DDS through their lifecycle services (`<node>/change_state`,
`<node>/get_state`), so the nodes may run in this process (`sayplan_stack`, the demo) or in others (the launch
file). With `autostart` (default true) it configures, then activates, each node as soon as it spins. When one
refuses, the nodes it brought up are taken back down (deactivated, cleaned up, in reverse order), it logs one
line naming the node and why (the node's own `~/transition_error`), and asks the program to end (exit 2): a
launch then goes down instead of running a stack that fails at the first goal.

Services: `~/manage_nodes` (sayplan_interfaces/ManageLifecycleNodes: STARTUP, PAUSE, RESUME, RESET, SHUTDOWN)
and `~/is_active` (std_srvs/Trigger: true once every node is active, until a PAUSE, RESET or SHUTDOWN).
A command checks where it leaves each node: a node found finalized at STARTUP, or unconfigured at RESUME, makes
it fail with a line naming the node (never "active" over a node that is not); a node found in the middle of a
transition another client started is waited for (up to `transition_timeout_s`) before anything is sent to it.

Lost answers: on a loaded machine a node's answer can be lost for good. rmw_fastrtps drops a service's response
when the service has not yet discovered the client's response reader 100 ms after the request came
(rmw_response.cpp, "client will not receive response"; rclpy only warns), although the client already saw the
service: right after `ros2 launch` starts six processes, discovery takes longer than that. So the questions that
change nothing (`get_state`, `~/transition_error`) are asked again every QUERY_RESEND_S within their bound. A
transition is sent once (always after an answered `get_state`, so discovery is mostly done by then); while its
answer is awaited the manager asks the node's state every QUERY_RESEND_S, and a node already in the transition's
goal state has taken it, whether or not its answer arrives.

Threads: every transition is sent from this node's own worker thread (a plain thread, never an executor
callback), and the answers arrive on a reentrant callback group; a service call waits on an event for the
worker. So the manager never holds an executor thread while a node in the same process needs one to answer.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.timer import Timer
from std_srvs.srv import Trigger

from sayplan_core.diagnostics import Status, manager_status
from sayplan_core.node_options import LifecycleManagerOptions
from sayplan_interfaces.srv import ManageLifecycleNodes
from sayplan_ros.clocks import steady_timer
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.lifecycle import AUTOSTART_DELAY_S
from sayplan_ros.parameters import declare_options
from sayplan_ros.runner import run_nodes

#: How long the manager waits for the answer to a question that changes nothing before asking again, seconds.
QUERY_RESEND_S = 2.0
#: How long a failed start-up waits for its ERROR on /diagnostics to reach every subscriber, seconds (and before
#: that, for a subscriber to be matched at all: the `monitor_wait_s` parameter).
ACKED_WAIT_S = 1.0

#: What each command does to one node, by the node's primary state: the transitions to send, in order.
_Table = dict[int, tuple[str, ...]]
_ACTIVE, _INACTIVE = State.PRIMARY_STATE_ACTIVE, State.PRIMARY_STATE_INACTIVE
_UNCONFIGURED, _FINALIZED = State.PRIMARY_STATE_UNCONFIGURED, State.PRIMARY_STATE_FINALIZED
_PLANS: dict[str, _Table] = {
    "startup": {_UNCONFIGURED: ("configure", "activate"), _INACTIVE: ("activate",)},
    "resume": {_INACTIVE: ("activate",)},
    "pause": {_ACTIVE: ("deactivate",)},
    "reset": {_ACTIVE: ("deactivate", "cleanup"), _INACTIVE: ("cleanup",)},
    "shutdown": {
        _ACTIVE: ("deactivate", "cleanup", "shutdown"),
        _INACTIVE: ("cleanup", "shutdown"),
        _UNCONFIGURED: ("shutdown",),
    },
}
#: The states a node may be left in by each command: a node found in any other (finalized before a startup,
#: unconfigured at a resume) makes the command fail with a line naming it, instead of a stack reported active.
_ENDS: dict[str, frozenset[int]] = {
    "startup": frozenset({_ACTIVE}),
    "resume": frozenset({_ACTIVE}),
    "pause": frozenset({_INACTIVE, _UNCONFIGURED}),
    "reset": frozenset({_UNCONFIGURED}),
    "shutdown": frozenset({_FINALIZED}),
}
_LABELS = {_UNCONFIGURED: "unconfigured", _INACTIVE: "inactive", _ACTIVE: "active", _FINALIZED: "finalized"}
#: What an operator can do about a node left in a state a command cannot take it from.
_HINTS = {
    _FINALIZED: "a finalized node cannot come back: restart its process",
    _UNCONFIGURED: "resume only activates inactive nodes: send STARTUP",
}
#: How often the manager asks the state of a node found in a transition (another client drives it), seconds.
SETTLE_POLL_S = 0.25
_TRANSITIONS = {
    "configure": Transition.TRANSITION_CONFIGURE,
    "activate": Transition.TRANSITION_ACTIVATE,
    "deactivate": Transition.TRANSITION_DEACTIVATE,
    "cleanup": Transition.TRANSITION_CLEANUP,
    "shutdown": Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,  # sent from unconfigured only (see _PLANS)
}
#: The primary state each transition ends in when it succeeds.
_GOALS = {
    "configure": State.PRIMARY_STATE_INACTIVE,
    "activate": State.PRIMARY_STATE_ACTIVE,
    "deactivate": State.PRIMARY_STATE_INACTIVE,
    "cleanup": State.PRIMARY_STATE_UNCONFIGURED,
    "shutdown": State.PRIMARY_STATE_FINALIZED,
}
_COMMANDS = {
    ManageLifecycleNodes.Request.STARTUP: "startup",
    ManageLifecycleNodes.Request.PAUSE: "pause",
    ManageLifecycleNodes.Request.RESUME: "resume",
    ManageLifecycleNodes.Request.RESET: "reset",
    ManageLifecycleNodes.Request.SHUTDOWN: "shutdown",
}


class ManagerError(RuntimeError):
    """A node did not take a transition: the message names the node and why."""


class _NothingSentError(ManagerError):
    """The command failed on a node before anything was sent to it (not there, still in another client's
    transition, or in a state the command cannot take it from): there is nothing of ours to take back down."""


@dataclass
class _Client:
    name: str
    change: Client
    get: Client
    error: Client


class LifecycleManager(Node):
    def __init__(self, node_name: str = "lifecycle_manager", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        from sayplan_ros.stack import managed_names  # the stack imports this module's name only, lazily

        options = declare_options(self, LifecycleManagerOptions)
        names = [n for n in options.node_names if n.strip()] or managed_names("sim")
        if len(set(names)) != len(names):
            raise ValueError(f"node_names lists a node twice: {', '.join(names)}")
        self._node_wait = options.node_wait_s
        self._transition_timeout = options.transition_timeout_s
        self._monitor_wait = options.monitor_wait_s
        self._group = ReentrantCallbackGroup()
        self._nodes = [
            _Client(
                name,
                self.create_client(ChangeState, f"{name}/change_state", callback_group=self._group),
                self.create_client(GetState, f"{name}/get_state", callback_group=self._group),
                self.create_client(Trigger, f"{name}/transition_error", callback_group=self._group),
            )
            for name in names
        ]
        self._active = False
        #: The last command the worker ran and how it ended, for /diagnostics.
        self._last: tuple[str, bool, str] | None = None
        #: Set when this manager asks the program to end (autostart failed): the one line the program prints.
        self.exit_reason: str | None = None
        #: Set once the autostart ended, either way; `startup_result` then says how.
        self.started = threading.Event()
        self.startup_result: tuple[bool, str] = (False, "not started")
        self._work: queue.Queue[tuple[str, threading.Event, list[tuple[bool, str]]] | None] = queue.Queue()
        self._closing = threading.Event()
        #: Held while a command is queued or the manager closes: no command is queued behind the worker's end.
        self._queue_lock = threading.Lock()
        self._worker = threading.Thread(target=self._serve_work, name="lifecycle_manager", daemon=True)
        self._worker.start()
        self.create_service(ManageLifecycleNodes, "~/manage_nodes", self._on_manage, callback_group=self._group)
        self.create_service(Trigger, "~/is_active", self._on_is_active, callback_group=self._group)
        self._autostart_timer: Timer | None = None
        if options.autostart:  # once this node spins (every node of its program exists)
            self._autostart_timer = steady_timer(self, AUTOSTART_DELAY_S, self._queue_autostart, self._group)
        else:
            self.startup_result = (False, "autostart is false: call ~/manage_nodes with STARTUP")
            self.started.set()
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)
        self.get_logger().info(f"managing {', '.join(names) or 'no nodes'}")

    def _diagnostics(self) -> list[Status]:
        return [manager_status([n.name for n in self._nodes], self._active, self._last)]

    def _queue_autostart(self) -> None:
        timer, self._autostart_timer = self._autostart_timer, None
        if timer is not None:
            self.destroy_timer(timer)
            self._work.put(("autostart", threading.Event(), []))

    # ------------------------------------------------------------------ services
    def _on_manage(
        self, request: ManageLifecycleNodes.Request, response: ManageLifecycleNodes.Response
    ) -> ManageLifecycleNodes.Response:
        command = _COMMANDS.get(int(request.command))
        if command is None:
            response.success, response.message = False, f"unknown command {request.command} (0 to 4)"
            return response
        done, answer = threading.Event(), list[tuple[bool, str]]()
        with self._queue_lock:
            if self._closing.is_set():
                response.success, response.message = False, "the manager is shutting down"
                return response
            self._work.put((command, done, answer))
        done.wait()  # the worker always answers (a transition's own wait is bounded)
        response.success, response.message = answer[0] if answer else (False, "the manager is shutting down")
        return response

    def _on_is_active(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = self._active
        names = ", ".join(n.name for n in self._nodes)
        response.message = f"active: {names}" if self._active else f"not active ({self.startup_result[1]})"
        return response

    # ------------------------------------------------------------------ the worker
    def _serve_work(self) -> None:
        while True:
            item = self._work.get()
            if item is None or self._closing.is_set():
                if item is not None:
                    item[1].set()
                return
            command, done, answer = item
            try:
                answer.append(self._run(command))
            except Exception as exc:  # a bug must answer the caller, not leave it waiting
                answer.append((False, f"internal error: {exc!r}"))
            finally:
                done.set()

    def _run(self, command: str) -> tuple[bool, str]:
        if command in ("autostart", "startup"):
            try:
                ok, message = self._startup()
            except Exception as exc:  # the autostart must end either way: demo.py and launch wait on `started`
                closing = self._closing.is_set()
                ok, message = False, "the manager is shutting down" if closing else f"internal error: {exc!r}"
            self._last = (command, ok, message)
            if command == "autostart":
                if not ok and not self._closing.is_set():
                    try:  # on /diagnostics before the program ends; the program ends either way
                        self.diagnostics_publisher.publish_now(ACKED_WAIT_S, self._monitor_wait)
                    except Exception as exc:  # an rmw without acknowledgements, a context shutting down
                        self.get_logger().warning(f"the failed start-up could not be published: {exc!r}")
                self.startup_result = (ok, message)
                self.started.set()
                if not ok and not self._closing.is_set():
                    self.exit_reason = message
            return ok, message
        self._active = False
        if command == "resume":
            self._last = (command, *self._resume())
            return self._last[1], self._last[2]
        # Pause, reset and shutdown take every node they can down: one node they cannot drive (finalized, gone)
        # must not leave the others running. The command fails naming each such node.
        nodes = list(reversed(self._nodes))
        failures: list[str] = []
        for node in nodes:
            try:
                self._drive(node, command)
            except ManagerError as exc:
                self.get_logger().error(str(exc))
                failures.append(str(exc))
        if failures:
            self._last = (command, False, "; ".join(failures))
        else:
            self._last = (command, True, f"{command}: {', '.join(n.name for n in nodes) or 'no nodes'}")
        return self._last[1], self._last[2]

    def _resume(self) -> tuple[bool, str]:
        """Activate each node in order; on a refusal deactivate the ones this resume activated (as a failed
        startup takes its nodes down), so the stack is not left part active while reported not active."""
        activated: list[_Client] = []
        for node in self._nodes:
            try:
                if self._drive(node, "resume"):
                    activated.append(node)
            except ManagerError as exc:
                for done in reversed(activated):
                    try:
                        self._drive(done, "pause")
                    except ManagerError as again:
                        self.get_logger().warning(f"while pausing the stack again: {again}")
                self.get_logger().error(str(exc))
                return False, str(exc)
        self._active = True
        return True, f"resume: {', '.join(n.name for n in self._nodes) or 'no nodes'}"

    def _startup(self) -> tuple[bool, str]:
        """Configure and activate each node in order; on a refusal take the ones brought up back down."""
        brought_up: list[_Client] = []
        for node in self._nodes:
            try:
                if self._drive(node, "startup"):
                    brought_up.append(node)
            except ManagerError as exc:
                if node not in brought_up and not isinstance(exc, _NothingSentError):
                    brought_up.append(node)  # half up (configured, refused to activate): taken down too
                self._take_down(brought_up)
                self.get_logger().error(str(exc))
                return False, str(exc)
        self._active = True
        message = f"active: {', '.join(n.name for n in self._nodes) or 'no nodes'}"
        self.get_logger().info(message)
        return True, message

    def _take_down(self, nodes: list[_Client]) -> None:
        for node in reversed(nodes):
            try:
                self._drive(node, "reset")
            except ManagerError as exc:  # the original failure is the line; this one is logged as well
                self.get_logger().warning(f"while taking the stack down: {exc}")

    def _drive(self, node: _Client, command: str) -> bool:
        """Send `node` the transitions `command` needs from its state; True when it sent any.

        A node found in a transition (another client is driving it) is waited for; a node left in a state the
        command does not end in (finalized, or unconfigured at a resume) is a ManagerError naming it."""
        try:
            state = self._settled_state(node)
        except ManagerError as exc:
            raise _NothingSentError(str(exc)) from exc
        transitions = _PLANS[command].get(state, ())
        for transition in transitions:
            if self._closing.is_set():
                raise ManagerError(f"{node.name}: not {transition}d: the manager is shutting down")
            if not self._change(node, transition):
                raise ManagerError(self._why(node, transition))
        if not transitions and state not in _ENDS[command]:
            want = " or ".join(sorted(_LABELS[s] for s in _ENDS[command]))
            hint = _HINTS.get(state)
            raise _NothingSentError(
                f"{node.name} is {_LABELS.get(state, str(state))}, not {want}, after {command}"
                + (f": {hint}" if hint else "")
            )
        return bool(transitions)

    def _settled_state(self, node: _Client) -> int:
        """The node's primary state, once any transition another client started on it has ended (bounded by
        transition_timeout_s); asked from the worker thread, never from a callback."""
        deadline = time.monotonic() + self._transition_timeout
        state = self._state(node)
        while state not in _LABELS:
            if self._closing.is_set():
                raise ManagerError(f"{node.name}: not driven: the manager is shutting down")
            if time.monotonic() >= deadline:
                raise ManagerError(
                    f"{node.name}: still in transition (state {state}) after {self._transition_timeout:g} s: "
                    "another client is changing its state"
                )
            self._closing.wait(SETTLE_POLL_S)
            state = self._state(node)
        return state

    def _change(self, node: _Client, transition: str) -> bool:
        """Send one transition; True when the node took it: its answer says so, or (the answer lost) the node is
        in the transition's goal state (module docstring)."""
        wait = self._node_wait
        if not node.change.wait_for_service(timeout_sec=wait):
            raise ManagerError(f"{node.name}: not there (no service {node.change.srv_name} within {wait:g} s)")
        request = ChangeState.Request()
        request.transition.id = _TRANSITIONS[transition]
        done = threading.Event()
        future = node.change.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        deadline = time.monotonic() + self._transition_timeout
        try:
            while not self._closing.is_set():
                left = deadline - time.monotonic()
                if done.wait(min(left, QUERY_RESEND_S)):
                    answer = future.result()
                    if answer is not None:
                        return bool(answer.success)
                    break
                if left <= QUERY_RESEND_S:
                    break
                if self._peek(node) == _GOALS[transition]:  # answered after the transition ran (same group)
                    self.get_logger().info(f"{node.name}: took {transition} (its own answer was lost)")
                    return True
        finally:
            if not future.done():
                node.change.remove_pending_request(future)
        if self._closing.is_set():
            raise ManagerError(f"{node.name}: not {transition}d: the manager is shutting down")
        raise ManagerError(f"{node.name}: no answer asking it to {transition} within {self._transition_timeout:g} s")

    def _peek(self, node: _Client) -> int | None:
        """The node's state if it answers within QUERY_RESEND_S, else None (it may be busy with a transition)."""
        try:
            answer = self._call(node.get, GetState.Request(), QUERY_RESEND_S, node.name, "for its state", wait_s=0.1)
        except ManagerError:
            return None
        return int(answer.current_state.id)

    def _state(self, node: _Client) -> int:
        answer = self._call(node.get, GetState.Request(), self._node_wait, node.name, "for its state", resend=True)
        return int(answer.current_state.id)

    def _why(self, node: _Client, transition: str) -> str:
        """The node's own line (its `~/transition_error`), or what is known without it."""
        try:
            answer = self._call(node.error, Trigger.Request(), 5.0, node.name, "why", wait_s=1.0, resend=True)
            if answer.message:
                reason = answer.message.removeprefix(f"{node.name}: ").removeprefix(f"cannot {transition}: ")
                return f"{node.name} failed to {transition}: {reason}"
        except ManagerError:
            pass
        return f"{node.name} failed to {transition} (it gave no reason: see its log)"

    def _call(
        self,
        client: Client,
        request: Any,
        timeout: float,
        name: str,
        asking: str,
        wait_s: float | None = None,
        resend: bool = False,
    ) -> Any:
        """The answer within `timeout`; with `resend` (a question that changes nothing) asked again every
        QUERY_RESEND_S, since an answer may be lost (module docstring); the first answer counts."""
        wait = self._node_wait if wait_s is None else wait_s
        if not client.wait_for_service(timeout_sec=wait):
            raise ManagerError(f"{name}: not there (no service {client.srv_name} within {wait:g} s)")
        done = threading.Event()
        futures = []
        deadline = time.monotonic() + timeout
        try:
            while not self._closing.is_set():
                future = client.call_async(request)
                future.add_done_callback(lambda _f: done.set())
                futures.append(future)
                left = deadline - time.monotonic()
                if done.wait(min(left, QUERY_RESEND_S) if resend else left):
                    answered = next((f.result() for f in futures if f.done() and f.result() is not None), None)
                    if answered is not None:
                        return answered
                    break  # ended without an answer (the client is going)
                if time.monotonic() >= deadline:
                    break
                self.get_logger().info(f"{name}: no answer yet asking it {asking}: asking again")
        finally:
            for future in futures:
                if not future.done():
                    client.remove_pending_request(future)
        if self._closing.is_set():  # the wait ended because the manager is closing, not for want of an answer
            raise ManagerError(f"{name}: not asked {asking}: the manager is shutting down")
        raise ManagerError(f"{name}: no answer asking it {asking} within {timeout:g} s")

    def destroy_node(self) -> None:
        with self._queue_lock:
            self._closing.set()
            self._work.put(None)
        self._worker.join(timeout=2.0)
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_nodes("lifecycle_manager", lambda: [LifecycleManager()], args)
