"""The fake Spot's body, arm, lease, power, map and objects: a small kinematic world its services read and command.

Positions are kept in the GraphNav seed frame (the site's map frame). The robot's odom and vision frames are
offset from it by fixed transforms, so a client that sends map coordinates where odom or vision ones are due
misses its target here as it would on a robot. Motion is evaluated lazily from the time a command started and
a speed, so nothing runs in the background; every service call first brings the world up to now.

The 2-D transform helper below is written for this fake and shares nothing with the SDK's math_helpers, which
the adapter under test uses: the two sides compute frames independently.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from dataclasses import dataclass, field

Point = tuple[float, float, float]


@dataclass(frozen=True)
class Se2:
    """A planar rigid transform a_tform_b: x, y, yaw of frame b in frame a."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0

    def __mul__(self, other: Se2) -> Se2:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return Se2(self.x + c * other.x - s * other.y, self.y + s * other.x + c * other.y, self.yaw + other.yaw)

    def inverse(self) -> Se2:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return Se2(-(c * self.x + s * self.y), -(-s * self.x + c * self.y), -self.yaw)

    def point(self, p: Point) -> Point:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (self.x + c * p[0] - s * p[1], self.y + s * p[0] + c * p[1], p[2])

    def vector(self, v: tuple[float, float]) -> tuple[float, float]:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (c * v[0] - s * v[1], s * v[0] + c * v[1])


def wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


@dataclass
class Waypoint:
    id: str
    name: str
    x: float
    y: float
    yaw: float = 0.0


@dataclass
class FakeObject:
    """An object in the world. The robot lists it as a world object when it "sees" it: with an AprilTag on it
    (`fiducial`: the tag id; the raw detection is off by `raw_error`, the filtered estimate is exact), or as a
    named detection another client added (`detection`: the world object's name)."""

    id: str
    position: Point
    fiducial: int | None = None
    raw_error: Point = (0.0, 0.0, 0.0)
    detection: str = ""


@dataclass
class FakeHandle:
    asset: str
    position: Point
    pull: tuple[float, float]  # unit vector (seed frame): the direction the handle first moves when opening
    locked: bool = False
    opened: bool = False
    #: The claw cannot let go of this handle (a lever that wedges the fingers, a jammed latch): an open command
    #: leaves it held. The robot state then still reports is_gripper_holding_item (robot_state.proto
    #: ManipulatorState) and the claw's feedback STATUS_APPLYING_FORCE (gripper_command.proto: "the gripper is
    #: applying force"), which is what a client can read back.
    stuck: bool = False


@dataclass
class Motion:
    """The body walking from `start` to `goal` (seed frame); it halts at `stop_at` of the way (1 = the goal)."""

    command_id: int
    kind: str  # "navigate" or "trajectory"
    start: Se2
    goal: Se2
    t0: float
    speed: float
    end_time: float  # robot clock
    stop_at: float = 1.0
    target: str = ""  # waypoint id for navigate
    halted: str = ""  # why it stopped early: stop, stuck, blocked, estop, power, fault, lease, timeout, replaced
    halted_pose: Se2 | None = None
    coast_until: float | None = None  # a stop arrived: the body walks on until then (local time; see stop_coast_s)

    @property
    def length(self) -> float:
        return math.hypot(self.goal.x - self.start.x, self.goal.y - self.start.y)

    def fraction(self, now: float) -> float:
        if self.length < 1e-9:
            return 1.0
        return min(1.0, (now - self.t0) * self.speed / self.length)

    def pose(self, now: float) -> Se2:
        if self.halted_pose is not None:
            return self.halted_pose
        f = min(self.fraction(now), self.stop_at)
        dyaw = wrap(self.goal.yaw - self.start.yaw)
        return Se2(
            self.start.x + (self.goal.x - self.start.x) * f,
            self.start.y + (self.goal.y - self.start.y) * f,
            wrap(self.start.yaw + dyaw * f),
        )

    def arrived(self, now: float) -> bool:
        return not self.halted and self.stop_at >= 1.0 and self.fraction(now) >= 1.0


@dataclass
class Command:
    """A robot command (RobotCommandService) or manipulation request, kept for its feedback."""

    id: int
    parts: set[str]
    t0: float
    data: dict[str, object] = field(default_factory=dict)
    overridden: bool = False


class FakeWorld:
    """State and rules of the fake robot. Every attribute below `# programmable` may be set by a test."""

    def __init__(self, start: Se2 = Se2()) -> None:
        self.lock = threading.RLock()
        # programmable
        self.username = "operator"
        self.password = "correct horse"
        self.clock_skew_s = 1234.5  # robot clock minus the client's
        self.speed_mps = 60.0  # walking speed (fast, so tests are short)
        self.action_s = 0.05  # how long a stand, grasp phase, arm move or gripper move takes
        self.arm_reach_m = 1.2  # farthest horizontal hand target from the body
        self.grasp_tolerance_m = 0.1  # a ray passing farther than this from every object finds nothing
        self.estopped = False
        self.behavior_fault = ""  # a cause text: commands are refused while it is set
        self.behavior_fault_cause = "CAUSE_FALL"  # robot_state.proto BehaviorFault.Cause the robot state reports
        self.power_fault = ""  # a PowerCommandStatus name the robot answers power-on with (e.g. STATUS_FAULTED)
        self.localized = True
        self.lost = False
        self.grasp_failures: dict[str, int] = {}  # object id -> grasps that fail before one succeeds
        #: items (object id or "handle:<asset>") a failed grasp still leaves in the claw (it caught them half way)
        self.grasp_caught: set[str] = set()
        self.stuck: dict[str, float] = {}  # waypoint id -> fraction of the way where navigation gets stuck
        self.walk_blocked = False  # body trajectories end blocked half way
        self.gripper_jammed = False  # the claw does not open on command, whatever it holds (a gripper fault)
        #: How long the body walks on after a stop command before it halts (0: at once; math.inf: it never does
        #: until a test halts it). Meanwhile the walk ignores its command's end time too: the stop was accepted
        #: (STATUS_OK, its feedback STATUS_PROCESSING) but the body is not under the controller's command, and the
        #: robot state reports the body's velocity all along (robot_state.proto KinematicState
        #: velocity_of_body_in_odom), which is what a client can read to see whether it stopped.
        self.stop_coast_s = 0.0
        self.waypoints: dict[str, Waypoint] = {}
        self.objects: dict[str, FakeObject] = {}
        self.handles: dict[str, FakeHandle] = {}
        self.seed_tform_odom = Se2(-7.0, 3.0, 0.4)
        self.odom_tform_vision = Se2(1.5, -2.0, -0.25)
        # state
        self.body = start
        self.motors_on = False
        self.standing = False
        self.motion: Motion | None = None
        self.holding: str | None = None  # object id, or "handle:<asset>"
        self.hand: Point | None = None  # last hand target (seed frame)
        self.gripper_open = False
        self.arm = "stowed"  # stowed, carry (folded in front, holding something), or out (a hand pose)
        self.lease_epoch = "fake-epoch-1"
        self.lease_root = 1
        self.lease_owner = ""
        self.commands: dict[int, Command] = {}
        self.manipulations: dict[int, dict[str, object]] = {}
        self.motions: dict[int, Motion] = {}  # navigate_to commands and body trajectories, by id
        self._ids = itertools.count(1)
        self.power_commands: dict[int, tuple[str, float]] = {}
        # what happened (for tests)
        self.placements: list[tuple[str, Point]] = []
        self.captures: list[tuple[str, str]] = []  # (camera, sha256 of the image sent)
        self.stop_count = 0
        #: Every command that moves the base or the arm (or powers/stands the robot), as (time.time(), kind), when
        #: the robot accepts it: what "the robot moved" means for the tests.
        self.motion_log: list[tuple[float, str]] = []
        self.clock_id = "fake-clock-7"

    @property
    def arm_stowed(self) -> bool:
        return self.arm == "stowed"

    @arm_stowed.setter
    def arm_stowed(self, stowed: bool) -> None:
        self.arm = "stowed" if stowed else "out"

    # ------------------------------------------------------------------ clocks and frames
    def robot_now(self) -> float:
        return time.time() + self.clock_skew_s

    def new_id(self) -> int:
        return next(self._ids)

    @property
    def seed_tform_vision(self) -> Se2:
        return self.seed_tform_odom * self.odom_tform_vision

    def frame_to_seed(self, frame: str) -> Se2 | None:
        """seed_tform_<frame> for the frames the fake knows (None for an unknown frame)."""
        if frame == "odom":
            return self.seed_tform_odom
        if frame == "vision":
            return self.seed_tform_vision
        if frame in ("body", "flat_body"):
            return self.body
        return None

    def moved(self, kind: str) -> None:
        """Record a command the robot accepted that moves it (see motion_log)."""
        self.motion_log.append((time.time(), kind))

    def moving(self) -> bool:
        """The body is walking right now (brought up to now first)."""
        with self.lock:
            self.advance()
            return self.motion is not None

    # ------------------------------------------------------------------ time passes
    def advance(self) -> None:
        """Bring the body up to now: the active motion moves it; a finished or halted one leaves it.

        A motion whose end time (robot clock) has passed stops where it is: GraphNav's navigate_to runs for its
        cmd_duration (graph_nav.proto NavigateToRequest.end_time: "the timestamp (in robot time) that the
        navigation command is valid until"), and a body trajectory until its end_time (basic_command.proto
        SE2TrajectoryCommand.Request.end_time: "the timestamp (in robot time) by which a command must finish
        executing ... used to prevent runaway commands")."""
        now = time.time()
        motion = self.motion
        if motion is None:
            return
        if not motion.halted and motion.coast_until is not None:
            if now >= motion.coast_until:  # halted where the coast ended, not where the world was looked at
                motion.halted_pose = motion.pose(motion.coast_until)
                motion.halted = "stop"
                self.body = motion.halted_pose
        elif not motion.halted and self.robot_now() > motion.end_time:
            ended = now - (self.robot_now() - motion.end_time)  # local time of the end time
            if not motion.arrived(ended):  # halted where the end time fell, not where the world was looked at
                motion.halted_pose = motion.pose(ended)
                motion.halted = "timeout"
                self.body = motion.halted_pose
        if not motion.halted and motion.stop_at < 1.0 and motion.fraction(now) >= motion.stop_at:
            self.halt(motion, "stuck" if motion.kind == "navigate" else "blocked")
        self.body = motion.pose(now)
        if motion.halted or motion.arrived(now):
            self.motion = None

    def halt(self, motion: Motion, why: str) -> None:
        if motion.halted:
            return
        motion.halted_pose = motion.pose(time.time())
        motion.halted = why
        self.body = motion.halted_pose

    def stop_motion(self, why: str) -> None:
        self.advance()
        if self.motion is not None:
            self.halt(self.motion, why)
        self.motion = None

    def stop_commanded(self) -> None:
        """A stop command arrived (basic_command.proto StopCommand: "stop the robot in place with minimal motion"):
        the body halts now, or after `stop_coast_s`."""
        self.advance()
        motion = self.motion
        if motion is None or self.stop_coast_s <= 0.0:
            self.stop_motion("stop")
        elif motion.coast_until is None:  # a second stop does not make it coast longer
            motion.coast_until = time.time() + self.stop_coast_s

    def start_motion(self, kind: str, goal: Se2, end_time: float, stop_at: float = 1.0, target: str = "") -> Motion:
        self.stop_motion("replaced")
        motion = Motion(self.new_id(), kind, self.body, goal, time.time(), self.speed_mps, end_time, stop_at, target)
        self.motion = motion
        self.motions[motion.command_id] = motion
        return motion

    # ------------------------------------------------------------------ lease
    def lease_check(self, resource: str, epoch: str, sequence: list[int]) -> str:
        """The LeaseUseResult status name for a lease a request carries."""
        if resource != "body":
            return "STATUS_INVALID_LEASE"
        if epoch != self.lease_epoch:
            return "STATUS_WRONG_EPOCH"
        if not sequence:
            return "STATUS_INVALID_LEASE"
        if sequence[0] < self.lease_root:
            return "STATUS_OLDER"
        if sequence[0] > self.lease_root or not self.lease_owner:
            return "STATUS_UNMANAGED"
        return "STATUS_OK"

    def steal_lease(self, owner: str = "tablet-operator") -> None:
        """Another client takes the lease (as the tablet's "take control" does): the robot stops, and a grasp
        under way ends (abort_grasps)."""
        with self.lock:
            self.lease_root += 1
            self.lease_owner = owner
            self.stop_motion("lease")
            self.abort_grasps()

    def abort_grasps(self) -> None:
        """A grasp under way ends now, MANIP_STATE_GRASP_FAILED, with nothing in the gripper (a stop command or
        the lease taken: the fake's choice of end state, the protos do not name one)."""
        now = time.time()
        for record in self.manipulations.values():
            if now - float(record["t0"]) < 2 * float(record["phase"]):  # type: ignore[arg-type]
                if record["item"] and self.holding == record["item"]:
                    self.holding = None
                record["final"], record["t0"] = "MANIP_STATE_GRASP_FAILED", 0.0

    def override_motion(self) -> None:
        """Another command replaces the walk under way (another client on a sublease, the robot's own autonomy):
        its feedback says STATUS_COMMAND_OVERRIDDEN."""
        with self.lock:
            self.stop_motion("replaced")

    def cut_motor_power(self) -> None:
        """The motors go off without an e-stop (a fault, a flat battery): the robot stops and lies down."""
        with self.lock:
            self.stop_motion("power")
            self.motors_on = False
            self.standing = False

    def fall(self) -> None:
        """The robot falls (or another behaviour fault stops it): motion and a grasp under way end, and the robot
        state lists a clearable behaviour fault until someone clears it (robot_state.proto BehaviorFaultState)."""
        with self.lock:
            self.stop_motion("fault")
            self.abort_grasps()
            self.behavior_fault = "the robot fell"

    def release_estop(self) -> None:
        """The operator releases the e-stop: nothing moves and the motors stay off until a client powers them on
        (estop.proto: releasing the stop only allows power again; the robot does not power on by itself)."""
        with self.lock:
            self.estopped = False

    def press_estop(self) -> None:
        """An operator presses the e-stop: the motors cut and the body stops where it is."""
        with self.lock:
            self.estopped = True
            self.stop_motion("estop")
            self.motors_on = False
            self.standing = False

    # ------------------------------------------------------------------ localization and state
    def nearest_waypoint(self) -> Waypoint | None:
        if not self.localized or not self.waypoints:
            return None
        return min(self.waypoints.values(), key=lambda w: (math.hypot(w.x - self.body.x, w.y - self.body.y), w.id))

    def holding_item(self) -> bool:
        return self.holding is not None

    # ------------------------------------------------------------------ arm and grasps
    def nearest_to_ray(self, start: Point, end: Point) -> tuple[str, float] | None:
        """The object or handle closest to the segment start->end (seed frame), and how far it is from it."""
        best: tuple[str, float] | None = None
        candidates = [(o.id, o.position) for o in self.objects.values() if o.id != self.holding]
        candidates += [(f"handle:{h.asset}", h.position) for h in self.handles.values()]
        for item, p in candidates:
            d = _segment_distance(p, start, end)
            if best is None or d < best[1]:
                best = (item, d)
        return best

    def claw_stuck(self) -> bool:
        """The claw cannot open now: the gripper is jammed, or it holds a handle that will not let it go."""
        held = self.holding or ""
        handle = self.handles.get(held.removeprefix("handle:")) if held.startswith("handle:") else None
        return self.gripper_jammed or (handle is not None and handle.stuck)

    def release(self) -> None:
        """Open the gripper: a held object drops where the hand is (unless the claw is stuck: nothing changes)."""
        if self.claw_stuck():
            self.gripper_open = False
            return
        held = self.holding
        self.gripper_open = True
        if held is None:
            return
        self.holding = None
        if held.startswith("handle:"):
            return
        where = self.hand or self.body.point((0.8, 0.0, 0.5))
        self.objects[held].position = where
        self.placements.append((held, where))


def _segment_distance(p: Point, a: Point, b: Point) -> float:
    ab = [b[i] - a[i] for i in range(3)]
    ap = [p[i] - a[i] for i in range(3)]
    length2 = sum(v * v for v in ab)
    t = 0.0 if length2 < 1e-12 else max(0.0, min(1.0, sum(ab[i] * ap[i] for i in range(3)) / length2))
    closest = [a[i] + ab[i] * t for i in range(3)]
    return math.dist(closest, p)
