"""A fake Omron LD base speaking ARCL over TCP on loopback, scripted per test.

What it says follows Omron's ARCL reference manual (Advanced Robotics Command Language,
I617-E-01) as public ARCL clients rely on it: OmronAPAC/Omron_LD_ROS_Package (login with
`Enter password:` ... `End of commands`; `doTask gotoPoint x y th` in mm and degrees
answered by `Will do task`, `Going to point`, `Completed doing task`; `Interrupted`,
`Failed going to goal`), the ARCL helper classes that wait for `Going to ` then
`Arrived at ` or `Error: Failed going to goal`, clients that parse `status` (`Status:`,
`ExtendedStatusForHumans:`, `StateOfCharge:`, `Location: x y th`, `LocalizationScore:`,
`Temperature:`), `getGoals` (`Goal: <name>` ... `End of goals`), `EStop pressed` and
`CommandError:` / `CommandErrorDescription:`. Two texts are the fake's own, because
no public source gives them: the description of a refused goto (SayPlan must not read
its wording) and `stop` answered by `Stopping` then `Stopped`.

A wrong password closes the connection (the client then reports the login failed).
Each drive follows the next scripted `Drive` (default: arrive after 30 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from dataclasses import dataclass

#: What the next drive does: arrive, fail (Failed going to goal), interrupt (someone else took the base),
#: estop (EStop pressed, then stands until stopped), or hold (drives until `stop`).
OUTCOMES = ("arrive", "fail", "interrupt", "estop", "hold")


@dataclass
class Drive:
    outcome: str = "arrive"
    duration_s: float = 0.03

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

    def script(self, *drives: Drive) -> None:
        with self._lock:
            self._script.extend(drives)

    @property
    def commands(self) -> list[str]:
        with self._lock:
            return list(self._commands)

    def drives(self) -> list[str]:
        return [c for c in self.commands if c.startswith(("goto ", "doTask gotoPoint "))]

    # ------------------------------------------------------------------ server side
    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._session, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
        if command == "getGoals":
            await self._say(writer, *(f"Goal: {name}" for name in self.goals), "End of goals")
        elif command == "status":
            x, y, th = self.location
            moving = self._drive is not None and not self._drive.done()
            await self._say(
                writer,
                f"Status: {'Going' if moving else 'Stopped'}",
                f"ExtendedStatusForHumans: {'Going' if moving else 'Stopped'}",
                "StateOfCharge: 87.5",
                f"Location: {x:.0f} {y:.0f} {th:.0f}",
                "LocalizationScore: 0.95",
                "Temperature: 31",
            )
        elif command == "stop":
            await self._say(writer, "Stopping")
            if self._drive is not None and not self._drive.done():
                self._stop.set()
                await self._drive
            await self._say(writer, "Stopped")
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
        if name is None:
            await self._say(writer, f"Will do task gotoPoint {point}", f"Going to point {point}")
        else:
            await self._say(writer, f"Going to {name}")
        start = self.location
        if plan.outcome in ("hold", "estop"):
            if plan.outcome == "estop":
                await asyncio.sleep(plan.duration_s)
                self.location = _partway(start, target)
                await self._say(writer, "EStop pressed")
            await self._stop.wait()
            self.location = _partway(start, target)
            if plan.outcome == "hold":
                await self._say(writer, f"Interrupted: Going to {name or 'point ' + point}")
            return
        stopped = await _stopped_within(self._stop, plan.duration_s)
        if stopped:
            self.location = _partway(start, target)
            await self._say(writer, f"Interrupted: Going to {name or 'point ' + point}")
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
        else:  # interrupt: another client sent the base elsewhere
            self.location = _partway(start, target)
            await self._say(writer, f"Interrupted: Going to {name or 'point ' + point}")


def _partway(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, float, float]:
    return ((a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0, b[2])


async def _stopped_within(event: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout=max(seconds, 0.0))
    except TimeoutError:
        return False
    return True
