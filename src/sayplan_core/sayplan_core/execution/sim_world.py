"""A simulated robot world: skills run against ground truth that may differ from the robot's graph.

The truth starts as the robot's environment plus `world_changes` (an object that
was moved, a container that is locked). Injected failures (a grasp that slips, a
door that jams) fail a skill a given number of times. After every skill the world
reports what the robot would now know about the nodes it touched, as a graph
update, so the robot's graph converges to the truth as it acts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sayplan_core.execution.skills import SkillResult
from sayplan_core.graph.model import GraphError, SceneGraph, with_state
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.effects import report, step_update
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import check_step
from sayplan_core.sim.world_state import WorldState

#: The source of every update the simulated world reports.
SOURCE = "sim_skill_server"

#: Which failed precondition a robot would report as which outcome.
FAILURE_CODES: dict[str, SkillCode] = {
    "reachable": SkillCode.UNREACHABLE,
    "in_agent_room": SkillCode.NOT_FOUND,
    "under_accessed": SkillCode.NOT_FOUND,
    "unknown_node": SkillCode.NOT_FOUND,
    "container_open": SkillCode.BLOCKED,
    "target_open": SkillCode.BLOCKED,
    "lacks_state": SkillCode.LOCKED,
}


@dataclass
class InjectedFailure:
    """Fail `skill(target)` the next `times` times with `code` (any outcome, robot faults included)."""

    skill: str
    target: str
    code: SkillCode = SkillCode.GRASP_FAILED
    times: int = 1
    message: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.code, str):
            self.code = SkillCode.parse(self.code)
        if self.code is SkillCode.NONE:
            raise ValueError(f"injected failure {self.skill}({self.target}) needs a failure code, not none")
        if self.times < 1:
            raise ValueError(f"injected failure {self.skill}({self.target}) needs times >= 1")

    @classmethod
    def parse(cls, text: str) -> InjectedFailure:
        """`skill:target:code[:times]`, e.g. `pickup:coffee_mug:grasp_failed:1`."""
        parts = text.strip().split(":")
        if len(parts) not in (3, 4) or not all(parts[:3]):
            raise ValueError(f"failure '{text}' must be skill:target:code[:times]")
        try:
            times = int(parts[3]) if len(parts) == 4 else 1
        except ValueError:
            raise ValueError(f"failure '{text}': times must be a whole number") from None
        return cls(parts[0], parts[1], SkillCode.parse(parts[2]), times)


def apply_world_changes(graph: SceneGraph, changes: Iterable[Mapping[str, Any]]) -> SceneGraph:
    """A copy of `graph` with objects moved or states changed: the world as it really is."""
    out = graph.copy()
    for change in changes:
        kind, node = change.get("kind"), change.get("node")
        if not isinstance(node, str) or node not in out:
            raise GraphError(f"world change names node '{node}', which is not in the graph", str(node))
        if kind == "move":
            out.set_parent(node, str(change["parent"]), str(change.get("relation", "ontop_of")))
        elif kind == "state":
            states = list(out.nodes[node].states)
            for state in change.get("states", []):
                states = with_state(states, str(state))
            out.set_states(node, states)
        elif kind == "remove":
            out.remove_node(node)
        else:
            raise GraphError(f"unknown world change kind '{kind}' (move, state or remove)", node)
    return out


class SimulatedWorld:
    def __init__(
        self,
        truth: SceneGraph,
        action_set: str | ActionSet = "sayplan",
        failures: Iterable[InjectedFailure] = (),
    ) -> None:
        self.actions = load_action_set(action_set) if isinstance(action_set, str) else action_set
        self.state = WorldState.from_graph(truth)
        self.failures = [copy.copy(f) for f in failures]

    @property
    def truth(self) -> SceneGraph:
        return self.state.apply_to()

    def would_run(self, skill: str, target: str) -> bool:
        """Whether `execute(skill, target)` would succeed now; nothing is applied and no injected failure used up."""
        if any(f.times > 0 and f.skill == skill and f.target == target for f in self.failures):
            return False
        return check_step(self.state, PlanStep(skill, target), self.actions).ok

    def execute(self, skill: str, target: str) -> SkillResult:
        step = PlanStep(skill, target)
        for failure in self.failures:
            if failure.times > 0 and failure.skill == skill and failure.target == target:
                failure.times -= 1
                message = failure.message or f"{step} failed: {failure.code.label.replace('_', ' ')} (injected)"
                return SkillResult(False, failure.code, message, self.observe([target]))
        effect = step_update(self.state, step, self.actions, source=SOURCE)
        outcome = effect.outcome
        if not outcome.ok:
            code = FAILURE_CODES.get(outcome.failed, SkillCode.SKILL_FAILED)
            if outcome.failed == "unknown_node":  # gone from the world: the robot's graph should forget it
                return SkillResult(False, code, outcome.feedback, GraphUpdate(remove=[target], source=SOURCE))
            if code is SkillCode.NOT_FOUND and self.state.node_type(target) == "object":
                return SkillResult(False, code, outcome.feedback, self._not_found(target))
            touched = [target, *self._container_chain(target)]
            return SkillResult(False, code, outcome.feedback, self.observe(touched))
        return SkillResult(True, SkillCode.NONE, f"{step} done", effect.update)

    def _not_found(self, target: str) -> GraphUpdate:
        """The object is not where the robot looked: seen elsewhere in this room, or unknown."""
        if self.state.room_of(target) == self.state.agent_room():
            return self.observe([target])
        if self.state.graph.children(target):
            return self.observe([])
        update = self.observe([])
        update.remove.append(target)
        return update

    def _container_chain(self, node_id: str) -> list[str]:
        return [a for a in self.state.ancestors(node_id) if self.state.node_type(a) in ("asset", "object")]

    def observe(self, node_ids: Iterable[str]) -> GraphUpdate:
        """What the robot learns: the true state and place of the touched nodes, and where it is."""
        return report(self.state, node_ids, SOURCE)
