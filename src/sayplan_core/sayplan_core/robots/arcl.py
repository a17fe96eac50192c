"""ARCL, the text protocol of Omron LD/HD mobile bases: the commands SayPlan sends and what the robot's lines mean.

No SDK and no socket here (the TCP client lives in the sayplan_franka_omron package);
this module builds command lines and reads the robot's answers, so it can be tested
line by line. The base localises itself on its LiDAR map and plans its own paths: SayPlan
sends it to a named goal of that map (`goto <goal>`) or to a map point (`doTask gotoPoint
x y th`, millimetres and degrees) and waits for the outcome.

Line formats, as Omron's ARCL reference manual (I617-E-01) gives them and public ARCL
clients parse them (OmronAPAC/Omron_LD_ROS_Package, ROS 1 and ROS 2 drivers; the
ARCL helper classes that match `Going to`, `Arrived at`, `Error: Failed going to goal`):
login `Enter password:` ... `End of commands`; `goto` answers `Going to <goal>` then
`Arrived at <goal>` or `Failed going to goal <goal>` (some firmware prefixes `Error: `);
`doTask gotoPoint` answers `Will do task ...`, `Going to point ...`, then `Completed doing
task gotoPoint ...` or `Failed doing task ...`; another command, the pendant or `stop`
ends a drive with `Interrupted: ...`; `EStop pressed`; a command the robot refuses gets
`CommandError: ...` / `CommandErrorDescription: ...`; `getGoals` lists `Goal: <name>`
lines ending with `End of goals`; `status` answers `Status:`, `ExtendedStatusForHumans:`,
`StateOfCharge:`, `Location: x y th` (mm, mm, degrees), `LocalizationScore:`,
`Temperature:`. The exact wording of the refusal of an unknown goal was not found in a
public source, so an unknown goal is caught before sending (against the `getGoals`
list) and any `CommandError` line after a goto is treated as a refusal, whatever it says.
"""

from __future__ import annotations

import math
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
    STOPPED = "stopped"
    ESTOP = "estop"
    COMMAND_ERROR = "command_error"
    STATUS_FIELD = "status_field"
    OTHER = "other"


#: Prefixes in the order they are tried (longer, more specific first); the rest of the line is the argument.
_PREFIXES: tuple[tuple[str, LineKind], ...] = (
    (PASSWORD_PROMPT, LineKind.PASSWORD_PROMPT),
    (END_OF_COMMANDS, LineKind.END_OF_COMMANDS),
    (END_OF_GOALS, LineKind.END_OF_GOALS),
    ("Goal: ", LineKind.GOAL),
    ("Error: Failed going to goal", LineKind.FAILED),
    ("Failed going to goal", LineKind.FAILED),
    ("Failed going to", LineKind.FAILED),
    ("Going to ", LineKind.GOING),
    ("Arrived at ", LineKind.ARRIVED),
    ("Will do task ", LineKind.TASK_STARTED),
    ("Doing task ", LineKind.TASK_STARTED),
    ("Completed doing task ", LineKind.TASK_COMPLETED),
    ("Failed doing task ", LineKind.TASK_FAILED),
    ("Interrupted:", LineKind.INTERRUPTED),
    ("Stopped", LineKind.STOPPED),
    ("EStop ", LineKind.ESTOP),
    ("CommandErrorDescription:", LineKind.COMMAND_ERROR),
    ("CommandError:", LineKind.COMMAND_ERROR),
)

#: Keys of the `status` reply SayPlan reads.
STATUS_KEYS = ("Status", "ExtendedStatusForHumans", "StateOfCharge", "Location", "LocalizationScore", "Temperature")


@dataclass(frozen=True)
class Line:
    kind: LineKind
    arg: str  # the rest of the line, stripped
    text: str  # the whole line, for messages


def classify(text: str) -> Line:
    """What a line from the robot is; unknown lines are OTHER (ARCL sends much SayPlan does not need)."""
    text = text.strip()
    for prefix, kind in _PREFIXES:
        if text.startswith(prefix):
            return Line(kind, text[len(prefix) :].strip(), text)
    key, sep, value = text.partition(":")
    if sep and key in STATUS_KEYS:
        return Line(LineKind.STATUS_FIELD, f"{key}:{value.strip()}", text)
    return Line(LineKind.OTHER, text, text)


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


def goto_command(target: Target) -> GotoCommand:
    """`goto <goal>` for a node bound to a goal of the robot's map, else `doTask gotoPoint x y th`."""
    if target.name:
        name = check_goal_name(target.name)
        return GotoCommand(f"goto {name}", name, f"{target.node} (goal '{name}')")
    if target.pose is None:
        raise TargetError(f"'{target.node}' has neither an ARCL goal nor a map pose")
    x, y, th = to_arcl_point(target.pose)
    return GotoCommand(f"doTask gotoPoint {x} {y} {th}", None, f"{target.node} (point {x} {y} {th})")


# ----------------------------------------------------------------------------- answers to a drive
def _about(arg: str, goal: str) -> bool:
    """Whether a line's argument names `goal` (ARCL may add words after the name)."""
    a, g = arg.casefold(), goal.casefold()
    return a == g or a.startswith(g + " ")


@dataclass
class GotoTracker:
    """Follows the robot's lines after one goto or gotoPoint until the drive ends.

    `feed` returns a Outcome when the drive ended, a progress text while it runs, or
    None for a line about something else. Lines about another goal are not this drive's.
    """

    command: GotoCommand
    stop_requested: bool = False
    started: bool = False

    def feed(self, text: str) -> Outcome | str | None:
        line = classify(text)
        goal, where = self.command.goal, self.command.where
        kind = line.kind
        ours = line.arg.startswith("point") if goal is None else _about(line.arg, goal)
        if kind is LineKind.GOING:
            self.started = self.started or ours
            return f"going to {where}" if ours else None
        if kind is LineKind.ARRIVED:
            return Outcome(SkillCode.NONE, f"arrived at {where}") if ours else None
        if kind is LineKind.TASK_COMPLETED and goal is None and line.arg.startswith("gotoPoint"):
            return Outcome(SkillCode.NONE, f"arrived at {where}")
        if kind is LineKind.TASK_STARTED and goal is None and line.arg.startswith("gotoPoint"):
            self.started = True
            return f"going to {where}"
        if kind is LineKind.FAILED and (goal is None or not line.arg or _about(line.arg, goal)):
            return Outcome(SkillCode.UNREACHABLE, f"the base failed to reach {where} ({line.text})")
        if kind is LineKind.TASK_FAILED and goal is None:
            return Outcome(SkillCode.UNREACHABLE, f"the base failed to reach {where} ({line.text})")
        if kind is LineKind.INTERRUPTED or (kind is LineKind.STOPPED and self.stop_requested):
            if self.stop_requested:
                return Outcome(SkillCode.CANCELED, f"the drive to {where} was stopped")
            return Outcome(
                SkillCode.ROBOT_FAULT,
                f"the drive to {where} was interrupted ({line.text}): another ARCL client, MobilePlanner "
                "or the pendant took the base",
            )
        if kind is LineKind.ESTOP and line.arg.lower().startswith("pressed"):
            return Outcome(SkillCode.ESTOPPED, f"the base's emergency stop was pressed while driving to {where}")
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


@dataclass
class StatusReader:
    """Collects the fields of a `status` reply; complete once the location arrived (the field SayPlan needs)."""

    fields: dict[str, str] = field(default_factory=dict)

    def feed(self, text: str) -> bool:
        line = classify(text)
        if line.kind is LineKind.STATUS_FIELD:
            key, _, value = line.arg.partition(":")
            self.fields[key] = value
        return "Location" in self.fields

    @property
    def location(self) -> Pose2D | None:
        value = self.fields.get("Location")
        if value is None:
            return None
        try:
            return parse_location(value)
        except ValueError:
            return None


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
