"""The TCP link to an Omron LD base's ARCL server, and the base backend that drives through it.

A reader thread owns the socket: it connects, logs in (`Enter password:` ... `End of
commands`), asks for the map's goals, then reads lines. Every event reaches the node
through a guard condition whose callback runs in the node's executor, so the drive
trackers and their futures are only touched there and the executor never blocks on the
network. The password comes from the environment and is never logged.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.diagnostics import Level, Status, age_text, link_status
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import Target
from sayplan_core.robots.navigation import Pose2D
from sayplan_core.robots.primitives import DriveLimits, Outcome
from sayplan_franka_omron.arcl import (
    END_OF_COMMANDS,
    GET_GOALS,
    MAX_LINE_BYTES,
    PASSWORD_PROMPT,
    QUERY_MOTORS,
    STATUS,
    STOP,
    GoalList,
    GotoTracker,
    LineKind,
    MotorsReader,
    SilenceWatch,
    StatusReader,
    classify,
    error_outcome,
    goto_command,
    says_estop_pressed,
)
from sayplan_ros.navigation.action_call import wait_for

Feedback = Callable[[str, float], None]
#: Latches a robot fault on the node (its FaultLatch): (code, cause).
Latch = Callable[[SkillCode, str], object]


class ArclError(Exception):
    """The link cannot be used (closed, refused, not ARCL); the text says why, without the password."""


class _Lines:
    """Splits a byte stream into lines (CRLF or LF); refuses a line longer than ARCL ever sends."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def next(self) -> str | None:
        """The next line, or None on a socket timeout; ArclError when the peer closed or misbehaved."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ArclError(f"the base sent a line longer than {MAX_LINE_BYTES} bytes")
            try:
                chunk = self._sock.recv(4096)
            except TimeoutError:
                return None
            if not chunk:
                raise ArclError("the base closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_LINE_BYTES:
            raise ArclError(f"the base sent a line longer than {MAX_LINE_BYTES} bytes")
        return line.rstrip(b"\r").decode("ascii", errors="replace")


class ArclLink:
    """One ARCL connection (see the module docstring). `open()` returns a future that is True once logged in."""

    def __init__(
        self,
        node: Node,
        host: str,
        port: int,
        password: str,
        timeout_s: float,
        group: Any,
        on_line: Callable[[str], None],
        on_closed: Callable[[str], None],
    ) -> None:
        self._node = node
        self._address = (host, port)
        self._password = password
        self._timeout = timeout_s
        self._on_line = on_line
        self._on_closed = on_closed
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._guard = node.create_guard_condition(self._drain, callback_group=group)
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._opened: Future | None = None
        self.goals = GoalList()
        self.error = ""

    @property
    def where(self) -> str:
        return f"{self._address[0]}:{self._address[1]}"

    @property
    def ready(self) -> bool:
        return self._opened is not None and self._opened.done() and self._opened.result() is True

    def open(self) -> Future:
        """Connect in the background unless connected or connecting; the future resolves True or with the error."""
        if self._opened is not None and (not self._opened.done() or self._opened.result() is True):
            return self._opened
        self._opened = Future()
        self._closing.clear()
        self.goals = GoalList()
        self._thread = threading.Thread(target=self._run, name=f"arcl {self.where}", daemon=True)
        self._thread.start()
        return self._opened

    def send(self, line: str) -> None:
        sock = self._sock
        if sock is None or not self.ready:
            raise ArclError(f"not connected to the base at {self.where}")
        with self._send_lock:
            try:
                sock.sendall(line.encode("ascii") + b"\r\n")
            except OSError as exc:
                raise ArclError(f"cannot send to the base at {self.where}: {exc}") from None

    def close(self) -> None:
        self._closing.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._node.destroy_guard_condition(self._guard)

    # ------------------------------------------------------------------ reader thread
    def _post(self, kind: str, value: Any) -> None:
        self._events.put((kind, value))
        self._guard.trigger()

    def _run(self) -> None:
        sock: socket.socket | None = None
        try:
            try:
                sock = socket.create_connection(self._address, timeout=self._timeout)
            except OSError as exc:
                raise ArclError(f"cannot connect to the base's ARCL server at {self.where}: {exc}") from None
            lines = _Lines(sock)
            self._expect(lines, PASSWORD_PROMPT, "a password prompt")
            sock.sendall(self._password.encode("ascii", errors="replace") + b"\r\n")
            try:
                self._expect(lines, END_OF_COMMANDS, "the command list after the password")
            except ArclError as exc:
                raise ArclError(f"{exc}: is the ARCL password right?") from None
            sock.sendall(GET_GOALS.encode() + b"\r\n")
            goals = GoalList()
            deadline = time.monotonic() + self._timeout
            while not goals.feed(self._line(lines, deadline, "the goal list")):
                pass
            self._sock = sock
            sock.settimeout(0.5)
            self._post("ready", goals)
            while not self._closing.is_set():
                line = lines.next()
                if line is not None:
                    self._post("line", line)
            self._post("closed", "the link was closed")
        except (ArclError, OSError, ValueError) as exc:
            self._post("closed", str(exc))
        except Exception as exc:  # a bug must not leave a drive waiting for a link that is gone
            self._post("closed", f"the ARCL link failed: {exc!r}")
        finally:
            self._sock = None
            if sock is not None:
                sock.close()

    def _line(self, lines: _Lines, deadline: float, what: str) -> str:
        while time.monotonic() < deadline:
            line = lines.next()
            if line is not None:
                return line
        raise ArclError(f"the base at {self.where} did not send {what} within {self._timeout:g} s")

    def _expect(self, lines: _Lines, text: str, what: str) -> None:
        deadline = time.monotonic() + self._timeout
        while self._line(lines, deadline, what).strip() != text:
            pass

    # ------------------------------------------------------------------ executor side
    def _drain(self) -> None:
        while True:
            try:
                kind, value = self._events.get_nowait()
            except queue.Empty:
                return
            if kind == "ready":
                self.goals = value
                self.error = ""
                if self._opened is not None and not self._opened.done():
                    self._opened.set_result(True)
            elif kind == "line":
                self._on_line(value)
            else:
                self.error = str(value)
                if self._opened is not None and not self._opened.done():
                    self._opened.set_result(self.error)
                else:
                    self._opened = None  # the next drive connects again
                self._on_closed(self.error)


# ---------------------------------------------------------------------------------------------- diagnostics
class ArclHealth:
    """What ArclBase reports on /diagnostics (sayplan_core.diagnostics), from state the link already holds: no I/O.
    `_heard` is fed every line from the base (executor side)."""

    _link: ArclLink
    _tracker: GotoTracker | None
    _line_at: float | None = None
    _motors = ""  # the last e-stop or motors line (a broadcast, an answer to queryMotors, a `Status:` e-stop)
    _motors_at: float | None = None

    def _heard(self, line: str) -> None:
        self._line_at = time.monotonic()
        if classify(line).kind in (LineKind.MOTORS, LineKind.ESTOP) or says_estop_pressed(line):
            self._motors, self._motors_at = line.strip(), self._line_at

    def health(self, hardware_id: str = "") -> list[Status]:
        """The ARCL link (OK logged in; ERROR lost, saying why; WARN not connected yet: it connects at the first
        drive or check) with the age of the last line heard; the e-stop and motors as last heard (ERROR when that
        line said the base cannot drive)."""
        now = time.monotonic()
        link = self._link
        heard = age_text(None if self._line_at is None else now - self._line_at)
        values = {"address": link.where, "last line": heard, "drive under way": str(self._tracker is not None).lower()}
        if link.ready:
            base = link_status("base link", True, f"logged in to ARCL at {link.where}; last line {heard}", values)
        elif link.error:
            base = link_status("base link", False, f"ARCL link to {link.where} lost: {link.error}", values)
        else:
            base = link_status("base link", False, f"not connected to {link.where} yet", values, down_level=Level.WARN)
        if not self._motors or self._motors_at is None:
            motors = Status("base motors", Level.OK, "no e-stop or motors line heard yet", {"last seen": "never"})
        else:
            reader = MotorsReader()
            reader.feed(self._motors)
            problem = reader.problem()
            seen = {"last seen": f"'{self._motors}' {age_text(now - self._motors_at)}"}
            text = problem.message if problem is not None else f"the base said '{self._motors}'"
            motors = Status("base motors", Level.OK if problem is None else Level.ERROR, text, seen)
        return [replace(base, hardware_id=hardware_id), replace(motors, hardware_id=hardware_id)]


class ArclBase(ArclHealth):
    """Drives the Omron base through ARCL: `goto <goal>` for nodes bound to a map goal, else `doTask gotoPoint`.

    A drive ends on the first line that says how it ended (sayplan_franka_omron.arcl.GotoTracker), on its own
    deadline (`drive_s`: the base is stopped, timeout), or by its watchdog: a `status` query every
    `status_period_s`; a reply that shows the base e-stopped, without motors or lost ends it with that outcome, and
    a base that sends nothing for `silence_s` ends it as a robot fault (it may still be moving: the skill server
    latches it). An e-stop seen on any line (a `Status: EStopPressed` of that reply too) ends it `estopped` at once.
    A stop (cancel, deadline, shutdown) waits for the base's `Stopped` for `stop_s`; a stop that is not confirmed
    is a robot fault. Every other failure mid-drive takes the same path before the drive ends (issue 38: the base
    drove on after an `Error:` line): `stop` is sent and its `Stopped` awaited for `stop_s`. A link that drops
    mid-drive is opened again at once and the base sent `stop` on the new connection (the base drives on without
    its client); a link that cannot be opened again leaves `maybe_moving` set for the operator's check.

    Between drives, a broadcast that the base cannot drive (`Estop pressed`, `Motors disabled`, `Error: ...`) is
    latched on the node (`latch`): nothing moves, the arm neither, until an operator clears it. `motors_problem`
    asks `queryMotors` before an arm moves (a broadcast may have been missed while the link was down).
    """

    def __init__(
        self,
        node: Node,
        host: str,
        port: int,
        password: str,
        timeout_s: float,
        group: Any,
        latch: Latch | None = None,
    ) -> None:
        self._node = node
        self._latch = latch
        self._group = group
        self._timeout = timeout_s
        self._link = ArclLink(node, host, port, password, timeout_s, group, self._on_line, self._on_closed)
        self._tracker: GotoTracker | None = None
        self._done: Future | None = None
        self._feedback: Feedback | None = None
        self._watch: SilenceWatch | None = None
        self._drive_status: StatusReader | None = None
        self._lost = ""  # why the link dropped during the running drive (the drive loop reconnects and stops it)
        self._readers: list[tuple[Callable[[str], bool], Future]] = []
        self._stop_waiters: list[threading.Event] = []
        self._stop_futures: list[Future] = []
        self._lock = threading.Lock()
        #: a goto went out and no line from the base has ended it since (a lost link or silence leaves it so)
        self.maybe_moving = False

    def check(self, target: Target) -> None:
        goto_command(target)  # TargetError for a name ARCL cannot take or a pose out of range

    def connect_now(self, timeout_s: float) -> str:
        """Log in before the node is configured (a lifecycle transition's thread, never an executor callback of
        this link's group): '' once logged in, else why not. Bounded by `timeout_s`."""
        opened = self._link.open()
        done = threading.Event()
        if not opened.done():
            opened.add_done_callback(lambda _future: done.set())
            if not done.wait(timeout_s) and not opened.done():
                return f"no answer from the base's ARCL server at {self._link.where} within {timeout_s:g} s"
        result = opened.result()
        return "" if result is True else str(result)

    async def _connect(self) -> str:
        """'' once logged in, else why not."""
        opened = self._link.open()
        if not await wait_for(self._node, opened, self._timeout + 1.0, self._group):
            return f"no answer from the base's ARCL server at {self._link.where}"
        result = opened.result()
        return "" if result is True else str(result)

    async def drive(
        self,
        target: Target,
        feedback: Feedback,
        cancel_requested: Callable[[], bool],
        limits: DriveLimits | None = None,
    ) -> Outcome:
        limits = limits or DriveLimits()
        command = goto_command(target)
        problem = await self._connect()
        if problem:
            return Outcome(SkillCode.ROBOT_FAULT, problem)
        if cancel_requested():  # canceled while connecting: the base never starts
            return Outcome(SkillCode.CANCELED, f"canceled before driving to {command.where}")
        if command.goal is not None and not self._link.goals.has(command.goal):
            known = ", ".join(self._link.goals.names[:20]) or "none"
            return Outcome(SkillCode.INVALID_TARGET, f"the base's map has no goal '{command.goal}' (it has: {known})")
        tracker = GotoTracker(command)
        done: Future = Future()
        watch = SilenceWatch(limits.status_period_s, limits.silence_s)
        watch.start(time.monotonic())
        self._tracker, self._done, self._feedback = tracker, done, feedback
        self._watch, self._drive_status, self._lost = watch, StatusReader(), ""
        try:
            return await self._follow(tracker, done, watch, limits, cancel_requested)
        except Exception as exc:  # a bug must not end the skill without a result; the base may still be moving
            return Outcome(SkillCode.ROBOT_FAULT, f"driving to {command.where}: {exc!r}")
        finally:
            self._tracker, self._done, self._feedback = None, None, None
            self._watch, self._drive_status, self._lost = None, None, ""

    async def _follow(
        self,
        tracker: GotoTracker,
        done: Future,
        watch: SilenceWatch,
        limits: DriveLimits,
        cancel_requested: Callable[[], bool],
    ) -> Outcome:
        """Send the drive and follow it to its end (see the class docstring). Every end but the base's own word
        (an arrival, its `Stopped` after our stop, an e-stop) leaves `maybe_moving` set."""
        where = tracker.command.where
        timed_out = reconnected = False
        self.maybe_moving = True  # from the moment the goto may reach the base
        self._send_in_drive(tracker.command.line, "the drive")
        started = time.monotonic()
        if cancel_requested():
            self.cancel()
        stop_at: float | None = None
        while not await wait_for(self._node, done, min(limits.status_period_s, 0.25), self._group):
            now = time.monotonic()
            if self._lost:  # the link dropped mid-drive: the base may drive on, so connect again and stop it
                lost, self._lost = self._lost, ""
                failure = Outcome(SkillCode.ROBOT_FAULT, f"lost the link to the base while driving to {where}: {lost}")
                if reconnected:
                    return Outcome(failure.code, f"{failure.message} (again, after connecting once more to stop it)")
                reconnected = True
                problem = await self._connect()
                if problem:
                    return Outcome(
                        failure.code, f"{failure.message}; connecting again to send 'stop' failed ({problem})"
                    )
                self._node.get_logger().warning(f"{failure.message}; connected again: sending 'stop'")
                watch.start(time.monotonic())
                self._fail(tracker, failure)
                stop_at = time.monotonic()
                continue
            if tracker.stop_requested:  # ours (cancel, deadline, shutdown, a failure): only Stopped ends it
                stop_at = stop_at or now
                if now - stop_at > limits.stop_s:
                    return self._unconfirmed(tracker, limits)
            elif now - started > limits.drive_s:
                timed_out = True
                self.cancel()
                continue
            quiet = watch.silent_for(now)
            if quiet is not None:
                self._send_stop("the base went silent")
                return Outcome(
                    SkillCode.ROBOT_FAULT,
                    f"the base went silent while driving to {where}: nothing for {quiet:.1f} s, not even "
                    "an answer to 'status'; it may still be moving",
                )
            if watch.due(now):
                self._drive_status = StatusReader()
                self._send_in_drive(STATUS, "the watchdog's status query")
        outcome: Outcome = done.result()
        self.maybe_moving = False  # the base itself said the drive ended (arrived, stopped as asked, e-stopped)
        if timed_out and outcome.code is SkillCode.CANCELED:
            return Outcome(
                SkillCode.TIMEOUT,
                f"the drive to {where} took longer than {limits.drive_s:g} s: the base was stopped",
            )
        return outcome

    def _send_in_drive(self, line: str, what: str) -> None:
        """Send during a drive. A link found down is handled as a lost link (the drive loop connects again and
        stops the base); a send error on a link still up is logged, and the reader's close (or the watchdog's
        silence) follows."""
        try:
            self._link.send(line)
        except ArclError as exc:
            self._node.get_logger().error(f"could not send {what} to the base: {exc}")
            if not self._link.ready:
                self._lost = self._lost or str(exc)

    def _fail(self, tracker: GotoTracker, outcome: Outcome) -> None:
        """A failure while the base may still be under way (any line but an arrival or the answer to our stop, a
        watchdog's status reply, the link back after a loss): stop the base, on the path a cancel takes, and let
        the drive end with the failure once the base confirms (`Stopped`)."""
        tracker.fail(outcome)
        self._send_stop(f"the drive failed: {outcome.message}")

    @staticmethod
    def _unconfirmed(tracker: GotoTracker, limits: DriveLimits) -> Outcome:
        """The base did not confirm a stop within `stop_s`: a fault (latched), whatever else ended the drive."""
        late = f"the base did not confirm the stop on the way to {tracker.command.where} within {limits.stop_s:g} s"
        failure = tracker.failure
        if failure is None:
            return Outcome(SkillCode.ROBOT_FAULT, f"{late}: it may still be moving")
        if failure.code in (SkillCode.ESTOPPED, SkillCode.NOT_POWERED):  # its motors are cut: it cannot drive on
            return Outcome(failure.code, f"{failure.message}; then {late} (its motors are cut)")
        return Outcome(SkillCode.ROBOT_FAULT, f"{failure.message}; then {late}: it may still be moving")

    async def _query(self, command: str, feed: Callable[[str], bool]) -> bool:
        """Send one query and feed every line to `feed` until it says the answer is complete (or `timeout_s`)."""
        done: Future = Future()
        entry = (feed, done)
        with self._lock:
            self._readers.append(entry)
        try:
            self._link.send(command)
            return await wait_for(self._node, done, self._timeout, self._group) and done.result() is True
        except ArclError:
            return False
        finally:
            with self._lock:
                if entry in self._readers:
                    self._readers.remove(entry)

    async def locate(self) -> Pose2D | None:
        """The base's map pose from an ARCL `status` query, or None when it does not answer."""
        if not self._link.ready:
            return None
        reader = StatusReader()
        await self._query(STATUS, reader.feed)
        return reader.location

    async def check_robot(self) -> tuple[bool, str]:
        """For an operator's clear_fault: the base's motors (`queryMotors`) and state and localisation (`status`),
        asked over ARCL; nothing is sent that moves or powers it (never `enableMotors`)."""
        problem = await self._connect()
        if problem:
            return False, f"base: {problem}"
        if self.maybe_moving or self._tracker is not None:
            # a drive nobody saw end (the link went down, the base went silent): stop it and see it stop first
            if not await self._stop_confirmed():
                return False, (
                    f"base: a drive may still be under way and the base did not confirm 'stop' within "
                    f"{self._timeout:g} s: check the robot"
                )
            self.maybe_moving = False
        motors, status = MotorsReader(), StatusReader()
        if not await self._query(QUERY_MOTORS, motors.feed):
            return False, f"base: no answer to '{QUERY_MOTORS}' within {self._timeout:g} s"
        if not await self._query(STATUS, status.feed):
            return False, f"base: no answer to '{STATUS}' within {self._timeout:g} s"
        wrong = motors.problem() or status.problem()
        found = f"base: {motors.answer}; {status.describe()}"
        if wrong is None and status.driving:
            return False, f"{found} (the base is under way: stop it before the fault is cleared)"
        if wrong is not None:
            return False, f"{found} ({wrong.message}; release the e-stop and enable the motors on the base itself)"
        return True, found

    async def _stop_confirmed(self) -> bool:
        """Send `stop` and await the base's `Stopped` (within `timeout_s`), inside the executor."""
        stopped: Future = Future()
        with self._lock:
            self._stop_futures.append(stopped)
        try:
            if not self._send_stop("clear_fault's check"):
                return False
            return await wait_for(self._node, stopped, self._timeout, self._group)
        finally:
            with self._lock:
                if stopped in self._stop_futures:
                    self._stop_futures.remove(stopped)

    async def motors_problem(self) -> Outcome | None:
        """Before the arm moves: the base's `queryMotors` answer, as the reason the robot must not move (e-stop
        pressed, motors disabled, or no answer), or None when the motors are enabled."""
        problem = await self._connect()
        if problem:
            return Outcome(SkillCode.ROBOT_FAULT, f"cannot ask the base whether its e-stop is pressed: {problem}")
        motors = MotorsReader()
        if not await self._query(QUERY_MOTORS, motors.feed):
            return Outcome(
                SkillCode.ROBOT_FAULT, f"the base did not answer '{QUERY_MOTORS}' within {self._timeout:g} s"
            )
        return motors.problem()

    def cancel(self) -> None:
        """Stop the base now (the skill server's cancel callback, a deadline, or shutdown)."""
        tracker = self._tracker
        if tracker is None:
            return
        tracker.stop_requested = True
        self._send_stop("cancel")

    def _send_stop(self, why: str) -> bool:
        try:
            self._link.send(STOP)
            return True
        except ArclError as exc:
            self._node.get_logger().error(f"could not send 'stop' to the base ({why}): {exc}")
            return False

    def stop_and_wait(self, timeout_s: float) -> bool:
        """Send `stop` unconditionally and wait (a plain thread, the executor spinning) for the base's `Stopped`;
        True when it came, or when the link is down and nothing was left moving. With the link down and a drive
        that may still run, the link is opened once more to send the stop."""
        if not self._link.ready:
            if not self.maybe_moving and self._tracker is None:
                return True
            deadline = time.monotonic() + timeout_s
            opened = self._link.open()
            connected = threading.Event()
            opened.add_done_callback(lambda _f: connected.set())
            if not connected.wait(max(timeout_s, 0.0)) or not self._link.ready:
                self._node.get_logger().error(f"could not reach the base to send 'stop': {self._link.error}")
                return False
            timeout_s = deadline - time.monotonic()
        stopped = threading.Event()
        with self._lock:
            self._stop_waiters.append(stopped)
        try:
            if not self._send_stop("shutdown"):
                return False
            confirmed = stopped.wait(max(timeout_s, 0.0))
        finally:
            with self._lock:
                if stopped in self._stop_waiters:
                    self._stop_waiters.remove(stopped)
        if confirmed:
            self.maybe_moving = False
        return confirmed

    def destroy(self) -> None:
        """Best effort, no waiting: a base that may still drive is sent `stop` before the link closes."""
        if self._link.ready and (self._tracker is not None or self.maybe_moving):
            self._send_stop("the node is destroyed")
        self._link.close()

    # ------------------------------------------------------------------ lines from the link (executor)
    def _on_line(self, line: str) -> None:
        self._heard(line)
        watch = self._watch
        if watch is not None:
            watch.heard(time.monotonic())
        kind = classify(line).kind
        if kind is LineKind.STOPPED:
            with self._lock:
                waiters, self._stop_waiters = self._stop_waiters, []
                futures, self._stop_futures = self._stop_futures, []
            for waiter in waiters:
                waiter.set()
            for future in futures:
                if not future.done():
                    future.set_result(True)
        tracker, done, feedback = self._tracker, self._done, self._feedback
        if tracker is None:
            self._latch_if_unable(line)
        if tracker is not None and done is not None and not done.done():
            event = tracker.feed(line)
            if isinstance(event, Outcome):
                self._drive_event(tracker, done, event)
            elif isinstance(event, str) and feedback is not None:
                feedback(event, 0.5)
            status = self._drive_status
            if status is not None and not done.done() and status.feed(line):
                self._drive_status = None
                problem = status.problem(localisation=False)
                if problem is not None and problem.code is SkillCode.ESTOPPED:
                    self._drive_event(tracker, done, problem)  # (its `Status:` line has ended the drive already)
                elif problem is not None:  # motors off or lost, in the watchdog's status reply: stop it first
                    self._fail(
                        tracker, Outcome(problem.code, f"{problem.message} while driving to {tracker.command.where}")
                    )
        with self._lock:
            readers = list(self._readers)
        for feed, answered in readers:
            if not answered.done() and feed(line):
                answered.set_result(True)

    def _drive_event(self, tracker: GotoTracker, done: Future, outcome: Outcome) -> None:
        """The tracker says how the drive ended. An arrival, the answer to our own stop (or a line that cut the
        motors while it was under way) ends it. An e-stop, from whatever line, ends it at once: the e-stop holds
        the base (`stop` is still sent, unawaited, so the goto does not outlive it). Any other failure first stops
        the base and awaits its `Stopped` (`_fail`): after an `Error:` line the base may drive on."""
        if outcome.ok or tracker.stop_requested:
            done.set_result(outcome)
        elif outcome.code is SkillCode.ESTOPPED:
            self._send_stop("the base's e-stop ended the drive")
            done.set_result(outcome)
        else:
            self._fail(tracker, outcome)

    def _latch_if_unable(self, text: str) -> None:
        """Between drives: a broadcast that the base cannot drive is latched (p. 251). An answer to our own query
        (queryMotors before an arm moves, clear_fault's check) is its caller's to judge, so none is latched then."""
        with self._lock:
            asking = bool(self._readers)
        if self._latch is None or asking:
            return
        line = classify(text)
        arg = line.arg.casefold()
        if says_estop_pressed(text):
            outcome = Outcome(SkillCode.ESTOPPED, f"the base broadcast '{line.text}' between skills")
        elif line.kind is LineKind.MOTORS and arg.startswith("disabled"):
            outcome = Outcome(SkillCode.NOT_POWERED, f"the base broadcast '{line.text}' between skills")
        elif line.kind is LineKind.ERROR:
            outcome = error_outcome(line.arg, "nowhere (no drive ran)")
            outcome = Outcome(outcome.code, f"between skills: {outcome.message}")
        else:
            return
        if not outcome.code.latches:  # e.g. `Error: Cannot find path` for another client's drive
            return
        self._node.get_logger().error(outcome.message)
        self._latch(outcome.code, outcome.message)

    def _on_closed(self, reason: str) -> None:
        done = self._done
        if done is not None and not done.done():  # mid-drive: the drive loop connects again and stops the base
            self._lost = reason or "the link was closed"
        with self._lock:
            readers = list(self._readers)
        for _feed, answered in readers:
            if not answered.done():
                answered.set_result(False)
