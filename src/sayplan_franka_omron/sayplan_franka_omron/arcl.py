"""ARCL, the text protocol of Omron LD/HD mobile bases: the commands SayPlan sends and what the robot's lines mean.

No SDK and no socket here (the TCP client lives in the sayplan_franka_omron package);
this module builds command lines and reads the robot's answers, so it can be tested
line by line. The base localises itself on its LiDAR map and plans its own paths: SayPlan
sends it to a named goal of that map (`goto <goal>`) or to a map point (`doTask gotoPoint
x y th`, millimetres and degrees) and waits for the outcome.

Line formats, from Omron's ARCL Reference Guide (18448-000 Rev A / I617-E-01, 2017; "p." below is the
guide's own page number) and public ARCL clients (OmronAPAC/Omron_LD_ROS_Package and Omron_AMR_ROS2, whose
parser ends a drive on any line with "Error", "Failed" or "Stopped"):
- login `Enter password:` ... `End of commands`;
- `goto` (older guides; public clients) answers `Going to <goal>` then `Arrived at <goal>` or `Failed going to
  goal <goal>` (some firmware prefixes `Error: `);
- `doTask gotoPoint` (p. 82): `Will do task ...`, `Doing task ...`, then `Completed doing task ...` (or
  `Failed doing task ...`);
- `stop` (p. 242): `Interrupted: Going to <goal>`, `Stopping`, `Stopped`;
- `status` (p. 240): `Status: <status>`, `BatteryVoltage:`, `Location: x y th` (mm, mm, degrees),
  `LocalizationScore:`, `Temperature:` (newer firmware adds `ExtendedStatusForHumans:`, `StateOfCharge:`);
- `queryMotors` (p. 190-191): `Motors enabled`, `Motors disabled`, `EStop pressed`, `EStop relieved but motors
  still disabled` (the guide writes both `EStop` and `Estop`, so every prefix is matched case-insensitively);
- the e-stop state in the guide's other spellings: `EStopPressed` (the status conditions, p. 49, and
  `queueShowRobot`, p. 235), `Estop pressed, cannot enable motors` (p. 35) and `Estop pressed cannot enable motors`
  (`enableMotors`, p. 87), `Emergency stop pressed` (an `Error:` of p. 251); a `Status:` line (p. 240) may carry
  any of them without the broadcast, so every line is read for it (`says_estop_pressed`);
- server messages broadcast to every client (p. 251): `Estop pressed`, `Estop relieved`, `Motors disabled`,
  `Error: <error>` while a command runs (`Emergency stop pressed`, `Cannot find path`, `Failed going to goal`,
  `Stalled`, `Robot lost`, `Lost connection to robot`, `Server crashed`), `Interrupted: <command>`;
- a command the robot refuses (p. 46): `CommandError: ...` / `CommandErrorDescription: ...` (or `SetUpError:`);
- `getGoals` lists `Goal: <name>` lines ending with `End of goals`.
The exact wording of the refusal of an unknown goal was not found in a public source, so an unknown goal is
caught before sending (against the `getGoals` list) and any `CommandError` line after a goto is treated as a
refusal, whatever it says.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import Enum

from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import Target
from sayplan_core.robots.navigation import Pose2D, TargetError
from sayplan_core.robots.primitives import Outcome

DEFAULT_PORT = 7171
#: A line longer than this is not ARCL: the client drops the connection rather than buffer it.
MAX_LINE_BYTES = 4096
#: Goal names are typed by people in MobilePlanner: printable ASCII, bounded.
MAX_GOAL_NAME = 128
#: More goals than this in a `getGoals` reply is not a building's map.
MAX_GOALS = 10_000
#: |x|, |y| beyond this many millimetres (10 km) is a broken site file, not a building.
MAX_COORDINATE_MM = 10_000_000

PASSWORD_PROMPT = "Enter password:"
END_OF_COMMANDS = "End of commands"
END_OF_GOALS = "End of goals"
GET_GOALS = "getGoals"
STATUS = "status"
STOP = "stop"
QUERY_MOTORS = "queryMotors"
#: A `LocalizationScore:` below this is a base that does not know where it is (SayPlan's own threshold, not the
#: guide's: the guide gives the score, 0..1, without a limit).
MIN_LOCALIZATION_SCORE = 0.3


class LineKind(str, Enum):
    PASSWORD_PROMPT = "password_prompt"
    END_OF_COMMANDS = "end_of_commands"
    GOAL = "goal"
    END_OF_GOALS = "end_of_goals"
    GOING = "going"
    ARRIVED = "arrived"
    FAILED = "failed"
    TASK_STARTED = "task_started"
    TASK_COMPLETED = "task_completed"
    TASK_FAILED = "task_failed"
    INTERRUPTED = "interrupted"
    STOPPING = "stopping"
    STOPPED = "stopped"
    ESTOP = "estop"
    MOTORS = "motors"
    ERROR = "error"
    COMMAND_ERROR = "command_error"
    STATUS_FIELD = "status_field"
    OTHER = "other"


#: Prefixes in the order they are tried (longer, more specific first), matched case-insensitively (the guide
#: itself writes `EStop pressed` and `Estop pressed`); the rest of the line is the argument.
_PREFIXES: tuple[tuple[str, LineKind], ...] = (
    (PASSWORD_PROMPT, LineKind.PASSWORD_PROMPT),
    (END_OF_COMMANDS, LineKind.END_OF_COMMANDS),
    (END_OF_GOALS, LineKind.END_OF_GOALS),
    ("Goal: ", LineKind.GOAL),
    ("Error: Failed going to goal", LineKind.FAILED),
    ("Failed going to goal", LineKind.FAILED),
    ("Failed going to", LineKind.FAILED),
    ("Error:", LineKind.ERROR),
    ("Going to ", LineKind.GOING),
    ("Arrived at ", LineKind.ARRIVED),
    ("Will do task ", LineKind.TASK_STARTED),
    ("Doing task ", LineKind.TASK_STARTED),
    ("Completed doing task ", LineKind.TASK_COMPLETED),
    ("Failed doing task ", LineKind.TASK_FAILED),
    ("Interrupted:", LineKind.INTERRUPTED),
    ("Stopping", LineKind.STOPPING),
    ("Stopped", LineKind.STOPPED),
    ("EStop ", LineKind.ESTOP),
    ("Motors ", LineKind.MOTORS),
    ("CommandErrorDescription:", LineKind.COMMAND_ERROR),
    ("CommandError:", LineKind.COMMAND_ERROR),
    ("SetUpError:", LineKind.COMMAND_ERROR),
)

#: Keys of the `status` reply SayPlan reads (p. 240, plus the fields newer firmware adds).
STATUS_KEYS = (
    "Status",
    "ExtendedStatusForHumans",
    "BatteryVoltage",
    "StateOfCharge",
    "Location",
    "LocalizationScore",
    "Temperature",
)
_STATUS_KEYS_FOLDED = {key.casefold(): key for key in STATUS_KEYS}

#: `Error: <error>` while a command runs (p. 251), by the start of its text, lower case: the outcome of a drive it
#: ends and why. `Stalled` (the drive motors pushed and the wheels did not turn: the base ran into something its
#: lasers did not see, with an arm on top) is a robot fault, not `blocked`: something was hit, and a person should
#: look before the base moves again. An error the guide does not list ends the drive as a robot fault too.
ERROR_OUTCOMES: tuple[tuple[str, SkillCode, str], ...] = (
    ("emergency stop pressed", SkillCode.ESTOPPED, "the base's emergency stop was pressed"),
    ("cannot find path", SkillCode.UNREACHABLE, "the base found no path"),
    ("failed going to goal", SkillCode.UNREACHABLE, "the base failed to reach the goal"),
    ("stalled", SkillCode.ROBOT_FAULT, "the base stalled (it ran into something): check the robot and its path"),
    ("robot lost", SkillCode.ROBOT_FAULT, "the base lost its localisation: relocalise it in MobilePlanner"),
    ("lost connection to robot", SkillCode.ROBOT_FAULT, "the ARCL server lost its connection to the base"),
    ("server crashed", SkillCode.ROBOT_FAULT, "the base's ARCL server crashed"),
)


def _squash(text: str) -> str:
    """Letters and digits only, folded: `EStop pressed`, `EStopPressed` and `ESTOP_PRESSED` read alike."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


#: How a state text names a pressed e-stop once squashed, in every spelling the guide shows (see the module
#: docstring): `EStop pressed`, `Estop pressed`, `EStopPressed`, `Estop pressed, cannot enable motors`, `Emergency
#: stop pressed`. `EStop relieved but motors still disabled` is not one of them (the motors are: NOT_POWERED).
_ESTOP_WORDS = ("estoppressed", "emergencystop")


def names_estop(state: str) -> bool:
    """Whether a state text (a `Status:` value, an answer, a broadcast) names a pressed e-stop, anywhere in it."""
    squashed = _squash(state)
    return any(word in squashed for word in _ESTOP_WORDS)


@dataclass(frozen=True)
class Line:
    kind: LineKind
    arg: str  # the rest of the line, stripped
    text: str  # the whole line, for messages


def classify(text: str) -> Line:
    """What a line from the robot is; unknown lines are OTHER (ARCL sends much SayPlan does not need)."""
    text = text.strip()
    folded = text.casefold()
    for prefix, kind in _PREFIXES:
        if folded.startswith(prefix.casefold()):
            return Line(kind, text[len(prefix) :].strip(), text)
    key, sep, value = text.partition(":")
    canonical = _STATUS_KEYS_FOLDED.get(key.strip().casefold())
    if sep and canonical is not None:
        return Line(LineKind.STATUS_FIELD, f"{canonical}:{value.strip()}", text)
    return Line(LineKind.OTHER, text, text)


def says_estop_pressed(text: str) -> bool:
    """Whether a line from the base says its e-stop is pressed, whatever line it is: a broadcast or an answer
    (`EStop pressed`, `Estop pressed, cannot enable motors`, a bare `EStopPressed`), an `Error: Emergency stop
    pressed`, or a `Status:` / `ExtendedStatusForHumans:` line naming that state (p. 240; the goal a state like
    `Going to <goal>` names is not read), or a failure whose reason after the goal is one (`Failed going to goal1:
    Estop pressed`, `Interrupted: EStop pressed`). A line about a goal (`Arrived at EStopPressed`) is not one."""
    line = classify(text)
    if line.kind is LineKind.STATUS_FIELD:
        key, _, value = line.arg.partition(":")
        return key in ("Status", "ExtendedStatusForHumans") and names_estop(_state_words(value))
    if line.kind in (LineKind.ESTOP, LineKind.OTHER):
        return _squash(line.text).startswith(_ESTOP_WORDS)
    if line.kind is LineKind.ERROR:
        return _squash(line.arg).startswith(_ESTOP_WORDS)
    if line.kind in (LineKind.FAILED, LineKind.TASK_FAILED, LineKind.INTERRUPTED):
        # the reason after the goal (`Failed going to goal1: Estop pressed`); a goal named like a state is not one
        _, colon, reason = line.text.partition(": ")
        return bool(colon) and _squash(reason).startswith(_ESTOP_WORDS)
    return False


def error_outcome(error: str, where: str) -> Outcome:
    """What an `Error: <error>` line means for a drive to `where` (see ERROR_OUTCOMES)."""
    folded = error.casefold()
    estop = _squash(folded).startswith(_ESTOP_WORDS)  # every spelling of the e-stop, not only the guide's example
    for start, code, meaning in ERROR_OUTCOMES:
        if folded.startswith(start) or (estop and code is SkillCode.ESTOPPED):
            return Outcome(code, f"{meaning} while driving to {where} (Error: {error})")
    return Outcome(SkillCode.ROBOT_FAULT, f"the base reported an error while driving to {where} (Error: {error})")


# ----------------------------------------------------------------------------- commands
def check_goal_name(name: str) -> str:
    """A goal name safe to put on one command line (no line breaks, control characters or padding)."""
    if not isinstance(name, str) or not name or len(name) > MAX_GOAL_NAME:
        raise TargetError(f"ARCL goal name must be 1..{MAX_GOAL_NAME} characters, got {name!r}")
    if name != name.strip() or any(not (" " <= ch <= "~") for ch in name):
        raise TargetError(f"ARCL goal name {name!r} must be printable ASCII without leading or trailing spaces")
    return name


def to_arcl_point(pose: Pose2D) -> tuple[int, int, int]:
    """Map pose (m, m, rad) -> ARCL point (mm, mm, whole degrees in -180..180)."""
    x, y, yaw = pose
    if not all(math.isfinite(v) for v in pose):
        raise TargetError(f"pose {pose} is not finite")
    x_mm, y_mm = round(x * 1000.0), round(y * 1000.0)
    if abs(x_mm) > MAX_COORDINATE_MM or abs(y_mm) > MAX_COORDINATE_MM:
        raise TargetError(f"pose ({x:.1f}, {y:.1f}) m is more than {MAX_COORDINATE_MM // 1_000_000} km from the origin")
    degrees = round(math.degrees(math.atan2(math.sin(yaw), math.cos(yaw))))
    return x_mm, y_mm, 180 if degrees == -180 else degrees


def from_arcl_point(x_mm: float, y_mm: float, th_deg: float) -> Pose2D:
    """ARCL point (mm, mm, degrees) -> map pose (m, m, rad in -pi..pi)."""
    yaw = math.radians(th_deg)
    return x_mm / 1000.0, y_mm / 1000.0, math.atan2(math.sin(yaw), math.cos(yaw))


@dataclass(frozen=True)
class GotoCommand:
    """One drive: the line to send and what its answers are about."""

    line: str
    goal: str | None  # the named goal, or None for a map point
    where: str  # how messages name it: "kitchen (goal 'Kitchen1')"
    point: tuple[int, int, int] | None = None  # the map point (mm, mm, degrees) of a gotoPoint


def goto_command(target: Target) -> GotoCommand:
    """`goto <goal>` for a node bound to a goal of the robot's map, else `doTask gotoPoint x y th`."""
    if target.name:
        name = check_goal_name(target.name)
        return GotoCommand(f"goto {name}", name, f"{target.node} (goal '{name}')")
    if target.pose is None:
        raise TargetError(f"'{target.node}' has neither an ARCL goal nor a map pose")
    x, y, th = to_arcl_point(target.pose)
    return GotoCommand(f"doTask gotoPoint {x} {y} {th}", None, f"{target.node} (point {x} {y} {th})", (x, y, th))


# ----------------------------------------------------------------------------- answers to a drive
#: What may follow a goal's name in a line about it (a reason after a colon, a comma or parentheses); never a
#: space and more words, which would make `Kitchen 2` a line about `Kitchen`.
_AFTER_NAME = (":", ",", " (", " -", ".")


def _about(arg: str, goal: str) -> bool:
    """Whether a line's argument names exactly `goal` (case-insensitive; a reason may follow, see _AFTER_NAME)."""
    a, g = arg.strip().casefold(), goal.casefold()
    return a == g or any(a.startswith(g + after) for after in _AFTER_NAME)


def _numbers(text: str, count: int) -> tuple[int, ...] | None:
    """The first `count` words of `text` as whole numbers, or None."""
    parts = text.split()
    if len(parts) < count:
        return None
    try:
        values = tuple(round(float(p)) for p in parts[:count])
    except (ValueError, OverflowError):
        return None
    return values


def _about_point(arg: str, word: str, point: tuple[int, int, int] | None) -> bool:
    """Whether `arg` (`point x y th`, `gotoPoint x y th`) names this drive's map point: the same x and y in mm
    (the heading may be written differently, e.g. 180 or -180)."""
    folded = arg.strip().casefold()
    if point is None or not folded.startswith(word):
        return False
    numbers = _numbers(folded[len(word) :], 2)
    return numbers is not None and numbers == point[:2]


@dataclass
class GotoTracker:
    """Follows the robot's lines after one goto or gotoPoint until the drive ends.

    `feed` returns an Outcome when the drive ended, a progress text while it runs, or None for a line about
    something else. Lines about another goal are not this drive's. Every line the guide lists for a drive ends it
    at once with a typed outcome (nothing is left to a timeout): arrival; `Failed going to goal`, `Failed doing
    task`; `Error: <error>` (ERROR_OUTCOMES); `Estop pressed` (estopped) and `Motors disabled` (not_powered),
    broadcast to every client (p. 251); `Interrupted:` that SayPlan did not ask for (another client, MobilePlanner
    or the pendant took the base); a `Stopped` after the drive started that nobody here asked for; a `CommandError`.
    After SayPlan's own `stop`, the drive ends (canceled) on `Stopped` (p. 242: `Interrupted: ...`, `Stopping`,
    `Stopped`), so the stop is confirmed before the skill ends. An e-stop ends it from any line that shows one
    (`says_estop_pressed`: a `Status: EStopPressed` in the watchdog's status reply too, without the broadcast).

    A failure is not yet the end of the drive for the caller (issue 38: after an `Error:` line the base drove on):
    it hands the outcome back to `fail` and sends `stop`, as for a cancel, and the drive ends with that failure on
    the base's `Stopped` (or an e-stop); a base that does not confirm is the caller's deadline (`stop_s`).
    """

    command: GotoCommand
    stop_requested: bool = False
    started: bool = False
    failure: Outcome | None = None  # a failure awaiting the base's confirmation of SayPlan's stop

    def fail(self, outcome: Outcome) -> None:
        """A failure while the base may still be under way: kept (a later one is added to it) until the base
        confirms the stop the caller sends now."""
        first = self.failure
        if first is None:
            self.failure = outcome
        else:
            code = first.code if first.code.latches or not outcome.code.latches else outcome.code
            self.failure = Outcome(code, f"{first.message}; then {outcome.message}")
        self.stop_requested = True

    def feed(self, text: str) -> Outcome | str | None:
        line = classify(text)
        goal, where = self.command.goal, self.command.where
        kind = line.kind
        arg = line.arg.casefold()
        point = self.command.point
        ours = _about_point(arg, "point", point) if goal is None else _about(line.arg, goal)
        failure = self.failure
        if kind is LineKind.STOPPED and self.stop_requested:
            if failure is not None:
                return Outcome(failure.code, f"{failure.message} (then stopped: the base confirmed SayPlan's stop)")
            return Outcome(SkillCode.CANCELED, f"the drive to {where} was stopped (the base confirmed: Stopped)")
        if says_estop_pressed(text):
            estop = f"the base's emergency stop was pressed while driving to {where} ({line.text})"
            return Outcome(SkillCode.ESTOPPED, estop if failure is None else f"{failure.message}; then {estop}")
        if kind is LineKind.MOTORS and arg.startswith("disabled"):
            return Outcome(
                SkillCode.NOT_POWERED, f"the base's motors were disabled while driving to {where} ({line.text})"
            )
        if self.stop_requested:
            return None  # our stop is under way: only its `Stopped` (or an e-stop) ends the drive now
        if kind is LineKind.GOING:
            self.started = self.started or ours
            return f"going to {where}" if ours else None
        if kind is LineKind.ARRIVED:
            return Outcome(SkillCode.NONE, f"arrived at {where}") if ours else None
        if kind is LineKind.TASK_COMPLETED and goal is None and _about_point(arg, "gotopoint", point):
            return Outcome(SkillCode.NONE, f"arrived at {where}")
        if kind is LineKind.TASK_STARTED and goal is None and _about_point(arg, "gotopoint", point):
            self.started = True
            return f"going to {where}"
        if kind is LineKind.FAILED and (goal is None or not line.arg or _about(line.arg, goal)):
            return Outcome(SkillCode.UNREACHABLE, f"the base failed to reach {where} ({line.text})")
        if kind is LineKind.TASK_FAILED and goal is None:
            return Outcome(SkillCode.UNREACHABLE, f"the base failed to reach {where} ({line.text})")
        if kind is LineKind.ERROR:
            return error_outcome(line.arg, where)
        if kind is LineKind.INTERRUPTED:
            return Outcome(
                SkillCode.ROBOT_FAULT,
                f"the drive to {where} was interrupted ({line.text}): another ARCL client, MobilePlanner "
                "or the pendant took the base",
            )
        if kind is LineKind.STOPPED and self.started:
            return Outcome(
                SkillCode.ROBOT_FAULT,
                f"the base stopped on the way to {where} without arriving, and SayPlan did not ask it to",
            )
        if kind is LineKind.COMMAND_ERROR:
            return Outcome(SkillCode.INVALID_TARGET, f"the base refused '{self.command.line}' ({line.text})")
        return None


# ----------------------------------------------------------------------------- status and goal list
def parse_location(value: str) -> Pose2D:
    """`x y th` of a `Location:` line (mm, mm, degrees) as a map pose; ValueError if it is not three numbers."""
    parts = value.split()
    if len(parts) < 3:
        raise ValueError(f"ARCL location {value!r} is not 'x y th'")
    try:
        x, y, th = (float(p) for p in parts[:3])
    except ValueError:
        raise ValueError(f"ARCL location {value!r} is not 'x y th'") from None
    if not all(math.isfinite(v) for v in (x, y, th)):
        raise ValueError(f"ARCL location {value!r} is not finite")
    return from_arcl_point(x, y, th)


#: `Status:` texts that name a goal after them: the goal's name is not the base's state (a goal called
#: `Lost and Found` is not a lost base).
_NAMING_STATES = ("going to ", "arrived at ", "driving to ", "failed going to goal ", "interrupted: going to ")
#: `Status:` texts of a base under way.
_DRIVING_STATES = ("going", "driving", "doing task", "docking", "undocking", "moving")


def _state_words(text: str) -> str:
    """A `Status:` value, folded, without the goal name a state like `Going to <goal>` carries."""
    folded = " ".join(text.split()).casefold()
    for start in _NAMING_STATES:
        if folded.startswith(start):
            return start.strip()
    return folded


@dataclass
class StatusReader:
    """Collects the fields of a `status` reply (p. 240); complete once the location and the localisation score
    arrived (the fields SayPlan needs; the guide sends them third and fourth)."""

    fields: dict[str, str] = field(default_factory=dict)

    def feed(self, text: str) -> bool:
        line = classify(text)
        if line.kind is LineKind.STATUS_FIELD:
            key, _, value = line.arg.partition(":")
            self.fields[key] = value
        return "Location" in self.fields and "LocalizationScore" in self.fields

    @property
    def location(self) -> Pose2D | None:
        value = self.fields.get("Location")
        if value is None:
            return None
        try:
            return parse_location(value)
        except ValueError:
            return None

    @property
    def localization_score(self) -> float | None:
        try:
            score = float(self.fields.get("LocalizationScore", "").split()[0])
        except (ValueError, IndexError):
            return None
        return score if math.isfinite(score) else None

    def problem(self, localisation: bool = True) -> Outcome | None:
        """What the reply says is wrong with the base: e-stopped, motors off, lost (and, with `localisation`, a
        LocalizationScore below MIN_LOCALIZATION_SCORE); None when it looks able to drive. The `Status:` text (the
        base's own state) is matched like the broadcasts it mirrors."""
        state = " ".join((self.fields.get("Status", "") + " " + self.fields.get("ExtendedStatusForHumans", "")).split())
        folded = " ".join(_state_words(self.fields.get(k, "")) for k in ("Status", "ExtendedStatusForHumans"))
        if names_estop(folded):  # `EStopPressed`, `EStop pressed`, `Emergency stop pressed`, ...
            return Outcome(SkillCode.ESTOPPED, f"the base reports its emergency stop pressed (Status: {state})")
        if "motors disabled" in folded or "motors still disabled" in folded:
            return Outcome(SkillCode.NOT_POWERED, f"the base reports its motors disabled (Status: {state})")
        if re.search(r"\blost\b", folded):
            return Outcome(SkillCode.ROBOT_FAULT, f"the base reports it is lost (Status: {state})")
        score = self.localization_score
        if localisation and score is not None and score < MIN_LOCALIZATION_SCORE:
            return Outcome(
                SkillCode.ROBOT_FAULT,
                f"the base is not localised (LocalizationScore {score:g} < {MIN_LOCALIZATION_SCORE:g})",
            )
        return None

    @property
    def driving(self) -> bool:
        """Whether the `Status:` (or ExtendedStatusForHumans) says the base is under way (`Going to ...`,
        `Driving ...`, a task being done, docking)."""
        for key in ("Status", "ExtendedStatusForHumans"):
            folded = " ".join(self.fields.get(key, "").split()).casefold()
            if folded.startswith(_DRIVING_STATES):
                return True
        return False

    def describe(self) -> str:
        """The reply in one line for an operator (status, location, localisation score)."""
        parts = [f"{k}: {' '.join(self.fields[k].split())[:120]}" for k in ("Status", "Location", "LocalizationScore")]
        return "; ".join(p for p in parts if not p.endswith(": ")) if self.fields else "no status"


@dataclass
class MotorsReader:
    """The answer to `queryMotors` (p. 190-191): `Motors enabled`, `Motors disabled`, `EStop pressed` or `EStop
    relieved but motors still disabled`. `problem` says why the base cannot drive (None: motors enabled)."""

    answer: str = ""

    def feed(self, text: str) -> bool:
        line = classify(text)
        if line.kind in (LineKind.MOTORS, LineKind.ESTOP) or says_estop_pressed(text):
            self.answer = line.text
        return bool(self.answer)

    def problem(self) -> Outcome | None:
        line = classify(self.answer)
        arg = line.arg.casefold()
        if says_estop_pressed(self.answer):
            return Outcome(SkillCode.ESTOPPED, f"the base's emergency stop is pressed ({line.text})")
        if line.kind is LineKind.ESTOP:  # relieved, but motors still disabled: someone must enable them
            return Outcome(SkillCode.NOT_POWERED, f"the base's motors are disabled ({line.text})")
        if line.kind is LineKind.MOTORS and ("enabled" in arg and "disabled" not in arg):
            return None
        return Outcome(SkillCode.NOT_POWERED, f"the base's motors are not enabled ({line.text or 'no answer'})")


@dataclass
class SilenceWatch:
    """The drive watchdog's clock: a `status` query every `period_s` while a drive runs; a base that has sent no
    line for `silence_s` (not even the answer to those queries) has gone silent. Times are the caller's monotonic
    clock, so this is tested without waiting."""

    period_s: float
    silence_s: float
    heard_at: float = 0.0
    asked_at: float = 0.0

    def start(self, now: float) -> None:
        self.heard_at = self.asked_at = now

    def heard(self, now: float) -> None:
        self.heard_at = now

    def due(self, now: float) -> bool:
        """Whether to send the next `status` query now (and note that it is sent)."""
        if now - self.asked_at >= self.period_s:
            self.asked_at = now
            return True
        return False

    def silent_for(self, now: float) -> float | None:
        """How long the base has been silent, once that is `silence_s` or more; else None."""
        quiet = now - self.heard_at
        return quiet if quiet >= self.silence_s else None


@dataclass
class GoalList:
    """The robot's map goals, from a `getGoals` reply (`Goal: <name>` lines, then `End of goals`)."""

    names: list[str] = field(default_factory=list)
    complete: bool = False

    def feed(self, text: str) -> bool:
        """True once the list is complete; ValueError when the robot lists more goals than any map has."""
        line = classify(text)
        if line.kind is LineKind.GOAL and line.arg:
            if len(self.names) >= MAX_GOALS:
                raise ValueError(f"the base listed more than {MAX_GOALS} goals")
            self.names.append(line.arg)
        elif line.kind is LineKind.END_OF_GOALS:
            self.complete = True
        return self.complete

    def has(self, name: str) -> bool:
        return any(n.casefold() == name.casefold() for n in self.names)
