"""Spot through bosdyn-client: the session and the primitives of sayplan_spot.programs, one module per concern.

`session` logs in, syncs time, keeps the lease, checks the e-stop and powers the robot (and sends the stop a cancel
needs); `navigation` moves the body (GraphNav, walks); `manipulation` drives the arm and gripper; `imaging` takes
camera images; `commands` reads a robot command's feedback; `errors` turns what the SDK raises into SpotError
with the typed code (tables: sayplan_spot.failures) and the robot's own words; `health` is the part for
/diagnostics, from what the session last saw (`seen`). SpotRobot puts them together for the skill server.

Everything here blocks: the skill server runs it on one worker thread and polls it from its coroutine, so
the ROS executor never waits on the robot. `stop()` is the exception: it is called from the cancel callback
while a primitive runs, sends one stop command, and wakes the worker through the shared stop event.
This package is the only part of sayplan_spot that imports the SDK: without it, importing it fails and the node
says how to install it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sayplan_core.diagnostics import Status
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.navigation import TargetError
from sayplan_spot.programs import Approach, Articulate, Grasp, Navigate, Place, Primitive, Walk
from sayplan_spot.robot.commands import Limits, Report
from sayplan_spot.robot.errors import SpotError, fault_from
from sayplan_spot.robot.health import health
from sayplan_spot.robot.imaging import Imaging
from sayplan_spot.robot.manipulation import Manipulation
from sayplan_spot.robot.navigation import Navigation, waypoint_nodes
from sayplan_spot.robot.session import Session, SpotConfig

__all__ = ["Limits", "Report", "SpotConfig", "SpotError", "SpotRobot", "waypoint_nodes"]


class SpotRobot:
    """The robot as the skill server drives it: one session, and the concerns that act through it."""

    def __init__(self, config: SpotConfig, info: Callable[[str], None], warn: Callable[[str], None]) -> None:
        session = self.session = Session(config, info, warn)
        self.navigation = Navigation(session)
        self.manipulation = Manipulation(session)
        self.imaging = Imaging(session)
        self.config = session.config
        self.stop_sent = session.stop_sent  # set once a stop was sent (cleared by the skill server per skill)
        self.shutting_down = session.shutting_down
        # the session's own steps, as the skill server calls them
        self.connect, self.disconnect, self.shutdown = session.connect, session.disconnect, session.shutdown
        self.request_shutdown, self.power_on_and_stand = session.request_shutdown, session.power_on_and_stand
        self.ready, self.stand_up, self.check, self.fault_behind = (
            session.ready, session.stand_up, session.check, session.fault_behind
        )  # fmt: skip
        self.stop, self.stop_and_confirm = session.stop, session.stop_and_confirm
        self.pose, self.holding = session.pose, session.holding
        self.read_gripper = self.manipulation.read_gripper

    @property
    def connected(self) -> bool:
        return self.session.connected

    @property
    def waypoints(self) -> dict[str, str]:
        """GraphNav waypoint id -> recorded name, as last downloaded."""
        return self.session.waypoints

    @property
    def power_hint(self) -> str:
        return self.session.power_hint

    @power_hint.setter
    def power_hint(self, hint: str) -> None:
        self.session.power_hint = hint

    @property
    def _lease_problem(self) -> str:
        """What the keep-alive last found wrong with the lease, without asking the robot (tests wait on it)."""
        return self.session.lease_problem

    def health(self, hardware_id: str = "") -> list[Status]:
        """/diagnostics: the session, lease, e-stop, motors and gripper as last seen (no RPC)."""
        return health(self.session, hardware_id)

    def run(self, primitive: Primitive, stop: threading.Event, limits: Limits, report: Report) -> bytes | None:
        """Carry out one primitive; returns the image for Capture. Raises SpotError."""
        try:
            if isinstance(primitive, Navigate):
                self.navigation.navigate(primitive, stop, limits, report)
            elif isinstance(primitive, Walk):
                self.navigation.walk(primitive.node, primitive.pose, stop, limits, report)
            elif isinstance(primitive, Approach):
                self.navigation.approach(primitive, stop, limits, report)
            elif isinstance(primitive, Grasp):
                self.manipulation.grasp(primitive, stop, limits, report)
            elif isinstance(primitive, Place):
                self.manipulation.place(primitive, stop, limits, report)
            elif isinstance(primitive, Articulate):
                self.manipulation.articulate(primitive, stop, limits, report)
            else:
                return self.imaging.capture(primitive)
        except TargetError as exc:
            raise SpotError(SkillCode.INVALID_TARGET, str(exc)) from None
        except SpotError:
            raise
        except Exception as exc:
            raise fault_from(exc, type(primitive).__name__.lower()) from None
        return None
