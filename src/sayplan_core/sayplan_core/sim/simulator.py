"""The scene-graph simulator: forward-simulate a plan and report the first infeasible step.

Feedback is generated from the precondition that failed, so it is the same text
for the LLM, the executor and a person reading the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sayplan_core.graph.model import SceneGraph, UnknownNodeError, a_or_an
from sayplan_core.sim.action_set import ActionSet, ActionSpec, Clause, load_action_set
from sayplan_core.sim.plan import PlanStep, format_plan, parse_plan
from sayplan_core.sim.predicates import (
    EFFECT_GUARDS,
    EFFECTS,
    PRECONDITIONS,
    Refusal,
    missing_affordance,
    same_state_group,
)
from sayplan_core.sim.world_state import RevealHook, WorldState

VERIFIED = "plan verified"
#: The most steps an auto-inserting set inserts before one plan step (a navigation and an open per container level
#: is a handful; more means the fixes go round in a circle).
MAX_INSERTED_PER_STEP = 16


@dataclass
class StepOutcome:
    ok: bool
    feedback: str = ""
    #: what failed: a precondition name, or unknown_action / missing_target / unknown_node / wrong_type / no_agent /
    #: affordance
    failed: str = ""
    #: set when a feasible step changes nothing (a repeated open under the `noop` policy): says why
    note: str = ""
    #: when refused: the step that would fix it (`go_to(kitchen)`, `open(fridge)`), in the verbs of the set in force
    fix: PlanStep | None = None


@dataclass
class VerificationResult:
    success: bool
    feedback: str
    failed_step: int | None = None
    step: PlanStep | None = None
    steps_executed: int = 0
    state: WorldState | None = field(default=None, repr=False)
    finished: bool = False
    #: steps accepted as no-ops ("step 3 open(fridge): fridge is already open; nothing to do")
    notes: list[str] = field(default_factory=list)
    #: when refused: the step that would fix the failed one, if the set has a verb for it
    fix: PlanStep | None = None
    #: steps an auto-inserting set (`auto_insert`) added: (index of the plan step it was inserted before, the step)
    inserted: list[tuple[int, PlanStep]] = field(default_factory=list)
    #: every step that ran, in order, inserted ones included: the plan a robot has to carry out
    executed: list[PlanStep] = field(default_factory=list)

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
            f"cannot {step}: {step.target} is {a_or_an(node_type)}; "
            f"{step.action} takes {a_or_an(' or '.join(spec.targets))}",
            "wrong_type",
        )
    if state.graph.agent_id is None and step.action not in ("done",):
        return StepOutcome(False, f"cannot {step}: the scene graph has no agent node", "no_agent")
    lacking = missing_affordance(state, step.target, spec.affordances)
    if lacking is not None:
        return StepOutcome(False, f"cannot {step}: {lacking}", "affordance")
    repeated = _repeated_state(state, step.target, spec) if spec.on_repeat == "noop" else None
    for clause in spec.preconditions:
        if repeated is not None and _guards_state(clause, repeated):
            continue
        reason = PRECONDITIONS[clause.name](state, step.target, clause.arg)
        if reason is not None:
            verbs = actions.verbs()  # only a refusal reads them: a long plan's feasible steps need none
            text = reason.text(verbs) if isinstance(reason, Refusal) else str(reason)
            return StepOutcome(False, f"cannot {step}: {text}", clause.name, fix=_fix(state, reason, verbs))
    for clause in spec.effects:
        # Whatever a user's set lists, an effect applies only to a graph that can take it (no held asset, no
        # object put into itself): a plan that verifies always materialises.
        guard = EFFECT_GUARDS.get(clause.name)
        refused = guard(state, step.target, clause.arg) if guard is not None else None
        if refused is not None:
            verbs = actions.verbs()
            text = refused.text(verbs) if isinstance(refused, Refusal) else refused
            return StepOutcome(False, f"cannot {step}: {text}", clause.name, fix=_fix(state, refused, verbs))
    if repeated is not None:
        return StepOutcome(True, note=f"{step.target} is already {repeated}; nothing to do")
    return StepOutcome(True)


def _fix(state: WorldState, reason: str | Refusal, verbs: Mapping[str, str]) -> PlanStep | None:
    """The step a refusal asks for, when the set has a verb for its role and it names a real node."""
    if not isinstance(reason, Refusal) or reason.role not in verbs or reason.node not in state.graph.nodes:
        return None
    return PlanStep(verbs[reason.role], reason.node)


def _repeated_state(state: WorldState, target: str, spec: ActionSpec) -> str | None:
    """The state a state-setting action would set when the target is already in it (a repeat), else None."""
    sets = [str(c.arg) for c in spec.effects if c.name == "set_state"]
    if not sets or len(sets) != len(spec.effects):
        return None
    current = state.states(target)
    return sets[0] if all(s in current for s in sets) else None


def _guards_state(clause: Clause, repeated: str) -> bool:
    """A precondition that only tests the state the action sets (has_state: closed for open)."""
    return clause.name in ("has_state", "lacks_state") and same_state_group(str(clause.arg), repeated)


def apply_step(state: WorldState, step: PlanStep, actions: ActionSet) -> StepOutcome:
    """Check a step and, when feasible, apply its effects to `state`."""
    outcome = check_step(state, step, actions)
    if outcome.ok and not outcome.note:
        apply_effects(state, step, actions.actions[step.action])
    return outcome


def apply_inserting(
    state: WorldState,
    step: PlanStep,
    actions: ActionSet,
    inserted: list[PlanStep],
    waiting: tuple[PlanStep, ...] = (),
) -> StepOutcome:
    """apply_step, and when the step is refused for want of a step whose role the set auto-inserts (navigate to the
    target's room, open its container), run that step first (and what it needs in turn), appending it to
    `inserted`, then the step again. Without `auto_insert` in the set this is apply_step. `waiting`: the steps
    this one is being inserted for (a fix that would need one of them goes round in a circle)."""
    outcome = apply_step(state, step, actions)
    if outcome.ok or not actions.auto_insert:
        return outcome
    tried: set[PlanStep] = set()
    while not outcome.ok and outcome.fix is not None and _insertable(outcome.fix, actions):
        fix = outcome.fix
        if fix in tried or fix in waiting or len(inserted) + len(waiting) >= MAX_INSERTED_PER_STEP:
            return replace(outcome, feedback=f"{outcome.feedback}; inserting {fix} did not help")
        tried.add(fix)
        fixed = apply_inserting(state, fix, actions, inserted, (*waiting, step))
        if not fixed.ok:
            return replace(outcome, feedback=f"{outcome.feedback}; inserting {fix} failed: {fixed.feedback}")
        inserted.append(fix)
        outcome = apply_step(state, step, actions)
    return outcome


def _insertable(step: PlanStep, actions: ActionSet) -> bool:
    spec = actions.actions.get(step.action)
    return spec is not None and bool(spec.role) and spec.role in actions.auto_insert


def apply_effects(state: WorldState, step: PlanStep, spec: ActionSpec) -> None:
    """Apply the action's effects to `state` without checking anything (apply_step checks first)."""
    for clause in spec.effects:
        EFFECTS[clause.name](state, step.target, clause.arg)


def verify_plan(
    graph: SceneGraph,
    plan: Iterable[PlanStep | str | Mapping[str, Any]] | str,
    action_set: str | ActionSet = "sayplan",
    strict_navigation: bool = False,
    reveal_hook: RevealHook | None = None,
    state: WorldState | None = None,
) -> VerificationResult:
    """Forward-simulate `plan` on a copy-on-write view of `graph` (which is never modified).

    strict_navigation: each goto must move to an adjacent room/pose node, as a full
    plan with navigation must; otherwise goto only needs the target to be reachable.
    """
    actions = resolve_action_set(action_set)
    if strict_navigation and (why := actions.walks_through_poses()) is not None:
        raise ValueError(f"strict navigation walks pose by pose, and {why}; verify without it")
    steps = plan_steps(plan)
    world = state or WorldState.from_graph(graph, strict_navigation=strict_navigation, reveal_hook=reveal_hook)
    if not steps:
        return VerificationResult(False, "the plan is empty", state=world)
    notes: list[str] = []
    inserted: list[tuple[int, PlanStep]] = []
    executed: list[PlanStep] = []
    for index, step in enumerate(steps):
        added: list[PlanStep] = []
        outcome = apply_inserting(world, step, actions, added)
        inserted.extend((index, s) for s in added)
        executed.extend(added)
        if not outcome.ok:
            return VerificationResult(
                False,
                outcome.feedback,
                index,
                step,
                index,
                world,
                notes=notes,
                fix=outcome.fix,
                inserted=inserted,
                executed=executed,
            )
        executed.append(step)
        if outcome.note:
            notes.append(f"step {index} {step}: {outcome.note}")
        if world.finished:
            break
    count = len(executed) - len(inserted)  # plan steps run: all of them, or up to `done`
    return VerificationResult(
        True,
        VERIFIED,
        None,
        None,
        count,
        world,
        finished=world.finished,
        notes=notes,
        inserted=inserted,
        executed=executed,
    )


def resolve_action_set(action_set: str | ActionSet) -> ActionSet:
    if isinstance(action_set, ActionSet):
        return action_set
    if isinstance(action_set, str):
        return load_action_set(action_set)
    raise TypeError(f"action_set must be a set name, a YAML path or an ActionSet, got {type(action_set).__name__}")


def plan_steps(plan: Any) -> list[PlanStep]:
    """Steps from any form parse_plan reads (text, a list of steps / strings / dicts, {"plan": [...]})."""
    if isinstance(plan, (str, Mapping)) or (isinstance(plan, Iterable) and not isinstance(plan, bytes)):
        return parse_plan(plan)
    raise TypeError(f"plan must be text, a list of steps or {{'plan': [...]}}, got {type(plan).__name__}")


def inserted_lines(result: VerificationResult, steps: list[PlanStep]) -> list[str]:
    """One line per step an auto-inserting set added: `go_to(kitchen) before step 0 pick_up(orange)`."""
    return [f"{step} before step {index} {steps[index]}" for index, step in result.inserted]


def describe(result: VerificationResult, steps: Iterable[PlanStep]) -> str:
    if result.success:
        return f"{VERIFIED}: {format_plan(steps)}"
    return f"step {result.failed_step}: {result.feedback}"
