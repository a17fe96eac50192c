"""SayPlan Lite (LookPlanGraph appendix A.2): search and planning in two separate dialogues.

Smaller models confuse the two stages when they share one prompt; here the search
agent only expands and contracts, and the planner only plans and replans.
"""

from __future__ import annotations

from sayplan_core.graph.views import collapse, floors_first
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners import answers, prompts
from sayplan_core.planners.aids import RepeatGuard, repeated_plan_feedback, with_note
from sayplan_core.planners.base import PlanJob, Planner, Progress
from sayplan_core.planners.sayplan import SayPlanOptions, SayPlanPlanner, path_planner, verify_high_level
from sayplan_core.sim.action_set import load_action_set


class SayPlanLitePlanner(Planner):
    name = "sayplan_lite"
    summary = "SayPlan Lite (LookPlanGraph): search and planning in two dialogues, better for small models"
    #: the same view as SayPlan's, so the same option: a large building starts at its floors
    Options = SayPlanOptions
    config: SayPlanOptions

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        top = floors_first(graph, self.config.floor_view_rooms)
        view = collapse(graph, top_only=top)
        search_system = prompts.lite_search_system(floors_first=top, search_example=self.config.search_example)
        note = job.context
        observed: set[str] = set()
        config = self.config
        repeats = RepeatGuard(config.no_repeat)
        for step in range(self.options.max_search_steps):
            visible = view.visible_ids()  # once per step: the expandable nodes and the text read it
            schema = answers.lite_search_schema(
                view.expandable_ids(visible) + view.expanded, config.legal(view, visible), config.thought_chars
            )
            text = view.text(visible=visible)
            heard = config.heard(graph, instruction, visible, note, finish='give command_name "done"')
            user = prompts.dynamic(instruction, text, view.memory, heard)
            again = repeats.note(user)
            messages = [
                {"role": "system", "content": search_system},
                {"role": "user", "content": prompts.dynamic(instruction, text, view.memory, with_note(heard, again))},
            ]
            command = session.ask("search", messages, schema, lambda d: answers.parse_lite_search(graph, d), "search")
            repeats.answered(user, command)
            if command.name == "done":
                break
            note = SayPlanPlanner.search_step(view, command.name, command.node, observed, config.reveal_names)
            result.explored_nodes = list(view.memory)
            result.observed_nodes = sorted(observed)
            progress(Progress(PlanStage.SEARCH, step, command.node, 0, session.tokens_used, note))
        else:
            result.message = f"search did not finish within {self.options.max_search_steps} steps"
            return

        plan_system = prompts.lite_plan_system(actions)
        visible = view.visible_ids()
        schema = answers.plan_schema(actions, visible, config.thought_chars, config.plan_steps)
        text = view.text(visible=visible)  # the view no longer changes: one text for every round
        feedback = job.context
        paths = path_planner(graph, actions)  # one per run: replans reuse its edge costs and paths
        for round_index in range(self.options.max_replans + 1):
            stage = "replan" if round_index else "plan"
            user = prompts.dynamic(instruction, text, view.memory, feedback)
            again = repeats.note(user)
            messages = [
                {"role": "system", "content": plan_system},
                {
                    "role": "user",
                    "content": prompts.dynamic(instruction, text, view.memory, with_note(feedback, again)),
                },
            ]
            command = session.ask(
                stage, messages, schema, lambda d: answers.parse_plan_answer(graph, actions, d), "plan"
            )
            repeats.answered(user, command)
            result.replanning_rounds = round_index
            check = verify_high_level(graph, command.plan, actions, paths)
            result.plan, result.full_plan, result.answer = command.plan, check.full_plan, command.answer
            progress(Progress(PlanStage.VERIFY, round_index, "", round_index, session.tokens_used, check.feedback))
            if check.ok:
                result.success = result.verified = True
                result.message = "plan verified"
                return
            feedback = repeated_plan_feedback(check.feedback) if repeats.failed_before(command) else check.feedback
            repeats.plan_failed(command)
            result.feedback_history.append(feedback)
        result.message = (
            f"no verified plan after {result.replanning_rounds} replanning round(s); last feedback: {feedback}"
        )
