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
from sayplan_core.sim.plan import PlanStep, format_plan


@dataclass
class Progress:
    stage: str  # search | plan | verify | replan | done
    step: int
    node: str = ""
    replanning_round: int = 0
    tokens_used: int = 0
    message: str = ""


ProgressCallback = Callable[[Progress], None]


@dataclass
class PlannerOptions:
    max_replans: int = 5  # SayPlan's limit
    max_search_steps: int = 30
    action_set: str = "sayplan"
    budget: Budget = field(default_factory=Budget)
    temperature: float = 0.0
    max_answer_tokens: int = 1024
    # embodiedrag / abstract: sentence embeddings (local MiniLM by default) and retrieval
    embedder: str = "local"
    retrieval_top_k: int = 3
    retrieval_threshold: float = 0.45
    vector_store: str = "faiss"
    # abstract: candidate plans per command and the step relevance cut-off (Kwon et al.)
    candidate_plans: int = 3
    step_threshold: float = 0.5

    def validate(self) -> None:
        """Raise ValueError naming the first option out of range."""
        checks = [
            (self.max_replans >= 0, f"max_replans must be >= 0, got {self.max_replans}"),
            (self.retrieval_top_k >= 1, f"retrieval_top_k must be >= 1, got {self.retrieval_top_k}"),
            (
                -1.0 <= self.retrieval_threshold <= 1.0,
                f"retrieval_threshold must be in -1..1, got {self.retrieval_threshold}",
            ),
            (
                self.vector_store in ("faiss", "numpy"),
                f"vector_store must be faiss or numpy, got '{self.vector_store}'",
            ),
            (1 <= self.candidate_plans <= 10, f"candidate_plans must be in 1..10, got {self.candidate_plans}"),
            (-1.0 <= self.step_threshold <= 1.0, f"step_threshold must be in -1..1, got {self.step_threshold}"),
            (
                self.embedder == "local" or self.embedder.partition(":")[0] in ("local", "openai", "ollama"),
                f"embedder must be local, openai:<model> or ollama:<model>, got '{self.embedder}'",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


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
    cancelled: bool = False
    failure: str = ""  # "" | backend | budget | replans | search | not_executable | cancelled
    action_set: str = "sayplan"  # the actions `plan` / `full_plan` are written in
    observed_nodes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    #: the plan was executed one action at a time (lookplangraph, embodiedrag): refused proposals are not replans
    stepwise: bool = False

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["plan"] = [str(s) for s in self.plan]
        out["full_plan"] = [str(s) for s in self.full_plan]
        out["prompt_tokens"] = self.prompt_tokens
        out["completion_tokens"] = self.completion_tokens
        return out

    def summary(self) -> str:
        if not self.success:
            return f"{self.planner}: no verified plan: {self.message}"
        plan = format_plan(self.full_plan) if self.full_plan else "(no actions)"
        answer = f" | answer: {', '.join(self.answer)}" if self.answer else ""
        if self.stepwise:
            executed = sum(1 for s in self.plan if s.action != "done")
            return (
                f"{self.planner}: executed {executed} action(s) step by step ({self.replanning_rounds} infeasible "
                f"proposal(s) refused), then the model ended the task: {plan}{answer}"
            )
        return f"{self.planner}: verified after {self.replanning_rounds} replanning round(s): {plan}{answer}"


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
    name = "planner"

    def __init__(self, backend: LlmBackend, options: PlannerOptions | None = None) -> None:
        self.backend = backend
        self.options = options or PlannerOptions()

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
        from sayplan_core.llm.session import BudgetExhaustedError, PlanCancelledError
        from sayplan_core.llm.types import LlmFatalError
        from sayplan_core.retrieval.embedders import EmbeddingError

        start = time.perf_counter()
        session = self.new_session(should_cancel)
        result = PlanResult(self.name, instruction)
        try:
            self._run(PlanJob(graph, instruction, session, result, on_progress or (lambda _: None), context))
        except BudgetExhaustedError as exc:
            result.success, result.message = False, str(exc)
            result.failure = "backend" if exc.backend_failure else "budget"
        except PlanCancelledError:
            result.success, result.cancelled, result.message, result.failure = False, True, "cancelled", "cancelled"
        except LlmFatalError as exc:
            result.success, result.message, result.failure = False, f"LLM backend error: {exc}", "backend"
        except EmbeddingError as exc:
            result.success, result.message, result.failure = False, f"embedding error: {exc}", "backend"
        if not result.success and not result.failure:
            result.failure = "replans" if result.feedback_history else "search"
        result.calls = list(session.calls)
        result.elapsed_s = time.perf_counter() - start
        return result

    @abstractmethod
    def _run(self, job: PlanJob) -> None: ...
