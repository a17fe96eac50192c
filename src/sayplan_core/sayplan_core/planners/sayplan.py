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

from sayplan_core.graph import limits
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.views import GraphView, collapse, floors_first
from sayplan_core.llm.session import LlmSession
from sayplan_core.llm.types import LlmBackend
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.options import option
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners import answers, prompts
from sayplan_core.planners.aids import (
    RepeatGuard,
    expansion_feedback,
    instruction_matches,
    matches_feedback,
    no_repeat_option,
    repeated_plan_feedback,
    with_note,
)
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
    if len(full) > limits.MAX_PLAN_STEPS:  # a plan within the limit whose navigation takes it over: feedback
        return Verification(
            False,
            list(steps),
            f"the plan has {len(full)} steps once its navigation is filled in, over the limit of "
            f"{limits.MAX_PLAN_STEPS}: write a shorter plan",
        )
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
    legal_commands: bool = option(
        True,
        "the answer schema names only legal search commands: expand a node that would show something new, "
        "contract an expanded one (an aid for small models; see planners/aids.py)",
        per_goal=True,
    )
    no_repeat: bool = no_repeat_option()
    reveal_names: bool = option(
        False,
        "the feedback after an expansion names the nodes it showed, not only how many (an aid for small models)",
        per_goal=True,
    )
    instruction_matches: bool = option(
        False,
        "the feedback lists the visible assets and objects whose names share a word with the instruction, with "
        "their room and states (an aid for small models, which often search on with the item in view)",
        per_goal=True,
    )
    search_example: bool = option(
        False,
        "the system prompt shows a second worked example, a search task that ends as soon as the item is visible "
        "(an aid for small models)",
        per_goal=True,
    )
    thought_chars: int = option(
        0,
        "the longest chain_of_thought and reasoning an answer may write, in characters (0: no limit; bounds a "
        "small model's writing time on a CPU)",
        minimum=0,
        maximum=100_000,
        per_goal=True,
    )

    plan_steps: int = option(
        0,
        "the most steps a plan in an answer may have, in the answer schema (0: no limit there; the parser refuses "
        "more than 1,000); stops a small model that loops writing steps before its token limit does",
        minimum=0,
        maximum=1_000,
        per_goal=True,
    )

    def heard(
        self,
        graph: SceneGraph,
        instruction: str,
        visible: set[str],
        feedback: str,
        finish: str = "stop exploring and plan",
    ) -> str:
        """The feedback the model hears: with `instruction_matches`, followed by what in view the instruction
        names and a reminder to `finish`."""
        if not self.instruction_matches:
            return feedback
        matches = instruction_matches(graph, instruction, visible)
        return with_note(feedback, matches_feedback(graph, matches, finish))

    def legal(self, view: GraphView, visible: set[str]) -> answers.Legal | None:
        """What the search commands may name now, when `legal_commands` narrows the schema (else None)."""
        if not self.legal_commands:
            return None
        return answers.Legal(view.revealing_ids(visible), list(view.expanded))


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
        system = prompts.sayplan_system(actions, floors_first=top, search_example=self.config.search_example)
        view = collapse(graph, top_only=top)
        feedback = job.context
        paths = path_planner(graph, actions)  # one per run: replans reuse its edge costs and paths
        planned = False
        observed: set[str] = set()
        config = self.config
        repeats = RepeatGuard(config.no_repeat)
        for step in range(self.options.max_search_steps + self.options.max_replans + 1):
            stage = "replan" if planned else "search"
            visible = view.visible_ids()  # once per step: the schema, the expandable nodes and the text read it
            schema = answers.sayplan_schema(
                actions,
                visible,
                view.expandable_ids(visible) + view.expanded,
                config.legal(view, visible),
                config.thought_chars,
                config.plan_steps,
            )
            text = view.text(visible=visible)
            heard = config.heard(graph, instruction, visible, feedback)
            user = prompts.dynamic(instruction, text, view.memory, heard)
            note = repeats.note(user)
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": prompts.dynamic(instruction, text, view.memory, with_note(heard, note))},
            ]
            command = session.ask(
                stage, messages, schema, lambda data: answers.parse_sayplan_command(graph, actions, data), "sayplan"
            )
            repeats.answered(user, command)
            if command.name in ("expand", "contract"):
                feedback = self.search_step(view, command.name, command.node, observed, config.reveal_names)
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
            if self._verify(graph, actions, command, paths, result, session, progress, step, repeats):
                return
            feedback = result.feedback_history[-1]
            if result.replanning_rounds >= self.options.max_replans:
                result.message = (
                    f"no verified plan after {result.replanning_rounds} replanning round(s); last feedback: {feedback}"
                )
                return
        result.message = f"search did not converge within {self.options.max_search_steps} steps"

    @staticmethod
    def search_step(view: GraphView, name: str, node: str, observed: set[str], names: bool = False) -> str:
        """Apply expand/contract; a refused call becomes feedback for the next turn. names: the feedback of an
        expansion names what it showed (`reveal_names`)."""
        try:
            if name == "expand":
                revealed = view.expand(node)
                observed.update(revealed)
                return expansion_feedback(node, revealed, names)
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
        repeats: RepeatGuard,
    ) -> bool:
        check = verify_high_level(graph, command.plan, actions, paths)
        result.plan, result.full_plan, result.answer = command.plan, check.full_plan, command.answer
        progress(Progress(PlanStage.VERIFY, step, "", result.replanning_rounds, session.tokens_used, check.feedback))
        if check.ok:
            result.success = result.verified = True
            result.message = "plan verified"
            progress(Progress(PlanStage.DONE, step, "", result.replanning_rounds, session.tokens_used, result.message))
            return True
        # the simulator is deterministic: a plan that failed before fails the same way, and the model hears so
        repeated = repeats.failed_before(command)
        result.feedback_history.append(repeated_plan_feedback(check.feedback) if repeated else check.feedback)
        repeats.plan_failed(command)
        return False


class LlmPPlanner(SayPlanPlanner):
    """SayPlan without iterative replanning (the paper's LLM+P ablation)."""

    name = "llm_p"
    summary = "SayPlan without iterative replanning (the paper's LLM+P ablation)"

    def __init__(self, backend: LlmBackend, options: PlannerOptions | None = None, config: Any = None) -> None:
        super().__init__(backend, replace(options or PlannerOptions(), max_replans=0), config)
