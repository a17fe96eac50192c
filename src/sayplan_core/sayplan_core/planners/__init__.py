"""LLM planners over 3D scene graphs, selectable by name; all return a PlanResult."""

from __future__ import annotations

from sayplan_core.llm.types import LlmBackend
from sayplan_core.planners.abstract import AbstractCommandPlanner
from sayplan_core.planners.base import Planner, PlannerOptions, PlanResult, Progress
from sayplan_core.planners.embodiedrag import EmbodiedRagPlanner, EmbodiedRagStrictPlanner
from sayplan_core.planners.llm_as_planner import LlmAsPlanner
from sayplan_core.planners.lookplangraph import LookPlanGraphPlanner
from sayplan_core.planners.ltl import LtlPlanner
from sayplan_core.planners.sayplan import LlmPPlanner, SayPlanPlanner
from sayplan_core.planners.sayplan_lite import SayPlanLitePlanner

PLANNERS: dict[str, type[Planner]] = {
    "sayplan": SayPlanPlanner,
    "sayplan_lite": SayPlanLitePlanner,
    "llm_p": LlmPPlanner,
    "llm_as_planner": LlmAsPlanner,
    "lookplangraph": LookPlanGraphPlanner,
    "embodiedrag": EmbodiedRagPlanner,
    "embodiedrag_strict": EmbodiedRagStrictPlanner,
    "abstract": AbstractCommandPlanner,
    "ltl": LtlPlanner,
}


def make_planner(name: str, backend: LlmBackend, options: PlannerOptions | None = None) -> Planner:
    try:
        cls = PLANNERS[name]
    except KeyError:
        raise ValueError(f"unknown planner '{name}' (available: {', '.join(PLANNERS)})") from None
    if options is not None:
        options.validate()  # ValueError naming the option, before anything runs
    return cls(backend, options)


__all__ = ["PLANNERS", "PlanResult", "Planner", "PlannerOptions", "Progress", "make_planner"]
