"""The core pipeline end to end on a bundled task, without ROS and without an LLM.

The plan comes from the task's reference plan with one precondition step removed,
so the simulator's feedback and a corrected plan are shown; the LLM planners plug
into the same stages (search -> plan -> verify -> replan).
"""

from __future__ import annotations

import time

from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import Task, apply_setup, load_tasks
from sayplan_core.graph.model import GraphError
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.graph.views import collapse
from sayplan_core.llm.types import LlmBackend
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.planners import PlannerOptions, Progress, make_planner
from sayplan_core.sim.goals import score_against_goals
from sayplan_core.sim.plan import PlanStep, format_plan
from sayplan_core.sim.simulator import verify_plan

PRECONDITION_ACTIONS = ("open", "access")


def inject_fault(plan: list[PlanStep]) -> tuple[list[PlanStep], PlanStep | None]:
    """Drop the first `open` (else `access`) step: the mistake LLM planners make most."""
    for action in PRECONDITION_ACTIONS:
        for index, step in enumerate(plan):
            if step.action == action:
                return plan[:index] + plan[index + 1 :], step
    return list(plan), None


def _say(stage: str, text: str) -> None:
    print(f"[{stage:>8}] {text}", flush=True)


def _task(env: str, task_id: str) -> Task:
    tasks = {t.id: t for t in load_tasks()}
    if task_id not in tasks:
        raise GraphError(f"unknown task '{task_id}' (e.g. {', '.join(list(tasks)[60:64])})")
    task = tasks[task_id]
    if task.env != env:
        raise GraphError(f"task {task_id} belongs to env '{task.env}', not '{env}'")
    return task


def run_demo(env: str = "office", task_id: str = "office-lh-05") -> int:
    started = time.perf_counter()
    task = _task(env, task_id)
    if not task.reference_plan:
        raise GraphError(f"task {task_id} has no reference plan to demonstrate")
    graph = apply_setup(load_env(env), task)
    _say(
        "env",
        f"{env}: {graph.count('room')} rooms, {graph.count('pose')} poses, "
        f"{graph.count('asset')} assets, {graph.count('object')} objects; agent at {graph.agent_location()}",
    )
    _say("task", task.instruction)

    view = collapse(graph)
    full_tokens = count_tokens(to_prompt_text(graph))
    _say("collapse", f"collapsed graph {count_tokens(view.text())} tokens (full graph {full_tokens})")
    rooms = []
    for step in task.reference_plan:
        if step.action == "goto" and graph.nodes[step.target].type == "room" and step.target not in rooms:
            rooms.append(step.target)
    for room in rooms:
        revealed = view.expand(room)
        _say("search", f"expand({room}): {len(revealed)} nodes revealed, {count_tokens(view.text())} tokens")
    _say("search", f"memory {view.memory}; search done")

    planner = PathPlanner(graph)
    attempt, removed = inject_fault(list(task.reference_plan))
    rounds = 0
    feedback_history: list[str] = []
    for candidate in (attempt, list(task.reference_plan)):
        label = "plan" if rounds == 0 else "replan"
        _say(label, format_plan(candidate))
        full = planner.expand_plan(candidate)
        result = verify_plan(graph, full, strict_navigation=True)
        if result.success:
            _say("verify", f"plan verified: {len(full)} steps with navigation")
            break
        feedback_history.append(result.feedback)
        _say("verify", f"step {result.failed_step}: {result.feedback}")
        rounds += 1
    else:
        _say("result", "no verified plan")
        return 1
    _say("path", format_plan(full))
    final = result.final_graph()
    score = score_against_goals(graph, final, task.predicates)
    status = "met" if score.success else "NOT met"
    _say(
        "goal",
        f"goal {status}; plan precision {score.precision:.2f} "
        f"({len(score.correct)}/{len(score.changed)} changed nodes correct)",
    )
    elapsed = time.perf_counter() - started
    print(
        f"\nsummary: task {task.id} | replanning rounds {rounds} "
        f"(injected fault: removed {removed}) | {len(full)} steps | goal {status} | {elapsed:.2f} s"
    )
    return 0 if score.success else 1


def run_llm_demo(
    backend: LlmBackend, options: PlannerOptions, env: str = "office", task_id: str = "office-lh-05"
) -> int:
    """The same task planned live by the SayPlan planner with a real LLM backend."""
    task = _task(env, task_id)
    graph = apply_setup(load_env(env), task)
    _say("task", task.instruction)

    def show(p: Progress) -> None:
        text = f"{p.node} round {p.replanning_round} | {p.tokens_used} tokens | {p.message}"
        _say(p.stage, text.strip())

    result = make_planner("sayplan", backend, options).plan(graph, task.instruction, on_progress=show)
    print(result.summary())
    if not result.success:
        print(f"summary: task {task.id} | no verified plan ({result.failure.label}) | {len(result.calls)} LLM calls")
        return 1
    final = verify_plan(graph, result.full_plan, strict_navigation=True).final_graph()
    score = score_against_goals(graph, final, task.predicates)
    status = "met" if score.success else "NOT met"
    tokens = result.prompt_tokens + result.completion_tokens
    print(
        f"summary: task {task.id} | replanning rounds {result.replanning_rounds} | {len(result.full_plan)} steps | "
        f"goal {status} | {len(result.calls)} LLM calls, {tokens} tokens"
    )
    return 0 if score.success else 1
