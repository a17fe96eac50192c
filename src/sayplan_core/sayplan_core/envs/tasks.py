"""Task sets: instructions with their family, environment, setup and machine-checkable goal.

A task file is YAML or JSON: `tasks:` a list of {id, env, family, instruction, goal, setup, reference_plan,
note}. `family` is SayPlan's four or any name of your own (letters, digits, _ and -). `env` is a bundled
environment or a graph file, relative to the task file. `goal` holds `predicates`, a `search` answer, or a
goal `graph` (a native graph file, relative to the task file: a GRASIF goal scene as `sayplan env import`
writes it), or is null with a `note` saying why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.graph import native_format
from sayplan_core.graph.model import GraphError, SceneGraph, with_state
from sayplan_core.graph.native_format import read_text
from sayplan_core.sim.goals import GoalPredicate, goal_from_dict
from sayplan_core.sim.plan import PlanStep, parse_plan

FAMILIES = ("simple_search", "complex_search", "simple_planning", "long_horizon")  # SayPlan's; others may be named
SEARCH_FAMILIES = ("simple_search", "complex_search")
_FAMILY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: The largest task file read.
MAX_TASK_FILE_BYTES = 64 * 1024 * 1024
#: Problems listed in one task-file error before "and N more".
MAX_TASK_PROBLEMS = 20


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


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _search_goal(raw: Any, fail: Callable[[str], None]) -> SearchGoal | None:
    if not isinstance(raw, Mapping):
        fail(f"goal 'search' must be a mapping ({{any: [...], all: [...], count: N}} or {{none: true}}), got {raw!r}")
        return None
    ok = True
    unknown = sorted(str(k) for k in set(raw) - {"any", "all", "none", "count"})
    if unknown:
        fail(f"goal 'search' has unknown field(s) {', '.join(unknown)} (any, all, none, count)")
        ok = False
    for key in ("any", "all"):
        if key in raw and not _names(raw[key]):
            fail(f"goal 'search.{key}' must be a list of node ids, got {raw[key]!r}")
            ok = False
    if "none" in raw and not isinstance(raw["none"], bool):
        fail(f"goal 'search.none' must be true or false, got {raw['none']!r}")
        ok = False
    count = raw.get("count", 1)
    if not _is_int(count) or count < 1:
        fail(f"goal 'search.count' must be a whole number >= 1, got {count!r}")
        ok = False
    if not ok:
        return None
    search = SearchGoal(tuple(raw.get("any", ())), tuple(raw.get("all", ())), raw.get("none", False), count)
    if search.none and search.nodes():
        fail("goal 'search' with none: true lists no nodes (the graph holds no answer)")
    elif not search.none and not search.nodes():
        fail("goal 'search' needs 'any' or 'all' nodes, or none: true")
    elif search.any and count > len(search.any):
        fail(f"goal 'search.count' is {count}, more than the {len(search.any)} node(s) in 'any'")
    elif "count" in raw and not search.any:
        fail("goal 'search.count' counts 'any' nodes, and there are none")
    else:
        return search
    return None


def _setup(raw: Any, fail: Callable[[str], None]) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        fail(f"'setup' must be a list of changes ({{kind: state, node, states}} or {{kind: hold, node}}), got {raw!r}")
        return ()
    for index, change in enumerate(raw):
        where = f"setup[{index}]"
        if not isinstance(change, Mapping):
            fail(f"{where} must be a mapping with 'kind' and 'node', got {change!r}")
            continue
        kind = change.get("kind")
        if kind not in ("state", "hold"):
            fail(f"{where}: kind must be state or hold, got {kind!r}")
            continue
        if not isinstance(change.get("node"), str) or not change["node"]:
            fail(f"{where}: 'node' must be a node id, got {change.get('node')!r}")
        allowed = {"kind", "node", "states"} if kind == "state" else {"kind", "node"}
        unknown = sorted(str(k) for k in set(change) - allowed)
        if unknown:
            fail(f"{where}: unknown field(s) {', '.join(unknown)} for kind {kind}")
        if kind == "state" and (not _names(change.get("states")) or not change["states"]):
            fail(f"{where}: 'states' must be a non-empty list of states, got {change.get('states')!r}")
    return tuple(raw)


def _task_from_dict(raw: Any, index: int, base: Path | None, problems: list[str]) -> Task | None:
    """The task at tasks[index], or None with what is wrong with it (every field) added to `problems`."""
    if not isinstance(raw, Mapping):
        problems.append(f"tasks[{index}] must be a mapping, got {raw!r}")
        return None
    raw_id = raw.get("id", f"#{index}")
    task_id = str(raw_id)
    found: list[str] = []

    def fail(message: str) -> None:
        found.append(f"task {task_id}: {message}")

    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not task_id.strip():
        fail(f"'id' must be a string, got {raw_id!r} (tasks[{index}])")
    for key in ("env", "family", "instruction"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            fail(f"missing '{key}'" if raw.get(key) is None else f"'{key}' must be a string, got {raw[key]!r}")
    if isinstance(raw.get("family"), str) and raw["family"] and not _FAMILY.match(raw["family"]):
        fail(
            f"family '{raw['family']}' must be a name (letters, digits, _ and -), "
            f"such as one of SayPlan's: {', '.join(FAMILIES)}"
        )
    if raw.get("note") is not None and not isinstance(raw["note"], str):
        fail(f"'note' must be a string, got {raw['note']!r}")
    goal = raw.get("goal")
    predicates: tuple[GoalPredicate, ...] = ()
    search = None
    goal_graph = None
    if isinstance(goal, Mapping) and len({"predicates", "search", "graph"} & set(goal)) > 1:
        fail("a goal holds one of 'predicates', 'search' or 'graph'")
    elif isinstance(goal, Mapping) and set(goal) - {"predicates", "search", "graph"}:
        unknown = sorted(str(k) for k in set(goal) - {"predicates", "search", "graph"})
        fail(f"goal has unknown field(s) {', '.join(unknown)} (it holds 'predicates', 'search' or 'graph')")
    elif isinstance(goal, Mapping) and "graph" in goal:
        if not isinstance(goal["graph"], str) or not goal["graph"]:
            fail(f"goal 'graph' must name a graph file, got {goal['graph']!r}")
        else:
            goal_graph = _relative(goal["graph"], base)
            try:  # read now, not after the planner has run (and the LLM has been paid)
                native_format.load(goal_graph, require_agent=False)
            except GraphError as exc:
                fail(f"goal 'graph': {exc}")
    elif isinstance(goal, Mapping) and "predicates" in goal:
        items = goal["predicates"]
        if not isinstance(items, list) or not items:
            fail(f"goal 'predicates' must be a non-empty list of predicates, got {items!r}")
        else:
            parsed: list[GoalPredicate] = []
            for number, item in enumerate(items):
                try:
                    parsed.append(goal_from_dict(item))
                except (ValueError, TypeError) as exc:
                    fail(f"goal 'predicates[{number}]': {exc}")
            predicates = tuple(parsed)
    elif isinstance(goal, Mapping) and "search" in goal:
        search = _search_goal(goal["search"], fail)
    elif goal is not None:
        fail(f"goal must hold 'predicates', 'search' or 'graph', or be null; got {goal!r}")
    elif not raw.get("note"):
        fail("a task without a goal needs a 'note' saying why")
    setup = _setup(raw.get("setup"), fail)
    plan: tuple[PlanStep, ...] = ()
    if raw.get("reference_plan"):
        try:
            plan = tuple(parse_plan(raw["reference_plan"]))
        except (ValueError, TypeError) as exc:
            fail(f"'reference_plan': {exc}")
    if found:
        problems.extend(found)
        return None
    return Task(
        id=task_id,
        env=_relative(raw["env"], base),
        family=raw["family"],
        instruction=raw["instruction"],
        predicates=predicates,
        search=search,
        setup=setup,
        reference_plan=plan,
        note=str(raw.get("note") or ""),
        goal_graph=goal_graph,
    )


def load_tasks(path: str | Path | None = None) -> list[Task]:
    """The bundled SayPlan task set, or a YAML/JSON task file. Every task is checked in full (fields, goal
    graphs read) before any is returned; the error lists every problem, up to MAX_TASK_PROBLEMS."""
    if path is None:
        from sayplan_core.envs import tasks_path

        path = tasks_path()
    path = Path(path)
    try:
        data = files.load_yaml(read_text(path, "task file", MAX_TASK_FILE_BYTES))  # aliases refused
    except GraphError as exc:
        raise TaskFileError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: invalid YAML/JSON: {str(exc).splitlines()[0]}") from exc
    except RecursionError:
        raise TaskFileError(f"{path}: nested too deeply to be a task file") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise TaskFileError(f"{path}: expected a 'tasks' list")
    problems: list[str] = []
    tasks: list[Task] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["tasks"]):
        task = _task_from_dict(raw, index, path.parent, problems)
        if task is None:
            continue
        if task.id in seen:
            problems.append(f"duplicate task id '{task.id}'")
        seen.add(task.id)
        tasks.append(task)
    if problems:
        shown = "; ".join(problems[:MAX_TASK_PROBLEMS])
        more = f"; and {len(problems) - MAX_TASK_PROBLEMS} more" if len(problems) > MAX_TASK_PROBLEMS else ""
        count = f"{len(problems)} problems: " if len(problems) > 1 else ""
        raise TaskFileError(f"{path}: {count}{shown}{more}")
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
            out.set_states(node, states)
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


def sample_per_family(tasks: Sequence[Any], count: int, seed: int) -> list[Any]:
    """`count` tasks of each family (all of a smaller one), drawn with `random.Random(seed)` from each family's
    tasks in file order, then kept in file order: the same seed draws the same subset on every machine."""
    import random

    families: dict[str, list[Any]] = {}
    for task in tasks:
        families.setdefault(task.family, []).append(task)
    rng = random.Random(seed)
    chosen: set[int] = set()
    for family in sorted(families):
        members = families[family]
        chosen.update(id(t) for t in (members if len(members) <= count else rng.sample(members, count)))
    return [t for t in tasks if id(t) in chosen]
