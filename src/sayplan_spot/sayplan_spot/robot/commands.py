"""Reading a robot command's feedback (`finished`, with the reader of the command's own part) and waiting between
reads on the stop event: what every command the session follows (stand, sit, the arm, the gripper) and every walk
share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bosdyn.api.basic_command_pb2 import RobotCommandFeedbackStatus

from sayplan_core.outcomes import SkillCode
from sayplan_spot import failures as sf
from sayplan_spot.robot.errors import SpotError, enum_name


@dataclass(frozen=True)
class Limits:
    """Per-goal limits (the node's per-goal settings when the skill started)."""

    feedback_period_s: float = 0.1
    navigate_timeout_s: float = 120.0
    arm_timeout_s: float = 30.0
    max_walk_m: float = 15.0
    handle_pull_s: float = 3.0
    stop_timeout_s: float = 2.0  # after a stop command (a cancel, a deadline): until the robot reports it is still


Report = Callable[[str], None]
Reading = tuple["SkillCode | None", str]  # the verdict on one part's feedback, and its status name


def wait(stop: threading.Event, limits: Limits, deadline: float, doing: str) -> None:
    """One feedback period, or CANCELED when `stop` is set, or TIMEOUT after `deadline` (monotonic)."""
    if stop.wait(limits.feedback_period_s):
        raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")
    if time.monotonic() > deadline:
        raise SpotError(SkillCode.TIMEOUT, f"{doing}: no result in time")


def canceled(stop: threading.Event, doing: str) -> None:
    """A command that ends badly after we were asked to stop ended because we stopped it: canceled (a stop
    command overrides the command it stops)."""
    if stop.is_set():
        raise SpotError(SkillCode.CANCELED, f"{doing}: canceled")


def command_status(feedback: Any) -> tuple[str, SkillCode | None]:
    """The overall status of a command's feedback (full body, or the worst synchronized part)."""
    names = []
    if feedback.HasField("full_body_feedback"):
        names.append(enum_name(RobotCommandFeedbackStatus.Status, feedback.full_body_feedback.status))
    else:
        synchro = feedback.synchronized_feedback
        for part in ("mobility_command_feedback", "arm_command_feedback", "gripper_command_feedback"):
            if synchro.HasField(part):
                names.append(enum_name(RobotCommandFeedbackStatus.Status, getattr(synchro, part).status))
    for name in names:
        code = sf.verdict(sf.COMMAND_FEEDBACK, name)
        if code is not None:
            return name, code
    return (names[0] if names else "STATUS_UNKNOWN"), None


def read(table: sf.Feedback, enum: Any, value: int) -> Reading:
    name = enum_name(enum, value)
    return sf.verdict(table, name), name


def finished(feedback: Any, done: Callable[[Any], Reading], stop: threading.Event, doing: str) -> bool:
    """Whether one feedback of a robot command says it finished well (`done` reads the command's own part); a
    SpotError when the command ended badly (CANCELED when `stop` is set: our stop command ended it)."""
    status, verdict = command_status(feedback)
    if verdict is not None and verdict is not SkillCode.NONE:
        canceled(stop, doing)
        raise SpotError(verdict, f"{doing}: the command ended with {sf.explain(status)}")
    code, name = done(feedback)
    if code is SkillCode.NONE:
        return True
    if code is not None:
        canceled(stop, doing)
        raise SpotError(code, f"{doing}: {sf.explain(name)}")
    return False
