"""ARCL in sayplan_core: command lines built from site targets, the robot's answers read line by line, and the
whole exchange against the fake Omron base (TCP on loopback) with a plain blocking client."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Iterator

import pytest
from fakes.arcl_server import Drive, FakeArclServer
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import Target
from sayplan_core.robots.navigation import TargetError
from sayplan_core.robots.primitives import Outcome
from sayplan_franka_omron.arcl import (
    ERROR_OUTCOMES,
    GoalList,
    GotoCommand,
    GotoTracker,
    LineKind,
    MotorsReader,
    SilenceWatch,
    StatusReader,
    check_goal_name,
    classify,
    from_arcl_point,
    goto_command,
    parse_location,
    says_estop_pressed,
    to_arcl_point,
)


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
        # the guide's server messages (p. 251) and queryMotors answers (p. 190), in the cases it writes them
        ("Estop pressed", LineKind.ESTOP, "pressed"),
        ("EStop relieved but motors still disabled", LineKind.ESTOP, "relieved but motors still disabled"),
        ("Motors disabled", LineKind.MOTORS, "disabled"),
        ("Motors enabled", LineKind.MOTORS, "enabled"),
        ("Error: Cannot find path", LineKind.ERROR, "Cannot find path"),
        ("error: Stalled", LineKind.ERROR, "Stalled"),
        ("Stopping", LineKind.STOPPING, ""),
        ("SetUpError: You need to start a list", LineKind.COMMAND_ERROR, "You need to start a list"),
        ("BatteryVoltage: 26.1", LineKind.STATUS_FIELD, "BatteryVoltage:26.1"),
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


def test_lines_about_another_point_or_a_goal_sharing_a_prefix_do_not_end_the_drive() -> None:
    """Issue 23 review #9: another drive's arrival (another client's gotoPoint, a goal `Kitchen 2`) is not ours."""
    assert _outcome(GotoTracker(NAMED), "Going to Kitchen", "Arrived at Kitchen 2", "Arrived at Kitchen Annex") is None
    assert _outcome(GotoTracker(POINT), "Will do task gotoPoint 35000 0 0", "Arrived at point 5 5 5") is None
    assert _outcome(GotoTracker(POINT), "Completed doing task gotoPoint 5 5 5", "Failed doing task x") is not None
    assert _outcome(GotoTracker(POINT), "Completed doing task gotoPoint 5 5 5") is None
    assert _outcome(GotoTracker(POINT), "Arrived at point 35000 0 180") is not None  # the same x and y


def test_status_is_read_by_its_state_not_a_goal_name_and_keys_in_any_case() -> None:
    """Issue 23 review #9: `Going to Lost and Found` is a base under way, not a lost one; `status:` is `Status:`."""
    reader = StatusReader()
    for line in ("Status: Going to Lost and Found", "Location: 0 0 0", "LocalizationScore: 0.9"):
        reader.feed(line)
    assert reader.problem() is None and reader.driving
    lower = StatusReader()
    for line in ("status: EStop pressed", "location: 1000 0 0", "localizationscore: 0.9"):
        lower.feed(line)
    problem = lower.problem()
    assert problem is not None and problem.code is SkillCode.ESTOPPED and lower.location == (1.0, 0.0, 0.0)
    stopped = StatusReader()
    stopped.feed("Status: Stopped")
    assert not stopped.driving


def test_a_stop_we_asked_for_ends_canceled_once_the_base_says_stopped() -> None:
    """p. 242: `stop` answers `Interrupted: Going to <goal>`, `Stopping`, `Stopped`; the drive ends on the last."""
    tracker = GotoTracker(NAMED)
    assert tracker.feed("Going to Kitchen") is not None
    tracker.stop_requested = True
    assert _outcome(tracker, "Interrupted: Going to Kitchen", "Stopping") is None  # not confirmed yet
    outcome = tracker.feed("Stopped")
    assert isinstance(outcome, Outcome) and outcome.code is SkillCode.CANCELED
    # an e-stop while our stop is under way is still an e-stop
    tracker = GotoTracker(NAMED, stop_requested=True)
    outcome = _outcome(tracker, "Going to Kitchen", "Estop pressed")
    assert outcome is not None and outcome.code is SkillCode.ESTOPPED


#: Issue 38 #2: the e-stop state in every spelling the guide shows, on whatever line it comes: `EStopPressed` (status
#: conditions, p. 49; queueShowRobot, p. 235), `EStop pressed` / `Estop pressed` (queryMotors, p. 190; server
#: messages, p. 251), `Estop pressed, cannot enable motors` (p. 35), `Estop pressed cannot enable motors`
#: (enableMotors, p. 87), `Emergency stop pressed` (an `Error:` of p. 251), and in the `Status:` line of `status`
#: (p. 240) and its ExtendedStatusForHumans without any broadcast.
ESTOP_LINES = [
    "Status: EStopPressed",
    "status: estoppressed",
    "Status: EStop pressed",
    "ExtendedStatusForHumans: Estop pressed",
    "Status: Estop pressed, cannot enable motors",
    "Status: Emergency stop pressed",
    "EStopPressed",
    "EStop pressed",
    "Estop pressed cannot enable motors",
    "Error: Emergency stop pressed",
    "Error: EStopPressed",
    "Failed going to goal Kitchen: Estop pressed",  # a failure whose reason is the e-stop (hostile review)
    "Interrupted: EStop pressed",
]


@pytest.mark.parametrize("line", ESTOP_LINES)
def test_an_estop_in_any_spelling_on_any_line_ends_the_drive_estopped(line: str) -> None:
    assert says_estop_pressed(line)
    for command, started in ((NAMED, "Going to Kitchen"), (POINT, "Will do task gotoPoint 35000 0 0")):
        outcome = _outcome(GotoTracker(command), started, line)
        assert outcome is not None and outcome.code is SkillCode.ESTOPPED, (line, outcome)
        assert line in outcome.message
    if line.casefold().startswith(("status:", "extendedstatusforhumans:")):  # the watchdog's reader says so too
        reader = StatusReader()
        for field in (line, "Location: 0 0 0", "LocalizationScore: 0.9"):
            reader.feed(field)
        problem = reader.problem(localisation=False)
        assert problem is not None and problem.code is SkillCode.ESTOPPED, line


def test_what_is_not_an_estop() -> None:
    """A released e-stop is the motors' business; a goal's name is not the base's state."""
    for line in (
        "EStop relieved but motors still disabled",
        "Estop relieved",
        "Status: Going to EStopPressed",
        "Status: Arrived at Emergency Stop Pressed",
        "Arrived at EStopPressed",
        "Goal: EStopPressed",
        "Failed going to goal EStopPressed",  # a goal so named, no reason given
        "Status: Stopped",
        "Motors enabled",
        "Error: Stalled",
    ):
        assert not says_estop_pressed(line), line
    motors = MotorsReader()
    motors.feed("Estop pressed, cannot enable motors")
    problem = motors.problem()
    assert problem is not None and problem.code is SkillCode.ESTOPPED


def test_a_failure_ends_the_drive_only_once_the_base_confirms_the_stop() -> None:
    """#3: a failure is handed back to `fail` (the caller sends `stop`): the drive ends with that failure on the
    base's `Stopped`, not before; a second failure is added to it (the more serious code kept); an e-stop while
    the stop is under way ends it `estopped`, naming the failure."""
    tracker = GotoTracker(NAMED)
    tracker.feed("Going to Kitchen")
    failure = tracker.feed("Error: Robot lost")
    assert isinstance(failure, Outcome) and failure.code is SkillCode.ROBOT_FAULT
    tracker.fail(failure)
    assert tracker.stop_requested
    assert _outcome(tracker, "Going to Kitchen", "Interrupted: Going to Kitchen", "Stopping", "Error: x") is None
    ended = tracker.feed("Stopped")
    assert isinstance(ended, Outcome) and ended.code is SkillCode.ROBOT_FAULT
    assert "Robot lost" in ended.message and "confirmed SayPlan's stop" in ended.message
    two = GotoTracker(NAMED)
    two.fail(Outcome(SkillCode.UNREACHABLE, "no path"))
    two.fail(Outcome(SkillCode.ROBOT_FAULT, "the link dropped"))
    ended = two.feed("Stopped")
    assert isinstance(ended, Outcome) and ended.code is SkillCode.ROBOT_FAULT
    assert "no path" in ended.message and "the link dropped" in ended.message
    held = GotoTracker(NAMED)
    held.fail(Outcome(SkillCode.UNREACHABLE, "no path"))
    ended = held.feed("Status: EStopPressed")
    assert isinstance(ended, Outcome) and ended.code is SkillCode.ESTOPPED and "no path" in ended.message


#: Every line the guide lists for a drive (p. 251 server messages, `Error: <error>` examples, queryMotors' own
#: spellings) after `Going to Kitchen`: the drive ends at once with this code. The case differs on purpose.
MANUAL_LINES = [
    ("Error: Cannot find path", SkillCode.UNREACHABLE),
    ("Error: Failed going to goal", SkillCode.UNREACHABLE),
    ("Error: Stalled", SkillCode.ROBOT_FAULT),
    ("Error: Robot lost", SkillCode.ROBOT_FAULT),
    ("Error: Emergency stop pressed", SkillCode.ESTOPPED),
    ("Error: Lost connection to robot", SkillCode.ROBOT_FAULT),
    ("Error: Server crashed", SkillCode.ROBOT_FAULT),
    ("Error: something no guide lists", SkillCode.ROBOT_FAULT),
    ("Estop pressed", SkillCode.ESTOPPED),
    ("EStop pressed", SkillCode.ESTOPPED),
    ("ESTOP PRESSED", SkillCode.ESTOPPED),
    ("Motors disabled", SkillCode.NOT_POWERED),
    ("Interrupted: Going to Kitchen", SkillCode.ROBOT_FAULT),
    ("Stopped", SkillCode.ROBOT_FAULT),  # a Stopped nobody here asked for
]


@pytest.mark.parametrize(("line", "code"), MANUAL_LINES)
def test_every_line_the_guide_lists_ends_the_drive_typed(line: str, code: SkillCode) -> None:
    for command, started in ((NAMED, "Going to Kitchen"), (POINT, "Will do task gotoPoint 35000 0 0")):
        outcome = _outcome(GotoTracker(command), started, line)
        assert outcome is not None and outcome.code is code, (line, outcome)
        assert line.split(":")[-1].strip().casefold() in outcome.message.casefold() or code in (
            SkillCode.ESTOPPED,
            SkillCode.ROBOT_FAULT,
        )


def test_the_error_table_covers_every_example_of_the_guide() -> None:
    examples = {
        "emergency stop pressed",
        "cannot find path",
        "failed going to goal",
        "stalled",
        "robot lost",
        "lost connection to robot",
        "server crashed",
    }
    assert {start for start, _code, _meaning in ERROR_OUTCOMES} == examples


def test_lines_that_do_not_end_a_drive() -> None:
    tracker = GotoTracker(NAMED)
    assert tracker.feed("Going to Kitchen") is not None
    for line in ("Estop relieved", "EStop relieved but motors still disabled", "Motors enabled", "Stopping",
                 "Status: Going to Kitchen", "Location: 1 2 3", "DockingState: Undocked", "Arrived at Lobby"):  # fmt: skip
        assert not isinstance(tracker.feed(line), Outcome), line


def test_status_problems_and_motors() -> None:
    def status(*lines: str) -> StatusReader:
        reader = StatusReader()
        for line in lines:
            reader.feed(line)
        return reader

    fine = status("Status: Arrived at g_24", "Location: 7038 -8342 0", "LocalizationScore: 0.988304")
    assert fine.problem() is None and "Arrived at g_24" in fine.describe()
    for text, code in [("EStop pressed", SkillCode.ESTOPPED), ("Estop relieved but motors still disabled",
                       SkillCode.NOT_POWERED), ("Robot lost", SkillCode.ROBOT_FAULT)]:  # fmt: skip
        problem = status(f"Status: {text}", "Location: 0 0 0", "LocalizationScore: 0.9").problem()
        assert problem is not None and problem.code is code, text
    lost = status("Status: Stopped", "Location: 0 0 0", "LocalizationScore: 0.1")
    assert lost.problem() is not None and lost.problem(localisation=False) is None
    for answer, code in [("Motors enabled", None), ("Motors disabled", SkillCode.NOT_POWERED), ("EStop pressed",
                         SkillCode.ESTOPPED), ("EStop relieved but motors still disabled", SkillCode.NOT_POWERED)]:  # fmt: skip
        motors = MotorsReader()
        assert motors.feed("Status: whatever") is False and motors.feed(answer)
        problem = motors.problem()
        assert (problem.code if problem else None) is code, answer
    assert MotorsReader().problem() is not None  # no answer is not "enabled"


def test_the_watchdog_asks_status_and_sees_silence() -> None:
    watch = SilenceWatch(period_s=0.5, silence_s=3.0)
    watch.start(100.0)
    assert not watch.due(100.2) and watch.due(100.5) and not watch.due(100.6) and watch.due(101.0)
    assert watch.silent_for(102.9) is None
    watch.heard(102.9)  # the answer to a status query
    assert watch.silent_for(105.8) is None and watch.silent_for(105.9) == pytest.approx(3.0)


def test_status_and_goal_list() -> None:
    reader = StatusReader()
    assert not reader.feed("Status: Going to Kitchen") and reader.location is None
    assert not reader.feed("Location: 54470 -4350 90") and reader.feed("LocalizationScore: 0.98")
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


@pytest.mark.parametrize(("line", "code"), [item for item in MANUAL_LINES if item[0] != "Stopped"])
def test_the_fake_base_says_the_guides_lines(base: FakeArclServer, line: str, code: SkillCode) -> None:
    base.script(Drive("say", 0.01, text=line))
    client = BlockingClient(base.port, "pw")
    try:
        tracker = GotoTracker(NAMED)
        client.send(NAMED.line)
        outcome = None
        while outcome is None:
            event = tracker.feed(client.read())
            outcome = event if isinstance(event, Outcome) else None
        assert outcome.code is code, outcome.message
        client.send("queryMotors")
        motors = MotorsReader()
        while not motors.feed(client.read()):
            pass
        expected = SkillCode.NOT_POWERED if code is SkillCode.NOT_POWERED else None
        expected = SkillCode.ESTOPPED if "stop pressed" in line.casefold() else expected
        assert (motors.problem().code if motors.problem() else None) is expected
    finally:
        client.close()


def test_a_silent_base_answers_nothing_but_still_stops(base: FakeArclServer) -> None:
    base.script(Drive("silent"))
    client = BlockingClient(base.port, "pw")
    try:
        client.send(NAMED.line)
        assert client.read() == "Going to Kitchen"
        client.sock.settimeout(0.3)
        client.send("status")
        with pytest.raises(TimeoutError):
            client.read()
        assert base.moving()
        client.send("stop")
        deadline = 50
        while base.moving() and deadline:
            time.sleep(0.02)
            deadline -= 1
        assert not base.moving() and len(base.stops) == 1
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
