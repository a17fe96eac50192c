"""The Franka arm and gripper in SayPlan's terms: taught motions per asset, and what the controllers' results mean.

Arm motions are taught once per site (moved by hand in the robot's guiding mode, or
planned in MoveIt, and recorded as joint waypoints) and replayed through a
ros2_control `FollowJointTrajectory` controller. The file:

    joint_names: [fr3_joint1, fr3_joint2, fr3_joint3, fr3_joint4, fr3_joint5, fr3_joint6, fr3_joint7]
    travel: [{positions: [0, -0.785, 0, -2.356, 0, 1.571, 0.785], time: 3.0}]   # optional: arm pose for driving
    nodes:                                  # scene-graph ids: assets (an object id overrides its asset)
      kitchen_cupboard:
        approach: [{positions: [...], time: 2.0}]      # in front of the asset, from anywhere safe
        pre_grasp: [{positions: [...], time: 1.5}]     # fingers around an object on/in it
        place: [...]                                   # where a held object is put down
        handle: [...]                                  # fingers around the handle
        handle_open: [...]                             # pull open while holding the handle
        handle_close: [...]                            # push closed
        turn_on: [...]                                 # press the switch (turn_off likewise)
    grasps:                                 # optional: finger width (m) and force (N) per object or handle
      coffee_mug: {width: 0.065, force: 30}   # within the Franka Hand's limits: 0..0.08 m, up to 70 N

The Franka Hand's limits (Franka Hand product data sheet, as franka_ros2's documentation and the FR3 data sheet
give them: 80 mm stroke, 70 N continuous and 140 N maximum grasping force; franka_ros2 jazzy's own gripper test
drives it to "max gripper width 0.08m"): a grasp holds its force for as long as the object is carried, so a
motions-file grasp may ask for at most the continuous 70 N; the 140 N peak is not a holding force.

What the hand holds is read back, not assumed: franka_gripper (franka_ros2 jazzy, gripper_action_server.cpp)
publishes `~/joint_states` (sensor_msgs/JointState, the two finger joints at width / 2 each, at its
`state_publish_rate`, 15 Hz in its config) and serves `~/stop` (std_srvs/Trigger, libfranka's Gripper::stop).
libfranka's `is_grasped` is not published, so the width is read: fingers that stopped short of where they were
sent hold something (`hand_holds`).

How the controllers end a goal, which the translation below follows:
- joint_trajectory_controller (ros2_controllers, branch jazzy): SUCCEEDED with
  SUCCESSFUL; ABORTED with PATH_TOLERANCE_VIOLATED (the arm left the path: it hit
  something) or GOAL_TOLERANCE_VIOLATED (it did not settle in time), or INVALID_GOAL
  when preempted or deactivated (franka_hardware stops the controllers on a reflex);
  CANCELED after a cancel; a goal is REJECTED when the controller is inactive or the
  trajectory's joints do not match its own.
- franka_gripper (franka_ros2, branch jazzy, gripper_action_server): every Grasp, Move
  and Homing goal is accepted; success=false (libfranka's grasp found no object within
  width +/- epsilon, or a libfranka exception, whose text is in `error`) ends ABORTED;
  a cancel stops the fingers and ends CANCELED.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.graph.model import SceneGraph
from sayplan_core.outcomes import STATUS_CANCELED, STATUS_SUCCEEDED, SkillCode
from sayplan_core.robots.primitives import JointPoint, Outcome, Trajectory

#: Motions a node may have, in the order they are documented.
MOTION_NAMES: tuple[str, ...] = (
    "approach",
    "pre_grasp",
    "place",
    "handle",
    "handle_open",
    "handle_close",
    "turn_on",
    "turn_off",
)
MAX_MOTION_FILE_BYTES = 4 * 1024 * 1024
#: The Franka Hand (see the module docstring): widest opening, and the grasping force it can hold.
MAX_GRIPPER_WIDTH_M = 0.08
CONTINUOUS_FORCE_N = 70.0
MAX_FORCE_N = 140.0
MAX_JOINTS = 32
MAX_POINTS = 10_000
MAX_DURATION_S = 3600.0

#: FollowJointTrajectory result codes (control_msgs, branch jazzy).
FJT_SUCCESSFUL = 0
FJT_ERRORS: dict[int, tuple[str, SkillCode]] = {
    -1: ("INVALID_GOAL", SkillCode.ROBOT_FAULT),
    -2: ("INVALID_JOINTS", SkillCode.ROBOT_FAULT),
    -3: ("OLD_HEADER_TIMESTAMP", SkillCode.ROBOT_FAULT),
    -4: ("PATH_TOLERANCE_VIOLATED", SkillCode.BLOCKED),
    -5: ("GOAL_TOLERANCE_VIOLATED", SkillCode.BLOCKED),
}


class MotionError(ValueError):
    """A motion file that cannot be used, or a motion a skill needs that was never taught."""


@dataclass(frozen=True)
class GraspSpec:
    width: float
    force: float


@dataclass(frozen=True)
class TaughtMotions:
    joint_names: tuple[str, ...] = ()
    travel: Trajectory | None = None
    nodes: Mapping[str, Mapping[str, Trajectory]] = field(default_factory=dict)
    grasps: Mapping[str, GraspSpec] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> TaughtMotions:
        path = Path(path)
        try:
            data = files.load_yaml(files.read_text(path, MAX_MOTION_FILE_BYTES, "motion file"))
        except files.FileReadError as exc:
            raise MotionError(str(exc)) from exc
        except yaml.YAMLError as exc:
            raise MotionError(f"cannot read motion file {path}: {exc}") from exc
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<motions>") -> TaughtMotions:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise MotionError(f"{source}: a motion file holds joint_names, travel, nodes and grasps")
        unknown = set(data) - {"joint_names", "travel", "nodes", "grasps"}
        if unknown:
            raise MotionError(f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        joints = data.get("joint_names")
        if (
            not isinstance(joints, list)
            or not 1 <= len(joints) <= MAX_JOINTS
            or not all(isinstance(j, str) and j.strip() for j in joints)
            or len(set(joints)) != len(joints)
        ):
            raise MotionError(f"{source}: joint_names must be a list of 1..{MAX_JOINTS} distinct joint names")
        names = tuple(joints)
        travel = None
        if data.get("travel") is not None:
            travel = _trajectory(data["travel"], "", "travel", names, f"{source}: travel")
        raw_nodes = data.get("nodes") or {}
        if not isinstance(raw_nodes, Mapping):
            raise MotionError(f"{source}: nodes must map scene-graph ids to their motions")
        nodes: dict[str, dict[str, Trajectory]] = {}
        for node, motions in raw_nodes.items():
            where = f"{source}: node '{node}'"
            if not isinstance(motions, Mapping) or not motions:
                raise MotionError(f"{where} needs a mapping of motions ({', '.join(MOTION_NAMES)})")
            wrong = sorted(str(m) for m in motions if m not in MOTION_NAMES)
            if wrong:
                raise MotionError(f"{where}: unknown motion(s) {', '.join(wrong)} (known: {', '.join(MOTION_NAMES)})")
            nodes[str(node)] = {
                str(m): _trajectory(points, str(node), str(m), names, f"{where}, motion '{m}'")
                for m, points in motions.items()
            }
        raw_grasps = data.get("grasps") or {}
        if not isinstance(raw_grasps, Mapping):
            raise MotionError(f"{source}: grasps must map node ids to {{width, force}}")
        grasps = {str(node): _grasp(spec, f"{source}: grasp of '{node}'") for node, spec in raw_grasps.items()}
        return cls(names, travel, nodes, grasps)

    def has(self, node: str, motion: str) -> bool:
        return motion in self.nodes.get(node, {})

    def motion(self, node: str, motion: str) -> Trajectory:
        """The taught motion, or a MotionError that names the node and the motion."""
        found = self.nodes.get(node, {}).get(motion)
        if found is None:
            taught = ", ".join(sorted(self.nodes.get(node, {}))) or "nothing"
            raise MotionError(f"no '{motion}' motion was taught for '{node}' (taught there: {taught})")
        return found

    def check_against(self, graph: SceneGraph) -> list[str]:
        """Node ids the motion file names that the graph does not have (a file for another building?)."""
        return sorted(n for n in [*self.nodes, *self.grasps] if n not in graph.nodes)


def _trajectory(raw: Any, node: str, name: str, joints: tuple[str, ...], where: str) -> Trajectory:
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_POINTS:
        raise MotionError(f"{where}: a motion is a list of 1..{MAX_POINTS} points {{positions: [...], time: s}}")
    points: list[JointPoint] = []
    last = 0.0
    for index, point in enumerate(raw):
        at = f"{where}, point {index}"
        if not isinstance(point, Mapping) or set(point) != {"positions", "time"}:
            raise MotionError(f"{at}: a point is {{positions: [...], time: seconds from the start}}")
        positions, time_s = point["positions"], point["time"]
        if not isinstance(positions, list) or len(positions) != len(joints) or not all(_finite(p) for p in positions):
            raise MotionError(f"{at}: positions must be {len(joints)} finite numbers (one per joint)")
        if not _finite(time_s) or not last < float(time_s) <= MAX_DURATION_S:
            raise MotionError(f"{at}: time must increase from point to point, within (0, {MAX_DURATION_S:g}] s")
        last = float(time_s)
        points.append(JointPoint(tuple(float(p) for p in positions), last))
    return Trajectory(node, name, joints, tuple(points))


def _grasp(raw: Any, where: str) -> GraspSpec:
    if not isinstance(raw, Mapping) or set(raw) != {"width", "force"}:
        raise MotionError(f"{where}: a grasp is {{width: m, force: N}}")
    width, force = raw["width"], raw["force"]
    if (
        not _finite(width)
        or not 0.0 <= float(width) <= MAX_GRIPPER_WIDTH_M
        or not _finite(force)
        or not 0.0 < float(force) <= CONTINUOUS_FORCE_N
    ):
        raise MotionError(
            f"{where}: width must be within 0..{MAX_GRIPPER_WIDTH_M:g} m and force within "
            f"(0, {CONTINUOUS_FORCE_N:g}] N (the Franka Hand's stroke and continuous grasping force; "
            f"its {MAX_FORCE_N:g} N peak cannot be held)"
        )
    return GraspSpec(float(width), float(force))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ----------------------------------------------------------------------------- controller results
def trajectory_outcome(status: int, error_code: int, error_string: str, what: str) -> Outcome:
    """What a finished FollowJointTrajectory goal means for the skill."""
    text = " ".join((error_string or "").split())[:300]
    if status == STATUS_SUCCEEDED and error_code == FJT_SUCCESSFUL:
        return Outcome(SkillCode.NONE, f"{what} done")
    if status == STATUS_CANCELED:
        return Outcome(SkillCode.CANCELED, f"{what} canceled")
    name, code = FJT_ERRORS.get(error_code, (f"error code {error_code}", SkillCode.ROBOT_FAULT))
    if code is SkillCode.BLOCKED:
        return Outcome(code, f"{what} failed ({name}: {text or 'no detail'}): the arm met an obstacle")
    return Outcome(code, f"{what} failed ({name}: {text or 'no detail'})")


def gripper_outcome(status: int, success: bool, error: str, what: str, grasp: bool) -> Outcome:
    """What a finished Grasp / Move / Homing goal of franka_gripper means.

    A grasp that ends with success=false and no error text is libfranka's grasp returning
    false: the fingers stopped outside width +/- epsilon, nothing is held (GRASP_FAILED, the
    planner may try again or differently). Error text means libfranka threw (no connection,
    not homed, a hardware error): a fault the planner cannot fix.
    """
    text = " ".join((error or "").split())[:300]
    if status == STATUS_SUCCEEDED and success:
        return Outcome(SkillCode.NONE, f"{what} done")
    if status == STATUS_CANCELED:
        return Outcome(SkillCode.CANCELED, f"{what} canceled")
    if grasp and not text:
        return Outcome(SkillCode.GRASP_FAILED, f"{what} failed: the fingers closed without holding it")
    return Outcome(SkillCode.ROBOT_FAULT, f"{what} failed: {text or 'the gripper reported failure'}")


# ----------------------------------------------------------------------------- the hand, read back
#: Finger joints whose positions franka_gripper publishes (each is half the width); more is not a gripper.
MAX_FINGER_JOINTS = 2


def gripper_width(names: list[str], positions: list[float]) -> float:
    """The finger width (m) in a franka_gripper joint state: the sum of its two finger positions.
    ValueError for a message that is not one (other joints, a count that does not match, not finite, out of range)."""
    if len(positions) != MAX_FINGER_JOINTS or (names and len(names) != len(positions)):
        raise ValueError(f"a gripper state has {MAX_FINGER_JOINTS} finger positions, got {len(positions)}")
    if not all(isinstance(p, float) and math.isfinite(p) for p in positions):
        raise ValueError("a gripper state's finger positions must be finite")
    width = float(positions[0]) + float(positions[1])
    if not -0.005 <= width <= MAX_GRIPPER_WIDTH_M + 0.005:
        raise ValueError(f"a gripper width of {width:.3f} m is outside the Franka Hand's 0..0.08 m")
    return max(width, 0.0)


def hand_holds(width: float, sent_to: float | None, tolerance: float) -> bool:
    """Whether something is between the fingers, from their width: fingers closed (within `tolerance` of 0) hold
    nothing; fingers where the last opening sent them (`sent_to`; None: unknown, then fully open counts) hold
    nothing; fingers that stopped anywhere else stopped on something."""
    if width <= tolerance:
        return False
    opened = MAX_GRIPPER_WIDTH_M if sent_to is None else sent_to
    return not width >= opened - tolerance
