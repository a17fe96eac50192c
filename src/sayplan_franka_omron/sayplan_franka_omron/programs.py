"""SayPlan's skills as programs of primitives for a mobile manipulator: a base, an arm with taught motions, a gripper.

Each skill becomes, by the role its action plays in the action set (sayplan_core.sim.roles; the verbs below are
`sayplan`'s), a short list of primitives, built and
checked before the robot moves (a motion that was never taught, a target the base cannot
be sent to: a typed refusal naming the node). The robot's physical state (where the base
and the arm are) is tracked so a skill does not repeat a motion already made:
`access(cupboard)` after `open(cupboard)` only moves the arm back to the approach pose.

    goto(p)       arm to travel (if taught and not there), drive to p
    access(a)     [arm to travel], drive to a's base pose, arm approach
    pickup(o)     at o's asset: open gripper, arm pre_grasp (o's own, else the asset's), grasp o, arm approach
    release(o)    at the accessed asset: arm place, open gripper, arm approach
    open(x)       at x's asset: open gripper, arm handle, grasp the handle, arm handle_open, open gripper, approach
    close(x)      at x's asset: arm handle_close, arm approach
    turn_on(x)    at x's asset: arm turn_on, arm approach (turn_off likewise)
    done          nothing

"At a's asset" means: the base drives there and the arm goes to the approach pose first
unless both are already there. The gripper is homed once before its first use when the
settings ask for it, and never while the scene graph says it holds something (homing
opens the fingers fully and would drop it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sayplan_core.graph.model import NAV_TYPES, SceneGraph
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.primitives import Arm, Drive, Grasp, HomeGripper, OpenGripper, Primitive
from sayplan_core.sim.action_set import ActionSet
from sayplan_core.sim.plan import PlanStep
from sayplan_franka_omron.motions import MAX_GRIPPER_WIDTH_M, MotionError, TaughtMotions

#: Motions a role needs at its node; an action whose role none of the taught nodes supports is left out of the
#: catalog.
SKILL_MOTIONS: dict[str, tuple[str, ...]] = {
    "access": ("approach",),
    "pick": ("approach", "pre_grasp"),
    "place": ("approach", "place"),
    "open": ("approach", "handle", "handle_open"),
    "close": ("approach", "handle_close"),
    "switch_on": ("approach", "turn_on"),
    "switch_off": ("approach", "turn_off"),
}
#: Roles that close the fingers on something, so the hand must be empty first (checked against the graph
#: here, and against the fingers' read-back width by the node before anything moves).
EMPTY_HAND_ROLES = frozenset({"pick", "open"})
#: Roles that need no taught motion.
BASE_ROLES: tuple[str, ...] = ("navigate", "finish")
#: Every role this robot has a program for.
FRANKA_ROLES: tuple[str, ...] = (*BASE_ROLES, *SKILL_MOTIONS)
#: Node types the arm works at (the base parks in front of them).
WORKPLACE_TYPES = frozenset({"asset", "workspace"})

TRAVEL = "travel"


class ProgramError(ValueError):
    """The skill cannot run as asked: `code` says who can act on it."""

    def __init__(self, code: SkillCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class GripperSettings:
    grasp_width: float = 0.04
    grasp_force: float = 20.0
    grasp_speed: float = 0.05
    epsilon_inner: float = 0.01
    epsilon_outer: float = 0.01
    open_width: float = 0.08
    speed: float = 0.1
    home_first: bool = True


@dataclass
class RobotState:
    """Where the robot physically is, as far as its own motions tell (None: unknown, move there again)."""

    base_at: str | None = None  # node the base last arrived at
    arm_at: str | None = None  # "node/motion" of the last motion finished, or "travel"
    gripper_homed: bool = False
    #: The width the last finished opening sent the fingers to (None: a grasp came since, or it failed): fingers
    #: found anywhere else stopped on something (sayplan_franka_omron.motions.hand_holds).
    fingers_sent_to: float | None = None

    def after(self, primitive: Primitive, ok: bool) -> None:
        """Update after a primitive ran (a failed or interrupted motion leaves the part in an unknown place)."""
        if isinstance(primitive, Drive):
            self.base_at = primitive.node if ok else None
        elif isinstance(primitive, Arm):
            self.arm_at = motion_key(primitive.trajectory.node, primitive.trajectory.name) if ok else None
        elif isinstance(primitive, HomeGripper):
            self.gripper_homed = self.gripper_homed or ok
            self.fingers_sent_to = MAX_GRIPPER_WIDTH_M if ok else None
        elif isinstance(primitive, OpenGripper):
            self.fingers_sent_to = primitive.width if ok else None
        elif isinstance(primitive, Grasp):
            self.fingers_sent_to = None

    def accessed(self, graph: SceneGraph) -> str | None:
        """The asset the arm is working at (the simulator's 'accessed'), if the base is parked at one."""
        node = graph.nodes.get(self.base_at or "")
        return node.id if node is not None and node.type in WORKPLACE_TYPES else None


def motion_key(node: str, motion: str) -> str:
    return TRAVEL if motion == TRAVEL else f"{node}/{motion}"


def available_skills(motions: TaughtMotions, actions: ActionSet) -> list[str]:
    """The actions this robot can offer with these motions, in the set's order: those that navigate or finish,
    and each whose role at least one node has every motion for."""
    out = []
    for name, spec in actions.actions.items():
        needed = SKILL_MOTIONS.get(spec.role)
        if spec.role in BASE_ROLES or (
            needed is not None and any(all(m in taught for m in needed) for taught in motions.nodes.values())
        ):
            out.append(name)
    return out


def workplace(graph: SceneGraph, node_id: str) -> str | None:
    """The asset (or workspace) the arm works at for `node_id`: itself, or its nearest such ancestor."""
    for item in [node_id, *graph.ancestors(node_id)]:
        if graph.nodes[item].type in WORKPLACE_TYPES:
            return item
    return None


def plan_skill(
    step: PlanStep, role: str, graph: SceneGraph, motions: TaughtMotions, gripper: GripperSettings, state: RobotState
) -> list[Primitive]:
    """The primitives of one skill, by the role its action plays, from the robot's current state; ProgramError
    before anything moves."""
    target = step.target
    if role == "finish":
        return []
    if target not in graph.nodes:
        raise ProgramError(SkillCode.INVALID_TARGET, f"{step}: '{target}' is not in the robot's scene graph")
    try:
        program = _program(step, role, graph, motions, gripper, state)
    except MotionError as exc:
        raise ProgramError(SkillCode.INVALID_TARGET, f"{step}: {exc}") from None
    return _with_homing(program, gripper, state, holding=graph.held_object() is not None)


def _program(
    step: PlanStep, role: str, graph: SceneGraph, motions: TaughtMotions, gripper: GripperSettings, state: RobotState
) -> list[Primitive]:
    action, target = step.action, step.target
    if role == "navigate":
        if graph.nodes[target].type not in NAV_TYPES:
            raise ProgramError(SkillCode.INVALID_TARGET, f"{step}: {action} takes a room or pose node, not an asset")
        return [] if state.base_at == target else [*_travel(motions, state), Drive(target)]
    if role == "access":
        if graph.nodes[target].type not in WORKPLACE_TYPES:
            raise ProgramError(SkillCode.INVALID_TARGET, f"{step}: {action} takes an asset")
        return _at(target, motions, state)
    if role == "pick":
        held = graph.held_object()
        if held is not None:  # a second grasp would open the fingers on what they hold and drop it
            raise ProgramError(SkillCode.SKILL_FAILED, f"{step}: the gripper holds '{held}'; put it down first")
        place = workplace(graph, target)
        if place is None:
            raise ProgramError(SkillCode.NOT_FOUND, f"{step}: '{target}' is on no asset the arm can reach")
        node = target if motions.has(target, "pre_grasp") else place
        return [
            *_at(place, motions, state),
            OpenGripper(gripper.open_width, gripper.speed),
            Arm(motions.motion(node, "pre_grasp")),
            _grasp(target, motions, gripper),
            Arm(motions.motion(place, "approach")),
        ]
    if role == "place":
        place = state.accessed(graph)
        if place is None:
            raise ProgramError(SkillCode.SKILL_FAILED, f"{step}: the arm is at no asset to put it on; access one first")
        return [
            *_at(place, motions, state),
            Arm(motions.motion(place, "place")),
            OpenGripper(gripper.open_width, gripper.speed),
            Arm(motions.motion(place, "approach")),
        ]
    if role in EFFECT_MOTIONS:
        place = workplace(graph, target)
        if place is None:
            raise ProgramError(SkillCode.INVALID_TARGET, f"{step}: '{target}' is on no asset the arm can reach")
        if role == "open":
            held = graph.held_object()
            if held is not None:
                raise ProgramError(SkillCode.SKILL_FAILED, f"{step}: the gripper holds '{held}'; put it down first")
            return [
                *_at(place, motions, state),
                OpenGripper(gripper.open_width, gripper.speed),
                Arm(motions.motion(target, "handle")),
                _grasp(target, motions, gripper),
                Arm(motions.motion(target, "handle_open")),
                OpenGripper(gripper.open_width, gripper.speed),
                Arm(motions.motion(place, "approach")),
            ]
        return [
            *_at(place, motions, state),
            Arm(motions.motion(target, EFFECT_MOTIONS[role])),
            Arm(motions.motion(place, "approach")),
        ]
    why = f"role {role}" if role else "no role in its action set"
    raise ProgramError(SkillCode.UNKNOWN_SKILL, f"{step}: this robot has no program for '{action}' ({why})")


#: The motion that makes each arm role's change to the world (the door pulled open, the switch pressed).
EFFECT_MOTIONS: dict[str, str] = {
    "open": "handle_open",
    "close": "handle_close",
    "switch_on": "turn_on",
    "switch_off": "turn_off",
}


def release_owed(role: str, program: Sequence[Primitive], stopped: int, ran: bool = True) -> OpenGripper | None:
    """The gripper opening owed when `program` stopped at primitive `stopped` with a handle in the fingers.

    `ran`: that primitive ran and failed (False: it never started, a cancel came before it); the ones before it
    all finished. `open` grasps a handle, pulls it and lets go: a failure or cancel between the grasp (a failed
    grasp included: the fingers may have stopped on the handle) and the letting go leaves the fingers closed on
    the cupboard, and the next goto would drive off with its door. A pickup's grasp holds what the robot is meant
    to carry, so nothing is owed there: opening the hand with the arm stopped mid-motion would drop the object
    somewhere unknown; the robot keeps it and says so (`effect_done`).
    """
    if role == "pick":
        return None
    clamped = False
    for index, primitive in enumerate(program[: stopped + 1] if ran else program[:stopped]):
        if isinstance(primitive, Grasp):
            clamped = True
        elif isinstance(primitive, (OpenGripper, HomeGripper)) and index < stopped:
            clamped = False  # it finished: the fingers are open
    if not clamped:
        return None
    return next((p for p in [*program[stopped:], *program] if isinstance(p, OpenGripper)), None)


def effect_done(role: str, program: Sequence[Primitive], finished: int) -> bool:
    """Whether the skill's change to the world already happened when only `program[:finished]` finished: a pickup
    once its grasp held, a release once the fingers opened, open/close/turn_on/turn_off once their motion ran.
    A failure after that (the arm's retreat blocked) must still report the change: the robot holds the mug."""
    for index in range(min(finished, len(program)) - 1, -1, -1):
        primitive = program[index]
        if role == "pick" and isinstance(primitive, Grasp):
            return True
        if role == "place" and isinstance(primitive, OpenGripper):
            return True
        if isinstance(primitive, Arm) and primitive.trajectory.name == EFFECT_MOTIONS.get(role):
            return True
    return False


def _travel(motions: TaughtMotions, state: RobotState) -> list[Primitive]:
    if motions.travel is None or state.arm_at == TRAVEL:
        return []
    return [Arm(motions.travel)]


def _at(place: str, motions: TaughtMotions, state: RobotState) -> list[Primitive]:
    """Base in front of `place` and arm at its approach pose, skipping what is already so."""
    approach = motions.motion(place, "approach")
    out: list[Primitive] = []
    if state.base_at != place:
        out.extend(_travel(motions, state))
        out.append(Drive(place))
    if state.base_at != place or state.arm_at != motion_key(place, "approach"):
        out.append(Arm(approach))
    return out


def _grasp(node: str, motions: TaughtMotions, gripper: GripperSettings) -> Grasp:
    spec = motions.grasps.get(node)
    width = spec.width if spec else gripper.grasp_width
    force = spec.force if spec else gripper.grasp_force
    return Grasp(node, width, force, gripper.grasp_speed, gripper.epsilon_inner, gripper.epsilon_outer)


def _with_homing(
    program: Iterable[Primitive], gripper: GripperSettings, state: RobotState, holding: bool
) -> list[Primitive]:
    """Home the gripper before its first use; never while it holds something (homing opens the fingers fully)."""
    out: list[Primitive] = []
    homed = state.gripper_homed or not gripper.home_first or holding
    for primitive in program:
        if not homed and isinstance(primitive, (Grasp, OpenGripper)):
            out.append(HomeGripper())
            homed = True
        out.append(primitive)
    return out
