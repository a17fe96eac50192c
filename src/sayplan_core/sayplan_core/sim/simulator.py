"""The scene-graph simulator: forward-simulate a plan and report the first infeasible step.

Feedback is generated from the precondition that failed, so it is the same text
for the LLM, the executor and a person reading the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sayplan_core.graph.model import SceneGraph, UnknownNodeError
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.plan import PlanStep, format_plan, parse_plan
from sayplan_core.sim.predicates import EFFECTS, PRECONDITIONS
from sayplan_core.sim.world_state import RevealHook, WorldState

VERIFIED = "plan verified"


@dataclass
class StepOutcome:
    ok: bool
    feedback: str = ""
    #: what failed: a precondition name, or unknown_action / missing_target / unknown_node / wrong_type / no_agent
    failed: str = ""


@dataclass
class VerificationResult:
    success: bool
    feedback: str
    failed_step: int | None = None
    step: PlanStep | None = None
    steps_executed: int = 0
    state: WorldState | None = field(default=None, repr=False)
    finished: bool = False

    def final_graph(self) -> SceneGraph:
        """The graph after the feasible prefix of the plan."""
        assert self.state is not None
        return self.state.apply_to()


def check_step(state: WorldState, step: PlanStep, actions: ActionSet) -> StepOutcome:
    """Check one step against `state` without changing it."""
    if step.action not in actions:
        known = ", ".join(actions.names())
        return StepOutcome(
            False, f"cannot {step}: unknown action '{step.action}' (available: {known})", "unknown_action"
        )
    spec = actions.actions[step.action]
    if not spec.takes_target:
        if step.target and not spec.optional_target:
            return StepOutcome(False, f"cannot {step}: {step.action} takes no argument", "unexpected_target")
        return StepOutcome(True)
    if not step.target:
        return StepOutcome(
            False, f"cannot {step.action}(): it needs a {' or '.join(spec.targets)} node", "missing_target"
        )
    if step.target not in state.graph.nodes:
        return StepOutcome(False, f"cannot {step}: {UnknownNodeError(step.target, state.graph.nodes)}", "unknown_node")
    node_type = state.node_type(step.target)
    if node_type not in spec.targets:
        return StepOutcome(
            False,
            f"cannot {step}: {step.target} is a {node_type}; {step.action} takes a {' or '.join(spec.targets)}",
            "wrong_type",
        )
    if state.graph.agent_id is None and step.action not in ("done",):
        return StepOutcome(False, f"cannot {step}: the scene graph has no agent node", "no_agent")
    for clause in spec.preconditions:
        reason = PRECONDITIONS[clause.name](state, step.target, clause.arg)
        if reason is not None:
            return StepOutcome(False, f"cannot {step}: {reason}", clause.name)
    return StepOutcome(True)


def apply_step(state: WorldState, step: PlanStep, actions: ActionSet) -> StepOutcome:
    """Check a step and, when feasible, apply its effects to `state`."""
    outcome = check_step(state, step, actions)
    if outcome.ok:
        for clause in actions.actions[step.action].effects:
            EFFECTS[clause.name](state, step.target, clause.arg)
    return outcome


def verify_plan(
    graph: SceneGraph,
    plan: Iterable[PlanStep] | str,
    action_set: str | ActionSet = "sayplan",
    strict_navigation: bool = False,
    reveal_hook: RevealHook | None = None,
    state: WorldState | None = None,
) -> VerificationResult:
    """Forward-simulate `plan` on a copy-on-write view of `graph` (which is never modified).

    strict_navigation: each goto must move to an adjacent room/pose node, as a full
    plan with navigation must; otherwise goto only needs the target to be reachable.
    """
    actions = load_action_set(action_set) if isinstance(action_set, str) else action_set
    steps = parse_plan(plan) if isinstance(plan, str) else list(plan)
    world = state or WorldState.from_graph(graph, strict_navigation=strict_navigation, reveal_hook=reveal_hook)
    if not steps:
        return VerificationResult(False, "the plan is empty", state=world)
    for index, step in enumerate(steps):
        outcome = apply_step(world, step, actions)
        if not outcome.ok:
            return VerificationResult(False, outcome.feedback, index, step, index, world)
        if world.finished:
            return VerificationResult(True, VERIFIED, None, None, index + 1, world, finished=True)
    return VerificationResult(True, VERIFIED, None, None, len(steps), world)


def describe(result: VerificationResult, steps: Iterable[PlanStep]) -> str:
    if result.success:
        return f"{VERIFIED}: {format_plan(steps)}"
    return f"step {result.failed_step}: {result.feedback}"
