"""A fake Omron LD base speaking ARCL over TCP on loopback, scripted per test.

What it says follows Omron's ARCL reference manual (Advanced Robotics Command Language,
I617-E-01) as public ARCL clients rely on it: OmronAPAC/Omron_LD_ROS_Package (login with
`Enter password:` ... `End of commands`; `doTask gotoPoint x y th` in mm and degrees
answered by `Will do task`, `Going to point`, `Completed doing task`; `Interrupted`,
`Failed going to goal`), the ARCL helper classes that wait for `Going to ` then
`Arrived at ` or `Error: Failed going to goal`, clients that parse `status` (`Status:`,
`ExtendedStatusForHumans:`, `StateOfCharge:`, `Location: x y th`, `LocalizationScore:`,
`Temperature:`), `getGoals` (`Goal: <name>` ... `End of goals`), `EStop pressed` and
`CommandError:` / `CommandErrorDescription:`. One text is the fake's own, because no
public source gives it: the description of a refused goto (SayPlan must not read its
wording).

From the ARCL Reference Guide itself (18448-000 Rev A / I617-E-01, 2017; guide page numbers): `stop` answers
`Interrupted: Going to <goal>` (when a drive runs), `Stopping`, `Stopped` (p. 242); `queryMotors` answers `Motors
enabled`, `Motors disabled`, `EStop pressed` or `EStop relieved but motors still disabled` (p. 190-191); the
server messages of p. 251 (`Estop pressed`, `Motors disabled`, `Error: <error>` with `Cannot find path`,
`Stalled`, `Robot lost`, `Emergency stop pressed`, ...) end a scripted drive (`Drive("say", text=...)`); a
`Stopped` nobody asked for (`Drive("stopped")`); and a silent base (`Drive("silent")`, or `silent = True`), which
reads every command and answers none, as a base whose ARCL server hung would.

Issue 38 (fail-safe v2), from the same guide: p. 251 sends `Error: <error>` "if an error occurs while a command is
executing", and nothing in the guide says the base then stands, so `Drive("say_driving", text=...)` says the line
and drives on until `stop`; the e-stop state shown only in the `Status:` line of `status` (p. 240) and by
`queryMotors`, without the broadcast, in the guide's spellings (`EStopPressed`, the status conditions of p. 49 and
`queueShowRobot` of p. 235; `EStop pressed`, p. 190): `press_estop(state)`, and the base stands; a base whose ARCL
server does not take connections for a while (rebooting, the network away: `accepting = False`, the connection is
closed before the password prompt); and a base slow to stop (`stop_answer` cleared: `Stopping` / `Stopped` of
p. 242 wait until the test sets it again).

A wrong password closes the connection (the client then reports the login failed).
Each drive follows the next scripted `Drive` (default: arrive after 30 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from dataclasses import dataclass

#: What the next drive does: arrive, fail (Failed going to goal), interrupt (someone else took the base),
#: estop (EStop pressed, then stands until stopped), hold (drives until `stop`), say (after `duration_s`, the line
#: `text`, a server message of p. 251, and the base stands), say_driving (the same line, and the base drives on
#: until `stop`), stopped (`Stopping`, `Stopped` unasked), or silent (the base keeps driving and answers nothing,
#: not even `status`, until `stop`).
OUTCOMES = ("arrive", "fail", "interrupt", "estop", "hold", "say", "say_driving", "stopped", "silent")


@dataclass
class Drive:
    outcome: str = "arrive"
    duration_s: float = 0.03
    text: str = ""  # for "say": the line the base sends (e.g. "Error: Cannot find path", "Estop pressed")

    def __post_init__(self) -> None:
        assert self.outcome in OUTCOMES, self.outcome


class FakeArclServer:
    def __init__(
        self,
        password: str = "omron-test",
        goals: dict[str, tuple[float, float, float]] | None = None,
        start: tuple[float, float, float] = (0.0, 0.0, 0.0),
    ) -> None:
        self.password = password
        self.goals = dict(goals or {})  # name -> (x mm, y mm, th deg)
        self.location = start
        self.port = 0
        self.logins = 0
        self.banner = ""  # a line sent before the password prompt (tests of hostile input)
        self.silent = False  # read every command, answer none (a hung ARCL server)
        self.motors = "enabled"  # queryMotors: enabled, disabled, estop (pressed), relieved (motors still disabled)
        self.status_text = ""  # the `Status:` value; empty: Going / Stopped as the drive goes
        self.localization_score = 0.95
        self.stops: list[float] = []  # monotonic times the base stood still after a `stop`
        self.accepting = True  # False: every new connection is closed before the password prompt
        self.stop_answer = threading.Event()  # cleared: the answer to `stop` waits until it is set again
        self.stop_answer.set()
        self.driving = False
        self._script: deque[Drive] = deque()
        self._lock = threading.Lock()
        self._commands: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake arcl", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._drive: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    # ------------------------------------------------------------------ test side
    def start(self) -> int:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(5)
        return self.port

    def close(self) -> None:
        self.stop_answer.set()  # a held answer to `stop` must not outlive the test

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                writer.close()
            if self._drive is not None and not self._drive.done():
                self._drive.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._drive

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def drop_connections(self) -> None:
        """Cut every client connection (the base rebooted or the network went away)."""

        async def drop() -> None:
            for writer in list(self._writers):
                writer.close()

        asyncio.run_coroutine_threadsafe(drop(), self._loop).result(5)

    def broadcast(self, line: str) -> None:
        """Send a server message (p. 251) to every client, as the base does whatever runs."""

        async def say() -> None:
            for writer in list(self._writers):
                writer.write(line.encode("ascii") + b"\r\n")
                await writer.drain()

        asyncio.run_coroutine_threadsafe(say(), self._loop).result(5)

    def press_estop(self, state: str = "EStopPressed") -> None:
        """The e-stop pressed on the base with no broadcast: it shows only in `status` (`Status: <state>`, p. 240)
        and `queryMotors` (`EStop pressed`, p. 190). The base stands at once: the running drive ends without a word."""

        async def press() -> None:
            self.motors, self.status_text = "estop", state
            if self._drive is not None and not self._drive.done():
                self._drive.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._drive

        asyncio.run_coroutine_threadsafe(press(), self._loop).result(5)

    def script(self, *drives: Drive) -> None:
        with self._lock:
            self._script.extend(drives)

    def unscript(self) -> None:
        """Drop the drives still scripted: the next ones go as asked."""
        with self._lock:
            self._script.clear()

    @property
    def commands(self) -> list[str]:
        with self._lock:
            return list(self._commands)

    def drives(self) -> list[str]:
        return [c for c in self.commands if c.startswith(("goto ", "doTask gotoPoint "))]

    def moving(self) -> bool:
        """Whether a drive is under way (the base is moving)."""
        return self._drive is not None and not self._drive.done()

    # ------------------------------------------------------------------ server side
    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._session, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.accepting:  # the ARCL server is not there for now: the client sees the connection closed
            writer.close()
            return
        self._writers.add(writer)
        try:
            if self.banner:
                await self._say(writer, self.banner)
            await self._say(writer, "Enter password:")
            given = (await reader.readline()).decode("ascii", errors="replace").strip()
            if given != self.password:
                self._record("<wrong password>")
                return
            self.logins += 1
            await self._say(writer, "Commands:", "goto <goal>", "doTask <task> <args>", "status", "stop")
            await self._say(writer, "End of commands")
            while True:
                raw = await reader.readline()
                if not raw:
                    return
                command = raw.decode("ascii", errors="replace").strip()
                if command:
                    self._record(command)
                    await self._command(command, writer)
        except (ConnectionError, OSError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    def _record(self, command: str) -> None:
        with self._lock:
            self._commands.append(command)

    async def _say(self, writer: asyncio.StreamWriter, *lines: str) -> None:
        for line in lines:
            writer.write(line.encode("ascii") + b"\r\n")
        await writer.drain()

    async def _command(self, command: str, writer: asyncio.StreamWriter) -> None:
        if command == "stop":  # even a silent base stops (it hung answering, not driving)
            if self._drive is not None and not self._drive.done():
                self._stop.set()
                with contextlib.suppress(Exception):  # its client may be gone (a dropped link): it stops anyway
                    await self._drive
            self.stops.append(time.monotonic())
            if not self.stop_answer.is_set():  # a base slow to say it stands (the test sets it)
                await asyncio.to_thread(self.stop_answer.wait)
            if not self.silent:
                await self._say(writer, "Stopping", "Stopped")
            return
        if self.silent:
            return
        if command == "getGoals":
            await self._say(writer, *(f"Goal: {name}" for name in self.goals), "End of goals")
        elif command == "status":
            x, y, th = self.location
            moving = self._drive is not None and not self._drive.done()
            state = self.status_text or ("Going" if moving else "Stopped")
            await self._say(
                writer,
                f"Status: {state}",
                f"ExtendedStatusForHumans: {state}",
                "StateOfCharge: 87.5",
                f"Location: {x:.0f} {y:.0f} {th:.0f}",
                f"LocalizationScore: {self.localization_score}",
                "Temperature: 31",
            )
        elif command.casefold() == "querymotors":
            answer = {
                "enabled": "Motors enabled",
                "disabled": "Motors disabled",
                "estop": "EStop pressed",
                "relieved": "EStop relieved but motors still disabled",
            }[self.motors]
            await self._say(writer, answer)
        elif command.startswith("goto "):
            name = command[len("goto ") :]
            if name not in self.goals:
                await self._say(writer, f"CommandError: {command}", "CommandErrorDescription: (fake) no such goal")
                return
            self._start(writer, self.goals[name], name)
        elif command.startswith("doTask gotoPoint "):
            try:
                x, y, th = (float(v) for v in command.split()[2:5])
            except ValueError:
                await self._say(writer, f"CommandError: {command}")
                return
            self._start(writer, (x, y, th), None)
        else:
            await self._say(writer, f"CommandError: {command}", "CommandErrorDescription: (fake) unknown command")

    def _start(self, writer: asyncio.StreamWriter, target: tuple[float, float, float], name: str | None) -> None:
        with self._lock:
            plan = self._script.popleft() if self._script else Drive()
        self._stop = asyncio.Event()
        self._drive = asyncio.ensure_future(self._run_drive(writer, target, name, plan))

    async def _run_drive(
        self, writer: asyncio.StreamWriter, target: tuple[float, float, float], name: str | None, plan: Drive
    ) -> None:
        x, y, th = (round(v) for v in target)
        point = f"{x} {y} {th}"
        going = f"Going to {name or 'point ' + point}"
        if name is None:
            await self._say(writer, f"Will do task gotoPoint {point}", f"Going to point {point}")
        else:
            await self._say(writer, f"Going to {name}")
        start = self.location
        if plan.outcome == "silent":
            self.silent = True
        if plan.outcome in ("hold", "estop", "silent", "say_driving"):
            if plan.outcome == "say_driving":  # an error while the command runs (p. 251); the base drives on
                await asyncio.sleep(plan.duration_s)
                await self._say(writer, plan.text)
            if plan.outcome == "estop":
                await asyncio.sleep(plan.duration_s)
                self.location = _partway(start, target)
                self.motors = "estop"
                await self._say(writer, plan.text or "EStop pressed")
            await self._stop.wait()
            self.location = _partway(start, target)
            if plan.outcome != "estop" and not self.silent:
                await self._say(writer, f"Interrupted: {going}")
            return
        stopped = await _stopped_within(self._stop, plan.duration_s)
        if stopped:
            self.location = _partway(start, target)
            await self._say(writer, f"Interrupted: {going}")
        elif plan.outcome == "arrive":
            self.location = target
            if name is None:
                await self._say(writer, f"Arrived at point {point}", f"Completed doing task gotoPoint {point}")
            else:
                await self._say(writer, f"Arrived at {name}")
        elif plan.outcome == "fail":
            self.location = _partway(start, target)
            if name is None:
                await self._say(writer, f"Failed doing task gotoPoint {point}")
            else:
                await self._say(writer, f"Error: Failed going to goal {name}")
        elif plan.outcome == "say":  # a server message of p. 251 ends the drive; the base stands
            self.location = _partway(start, target)
            folded = plan.text.casefold()
            if "estop pressed" in folded or "emergency stop" in folded:
                self.motors = "estop"
            elif "motors disabled" in folded:
                self.motors = "disabled"
            await self._say(writer, plan.text)
        elif plan.outcome == "stopped":  # the base stopped and said no more (nobody here asked it to)
            self.location = _partway(start, target)
            await self._say(writer, "Stopping", "Stopped")
        else:  # interrupt: another client sent the base elsewhere
            self.location = _partway(start, target)
            await self._say(writer, f"Interrupted: {going}")


def _partway(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, float, float]:
    return ((a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0, b[2])


async def _stopped_within(event: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout=max(seconds, 0.0))
    except TimeoutError:
        return False
    return True
