"""LLM planners over 3D scene graphs, selectable by id; all return a PlanResult.

The planners installed are plugins (`sayplan_core.plugins`, entry-point group `sayplan.planners`);
`PLANNERS` is a read-only view of them, loaded on first use.
"""

from __future__ import annotations

import inspect
from typing import Any

from sayplan_core.llm.types import LlmBackend
from sayplan_core.planners.base import Planner, PlannerOptions, PlanResult, Progress
from sayplan_core.plugins import PLANNER_GROUP, Registry, options_problem


def _accept_planner(name: str, plugin: Any) -> str:
    if not (isinstance(plugin, type) and issubclass(plugin, Planner)):
        return "not a Planner subclass"
    if plugin.name != name:
        return f"its name is '{plugin.name}', not the entry point's '{name}'"
    if inspect.isabstract(plugin):
        return f"its class is abstract (it does not implement {', '.join(sorted(plugin.__abstractmethods__))})"
    return options_problem(plugin.Options)


PLANNERS: Registry[type[Planner]] = Registry(PLANNER_GROUP, _accept_planner)


def make_planner(name: str, backend: LlmBackend, options: PlannerOptions | None = None, config: Any = None) -> Planner:
    """The planner `name` with the common options and its own `config` (its `Options`; None: defaults).

    ValueError names an unknown planner or the first option out of range, before anything runs."""
    from sayplan_core.options import check

    try:
        cls = PLANNERS[name]
    except KeyError:
        raise ValueError(f"unknown planner '{name[:80]}' (available: {', '.join(PLANNERS)})") from None
    if options is not None:
        options.validate()
    if config is not None:
        if not isinstance(config, cls.Options):
            raise ValueError(f"the {name} planner takes {cls.Options.__name__} options, not {type(config).__name__}")
        check(config)
    return cls(backend, options, config)


__all__ = ["PLANNERS", "PlanResult", "Planner", "PlannerOptions", "Progress", "make_planner"]
