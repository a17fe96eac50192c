"""SayPlan (Rana et al. 2023, algorithm 1) and its ablation LLM+P.

One dialogue: semantic search over the collapsed graph with expand/contract and a
memory of expanded nodes, then planning; the path planner fills in navigation; the
simulator verifies the full plan and its feedback drives up to `max_replans`
rounds of replanning. Each call sees only the current graph, memory and feedback
(SayPlan's Markovian prompting), not the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.views import GraphView, collapse, floors_first
from sayplan_core.llm.session import LlmSession
from sayplan_core.llm.types import LlmBackend
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.options import option
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners import answers, prompts
from sayplan_core.planners.base import PlanJob, Planner, PlannerOptions, PlanResult, Progress, ProgressCallback
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import verify_plan


@dataclass
class Verification:
    ok: bool
    full_plan: list[PlanStep]
    feedback: str


def verify_high_level(
    graph: SceneGraph, steps: list[PlanStep], actions: ActionSet, paths: PathPlanner | None = None
) -> Verification:
    """Fill in navigation with the path planner, then forward-simulate the full plan.

    paths: the run's path planner over `graph` (`path_planner`), so replans reuse its edge costs and the paths it
    already found; None: a new one.
    """
    try:
        full = (paths or path_planner(graph, actions)).expand_plan(steps)
    except GraphError as exc:
        return Verification(False, list(steps), f"path planner: {exc}")
    result = verify_plan(graph, full, actions, strict_navigation=True)
    return Verification(result.success, full, result.feedback)


def path_planner(graph: SceneGraph, actions: ActionSet) -> PathPlanner:
    """The path planner that fills in a plan's navigation, in the set's verb for it."""
    return PathPlanner(graph, goto_action=actions.verb("navigate") or "goto")


@dataclass(frozen=True)
class SayPlanOptions:
    """How SayPlan's semantic search starts."""

    floor_view_rooms: int = option(
        150,
        "start the search at the floors (expanded on demand) when the building has more rooms than this and "
        "at least two floors; 0: always start with every room visible",
        minimum=0,
        maximum=1_000_000,
        per_goal=True,
        flag="--floor-view-rooms",
    )


class SayPlanPlanner(Planner):
    name = "sayplan"
    summary = "SayPlan: one dialogue that searches the collapsed graph (expand/contract), plans and replans"
    Options = SayPlanOptions
    config: SayPlanOptions

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        # a large building starts at its floors: listing every room would fill the prompt (24k tokens at 1,000)
        top = floors_first(graph, self.config.floor_view_rooms)
        system = prompts.sayplan_system(actions, floors_first=top)
        view = collapse(graph, top_only=top)
        feedback = job.context
        paths = path_planner(graph, actions)  # one per run: replans reuse its edge costs and paths
        planned = False
        observed: set[str] = set()
        for step in range(self.options.max_search_steps + self.options.max_replans + 1):
            stage = "replan" if planned else "search"
            visible = view.visible_ids()  # once per step: the schema, the expandable nodes and the text read it
            schema = answers.sayplan_schema(actions, visible, view.expandable_ids(visible) + view.expanded)
            text = view.text(visible=visible)
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": prompts.dynamic(instruction, text, view.memory, feedback)},
            ]
            command = session.ask(
                stage, messages, schema, lambda data: answers.parse_sayplan_command(graph, actions, data), "sayplan"
            )
            if command.name in ("expand", "contract"):
                feedback = self.search_step(view, command.name, command.node, observed)
                result.explored_nodes = list(view.memory)
                result.observed_nodes = sorted(observed)
                progress(
                    Progress(
                        PlanStage.SEARCH, step, command.node, result.replanning_rounds, session.tokens_used, feedback
                    )
                )
                continue
            # One dialogue: what a call was for is known only from its answer.
            session.calls[-1].stage = "replan" if planned else "plan"
            if planned:
                result.replanning_rounds += 1
            planned = True
            if self._verify(graph, actions, command, paths, result, session, progress, step):
                return
            feedback = result.feedback_history[-1]
            if result.replanning_rounds >= self.options.max_replans:
                result.message = (
                    f"no verified plan after {result.replanning_rounds} replanning round(s); last feedback: {feedback}"
                )
                return
        result.message = f"search did not converge within {self.options.max_search_steps} steps"

    @staticmethod
    def search_step(view: GraphView, name: str, node: str, observed: set[str]) -> str:
        """Apply expand/contract; a refused call becomes feedback for the next turn."""
        try:
            if name == "expand":
                revealed = view.expand(node)
                observed.update(revealed)
                return f"expanded {node}: {len(revealed)} nodes revealed"
            view.contract(node)
            return f"contracted {node}"
        except GraphError as exc:
            return str(exc)

    def _verify(
        self,
        graph: SceneGraph,
        actions: ActionSet,
        command: answers.Command,
        paths: PathPlanner,
        result: PlanResult,
        session: LlmSession,
        progress: ProgressCallback,
        step: int,
    ) -> bool:
        check = verify_high_level(graph, command.plan, actions, paths)
        result.plan, result.full_plan, result.answer = command.plan, check.full_plan, command.answer
        progress(Progress(PlanStage.VERIFY, step, "", result.replanning_rounds, session.tokens_used, check.feedback))
        if check.ok:
            result.success = result.verified = True
            result.message = "plan verified"
            progress(Progress(PlanStage.DONE, step, "", result.replanning_rounds, session.tokens_used, result.message))
            return True
        result.feedback_history.append(check.feedback)
        return False


class LlmPPlanner(SayPlanPlanner):
    """SayPlan without iterative replanning (the paper's LLM+P ablation)."""

    name = "llm_p"
    summary = "SayPlan without iterative replanning (the paper's LLM+P ablation)"

    def __init__(self, backend: LlmBackend, options: PlannerOptions | None = None, config: Any = None) -> None:
        super().__init__(backend, replace(options or PlannerOptions(), max_replans=0), config)
