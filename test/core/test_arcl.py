"""ARCL in sayplan_core: command lines built from site targets, the robot's answers read line by line, and the
whole exchange against the fake Omron base (TCP on loopback) with a plain blocking client."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator

import pytest
from fakes.arcl_server import Drive, FakeArclServer
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.arcl import (
    GoalList,
    GotoCommand,
    GotoTracker,
    LineKind,
    StatusReader,
    check_goal_name,
    classify,
    from_arcl_point,
    goto_command,
    parse_location,
    to_arcl_point,
)
from sayplan_core.robots.binding import Target
from sayplan_core.robots.navigation import TargetError
from sayplan_core.robots.primitives import Outcome


@pytest.mark.parametrize(
    ("line", "kind", "arg"),
    [
        ("Enter password:", LineKind.PASSWORD_PROMPT, ""),
        ("End of commands", LineKind.END_OF_COMMANDS, ""),
        ("Goal: Kitchen Bench", LineKind.GOAL, "Kitchen Bench"),
        ("End of goals", LineKind.END_OF_GOALS, ""),
        ("Going to Kitchen", LineKind.GOING, "Kitchen"),
        ("Arrived at Kitchen\r", LineKind.ARRIVED, "Kitchen"),
        ("Error: Failed going to goal Kitchen", LineKind.FAILED, "Kitchen"),
        ("Failed going to goal Kitchen", LineKind.FAILED, "Kitchen"),
        ("Will do task gotoPoint 1 2 3", LineKind.TASK_STARTED, "gotoPoint 1 2 3"),
        ("Completed doing task gotoPoint 1 2 3", LineKind.TASK_COMPLETED, "gotoPoint 1 2 3"),
        ("Failed doing task gotoPoint 1 2 3", LineKind.TASK_FAILED, "gotoPoint 1 2 3"),
        ("Interrupted: Going to Kitchen", LineKind.INTERRUPTED, "Going to Kitchen"),
        ("Stopped", LineKind.STOPPED, ""),
        ("EStop pressed", LineKind.ESTOP, "pressed"),
        ("CommandErrorDescription: whatever it says", LineKind.COMMAND_ERROR, "whatever it says"),
        ("CommandError: goto Atlantis", LineKind.COMMAND_ERROR, "goto Atlantis"),
        ("Location: 1000 -2000 90", LineKind.STATUS_FIELD, "Location:1000 -2000 90"),
        ("Temperature: 31", LineKind.STATUS_FIELD, "Temperature:31"),
        ("Parking", LineKind.OTHER, "Parking"),
    ],
)
def test_lines_are_classified(line: str, kind: LineKind, arg: str) -> None:
    parsed = classify(line)
    assert (parsed.kind, parsed.arg) == (kind, arg)


def test_commands_from_targets() -> None:
    assert goto_command(Target("kitchen", "Kitchen 1", (55.0, -5.0, 0.0))) == GotoCommand(
        "goto Kitchen 1", "Kitchen 1", "kitchen (goal 'Kitchen 1')"
    )
    command = goto_command(Target("pose8", None, (35.0004, -0.0006, math.radians(-90.4))))
    assert command.line == "doTask gotoPoint 35000 -1 -90" and command.goal is None


@pytest.mark.parametrize(
    "name",
    ["", "Kitchen\r\nstop", "Kitchen\nstop", " Kitchen", "Kitchen ", "Küche", "Kitchen\x00", "x" * 129, "tab\there"],
)
def test_goal_names_that_would_break_the_command_line_are_refused(name: str) -> None:
    with pytest.raises(TargetError, match="ARCL goal name"):
        check_goal_name(name)
    with pytest.raises(TargetError):
        goto_command(Target("kitchen", name or None, None))


@pytest.mark.parametrize("pose", [(math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (20_000.0, 0.0, 0.0)])
def test_points_out_of_any_building_are_refused(pose: tuple[float, float, float]) -> None:
    with pytest.raises(TargetError):
        to_arcl_point(pose)


@given(
    st.floats(-9000.0, 9000.0, allow_nan=False),
    st.floats(-9000.0, 9000.0, allow_nan=False),
    st.floats(-50.0, 50.0, allow_nan=False),
)
def test_points_round_trip_within_a_millimetre_and_half_a_degree(x: float, y: float, yaw: float) -> None:
    x_mm, y_mm, th = to_arcl_point((x, y, yaw))
    assert -180 < th <= 180
    bx, by, byaw = from_arcl_point(x_mm, y_mm, th)
    assert abs(bx - x) <= 0.0005 + 1e-9 and abs(by - y) <= 0.0005 + 1e-9
    # headings compare on the circle: the wrapped difference is at most half a degree
    assert abs(math.remainder(byaw - yaw, 2 * math.pi)) <= math.radians(0.5) + 1e-9


def _outcome(tracker: GotoTracker, *lines: str) -> Outcome | None:
    for line in lines:
        event = tracker.feed(line)
        if isinstance(event, Outcome):
            return event
    return None


NAMED = goto_command(Target("kitchen", "Kitchen", None))
POINT = goto_command(Target("pose8", None, (35.0, 0.0, 0.0)))


@pytest.mark.parametrize(
    ("command", "lines", "code"),
    [
        (NAMED, ["Going to Kitchen", "Arrived at Kitchen"], SkillCode.NONE),
        (NAMED, ["Arrived at Lobby", "Going to Kitchen", "Arrived at kitchen"], SkillCode.NONE),  # case-insensitive
        (NAMED, ["Going to Kitchen", "Error: Failed going to goal Kitchen"], SkillCode.UNREACHABLE),
        (NAMED, ["Failed going to goal Kitchen (cannot find path)"], SkillCode.UNREACHABLE),
        (NAMED, ["Going to Kitchen", "Interrupted: Going to Kitchen"], SkillCode.ROBOT_FAULT),
        (NAMED, ["Going to Kitchen", "EStop pressed"], SkillCode.ESTOPPED),
        (NAMED, ["CommandError: goto Kitchen", "CommandErrorDescription: anything"], SkillCode.INVALID_TARGET),
        (POINT, ["Will do task gotoPoint 35000 0 0", "Going to point 35000 0 0", "Arrived at point 35000 0 0"], SkillCode.NONE),
        (POINT, ["Completed doing task gotoPoint 35000 0 0"], SkillCode.NONE),
        (POINT, ["Failed doing task gotoPoint 35000 0 0"], SkillCode.UNREACHABLE),
    ],
)  # fmt: skip
def test_tracker_reads_a_drive(command: GotoCommand, lines: list[str], code: SkillCode) -> None:
    outcome = _outcome(GotoTracker(command), *lines)
    assert outcome is not None and outcome.code is code, outcome


def test_lines_about_other_goals_or_no_drive_are_not_an_outcome() -> None:
    tracker = GotoTracker(NAMED)
    assert _outcome(tracker, "Arrived at Kitchen2", "Failed going to goal Lobby", "Stopped", "EStop relieved") is None
    assert tracker.feed("Going to Kitchen") == "going to kitchen (goal 'Kitchen')" and tracker.started
    assert GotoTracker(POINT).feed("Arrived at Kitchen") is None


def test_a_stop_we_asked_for_is_a_cancel_not_a_fault() -> None:
    for last in ("Interrupted: Going to Kitchen", "Stopped"):
        tracker = GotoTracker(NAMED, stop_requested=True)
        outcome = _outcome(tracker, "Going to Kitchen", "Stopping", last)
        assert outcome is not None and outcome.code is SkillCode.CANCELED


def test_status_and_goal_list() -> None:
    reader = StatusReader()
    assert not reader.feed("Status: Going to Kitchen") and reader.location is None
    assert reader.feed("Location: 54470 -4350 90")
    x, y, yaw = reader.location or (0.0, 0.0, 0.0)
    assert (x, y) == (54.47, -4.35) and math.isclose(yaw, math.pi / 2)
    goals = GoalList()
    assert not goals.feed("Goal: Kitchen") and not goals.feed("Goal: Coffee Machine")
    assert goals.feed("End of goals") and goals.has("coffee machine") and not goals.has("Coffee")


def test_a_goal_list_longer_than_any_map_is_refused() -> None:
    goals = GoalList()
    for i in range(10_000):
        goals.feed(f"Goal: g{i}")
    with pytest.raises(ValueError, match="more than 10000 goals"):
        goals.feed("Goal: one too many")


@pytest.mark.parametrize("value", ["1 2", "a b c", "1 nan 3", ""])
def test_bad_locations_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="ARCL location"):
        parse_location(value)
    reader = StatusReader()
    reader.feed(f"Location: {value}")
    assert reader.location is None


# ----------------------------------------------------------------------------- against the fake base
class BlockingClient:
    """The least ARCL client: log in, send one line, read lines (independent of the node's reader thread)."""

    def __init__(self, port: int, password: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.file = self.sock.makefile("rb")
        assert self.read() == "Enter password:"
        self.send(password)
        while self.read() != "End of commands":
            pass

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\r\n")

    def read(self) -> str:
        raw = self.file.readline()
        assert raw, "the fake base closed the connection"
        return raw.decode().rstrip("\r\n")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def base() -> Iterator[FakeArclServer]:
    server = FakeArclServer("pw", {"Kitchen": (55000.0, -5000.0, 0.0)}, (30000.0, 0.0, 0.0))
    server.start()
    yield server
    server.close()


@pytest.mark.parametrize(
    ("target", "drive", "code"),
    [
        (Target("kitchen", "Kitchen", None), "arrive", SkillCode.NONE),
        (Target("kitchen", "Kitchen", None), "fail", SkillCode.UNREACHABLE),
        (Target("kitchen", "Kitchen", None), "interrupt", SkillCode.ROBOT_FAULT),
        (Target("kitchen", "Kitchen", None), "estop", SkillCode.ESTOPPED),
        (Target("kitchen", "Atlantis", None), "arrive", SkillCode.INVALID_TARGET),
        (Target("pose8", None, (35.0, 0.0, 0.0)), "arrive", SkillCode.NONE),
        (Target("pose8", None, (35.0, 0.0, 0.0)), "fail", SkillCode.UNREACHABLE),
    ],
)
def test_tracker_against_the_fake_base(base: FakeArclServer, target: Target, drive: str, code: SkillCode) -> None:
    base.script(Drive(drive, 0.01))
    client = BlockingClient(base.port, "pw")
    try:
        command = goto_command(target)
        tracker = GotoTracker(command)
        client.send(command.line)
        outcome = None
        while outcome is None:
            event = tracker.feed(client.read())
            outcome = event if isinstance(event, Outcome) else None
        assert outcome.code is code, outcome.message
        client.send("status")
        reader = StatusReader()
        while not reader.feed(client.read()):
            pass
        arrived = code is SkillCode.NONE
        expected = (target.pose[:2] if target.pose else (55.0, -5.0)) if arrived else None
        if expected is not None:
            assert reader.location is not None and reader.location[:2] == pytest.approx(expected)
    finally:
        client.close()


def test_stop_during_a_drive_ends_it_as_canceled(base: FakeArclServer) -> None:
    base.script(Drive("hold"))
    client = BlockingClient(base.port, "pw")
    try:
        tracker = GotoTracker(NAMED)
        client.send(NAMED.line)
        assert tracker.feed(client.read()) == "going to kitchen (goal 'Kitchen')"
        tracker.stop_requested = True
        client.send("stop")
        outcome = None
        while outcome is None:
            event = tracker.feed(client.read())
            outcome = event if isinstance(event, Outcome) else None
        assert outcome.code is SkillCode.CANCELED
    finally:
        client.close()
