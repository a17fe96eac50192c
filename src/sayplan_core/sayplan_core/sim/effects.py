"""The one function that turns a step's result into a scene-graph update: the simulator, Franka and Spot all call it.

The action set says what a step changes (the object now in the hand, the door now open); the nodes it touched
are reported as the state has them after it, with the agent and its place. What the robot measured at the end
of the step wins over that model, and is the only thing the callers pass differently (`Observed`): where the
base is, what the gripper holds, where the hand let go, an object that was not where the graph had it, what a
camera saw. And `check` says whose word counts when the graph did not expect the step:

- the simulator and Franka check the step against the graph first (`check=True`): a step whose preconditions
  fail changes nothing, and the caller says what that means (the simulated world reports what the robot would
  see; Franka reports where the agent is and warns);
- Spot trusts the robot (`check=False`): the step's effects are applied whatever the graph's preconditions say,
  and the gripper's read-back can show a change the skill made before it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sayplan_core.graph.model import GraphError
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
from sayplan_core.sim.action_set import ActionSet, ActionSpec
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import StepOutcome, apply_effects, apply_step
from sayplan_core.sim.world_state import WorldState

Point = tuple[float, float, float]

#: The agent attribute every update whose gripper was read carries: what the gripper holds.
GRIPPER_ATTRIBUTE = "gripper"
GRIPPER_EMPTY = "empty"
#: Actions whose claw closes on a handle (a claw that stays closed after them holds the handle).
HANDLE_ACTIONS = ("open", "close")
#: The modes of `place_held` that name the place as the target (LookPlanGraph's put_on / put_inside); without
#: one the target is the object put down and the place is the accessed asset (SayPlan's release).
PLACE_MODES = ("ontop_of", "inside_of")


@dataclass(frozen=True)
class Observed:
    """What the robot measured at the end of a step (every field: None / empty when it did not measure it)."""

    #: the gripper read back: it holds something (True) or is empty (False)
    held: bool | None = None
    #: the room or pose node the base measured itself at; None: where the step's effects put it
    location: str | None = None
    #: where the hand let go of what it put down (the object's new position)
    placed_at: Point | None = None
    #: where the robot stands: an object the gripper lost on the way is reported there, in the robot's room
    robot_at: Point | None = None
    #: the agent's measured position and robot-specific attributes (heading, waypoint)
    agent_position: Point | None = None
    agent_attributes: Mapping[str, Any] = field(default_factory=dict)
    #: the robot looked where the target should be and it is not there: an object without children is forgotten
    missing: bool = False
    #: further nodes perceived during the step, reported as the state has them; None: what the action set's
    #: look_ actions show (the target's children)
    seen: Sequence[str] | None = None
    #: report the agent even when its place is unknown (a robot always reports its own measurements)
    report_agent: bool = False
    #: the step got as far as its hand's part (a grasp, a put-down, a handle): only then can `held` show that the
    #: step's change happened; a step refused before it (the claw holding something unknown) changed nothing
    acted: bool = True


@dataclass
class StepEffect:
    """The update, and how the step went: `outcome` is the graph's verdict (ok: it expected the step); `applied`:
    the step counted as done and its effects were applied to the state (with `check=False`: as far as the graph
    could take them)."""

    update: GraphUpdate
    outcome: StepOutcome
    applied: bool


def step_update(
    state: WorldState,
    step: PlanStep,
    actions: ActionSet,
    succeeded: bool = True,
    observed: Observed | None = None,
    check: bool = True,
    source: str = "",
) -> StepEffect:
    """Apply `step`'s effects to `state` (in place) when it succeeded, and report what changed as a graph update.

    `succeeded`: the skill finished. With `check=False` a skill that did not finish still counts as done when
    the gripper shows its change already happened (a grasp that held before a cancel, a hand that opened before
    the stow failed).
    """
    seen = observed or Observed()
    spec = actions.actions.get(step.action)
    done = succeeded
    if spec is not None and not check and step.target in state.graph.nodes:  # the robot's word counts
        if not done and seen.held is not None and seen.acted:
            done = _hand_shows_done(spec, seen.held, state.holding is not None)
        if done and state.holding is None and _releases_target(spec):
            state.holding = step.target  # the robot let go of it, whatever the graph said it held
    held_before = state.holding
    touched: list[str] = []
    remove: list[str] = []
    outcome, applied = StepOutcome(True), False
    if done and (check or spec is not None):  # a check refuses an action the set does not have
        outcome = apply_step(state, step, actions) if check or spec is None else _apply_effects(state, step, spec)
        applied = outcome.ok or not check
    if applied:
        touched = [n for n in (step.target, held_before, state.holding) if n]
        touched.extend(_looked_at(state, step) if seen.seen is None else ())
    elif seen.missing and _forgettable(state, step.target) and not done:
        remove.append(step.target)
    dropped = _drop_lost(state) if seen.held is False else None
    touched.extend([dropped] if dropped else [])
    moved = _Moved(held_before, dropped)
    update = _report(state, [*touched, *(seen.seen or ())], remove, seen, moved, step, source)
    return StepEffect(update, outcome, applied)


def _forgettable(state: WorldState, node_id: str) -> bool:
    """An object with nothing on or in it: one the robot did not find where the graph has it is removed."""
    graph = state.graph
    return node_id in graph.nodes and graph.nodes[node_id].type == "object" and not graph.children(node_id)


def _drop_lost(state: WorldState) -> str | None:
    """The gripper is empty: the object the graph has in the hand is not there. It fell near the robot, in its room
    (None when nothing was held or the robot is in no room)."""
    held = state.holding
    room = None if held is None else state.agent_room()
    if held is None or room is None:
        return None
    state.move(held, room, "in")
    state.holding = None
    return held


@dataclass(frozen=True)
class _Moved:
    """What the hand put down (`placed`) and what it lost on the way (`dropped`): their measured positions apply."""

    placed: str | None = None
    dropped: str | None = None


def _report(
    state: WorldState,
    touched: Iterable[str],
    remove: list[str],
    seen: Observed,
    moved: _Moved,
    step: PlanStep | None,
    source: str,
) -> GraphUpdate:
    """The touched nodes as `state` has them, the agent where it is, and the measurements that win over both."""
    graph = state.graph
    upserts: list[NodeUpsert] = []
    for node_id in dict.fromkeys(touched):
        if node_id in remove or node_id not in graph.nodes or graph.nodes[node_id].type == "agent":
            continue
        position = graph.nodes[node_id].position
        if seen.placed_at is not None and node_id == moved.placed and state.holding != node_id:
            position = seen.placed_at
        elif node_id == moved.dropped and seen.robot_at is not None:
            position = seen.robot_at
        node = replace(graph.nodes[node_id], states=state.states(node_id), position=position)
        upserts.append(NodeUpsert(node, state.parent(node_id), state.relation(node_id) or "in"))
    location = seen.location or state.location
    agent_id = graph.agent_id
    if agent_id is not None and (location is not None or seen.report_agent):
        agent = graph.nodes[agent_id]
        attributes = dict(agent.attributes)
        if location is not None:
            attributes["location"] = location
        if seen.held is not None and step is not None:
            attributes[GRIPPER_ATTRIBUTE] = gripper_words(seen.held, state.holding, step, seen.acted)
        attributes.update(seen.agent_attributes)
        position = agent.position if seen.agent_position is None else seen.agent_position
        upserts.append(NodeUpsert(replace(agent, attributes=attributes, position=position)))
    return GraphUpdate(upsert=upserts, remove=remove, source=source)


def report(state: WorldState, node_ids: Iterable[str], source: str = "") -> GraphUpdate:
    """What a robot that looked at `node_ids` learns from `state`: their state and place, and where it is."""
    return _report(state, node_ids, [], Observed(), _Moved(), None, source)


def gripper_words(held: bool, graph_holds: str | None, step: PlanStep, acted: bool = True) -> str:
    """What the gripper holds, for the agent's `gripper` attribute: empty, the held object's id, the handle a
    claw stuck on (only when the step's claw got to the handle, `acted`), or something the scene graph does not
    hold."""
    if not held:
        return GRIPPER_EMPTY
    if graph_holds is not None:
        return graph_holds
    if acted and step.action in HANDLE_ACTIONS and step.target:
        return f"the handle of {step.target}"
    return "something the scene graph does not hold"


def _apply_effects(state: WorldState, step: PlanStep, spec: ActionSpec) -> StepOutcome:
    """The step's effects without its preconditions (the robot did it); a graph that cannot take one stops there."""
    try:
        apply_effects(state, step, spec)
    except (AssertionError, GraphError, KeyError) as exc:
        return StepOutcome(False, f"the scene graph cannot take {step}'s effects ({exc!r:.200})", "effect")
    return StepOutcome(True)


def _hand_shows_done(spec: ActionSpec, held: bool, graph_holds: bool) -> bool:
    """The gripper shows the step's change happened before the skill stopped: a grasp that holds, or a hand that
    let go of the object it put down."""
    names = {c.name for c in spec.effects}
    if held:
        return "grasp" in names and not graph_holds
    return _releases_target(spec) or ("place_held" in names and graph_holds)


def _releases_target(spec: ActionSpec) -> bool:
    """A put-down whose target is the object let go of (SayPlan's release), not the place."""
    return any(c.name == "place_held" and c.arg not in PLACE_MODES for c in spec.effects)


def _looked_at(state: WorldState, step: PlanStep) -> list[str]:
    """LookPlanGraph's look_on / look_inside: the robot sees what is there."""
    return state.graph.children(step.target) if step.action.startswith("look_") else []
