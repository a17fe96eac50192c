"""LLM-As-Planner, SayPlan's open-loop baseline: the whole graph in, a full plan with navigation out.

No search, no path planner, no replanning: the plan is verified once (strict
navigation) so executability can be reported, and returned either way.
"""

from __future__ import annotations

from sayplan_core.graph.text import sorted_ids, to_prompt_text
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.planners import answers, prompts
from sayplan_core.planners.base import PlanFailedError, PlanJob, Planner, Progress
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.simulator import verify_plan


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
        schema = answers.plan_schema(actions, ids)
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
