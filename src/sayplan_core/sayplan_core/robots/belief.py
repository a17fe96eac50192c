"""What a real robot tells the scene graph after a skill: the action set's effects once it succeeded, and where the
agent is after it failed.

A robot without object perception knows what it did, not what it saw: after a
successful pickup the object is in the hand because the action set says so. The
effects are applied to the robot's copy of the graph by the function the simulator and
Spot use (sayplan_core.sim.effects.step_update: same rules, same observed nodes), so
the graph the next plan sees is the one the verified plan expected. After a failure only
the agent's location is reported (from the base's localisation), unless the skill's
change was already made (the robot then reports the effects, e.g. the object it holds);
what the failure means is left to the planner.

The gripper is read back after every manipulation skill (`reconcile_hand`): the update must say what the fingers
really hold. Where they disagree, the hand wins: a grasp that did not hold is a failed grasp, an object that fell
on the way is taken out of the graph (nobody knows where it is), and fingers closed on something the graph cannot
name (a handle that did not let go) are a robot fault that the skill server latches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim.action_set import ActionSet
from sayplan_core.sim.effects import step_update
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.world_state import WorldState


def success_update(
    graph: SceneGraph, step: PlanStep, actions: ActionSet, accessed: str | None, location: str | None, source: str
) -> tuple[GraphUpdate, str]:
    """The graph update after `step` succeeded on the robot, and a warning when the graph did not expect it.

    `accessed` is the asset the arm works at; `location` the room or pose node the base
    is at now (reported alone when the graph was out of step with the world).
    """
    state = WorldState.from_graph(graph)  # copy-on-write: `graph` is not modified
    state.accessed = accessed
    effect = step_update(state, step, actions, source=source)
    if not effect.outcome.ok:
        update = location_update(graph, location, source)
        return update, f"the scene graph did not expect {step} to succeed ({effect.outcome.feedback})"
    return effect.update, ""


def location_update(graph: SceneGraph, location: str | None, source: str) -> GraphUpdate:
    """Only where the agent is (empty when unknown, unchanged, or when the graph has no agent)."""
    agent = graph.agent_id
    if agent is None or location is None or location not in graph.nodes or location == graph.agent_location():
        return GraphUpdate(source=source)
    node = graph.nodes[agent]
    node = replace(node, attributes={**node.attributes, "location": location})
    return GraphUpdate(upsert=[NodeUpsert(node)], source=source)


@dataclass(frozen=True)
class HandMismatch:
    """How a skill's result changes when the fingers disagree with its update: the code, why, and the update."""

    code: SkillCode
    message: str
    update: GraphUpdate


def _updated_location(graph: SceneGraph, update: GraphUpdate) -> str | None:
    agent = graph.agent_id
    for item in update.upsert:
        if item.node.id == agent and item.node.attributes.get("location"):
            return str(item.node.attributes["location"])
    return graph.agent_location()


def reconcile_hand(
    graph: SceneGraph,
    code: SkillCode,
    update: GraphUpdate,
    holding: bool,
    width: float,
    source: str,
) -> HandMismatch | None:
    """Compare the graph after `update` (applied to `graph`, the copy the skill ran on) with the read-back hand:
    None when they agree, else the corrected result (see the module docstring)."""
    try:
        after = apply_update(graph, update)
    except GraphError:
        after = graph
    expected, before = after.held_object(), graph.held_object()
    if (expected is not None) == holding:
        return None
    mm = f"{width * 1000:.0f} mm"
    location = _updated_location(graph, update)
    if expected is not None and before is None:  # the grasp reported holding, the fingers are closed on nothing
        return HandMismatch(
            code if code.robot_fault else SkillCode.GRASP_FAILED,
            f"the gripper does not hold '{expected}' (the fingers read {mm}): the grasp did not hold",
            location_update(graph, location, source),
        )
    if expected is not None:  # it was held before the skill and is gone now
        kept = [u for u in update.upsert if u.node.id != expected]
        return HandMismatch(
            SkillCode.ROBOT_FAULT,
            f"the gripper no longer holds '{expected}' (the fingers read {mm}): it fell somewhere on the way; it is "
            "taken out of the scene graph until someone finds it",
            GraphUpdate(upsert=kept, remove=[*update.remove, expected], source=source),
        )
    if before is not None:  # a release whose fingers did not open: the object is still in the hand
        return HandMismatch(
            SkillCode.ROBOT_FAULT,
            f"the fingers did not let go of '{before}' (they read {mm}): it is still in the hand",
            location_update(graph, location, source),
        )
    return HandMismatch(
        SkillCode.ROBOT_FAULT,
        f"the fingers are closed on something the scene graph does not know of (they read {mm}; a handle that did "
        "not let go?): free it by hand before the robot moves",
        update,
    )
