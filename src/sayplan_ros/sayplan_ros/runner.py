"""One way to run nodes as a program: init, spin on a MultiThreadedExecutor, clean exit codes.

Whatever goes wrong while the nodes start (a bad parameter, an unreadable file, an
unreachable backend) ends the program with one line on stderr naming the cause and
exit code 2; a bug says "internal error" the same way. Ctrl-C exits 0 once the robots confirmed their stop, 3
when one did not (the line before says so).

SIGINT and SIGTERM are handled here, not by rclpy: rclpy's handler shuts the context down at once, and a node
could then no longer send its robot's stop (a Nav2 or trajectory cancel goes out over DDS). So the executor spins
on its own thread, the main thread waits for a signal, asks every node that drives a robot to stop it
(`stop_for_shutdown`, bounded by SHUTDOWN_STOP_S) while the executor still spins, and only then shuts down.
A second Ctrl-C (SIGINT after SIGINT) during that stop exits at once (130); any other repeated signal changes
nothing (a supervisor's repeated SIGTERM, launch's SIGINT after its SIGTERM). The program then exits without the
interpreter's teardown (see `_exit_now`).

A node may also end the program: one that sets `exit_reason` (the lifecycle manager when a node of the stack
failed to start, a managed node whose `autostart` failed) makes it stop as a signal does and exit 2, with that
reason as the one line on stderr, printed last (after whatever the nodes logged while they went down).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

import rclpy
from rclpy.action import ActionServer
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from sayplan_core.graph.limits import shown
from sayplan_ros.guard import guard_services

EXIT_CONFIG = 2
EXIT_STOP_UNCONFIRMED = 3  # stopped on a signal, but a robot did not confirm its stop: someone must look at it
EXIT_SECOND_SIGNAL = 130
#: How long the robot nodes of one program may take to stop their robots on SIGINT/SIGTERM, seconds.
SHUTDOWN_STOP_S = 3.0
#: On a signal, how long a goal's result response gets to travel over DDS once rclpy has handed it to the
#: middleware (`result_sent`), before the node is destroyed and the process exits. Before, a blind 0.2-0.5 s sleep
#: after the goal ended stood for both the hand-off (an executor task, late on a loaded 2-core machine) and the
#: delivery; the hand-off is now waited for, and this only bounds the delivery. 0.2 s after the hand-off still lost
#: the result 3 times in 8 under two busy-loop processes on the 2-core machine (the DDS send is asynchronous and a
#: service response has no wait_for_all_acked), so 0.5 s. It comes out of the node's own stop budget, half of
#: SHUTDOWN_STOP_S.
RESULT_GRACE_S = 0.5
#: Once the robots are stopped (or their stop timed out), how long tearing the program down may take, seconds:
#: the executor's shutdown waits for every running callback and the nodes' destruction for rcl, neither with a bound
#: of its own. Past it the program exits anyway, with the code it had and one line saying so: the robots are
#: already stopped, and a supervisor (ros2 launch escalates after 5 s) must never find the process still there.
TEARDOWN_S = 1.0
#: How often the main thread looks whether a node asked the program to end (`exit_reason`), seconds.
EXIT_CHECK_S = 0.1
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: The longest message a failed start's line (or a transition's) echoes; past it, its start and its length.
MAX_ERROR_CHARS = 2000


def describe_error(exc: BaseException) -> str:
    """One line for a person: the message (bounded: a value echoed whole could be megabytes), or the exception's
    kind when it has none."""
    text = shown(" ".join(str(exc).split()), MAX_ERROR_CHARS)
    known = (ValueError, OSError, KeyError, RuntimeError, LookupError)
    kind = type(exc).__name__
    if not isinstance(exc, known) and "Exception" not in kind and "Error" not in kind:
        return f"internal error: {kind}: {text}"
    return text or kind


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """While the nodes start: SIGTERM ends start-up as Ctrl-C does."""
    raise KeyboardInterrupt


def result_sent(server: ActionServer | None, goal_id: Any) -> threading.Event:
    """An event set once rclpy has sent the goal's result response to every client that asked for it so far
    (`get_result`, which an action client asks right after its goal is accepted). Call it while the goal runs,
    from any thread; wait on it from a plain thread, never a callback.

    rclpy's ActionServer sends each result response from a done callback of the goal's result future, added when
    the request arrived; this adds one more done callback, after those, which sets the event and nothing else
    (no sleep, no wait). Done callbacks run in order, on the thread that sets the result (rclpy creates that future
    without an executor). The future is not public API: when it cannot be found, the event is set at once and the
    caller's grace (RESULT_GRACE_S) is all that is left, as before."""
    sent = threading.Event()
    futures = getattr(server, "_result_futures", None)
    future = futures.get(bytes(goal_id.uuid)) if isinstance(futures, dict) else None
    if future is None:
        sent.set()
        return sent
    future.add_done_callback(lambda _future: sent.set())
    return sent


def stop_robots(nodes: list[Node], timeout_s: float = SHUTDOWN_STOP_S) -> bool:
    """Ask every node that drives a robot to stop it, in turn, within `timeout_s` in all (executor spinning);
    True when every stop was confirmed."""
    deadline = time.monotonic() + timeout_s
    confirmed = True
    for node in nodes:
        stop = getattr(node, "stop_for_shutdown", None)
        if callable(stop):
            confirmed = bool(stop(max(0.1, deadline - time.monotonic()))) and confirmed
    return confirmed


def run_nodes(program: str, make_nodes: Callable[[], list[Node]], args: list[str] | None = None) -> None:
    """Spin the nodes until SIGINT/SIGTERM, then stop the robots and exit 0 (3: a stop was not confirmed); a
    start-up error exits 2."""
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:
        print(f"{program}: {describe_error(exc)}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    previous = {sig: signal.signal(sig, _interrupt) for sig in _SIGNALS}
    nodes: list[Node] = []
    code = 0
    last_line = ""  # the one line a failed start ends with
    executor = MultiThreadedExecutor(num_threads=4)
    stop = threading.Event()
    signaled = threading.Event()  # a signal arrived (the stop event is also set when the executor ends by itself)
    first = [0]  # which signal came first
    failed: list[BaseException] = []
    exiting = threading.Lock()  # whoever holds it ends the process: the main thread, or the teardown's watchdog
    spinning = threading.Thread(target=_spin, args=(executor, stop, failed), name="executor", daemon=True)
    try:
        nodes = make_nodes()
        for node in nodes:
            guard_services(node)  # rclpy's parameter services too: no request may end the process
            executor.add_node(node)
        for sig in _SIGNALS:
            signal.signal(sig, lambda signum, _frame: _on_signal(signum, stop, signaled, first))
        spinning.start()
        while not stop.wait(EXIT_CHECK_S) and not _exit_reason(nodes):
            pass
        if not stop_robots(nodes):
            print(f"{program}: a robot's stop was not confirmed before exiting: check the robot", file=sys.stderr)
            code = EXIT_STOP_UNCONFIRMED
        if failed:
            raise failed[0]
        if _exit_reason(nodes):
            code, last_line = EXIT_CONFIG, _exit_reason(nodes)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        code, last_line = EXIT_CONFIG, describe_error(exc)
    finally:
        bound = teardown_bound(nodes)
        overran = threading.Timer(bound, _teardown_overran, args=(program, bound, code, last_line, exiting))
        overran.daemon = True
        overran.start()
        executor.shutdown(timeout_sec=TEARDOWN_S)
        if spinning.is_alive():  # no executor thread may still be inside rcl while the nodes go
            spinning.join(timeout=TEARDOWN_S)
        for node in nodes:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    exiting.acquire()  # the watchdog may be saying its line and exiting already
    if last_line:
        with contextlib.suppress(OSError):  # stderr may be a pipe nobody reads any more
            print(f"{program}: {last_line}", file=sys.stderr)
    _exit_now(code)


def _exit_now(code: int) -> None:
    """Exit without the interpreter's teardown: the robots are stopped, the nodes destroyed and rclpy shut down
    (its log files flushed); unloading numpy, networkx and DDS takes one to three more seconds on a busy machine,
    which would push a stop past the 5 s a supervisor (ros2 launch, docker stop) allows."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (the launch is gone) must not change the exit code
            stream.flush()
    os._exit(code)


def teardown_bound(nodes: list[Node]) -> float:
    """How long tearing these nodes down may take: TEARDOWN_S, or longer for a node whose destruction still hands
    its robot back (Spot sits, powers off and returns the lease there) and says how long that may take
    (`teardown_bound_s`)."""
    return max([TEARDOWN_S, *(float(getattr(node, "teardown_bound_s", 0.0) or 0.0) for node in nodes)])


def _teardown_overran(program: str, bound: float, code: int, last_line: str, exiting: threading.Lock) -> None:
    """The teardown hangs (a callback that never returns, rcl blocked): the robots were stopped before it began.
    The failed start's reason, if any, is still the last line."""
    if not exiting.acquire(blocking=False):
        return  # the teardown ended just now: the main thread is exiting
    lines = [f"teardown took over {bound:g} s after the robots' stop: exiting without it", last_line]
    with contextlib.suppress(OSError):  # stderr may be a pipe nobody reads any more
        os.write(2, "".join(f"{program}: {line}\n" for line in lines if line).encode())
    _exit_now(code)


def _exit_reason(nodes: list[Node]) -> str:
    """The line of the first node that asked the program to end ("" when none did)."""
    return next((str(reason) for node in nodes if (reason := getattr(node, "exit_reason", None))), "")


def _spin(executor: MultiThreadedExecutor, stop: threading.Event, failed: list[BaseException]) -> None:
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except Exception as exc:  # reported by the main thread, after the robots were stopped
        # a callback's exception ends every node of the process: a bug, whose traceback is what a report needs
        with contextlib.suppress(OSError):
            traceback.print_exc(file=sys.stderr)
        failed.append(exc)
    finally:
        stop.set()  # the executor ended on its own (context shut down elsewhere): the program ends too


def _on_signal(signum: int, stop: threading.Event, signaled: threading.Event, first: list[int]) -> None:
    if signaled.is_set():  # a second Ctrl-C while the robots stop: leave now
        if signum != signal.SIGINT or first[0] != signal.SIGINT:
            # not a person's second Ctrl-C: a repeated SIGTERM (a supervisor; the kernel's parent-death signal, one
            # per launch thread) or launch's SIGINT after the SIGTERM it sent; the stop is bounded anyway
            return
        with contextlib.suppress(OSError):  # stderr may be a pipe nobody reads any more (the launch is gone)
            os.write(2, f"{signal.Signals(signum).name} again: exiting without waiting for the robot's stop\n".encode())
        os._exit(EXIT_SECOND_SIGNAL)
    first[0] = signum
    signaled.set()
    stop.set()
