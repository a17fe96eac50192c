"""LLM-As-Planner, SayPlan's open-loop baseline: the whole graph in, a full plan with navigation out.

No search, no path planner, no replanning: the plan is verified once (strict
navigation) so executability can be reported, and returned either way.
"""

from __future__ import annotations

from typing import Any

from sayplan_core.graph.caches import Latest, PerHistory
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import sorted_ids, to_prompt_text
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.planners import answers, prompts
from sayplan_core.planners.base import PlanFailedError, PlanJob, Planner, Progress
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.simulator import verify_plan


def plan_schema(graph: SceneGraph, actions: ActionSet, ids: list[str]) -> dict[str, Any]:
    """answers.plan_schema(actions, ids) for `ids = sorted_ids(graph)`. On a tracked graph its two enums of every
    node id (10.5k at 1,000 rooms) are kept across versions while sorted_ids hands out the same list (it makes a
    new one whenever the id set changes); the dicts around them are new per request. Readers never change a
    schema (the backends encode it)."""
    if graph.change_stamps is None:
        return answers.plan_schema(actions, ids)
    names = tuple(actions.names())
    slot = _ENUMS.of(graph)
    kept = slot.value
    if kept is None or kept[0] is not ids or kept[1] != names:
        kept = (ids, names, answers._enum([*ids, ""]), answers._enum(ids))
        slot.value = kept  # one tuple: readers on other threads see all or none
    targets, visible = kept[2], kept[3]
    step = {"action": {"type": "string", "enum": answers._enum(names)}, "target": {"type": "string", "enum": targets}}
    return answers._obj(
        {
            "chain_of_thought": {"type": "string"},
            "plan": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": step,
                    "required": ["action", "target"],
                    "additionalProperties": False,
                },
            },
            "answer": {"type": "array", "items": {"type": "string", "enum": visible}},
        }
    )


class LlmAsPlanner(Planner):
    name = "llm_as_planner"
    summary = "open loop: the whole graph in, a full plan with navigation out (the SayPlan paper's baseline)"

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        messages = [
            {"role": "system", "content": prompts.full_plan_system(actions)},
            {"role": "user", "content": prompts.dynamic(instruction, to_prompt_text(graph), [], job.context)},
        ]
        ids = sorted_ids(graph)  # kept across versions of a planner node's graph, like the prompt text
        schema = plan_schema(graph, actions, ids)
        command = session.ask("plan", messages, schema, lambda d: answers.parse_plan_answer(graph, actions, d), "plan")
        check = verify_plan(graph, command.plan, actions, strict_navigation=True)
        result.plan = result.full_plan = command.plan
        result.answer = command.answer
        result.explored_nodes = graph.ids_of_type("room")
        result.observed_nodes = list(ids)
        progress(Progress(PlanStage.VERIFY, 0, "", 0, session.tokens_used, check.feedback))
        if not check.success:
            result.feedback_history.append(check.feedback)
            raise PlanFailedError(PlanCode.NOT_EXECUTABLE, f"open-loop plan is not executable: {check.feedback}")
        result.verified = result.success = True
        result.message = "plan verified"


#: The schema's id enums of the last id list, per history of tracked graphs (graph/caches.py).
_ENUMS: PerHistory[Latest[tuple[list[str], tuple[str, ...], list[str], list[str]]]] = PerHistory(
    "llm_as_planner enums", Latest
)
