"""What a real robot tells the scene graph after a skill: the action set's effects once it succeeded, and where the
agent is after it failed.

A robot without object perception knows what it did, not what it saw: after a
successful pickup the object is in the hand because the action set says so. The
effects are applied to the robot's copy of the graph exactly as the planner's simulator
applies them (same rules, same observed nodes), so the graph the next plan sees is the
one the verified plan expected. After a failure only the agent's location is reported
(from the base's localisation), unless the skill's change was already made (the robot
then reports the effects, e.g. the object it holds); what the failure means is left to
the planner.
"""

from __future__ import annotations

import copy

from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
from sayplan_core.sim.action_set import ActionSet
from sayplan_core.sim.plan import PlanStep


def success_update(
    graph: SceneGraph, step: PlanStep, actions: ActionSet, accessed: str | None, location: str | None, source: str
) -> tuple[GraphUpdate, str]:
    """The graph update after `step` succeeded on the robot, and a warning when the graph did not expect it.

    `accessed` is the asset the arm works at; `location` the room or pose node the base
    is at now (reported alone when the graph was out of step with the world).
    """
    world = SimulatedWorld(graph, actions)  # copy-on-write: `graph` is not modified
    world.state.accessed = accessed
    result = world.execute(step.action, step.target)
    if not result.success:
        update = location_update(graph, location, source)
        return update, f"the scene graph did not expect {step} to succeed ({result.message})"
    result.update.source = source
    return result.update, ""


def location_update(graph: SceneGraph, location: str | None, source: str) -> GraphUpdate:
    """Only where the agent is (empty when unknown, unchanged, or when the graph has no agent)."""
    agent = graph.agent_id
    if agent is None or location is None or location not in graph.nodes or location == graph.agent_location():
        return GraphUpdate(source=source)
    node = copy.deepcopy(graph.nodes[agent])
    node.attributes["location"] = location
    return GraphUpdate(upsert=[NodeUpsert(node)], source=source)
