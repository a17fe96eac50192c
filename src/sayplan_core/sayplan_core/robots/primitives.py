"""The primitive motions a mobile manipulator's skill is made of, and how each one ended.

A skill (pickup, open, ...) becomes a short program of these (see programs.py); the
robot's package runs each on its hardware interface (ARCL or Nav2 for the base, a
FollowJointTrajectory controller for the arm, the gripper's actions) and reports an
Outcome. Nothing here knows how a primitive is carried out.
"""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.outcomes import SkillCode


@dataclass(frozen=True)
class Outcome:
    """How one primitive ended: `code` NONE means it did what it was asked."""

    code: SkillCode
    message: str

    @property
    def ok(self) -> bool:
        return self.code is SkillCode.NONE


@dataclass(frozen=True)
class JointPoint:
    positions: tuple[float, ...]
    time_s: float  # time from the start of the trajectory


@dataclass(frozen=True)
class Trajectory:
    """A taught arm motion: `name` (approach, pre_grasp, ...) at scene-graph node `node`."""

    node: str
    name: str
    joint_names: tuple[str, ...]
    points: tuple[JointPoint, ...]

    @property
    def duration_s(self) -> float:
        return self.points[-1].time_s if self.points else 0.0

    def describe(self) -> str:
        return f"{self.name} at {self.node}" if self.node else self.name


@dataclass(frozen=True)
class Drive:
    """Send the base to the pose bound to `node` (a room or pose node, or the spot in front of an asset)."""

    node: str

    def describe(self) -> str:
        return f"drive to {self.node}"


@dataclass(frozen=True)
class Arm:
    trajectory: Trajectory

    def describe(self) -> str:
        return f"arm {self.trajectory.describe()}"


@dataclass(frozen=True)
class Grasp:
    """Close the fingers on `node` (an object, or a handle) expecting `width` metres between them."""

    node: str
    width: float
    force: float
    speed: float
    epsilon_inner: float
    epsilon_outer: float

    def describe(self) -> str:
        return f"grasp {self.node}"


@dataclass(frozen=True)
class OpenGripper:
    width: float
    speed: float

    def describe(self) -> str:
        return "open the gripper"


@dataclass(frozen=True)
class HomeGripper:
    def describe(self) -> str:
        return "home the gripper"


Primitive = Drive | Arm | Grasp | OpenGripper | HomeGripper


@dataclass(frozen=True)
class DriveLimits:
    """The deadlines of one drive of the base (settings read per goal): the drive itself, the base's confirmation
    of a stop, and the watchdog (a status query every `status_period_s`; silence for `silence_s` ends the drive)."""

    drive_s: float = 100.0
    stop_s: float = 2.0
    status_period_s: float = 0.5
    silence_s: float = 3.0
