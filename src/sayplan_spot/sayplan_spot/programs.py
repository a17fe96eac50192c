"""Spot's skills as short programs of robot primitives, and what a finished program tells the scene graph.

Nothing here imports the Spot SDK: `sayplan_spot.robot` runs these programs through bosdyn-client. A skill request
(`goto(kitchen)`, `pickup(coffee_mug)`) becomes primitives such as "GraphNav navigate_to the waypoint bound to
the node", "walk (body trajectory) to a map pose", "grasp at a point (Manipulation API, ray in world)", "pull a
handle (constrained manipulation)" or "capture the gripper camera image". Every position is in the site's map
frame, which is the frame of the GraphNav map's seed (record the map first, then write positions in it); the
adapter converts them to the robot's odom and vision frames with its live localization.

The site file is the SiteBinding file (node -> waypoint and/or map pose) with an optional `spot` section for what
only an arm needs:

    frame: map
    nodes:
      kitchen: {target: wp-kitchen}                 # a GraphNav waypoint id or its recorded name
      kitchen_cupboard: {pose: [54.5, -2.8, -90]}   # where to stand to reach it (x, y, heading in degrees)
    spot:
      handles:   # how open/close pull: handle position (m), hinge (opening in degrees) or drawer (metres),
                 # and the horizontal direction the handle first moves when opening
        kitchen_cupboard: {position: [54.47, -3.3, 0.9], kind: hinge, opening: 90, pull: [0, 1]}
      places:    # where the hand lets go when putting something down on/in the asset (map frame, m)
        nikos_desk: [41.5, 4.6, 0.95]
      objects:   # objects the robot finds among its live world objects when it picks them up
        coffee_mug: {fiducial: 5}               # an AprilTag on it: the tag id (tag family 36h11)
        toolbox: {world_object: toolbox_det}    # any other world object: its name as the robot lists it
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sayplan_core.graph.model import NAV_TYPES, GraphError, SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.binding import SiteBinding, finite_number, read_site_file
from sayplan_core.robots.navigation import TargetError
from sayplan_core.sim.action_set import ActionSet
from sayplan_core.sim.effects import GRIPPER_ATTRIBUTE as GRIPPER_ATTRIBUTE
from sayplan_core.sim.effects import Observed, step_update
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.world_state import WorldState

Point = tuple[float, float, float]
Pose2 = tuple[float, float, float]  # x, y (m), heading (rad) in the map frame

#: The roles (sayplan_core.sim.roles) Spot has a program for; an action runs by the role its set gives it.
SPOT_ROLES = ("navigate", "access", "pick", "place", "put", "open", "close", "look", "finish")
HANDLE_KINDS = ("hinge", "drawer")
#: Roles whose program closes the claw on something: refused before any motion unless the hand is empty.
GRASPING_ROLES = frozenset({"pick", "open", "close"})


def spot_role(step: PlanStep, actions: ActionSet) -> str:
    """The role `step` plays in `actions` if Spot has a program for it; TargetError naming why not."""
    role = actions.role(step.action)
    if role in SPOT_ROLES:
        return role
    if step.action not in actions:
        raise TargetError(f"Spot has no program for '{step.action}': the {actions.name} action set has no such action")
    if not role:
        raise TargetError(f"Spot has no program for '{step.action}': it declares no role in {actions.name}")
    raise TargetError(f"Spot has no program for '{step.action}' (role {role}; Spot runs {', '.join(SPOT_ROLES)})")


def grasps_where_it_stands(graph: SceneGraph, node: str, accessed: str | None) -> bool:
    """Whether a pick grasps from where the robot stands: only when it stands at (has accessed) the asset or
    workspace the object rests on or in (the simulator's `under_accessed`), whatever the set's verbs; else it walks
    up to the object first (LookPlanGraph's pick_up)."""
    if accessed is None or node not in graph.nodes:
        return False
    support = next((a for a in graph.ancestors(node) if graph.nodes[a].type in ("asset", "workspace")), None)
    return support == accessed


def hand_refusal(step: PlanStep, graph: SceneGraph, actions: ActionSet) -> str:
    """Why `step` may not start with what the scene graph says the hand holds ('' when it may): a skill that
    grasps needs an empty hand (a re-grasp would open the claw and drop what it holds)."""
    held = graph.held_object()
    if actions.role(step.action) not in GRASPING_ROLES or held is None:
        return ""
    return f"{step} refused before the robot moved: the hand already holds {held} (scene graph); put it down first"


#: Default travel of a handle when the site file gives none: degrees for a hinge, metres for a drawer.
DEFAULT_OPENING = {"hinge": 90.0, "drawer": 0.3}


# ----------------------------------------------------------------------------- the site file
@dataclass(frozen=True)
class Handle:
    """A door or drawer handle: where it is, how it moves, how far (rad for a hinge, m for a drawer)."""

    node: str
    position: Point
    kind: str
    opening: float
    pull: tuple[float, float]  # unit vector, map frame

    def stand_pose(self, standoff: float) -> Pose2:
        """In front of the handle, `standoff` metres out along the pull direction, facing it."""
        x, y, _ = self.position
        px, py = self.pull
        return (x + px * standoff, y + py * standoff, math.atan2(-py, -px))


@dataclass(frozen=True)
class WorldObjectRef:
    """How the robot recognises an object among the world objects it lists (bosdyn.api world_object.proto):
    by the id of an AprilTag on it (AprilTagProperties.tag_id), or by a world object's name (WorldObject.name,
    e.g. one a detector adds). Exactly one of the two is set."""

    fiducial: int | None = None
    name: str = ""

    def describe(self) -> str:
        return f"fiducial {self.fiducial}" if self.fiducial is not None else f"world object '{self.name}'"


@dataclass(frozen=True)
class SpotSite:
    binding: SiteBinding = field(default_factory=SiteBinding)
    handles: Mapping[str, Handle] = field(default_factory=dict)
    places: Mapping[str, Point] = field(default_factory=dict)
    objects: Mapping[str, WorldObjectRef] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> SpotSite:
        return cls.from_dict(read_site_file(path), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<site>") -> SpotSite:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: a site file holds 'frame', 'nodes' and optionally 'spot'")
        rest = {k: v for k, v in data.items() if k != "spot"}
        binding = SiteBinding.from_dict(rest, source)
        spot = data.get("spot") or {}
        if not isinstance(spot, Mapping) or set(spot) - {"handles", "places", "objects"}:
            raise ValueError(f"{source}: 'spot' holds 'handles', 'places' and/or 'objects'")
        handles_raw = spot.get("handles") or {}
        places_raw = spot.get("places") or {}
        objects_raw = spot.get("objects") or {}
        if not all(isinstance(raw, Mapping) for raw in (handles_raw, places_raw, objects_raw)):
            raise ValueError(f"{source}: spot.handles, spot.places and spot.objects are mappings from node ids")
        handles = {str(n): _handle(str(n), raw, source) for n, raw in handles_raw.items()}
        places = {str(n): _point(raw, f"{source}: spot.places.{n}") for n, raw in places_raw.items()}
        objects = {str(n): _world_object(raw, f"{source}: spot.objects.{n}") for n, raw in objects_raw.items()}
        return cls(binding, handles, places, objects)

    def check_against(self, graph: SceneGraph) -> list[str]:
        """Entries naming nodes the graph does not have."""
        names = set(self.binding.entries) | set(self.handles) | set(self.places) | set(self.objects)
        return sorted(n for n in names if n not in graph.nodes)


def _point(raw: Any, where: str) -> Point:
    if not isinstance(raw, list) or len(raw) != 3 or not all(finite_number(v) for v in raw):
        raise ValueError(f"{where} must be [x, y, z] with finite numbers (metres, map frame)")
    return (float(raw[0]), float(raw[1]), float(raw[2]))


def _world_object(raw: Any, where: str) -> WorldObjectRef:
    if not isinstance(raw, Mapping) or len(raw) != 1 or set(raw) - {"fiducial", "world_object"}:
        raise ValueError(f"{where} holds one of fiducial (an AprilTag id) or world_object (a world object's name)")
    if "fiducial" in raw:
        tag = raw["fiducial"]
        if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
            raise ValueError(f"{where}.fiducial must be an AprilTag id (a whole number >= 0), got {tag!r}")
        return WorldObjectRef(fiducial=tag)
    name = raw["world_object"]
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}.world_object must be a non-empty world object name")
    return WorldObjectRef(name=name.strip())


def _handle(node: str, raw: Any, source: str) -> Handle:
    where = f"{source}: spot.handles.{node}"
    if not isinstance(raw, Mapping) or set(raw) - {"position", "kind", "opening", "pull"}:
        raise ValueError(f"{where} holds position [x, y, z], kind (hinge|drawer), opening and pull [dx, dy]")
    position = _point(raw.get("position"), f"{where}.position")
    kind = raw.get("kind")
    if kind not in HANDLE_KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(HANDLE_KINDS)}, got {kind!r}")
    opening = raw.get("opening", DEFAULT_OPENING[kind])
    if not finite_number(opening) or opening <= 0:
        raise ValueError(f"{where}.opening must be a positive number (degrees for a hinge, metres for a drawer)")
    if kind == "hinge" and opening > 180:
        raise ValueError(f"{where}.opening is in degrees and at most 180, got {opening}")
    pull = raw.get("pull")
    if not isinstance(pull, list) or len(pull) != 2 or not all(finite_number(v) for v in pull):
        raise ValueError(f"{where}.pull must be [dx, dy]: the horizontal direction the handle first moves")
    norm = math.hypot(float(pull[0]), float(pull[1]))
    if norm < 1e-6:
        raise ValueError(f"{where}.pull must not be zero")
    travel = math.radians(float(opening)) if kind == "hinge" else float(opening)
    return Handle(node, position, str(kind), travel, (float(pull[0]) / norm, float(pull[1]) / norm))


# ----------------------------------------------------------------------------- primitives
@dataclass(frozen=True)
class Navigate:
    """GraphNav navigate_to the waypoint bound to `node` (its id or recorded name, resolved on the robot)."""

    node: str
    waypoint: str


@dataclass(frozen=True)
class Walk:
    """A body trajectory to a map pose (for nodes without a waypoint; limited to short distances)."""

    node: str
    pose: Pose2


@dataclass(frozen=True)
class Approach:
    """Walk to `standoff` metres from a point, facing it, coming from wherever the robot stands."""

    node: str
    point: tuple[float, float]
    standoff: float


@dataclass(frozen=True)
class Grasp:
    """Pick up what is at `point` (Manipulation API, ray in world); `world_object`, when set, is the live world
    object whose position replaces the point (the robot must see it)."""

    node: str
    point: Point | None
    world_object: WorldObjectRef | None = None


@dataclass(frozen=True)
class Place:
    """Move the hand to `point`, open the gripper, stow the arm."""

    node: str
    point: Point


@dataclass(frozen=True)
class Articulate:
    """Grasp a handle, pull (opening) or push (closing) it by constrained manipulation, let go, stow."""

    node: str
    handle: Handle
    opening: bool


@dataclass(frozen=True)
class Capture:
    """Capture one camera image of a node (for the VLM hook)."""

    node: str
    source: str
    relation: str  # ontop_of / inside_of: what the image is asked about


Primitive = Navigate | Walk | Approach | Grasp | Place | Articulate | Capture


def describe(primitive: Primitive) -> str:
    """One line for logs and feedback."""
    if isinstance(primitive, Navigate):
        return f"navigate to waypoint '{primitive.waypoint}' ({primitive.node})"
    if isinstance(primitive, Walk):
        x, y, yaw = primitive.pose
        return f"walk to ({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f} deg) ({primitive.node})"
    if isinstance(primitive, Approach):
        return f"walk up to {primitive.node}"
    if isinstance(primitive, Grasp):
        return f"grasp {primitive.node}"
    if isinstance(primitive, Place):
        return f"put down at {primitive.node}"
    if isinstance(primitive, Articulate):
        return f"{'open' if primitive.opening else 'close'} {primitive.node} ({primitive.handle.kind})"
    return f"capture {primitive.source} of {primitive.node}"


@dataclass(frozen=True)
class SpotOptions:
    standoff_m: float = 0.8  # how far from an asset's reference point the robot stands to reach it
    place_height_m: float = 0.8  # hand height above an asset's reference point when putting down without a place
    image_source: str = "hand_color_image"


@dataclass(frozen=True)
class SpotProgram:
    step: PlanStep
    kind: str
    primitives: tuple[Primitive, ...]

    def describe(self) -> str:
        return " > ".join(describe(p) for p in self.primitives) or "nothing to do"


def compile_skill(
    step: PlanStep, graph: SceneGraph, site: SpotSite, accessed: str | None, options: SpotOptions, actions: ActionSet
) -> SpotProgram:
    """The primitives that carry out `step` on Spot, by the role its action plays in `actions`; TargetError when
    the robot cannot be told where to go or has no program for the role."""
    kind = spot_role(step, actions)
    if kind == "finish":
        return SpotProgram(step, kind, ())
    if not step.target:
        raise TargetError(f"{step.action} needs a target node")
    if step.target not in graph.nodes:
        raise TargetError(f"'{step.target}' is not in the scene graph")
    node = step.target
    prims: list[Primitive]
    if kind == "navigate":
        prims = [_go(graph, site, node)]
    elif kind == "access":
        prims = [_reach(graph, site, node, options)]
    elif kind == "pick":
        grasp = _grasp(graph, site, node)
        prims = (
            [grasp] if grasps_where_it_stands(graph, node, accessed) else [_reach(graph, site, node, options), grasp]
        )
    elif kind == "place":
        if accessed is None or accessed not in graph.nodes:
            raise TargetError(f"{step.action}({node}) needs an accessed asset to put it on; access one first")
        prims = [Place(accessed, _place_point(graph, site, accessed, options))]
    elif kind == "put":
        prims = [_reach(graph, site, node, options), Place(node, _place_point(graph, site, node, options))]
    elif kind in ("open", "close"):
        handle = site.handles.get(node)
        if handle is None:
            raise TargetError(f"{step.action}({node}) needs the handle of {node} in the site file (spot.handles)")
        entry = site.binding.entries.get(node)
        reach = (
            _reach(graph, site, node, options)
            if entry is not None
            else Walk(node, handle.stand_pose(options.standoff_m))
        )
        prims = [reach, Articulate(node, handle, kind == "open")]
    else:  # look
        relation = actions.actions[step.action].relation
        prims = [_reach(graph, site, node, options), Capture(node, options.image_source, relation)]
    return SpotProgram(step, kind, tuple(prims))


def _go(graph: SceneGraph, site: SpotSite, node: str) -> Primitive:
    try:
        target = site.binding.target(graph, node)
    except GraphError as exc:
        raise TargetError(str(exc)) from None
    if target.name:
        return Navigate(node, target.name)
    assert target.pose is not None
    return Walk(node, target.pose)


def _reach(graph: SceneGraph, site: SpotSite, node: str, options: SpotOptions) -> Primitive:
    """Stand where the node can be reached: its bound waypoint or pose, else `standoff_m` from it."""
    entry = site.binding.entries.get(node)
    if entry is not None:
        if entry.name:
            return Navigate(node, entry.name)
        assert entry.pose is not None
        return Walk(node, entry.pose)
    position = graph.nodes[node].position
    if position is None:
        raise TargetError(f"'{node}' has no position in the scene graph and no entry in the site file")
    return Approach(node, (float(position[0]), float(position[1])), options.standoff_m)


def _grasp(graph: SceneGraph, site: SpotSite, node: str) -> Grasp:
    """Where to grasp: the live world object bound in spot.objects when the robot sees it, else the node's
    scene-graph position (also the fallback for a bound object out of view). A site-file entry for an object is
    where to stand to reach it (`_reach` walks there first), never where the object is."""
    position = graph.nodes[node].position
    seen = site.objects.get(node)
    if position is None:
        if seen is not None:
            return Grasp(node, None, seen)
        raise TargetError(
            f"'{node}' has no position in the scene graph to grasp at"
            + (" (its site-file entry is where to stand, not where it is)" if node in site.binding.entries else "")
        )
    return Grasp(node, (float(position[0]), float(position[1]), float(position[2])), seen)


def _place_point(graph: SceneGraph, site: SpotSite, node: str, options: SpotOptions) -> Point:
    if node in site.places:
        return site.places[node]
    position = graph.nodes[node].position
    if position is None:
        raise TargetError(f"'{node}' has no position in the scene graph and no spot.places entry in the site file")
    return (float(position[0]), float(position[1]), float(position[2]) + options.place_height_m)


# ----------------------------------------------------------------------------- geometry the adapter needs
def approach_pose(robot: tuple[float, float], point: tuple[float, float], standoff: float) -> Pose2:
    """Where to stand `standoff` m from `point` on the line from the robot to it, facing the point. A robot
    already closer than that stays where it is and only turns."""
    dx, dy = point[0] - robot[0], point[1] - robot[1]
    distance = math.hypot(dx, dy)
    heading = math.atan2(dy, dx) if distance > 1e-9 else 0.0
    if distance <= standoff:
        return (robot[0], robot[1], heading)
    scale = (distance - standoff) / distance
    return (robot[0] + dx * scale, robot[1] + dy * scale, heading)


def resolve_waypoint(name: str, waypoints: Mapping[str, str]) -> str:
    """The waypoint id for a site-file name: an id of the robot's map, else a unique recorded waypoint name.
    `waypoints` maps ids to recorded names. TargetError names the problem."""
    if name in waypoints:
        return name
    matches = sorted(wid for wid, recorded in waypoints.items() if recorded == name)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TargetError(f"no waypoint '{name}' in the robot's GraphNav map ({len(waypoints)} waypoints)")
    raise TargetError(f"waypoint name '{name}' is ambiguous in the robot's GraphNav map ({', '.join(matches[:3])})")


# ----------------------------------------------------------------------------- what the robot now knows
@dataclass(frozen=True)
class RobotPose:
    """The robot's localization in the map frame, and the waypoint it is localized to ('' if none)."""

    x: float
    y: float
    yaw: float
    z: float = 0.0
    waypoint: str = ""


def nearest_place(graph: SceneGraph, x: float, y: float) -> str | None:
    """The room or pose node nearest to a map position (ties: the lower id)."""
    best: tuple[float, str] | None = None
    for node in graph.iter_nodes(*sorted(NAV_TYPES)):
        if node.position is None:
            continue
        distance = math.hypot(node.position[0] - x, node.position[1] - y)
        if best is None or (distance, node.id) < best:
            best = (distance, node.id)
    return best[1] if best else None


@dataclass
class SpotBelief:
    """What the skill server remembers between skills that the scene graph does not hold: the accessed asset."""

    accessed: str | None = None


def skill_update(
    graph: SceneGraph,
    step: PlanStep,
    actions: ActionSet,
    belief: SpotBelief,
    code: SkillCode,
    pose: RobotPose | None,
    moved_off_course: bool = False,
    waypoint_nodes: Mapping[str, str] | None = None,
    placed_at: Point | None = None,
    source: str = "spot_skill_server",
    held: bool | None = None,
    missing: bool = False,
    hand_acted: bool = True,
) -> GraphUpdate:
    """The scene-graph update a finished skill reports, and the belief after it.

    On success the step's effects (from the action set: the object now in the hand, the door now open) are
    applied to the robot's graph, so the planner's model and the robot agree. The agent's place always comes
    from the robot: the goto target on arrival; after a navigation that stopped on the way, the node whose
    waypoint the robot is localized to, else the room or pose node nearest to its map position. A grasp that
    found nothing where the graph said removes that object, as the simulated robot does for objects it cannot
    see where they should be. An object put down takes `placed_at` (where the hand let go) as its position.

    `held` is what the gripper says at the end of the skill (None: not read): it overrides the plan model when a
    skill that did not succeed had already changed the hand, which it can only have done once its grasp, put-down
    or handle pull started (`hand_acted`): a pickup refused before it, because the claw holds something the graph
    does not, leaves the object where it was and reports the gripper holding "something the scene graph does not
    hold". A pickup canceled or failed after the grasp held
    reports the object in the hand; a put-down whose gripper opened (then the stow failed or was canceled)
    reports the object at the place. An object the graph still has in the hand when the gripper is empty (it
    slipped out on the way) is reported in the robot's room, near the robot. Whenever the gripper was read, the
    agent's `gripper` attribute says what it holds (`effects.gripper_words`), so graph and gripper never disagree.
    `missing` says the robot looked where the object should be and found nothing there: only then is a
    pickup's `not_found` a reason to remove the object (one the robot merely does not see right now is kept).
    """
    state = WorldState.from_graph(graph)
    state.accessed = accessed_before = belief.accessed if belief.accessed in graph.nodes else None
    kind = actions.role(step.action)
    location: str | None = None
    if kind == "navigate" and code is SkillCode.NONE:
        location = step.target
    elif moved_off_course and pose is not None:
        location = waypoint_nodes.get(pose.waypoint) if waypoint_nodes else None
        if location is None or location not in graph.nodes or graph.nodes[location].type not in NAV_TYPES:
            location = nearest_place(graph, pose.x, pose.y)
    observed = Observed(
        held=held,
        location=location,
        placed_at=placed_at,
        robot_at=None if pose is None else (pose.x, pose.y, 0.0),
        agent_position=None if pose is None else (pose.x, pose.y, pose.z),
        agent_attributes={} if pose is None else _pose_attributes(pose),
        missing=missing and code is SkillCode.NOT_FOUND and kind == "pick",
        seen=(),  # what a look_ skill saw comes from the camera, not the graph
        report_agent=True,
        acted=hand_acted,
    )
    effect = step_update(state, step, actions, code is SkillCode.NONE, observed, check=False, source=source)
    walked_up = kind == "pick" and not grasps_where_it_stands(graph, step.target, accessed_before)
    if effect.applied:
        belief.accessed = None if walked_up else state.accessed  # a pick that walked left the accessed asset
    elif kind not in ("place", "pick") or walked_up:  # it may have walked away from what it had accessed
        belief.accessed = None
    return effect.update


def _pose_attributes(pose: RobotPose) -> dict[str, Any]:
    attributes: dict[str, Any] = {"heading_deg": round(math.degrees(pose.yaw), 1)}
    if pose.waypoint:
        attributes["waypoint"] = pose.waypoint
    return attributes
