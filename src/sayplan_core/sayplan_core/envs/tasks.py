"""Task sets: instructions with their family, environment, setup and machine-checkable goal.

A task file is YAML or JSON: `tasks:` a list of {id, env, family, instruction, goal, setup, reference_plan,
note}. `family` is SayPlan's four or any name of your own (letters, digits, _ and -). `env` is a bundled
environment or a graph file, relative to the task file. `goal` holds `predicates`, a `search` answer, or a
goal `graph` (a native graph file, relative to the task file: a GRASIF goal scene as `sayplan env import`
writes it), or is null with a `note` saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sayplan_core.graph.model import GraphError, SceneGraph, with_state
from sayplan_core.graph.native_format import read_text
from sayplan_core.sim.goals import GoalPredicate, goal_from_dict
from sayplan_core.sim.plan import PlanStep, parse_plan

FAMILIES = ("simple_search", "complex_search", "simple_planning", "long_horizon")  # SayPlan's; others may be named
SEARCH_FAMILIES = ("simple_search", "complex_search")
_FAMILY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: The largest task file read.
MAX_TASK_FILE_BYTES = 64 * 1024 * 1024


class TaskFileError(ValueError):
    """A task file is malformed; the message names the task id."""


@dataclass(frozen=True)
class SearchGoal:
    """Which nodes answer a search query; `none` means the graph holds no answer."""

    any: tuple[str, ...] = ()
    all: tuple[str, ...] = ()
    none: bool = False
    count: int = 1

    def nodes(self) -> list[str]:
        return [*self.any, *self.all]

    def satisfied_by(self, found: Iterable[str]) -> bool:
        """`found` is the planner's answer: the node ids it reports (empty = "nothing found")."""
        found_set = set(found)
        if self.none:
            return not found_set
        if self.all and not set(self.all) <= found_set:
            return False
        return not (self.any and len(found_set & set(self.any)) < self.count)


@dataclass(frozen=True)
class Task:
    id: str
    env: str
    family: str
    instruction: str
    predicates: tuple[GoalPredicate, ...] = ()
    search: SearchGoal | None = None
    setup: tuple[Mapping[str, Any], ...] = ()
    reference_plan: tuple[PlanStep, ...] = ()
    note: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: a goal graph file (native), scored with sim.goals.score_against_goal_graph
    goal_graph: str | None = None

    @property
    def checkable(self) -> bool:
        return bool(self.predicates) or self.search is not None or self.goal_graph is not None

    @property
    def is_search(self) -> bool:
        return self.family in SEARCH_FAMILIES


def _relative(value: str, base: Path | None) -> str:
    """A path in a task file, relative to the file's folder; bundled env names stay as they are."""
    from sayplan_core.envs import BUNDLED_ENVS

    if base is None or value in BUNDLED_ENVS or Path(value).is_absolute():
        return value
    return str(base / value)


def _task_from_dict(raw: Any, index: int, base: Path | None = None) -> Task:
    if not isinstance(raw, Mapping):
        raise TaskFileError(f"tasks[{index}] must be a mapping")
    task_id = str(raw.get("id", f"#{index}"))
    for key in ("env", "family", "instruction"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise TaskFileError(f"task {task_id}: missing '{key}'")
    if not _FAMILY.match(raw["family"]):
        raise TaskFileError(
            f"task {task_id}: family '{raw['family']}' must be a name (letters, digits, _ and -), "
            f"such as one of SayPlan's: {', '.join(FAMILIES)}"
        )
    goal = raw.get("goal")
    predicates: tuple[GoalPredicate, ...] = ()
    search = None
    goal_graph = None
    try:
        if isinstance(goal, Mapping) and len({"predicates", "search", "graph"} & set(goal)) > 1:
            raise TaskFileError(f"task {task_id}: a goal holds one of 'predicates', 'search' or 'graph'")
        if isinstance(goal, Mapping) and "graph" in goal:
            if not isinstance(goal["graph"], str) or not goal["graph"]:
                raise TaskFileError(f"task {task_id}: goal 'graph' must name a graph file")
            goal_graph = _relative(goal["graph"], base)
        elif isinstance(goal, Mapping) and "predicates" in goal:
            predicates = tuple(goal_from_dict(g) for g in goal["predicates"])
        elif isinstance(goal, Mapping) and "search" in goal:
            s = goal["search"]
            search = SearchGoal(
                any=tuple(s.get("any", ())),
                all=tuple(s.get("all", ())),
                none=bool(s.get("none", False)),
                count=int(s.get("count", 1)),
            )
        elif goal is not None:
            raise TaskFileError(f"task {task_id}: goal must hold 'predicates', 'search' or 'graph', or be null")
        plan = tuple(parse_plan(raw["reference_plan"])) if raw.get("reference_plan") else ()
    except (ValueError, TypeError) as exc:
        if isinstance(exc, TaskFileError):
            raise
        raise TaskFileError(f"task {task_id}: {exc}") from exc
    if goal is None and not raw.get("note"):
        raise TaskFileError(f"task {task_id}: a task without a goal needs a 'note' saying why")
    return Task(
        id=task_id,
        env=_relative(raw["env"], base),
        family=raw["family"],
        instruction=raw["instruction"],
        predicates=predicates,
        search=search,
        setup=tuple(raw.get("setup") or ()),
        reference_plan=plan,
        note=str(raw.get("note", "")),
        goal_graph=goal_graph,
    )


def load_tasks(path: str | Path | None = None) -> list[Task]:
    """The bundled SayPlan task set, or a YAML/JSON task file."""
    if path is None:
        from sayplan_core.envs import tasks_path

        path = tasks_path()
    path = Path(path)
    try:
        data = yaml.safe_load(read_text(path, "task file", MAX_TASK_FILE_BYTES))
    except GraphError as exc:
        raise TaskFileError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: invalid YAML/JSON: {str(exc).splitlines()[0]}") from exc
    except RecursionError:
        raise TaskFileError(f"{path}: nested too deeply to be a task file") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise TaskFileError(f"{path}: expected a 'tasks' list")
    tasks = [_task_from_dict(raw, i, path.parent) for i, raw in enumerate(data["tasks"])]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise TaskFileError(f"{path}: duplicate task id '{task.id}'")
        seen.add(task.id)
    return tasks


def apply_setup(graph: SceneGraph, task: Task) -> SceneGraph:
    """A copy of the env with the task's initial changes (the input is not touched)."""
    if not task.setup:
        return graph
    out = graph.copy()
    for change in task.setup:
        kind, node = change.get("kind"), change.get("node")
        if not isinstance(node, str) or node not in out:
            raise GraphError(f"task {task.id}: setup names node '{node}', which is not in {graph.name}", str(node))
        if kind == "state":
            states: list[str] = list(out.nodes[node].states)
            for state in change.get("states", []):
                states = with_state(states, str(state))
            out.nodes[node].states = states
        elif kind == "hold":
            agent = out.agent_id
            if agent is None:
                raise GraphError(f"task {task.id}: setup 'hold' needs an agent node")
            out.set_parent(node, agent, "inside_hand")
        else:
            raise GraphError(f"task {task.id}: unknown setup kind '{kind}' (state or hold)")
    return out


def check_task_nodes(graph: SceneGraph, task: Task) -> list[str]:
    """Node ids a task names that the graph lacks (empty when the task fits the env)."""
    named: list[str] = []
    for goal in task.predicates:
        named.extend(goal.nodes())
        named.extend(t for t in goal.target.split("|") if t)
    if task.search is not None:
        named.extend(task.search.nodes())
    named.extend(str(c.get("node")) for c in task.setup)
    return sorted({n for n in named if n not in graph})
