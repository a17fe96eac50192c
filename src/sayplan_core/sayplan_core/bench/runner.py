"""Run a task set with several planners and score every run.

Results are appended to results.jsonl one run at a time, so an interrupted bench
resumes where it stopped; a resume runs again the runs that raised, each new row
taking the place of its error row. Every row carries the settings it ran with (backend, model,
planner options); a resume with other settings is refused, so one report never mixes
them. A run that raises (a bad graph, a missing transcript, a bug) becomes an error
row with the exception's text and the bench goes on. Each run's LLM exchange can be
recorded to, or replayed from, a transcript named <planner>__<task>.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import Task, apply_setup
from sayplan_core.folder_lock import folder_lock
from sayplan_core.graph import native_format
from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.replay import RecordingBackend, ReplayBackend
from sayplan_core.llm.session import CallStats
from sayplan_core.llm.types import LlmBackend
from sayplan_core.options import defaults_of, values_of
from sayplan_core.planners import PlannerOptions, PlanResult, make_planner
from sayplan_core.planners.base import Progress
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.goals import changed_nodes, score_against_goal_graph, score_against_goals
from sayplan_core.sim.simulator import verify_plan

RESULTS_FILE = "results.jsonl"


class BenchError(ValueError):
    """The bench cannot start (bad settings, results written with other settings); nothing was touched."""


@dataclass
class BenchConfig:
    planners: list[str]
    out_dir: Path
    options: PlannerOptions
    #: each planner's own options (its `Options`); a planner missing here runs with its defaults
    configs: Mapping[str, Any] = field(default_factory=dict)
    record_dir: Path | None = None
    replay_dir: Path | None = None
    resume: bool = True
    #: what the rows were produced with (backend, model, options); a resume must match it
    settings: Mapping[str, Any] = field(default_factory=dict)


def options_settings(options: PlannerOptions, configs: Mapping[str, Any]) -> dict[str, Any]:
    """Every option a run reads, as plain data for a row: the common ones, the budget, and each planner's own
    (`<planner>.<field>`). Derived from the option fields, so a new option is recorded without an edit here."""
    budget = options.budget
    row = values_of(options)
    row.update(max_calls=budget.max_calls, max_tokens=budget.max_tokens, retries=budget.max_transient_retries)
    for name in sorted(configs):
        row.update(values_of(configs[name], f"{name}."))
    return row


def transcript_name(planner: str, task_id: str) -> str:
    return f"{planner}__{task_id}.json"


def score_run(graph: SceneGraph, task: Task, result: PlanResult) -> dict[str, Any]:
    """The paper metrics for one run (None where a metric does not apply)."""
    row: dict[str, Any] = {
        "task": task.id,
        "env": task.env,
        "family": task.family,
        "planner": result.planner,
        "instruction": task.instruction,
        "executable": result.verified,
        # step-wise planners: the model ended the task after this many executed actions (None: a whole plan)
        "executed_actions": result.executed_actions if result.stepwise else None,
        "failure": result.failure.label,
        "message": result.message,
        "replanning_rounds": result.replanning_rounds,
        "llm_calls": len(result.calls),
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "elapsed_s": round(result.elapsed_s, 3),
        "plan_length": len(result.full_plan),
        "explored": result.explored_nodes,
        "answer": result.answer,
        "plan": [str(s) for s in result.full_plan],
        "calls": [call_row(c) for c in result.calls],
        "search_success": None,
        "correct": None,
        "precision": None,
        "nrr": None,
    }
    if task.search is not None:
        row["search_success"] = task.search.satisfied_by(result.answer)
    goal_graph = load_goal_graph(task)
    if task.predicates or goal_graph is not None:
        if goal_graph is not None:
            important = len(changed_nodes(graph, goal_graph))
        else:
            important = len({n for g in task.predicates for n in g.nodes()})
        row["nrr"] = round(len(result.observed_nodes) / important, 2) if important else None
        if result.verified:
            # pose by pose where the set's navigate action can name poses (sayplan, spot); LookPlanGraph's rooms only
            strict = load_action_set(result.action_set).walks_through_poses() is None
            final = verify_plan(graph, result.full_plan, result.action_set, strict_navigation=strict).final_graph()
            if goal_graph is not None:
                score = score_against_goal_graph(graph, final, goal_graph)
            else:
                score = score_against_goals(graph, final, task.predicates)
            row["correct"], row["precision"] = score.success, round(score.precision, 3)
            row["changed_nodes"] = sorted(changed_nodes(graph, final))
        else:
            row["correct"], row["precision"] = False, 0.0
    return row


def progress_line(p: Progress) -> str:
    """One step of a run as the bench prints it while the run goes on (a run with a CPU model takes minutes)."""
    where = f" {p.node}" if p.node else ""
    message = p.message if len(p.message) <= 160 else p.message[:157] + "..."
    return f"{p.stage}{where} (round {p.replanning_round}, {p.tokens_used} tokens): {message}"


def call_row(call: CallStats) -> dict[str, Any]:
    """One LLM call of a run: what it was for, its tokens and time; where the backend measures them (the embedded
    model) also the prompt tokens it reused and its seconds reading and writing."""
    row: dict[str, Any] = {
        "stage": call.stage,
        "prompt": call.prompt_tokens,
        "completion": call.completion_tokens,
        "latency_s": call.latency_s,
        "outcome": call.outcome,
    }
    if call.prompt_s or call.decode_s:
        row.update(cached=call.cached_tokens, prompt_s=round(call.prompt_s, 3), decode_s=round(call.decode_s, 3))
    return row


def load_goal_graph(task: Task) -> SceneGraph | None:
    return None if task.goal_graph is None else native_format.load(task.goal_graph, require_agent=False)


def error_row(task: Task, planner: str, exc: BaseException) -> dict[str, Any]:
    """A run that raised: counted as a failed run of its kind, with the exception's text."""
    planning = bool(task.predicates) or task.goal_graph is not None
    return {
        "task": task.id,
        "env": task.env,
        "family": task.family,
        "planner": planner,
        "instruction": task.instruction,
        "executable": False,
        "executed_actions": None,
        "failure": "error",
        "error": f"{type(exc).__name__}: {exc}",
        "message": f"the run raised {type(exc).__name__}: {exc}",
        "replanning_rounds": 0,
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "elapsed_s": 0.0,
        "plan_length": 0,
        "explored": [],
        "answer": [],
        "plan": [],
        "calls": [],
        "search_success": False if task.search is not None else None,
        "correct": False if planning else None,
        "precision": 0.0 if planning else None,
        "nrr": None,
    }


def load_results(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / RESULTS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def repair_results(out_dir: Path) -> int:
    """Drop a partial last line left by a run killed mid-write; returns the lines dropped."""
    path = out_dir / RESULTS_FILE
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        kept.append(line)
    if dropped:
        path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    return dropped


def check_resume(config: BenchConfig) -> set[tuple[str, str]]:
    """The (planner, task) runs already done with these settings; refuses results made with other ones.
    A run whose row is an error is not done: its cause (a missing transcript, a broken graph) may be fixed now."""
    rows = _read_rows(config.out_dir)
    off = _off_values(config)
    other = [
        r
        for r in rows
        if r.get("settings") is None or _bearing(_as_run(r["settings"], off), r) != _bearing(config.settings, r)
    ]
    if other:
        theirs = other[0].get("settings")
        described = (
            "no recorded settings (an older bench)"
            if theirs is None
            else _describe(_bearing(_as_run(theirs, off), other[0]), _bearing(config.settings, other[0]))
        )
        raise BenchError(
            f"{config.out_dir / RESULTS_FILE} holds {len(other)} run(s) made with other settings ({described}); "
            "resume with the same settings, or use --fresh or another --out"
        )
    return {(r["planner"], r["task"]) for r in rows if not r.get("error")}


def _raised_earlier(out_dir: Path) -> dict[tuple[str, str], str]:
    """The (planner, task) runs whose rows are errors, with the error's text."""
    return {(r["planner"], r["task"]): str(r["error"]) for r in _read_rows(out_dir) if r.get("error")}


def _replace_error_row(out_dir: Path, key: tuple[str, str], row: Mapping[str, Any]) -> None:
    """Put `row` where the run's error row was (later error rows of the run go), through a temporary file so an
    interrupted bench leaves the old file whole."""
    path = out_dir / RESULTS_FILE
    lines: list[str] = []
    placed = False
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            old = json.loads(line)
        except json.JSONDecodeError:
            old = None
        if isinstance(old, dict) and old.get("error") and (old.get("planner"), old.get("task")) == key:
            if not placed:
                lines.append(json.dumps(row))
                placed = True
            continue
        lines.append(line)
    if not placed:
        lines.append(json.dumps(row))
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)


def _off_values(config: BenchConfig) -> dict[str, Any]:
    """Every option's off value (False, 0, "", ()), by its setting name. A row written before an option existed
    does not name it, and ran as the option off does: a new behaviour comes as an option whose off value is the old
    one (the small-model aids, planners/aids.py). So a row is taken as run with it off, whatever the default is now:
    an option added on (LookPlanGraph's `no_repeat`) does not let rows run without it pass for rows run with it."""
    declared = defaults_of(type(config.options))
    for name, planner_options in config.configs.items():
        declared.update(defaults_of(type(planner_options), f"{name}."))
    return {k: type(v)() for k, v in declared.items() if isinstance(v, (bool, int, float, str, tuple))}


def _as_run(settings: Mapping[str, Any], off: Mapping[str, Any]) -> dict[str, Any]:
    """A row's settings with the options it does not name at their off values (`_off_values`)."""
    return {**{k: v for k, v in off.items() if k not in settings}, **settings}


def _bearing(settings: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a row's run depends on: the common ones and its own planner's options (`<planner>.<field>`);
    the options of the other planners of a bench, added or dropped on a resume, do not change it."""
    own = f"{row.get('planner')}."
    return {k: v for k, v in settings.items() if "." not in k or k.startswith(own)}


def _describe(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    keys = sorted(set(theirs) | set(ours))
    diffs = [f"{k}: {theirs.get(k)!r} there, {ours.get(k)!r} now" for k in keys if theirs.get(k) != ours.get(k)]
    return "; ".join(diffs[:4])


def _read_rows(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / RESULTS_FILE
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def print_now(line: str) -> None:
    """A bench's progress line, flushed: a run piped to a file or `tee` shows each step as it happens."""
    print(line, flush=True)


def run_bench(
    tasks: Iterable[Task],
    config: BenchConfig,
    make_backend: Callable[[], LlmBackend],
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every task with every planner; returns all rows of results.jsonl (errors included, see `error`).
    The output folder is locked for the whole bench: a second bench on it is refused (FolderInUseError)."""
    with folder_lock(config.out_dir, "bench output folder"):
        return _run_bench(list(tasks), config, make_backend, log or print_now)


def _run_bench(
    tasks: list[Task],
    config: BenchConfig,
    make_backend: Callable[[], LlmBackend],
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    done = check_resume(config) if config.resume else set()  # checked before results.jsonl is touched
    if config.record_dir:
        config.record_dir.mkdir(parents=True, exist_ok=True)
    if config.resume:
        dropped = repair_results(config.out_dir)
        if dropped:
            log(f"dropped {dropped} unfinished result line(s) from an interrupted run")
        raised = _raised_earlier(config.out_dir)
    else:
        raised = {}
        (config.out_dir / RESULTS_FILE).unlink(missing_ok=True)
    envs: dict[str, SceneGraph] = {}
    total = len(tasks) * len(config.planners)
    index = 0
    for task in tasks:
        for planner_name in config.planners:
            index += 1
            if (planner_name, task.id) in done:
                log(f"[{index}/{total}] {planner_name} {task.id}: done earlier, skipped")
                continue
            if (planner_name, task.id) in raised:
                first = (raised[(planner_name, task.id)].splitlines() or [""])[0][:200]
                log(f"[{index}/{total}] {planner_name} {task.id}: raised earlier ({first}), running it again")
            try:
                row, result = _run_one(task, planner_name, config, envs, make_backend, log)
            except Exception as exc:  # one bad run must not end the bench: record it and go on
                row, result = error_row(task, planner_name, exc), None
            row["settings"] = dict(config.settings)
            row["load_1m"] = round(os.getloadavg()[0], 2)  # a run's times depend on what else ran beside it
            if (planner_name, task.id) in raised:
                _replace_error_row(config.out_dir, (planner_name, task.id), row)
            else:
                with (config.out_dir / RESULTS_FILE).open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
            if result is None:
                log(f"[{index}/{total}] {planner_name} {task.id}: ERROR {row['error']}")
                continue
            log(
                f"[{index}/{total}] {planner_name} {task.id}: {result.verdict()}, {len(result.calls)} calls, "
                f"{result.prompt_tokens + result.completion_tokens} tokens, {result.elapsed_s:.1f} s"
            )
    return load_results(config.out_dir)


def _run_one(
    task: Task,
    planner_name: str,
    config: BenchConfig,
    envs: dict[str, SceneGraph],
    make_backend: Callable[[], LlmBackend],
    log: Callable[[str], None] = print_now,
) -> tuple[dict[str, Any], PlanResult]:
    if task.env not in envs:
        envs[task.env] = load_env(task.env)
    graph = apply_setup(envs[task.env], task)
    load_goal_graph(task)  # a goal graph that cannot be read fails the run before the LLM is called
    backend: LlmBackend
    if config.replay_dir is not None:
        backend = ReplayBackend.from_file(config.replay_dir / transcript_name(planner_name, task.id))
    else:
        backend = make_backend()
    recorder = RecordingBackend(backend) if config.record_dir else None
    planner = make_planner(planner_name, recorder or backend, config.options, config.configs.get(planner_name))
    result = planner.plan(graph, task.instruction, on_progress=lambda p: log(f"    {progress_line(p)}"))
    if recorder is not None and config.record_dir is not None:
        recorder.save(config.record_dir / transcript_name(planner_name, task.id))
    return score_run(graph, task, result), result
