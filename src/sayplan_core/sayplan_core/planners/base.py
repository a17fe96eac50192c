"""What every planner takes and returns, so the CLI, the bench and the ROS node treat them alike."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.session import Budget, CallStats, LlmSession
from sayplan_core.llm.types import LlmBackend
from sayplan_core.options import NoOptions, check, option
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.sim.plan import PlanStep, format_plan


class PlanFailedError(Exception):
    """A planner ends its run with a typed code: `Planner.plan` turns it (like every failure) into the result's
    `failure` and `message`, the one place where planner failures become outcome codes."""

    def __init__(self, code: PlanCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Progress:
    stage: PlanStage
    step: int
    node: str = ""
    replanning_round: int = 0
    tokens_used: int = 0
    message: str = ""


ProgressCallback = Callable[[Progress], None]


@dataclass
class PlannerOptions:
    """What every planner reads; each planner's own options are its `Options` class (see `Planner`)."""

    max_replans: int = option(
        5,
        "replanning rounds after a plan fails verification (SayPlan: 5)",
        minimum=0,
        maximum=50,
        per_goal=True,
        flag="--max-replans",
    )
    max_search_steps: int = option(
        30,
        "semantic-search steps (expand/contract) before a planner gives up",
        minimum=1,
        maximum=1000,
        per_goal=True,
        flag="--max-search-steps",
    )
    temperature: float = option(
        0.0, "sampling temperature", minimum=0.0, maximum=2.0, per_goal=True, flag="--temperature"
    )
    max_answer_tokens: int = option(
        1024, "completion tokens per LLM answer", minimum=16, maximum=100_000, per_goal=True, flag="--max-answer-tokens"
    )
    action_set: str = ""  # the robot's action set (from the goal); empty = the planner's own default
    budget: Budget = field(default_factory=Budget)  # from the node's max_calls, max_tokens and retries

    def validate(self) -> None:
        """Raise ValueError naming the first option out of range."""
        check(self)


@dataclass
class PlanResult:
    planner: str
    instruction: str
    success: bool = False
    message: str = ""
    plan: list[PlanStep] = field(default_factory=list)
    full_plan: list[PlanStep] = field(default_factory=list)
    verified: bool = False
    replanning_rounds: int = 0
    feedback_history: list[str] = field(default_factory=list)
    explored_nodes: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    calls: list[CallStats] = field(default_factory=list)
    failure: PlanCode = PlanCode.NONE
    action_set: str = "sayplan"  # the actions `plan` / `full_plan` are written in
    observed_nodes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    #: the plan was executed one action at a time (lookplangraph, embodiedrag): refused proposals are not replans
    stepwise: bool = False
    progress: list[Progress] = field(default_factory=list)  # every step reported while planning, in order

    @property
    def canceled(self) -> bool:
        return self.failure is PlanCode.CANCELED

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["failure"] = self.failure.label
        out["plan"] = [str(s) for s in self.plan]
        out["full_plan"] = [str(s) for s in self.full_plan]
        out["prompt_tokens"] = self.prompt_tokens
        out["completion_tokens"] = self.completion_tokens
        return out

    @property
    def executed_actions(self) -> int:
        """For a step-wise run: the actions executed before the model ended the task (done not counted)."""
        return sum(1 for s in self.plan if s.action != "done")

    def verdict(self) -> str:
        """One phrase for progress lines: how the run ended, without the plan."""
        if not self.success:
            return f"failed ({self.failure.label})"
        if self.stepwise:
            return (
                f"executed {self.executed_actions} action(s) step by step ({self.replanning_rounds} infeasible "
                "proposal(s) refused), then the model ended the task"
            )
        return f"verified after {self.replanning_rounds} replanning round(s)"

    def summary(self) -> str:
        if not self.success:
            return f"{self.planner}: no verified plan: {self.message}"
        plan = format_plan(self.full_plan) if self.full_plan else "(no actions)"
        answer = f" | answer: {', '.join(self.answer)}" if self.answer else ""
        return f"{self.planner}: {self.verdict()}: {plan}{answer}"


@dataclass
class PlanJob:
    """Everything one planning run works with; planners read it and fill in `result`."""

    graph: SceneGraph
    instruction: str
    session: LlmSession
    result: PlanResult
    progress: ProgressCallback
    context: str = ""  # what went wrong so far (an execution failure), shown to the model as feedback

    def parts(self) -> tuple[SceneGraph, str, LlmSession, PlanResult, ProgressCallback]:
        return self.graph, self.instruction, self.session, self.result, self.progress


class Planner(ABC):
    """A planner plugin: registered under its `name` in the `sayplan.planners` entry-point group.

    `Options` is the planner's own options dataclass (`sayplan_core.options.option` fields); the planner node
    declares them as `<name>.<field>` parameters, the CLI as flags, the bench records them in every row.
    """

    name = "planner"
    #: One line that says what the planner does (the reference docs and `sayplan plugins` show it).
    summary = ""
    Options: type = NoOptions
    #: The action sets this planner can write plans in; a request for another is refused, not ignored.
    action_sets: tuple[str, ...] = ("sayplan",)

    def __init__(self, backend: LlmBackend, options: PlannerOptions | None = None, config: Any = None) -> None:
        self.backend = backend
        self.options = options or PlannerOptions()
        self.config: Any = self.Options() if config is None else config
        if not isinstance(self.config, self.Options):
            raise TypeError(f"the {self.name} planner takes {self.Options.__name__}, not {type(self.config).__name__}")

    def supports(self, action_set: str) -> bool:
        """True for the planner's own sets and for bundled sets that are subsets of one (a robot that lacks
        some skills, like Spot without turn_on). Never reads a file: the name may come from a message."""
        from sayplan_core.sim.action_set import builtin_action_sets, load_action_set

        if action_set in self.action_sets:
            return True
        if action_set not in builtin_action_sets():
            return False
        wanted = set(load_action_set(action_set).names())
        return any(wanted <= set(load_action_set(own).names()) for own in self.action_sets)

    @property
    def action_set(self) -> str:
        """The action set plans are written in: the requested one, else this planner's default."""
        return self.options.action_set or self.action_sets[0]

    def new_session(self, should_cancel: Callable[[], bool] | None = None) -> LlmSession:
        return LlmSession(
            self.backend,
            budget=self.options.budget,
            temperature=self.options.temperature,
            max_answer_tokens=self.options.max_answer_tokens,
            should_cancel=should_cancel or (lambda: False),
        )

    def plan(
        self,
        graph: SceneGraph,
        instruction: str,
        on_progress: ProgressCallback | None = None,
        should_cancel: Callable[[], bool] | None = None,
        context: str = "",
    ) -> PlanResult:
        """Plan on `graph` (never modified). Always returns a result; failures are in `message`.

        context: what went wrong so far (an execution failure), shown to the model as feedback.
        """
        from sayplan_core.llm.session import BudgetExhaustedError, PlanCanceledError
        from sayplan_core.llm.types import LlmFatalError
        from sayplan_core.retrieval.embedders import EmbeddingError

        start = time.perf_counter()
        session = self.new_session(should_cancel)
        result = PlanResult(self.name, instruction, action_set=self.action_set)
        if not self.supports(self.action_set):
            result.failure = PlanCode.UNSUPPORTED_ACTION_SET
            result.message = (
                f"the {self.name} planner writes plans in the action set(s) {', '.join(self.action_sets)}, "
                f"not '{self.action_set}'"
            )
            return result

        def progress(step: Progress) -> None:
            result.progress.append(step)
            if on_progress is not None:
                on_progress(step)

        try:
            self.backend.start_task(instruction)
            self._run(PlanJob(graph, instruction, session, result, progress, context))
        except BudgetExhaustedError as exc:
            result.success, result.message = False, str(exc)
            result.failure = PlanCode.BACKEND_ERROR if exc.backend_failure else PlanCode.BUDGET_EXHAUSTED
        except PlanCanceledError:
            result.success, result.message, result.failure = False, "canceled", PlanCode.CANCELED
        except LlmFatalError as exc:
            result.success, result.message, result.failure = False, f"LLM backend error: {exc}", PlanCode.BACKEND_ERROR
        except EmbeddingError as exc:
            result.success, result.message, result.failure = False, f"embedding error: {exc}", PlanCode.BACKEND_ERROR
        except PlanFailedError as exc:
            result.success, result.message, result.failure = False, str(exc), exc.code
        if not result.success and result.failure is PlanCode.NONE:
            result.failure = PlanCode.REPLANS_EXHAUSTED if result.feedback_history else PlanCode.SEARCH_FAILED
        result.calls = list(session.calls)
        result.elapsed_s = time.perf_counter() - start
        return result

    @abstractmethod
    def _run(self, job: PlanJob) -> None: ...
