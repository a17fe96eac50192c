"""Run a task set with several planners and score every run.

Results are appended to results.jsonl one run at a time, so an interrupted bench
resumes where it stopped. Each run's LLM exchange can be recorded to, or replayed
from, a transcript named <planner>__<task>.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import Task, apply_setup
from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.replay import RecordingBackend, ReplayBackend
from sayplan_core.llm.types import LlmBackend
from sayplan_core.planners import PlannerOptions, PlanResult, make_planner
from sayplan_core.sim.goals import changed_nodes, score_against_goals
from sayplan_core.sim.simulator import verify_plan

RESULTS_FILE = "results.jsonl"


@dataclass
class BenchConfig:
    planners: list[str]
    out_dir: Path
    options: PlannerOptions
    record_dir: Path | None = None
    replay_dir: Path | None = None
    resume: bool = True


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
        "calls": [
            {"stage": c.stage, "prompt": c.prompt_tokens, "completion": c.completion_tokens, "latency_s": c.latency_s}
            for c in result.calls
        ],
        "search_success": None,
        "correct": None,
        "precision": None,
        "nrr": None,
    }
    if task.search is not None:
        row["search_success"] = task.search.satisfied_by(result.answer)
    if task.predicates:
        important = len({n for g in task.predicates for n in g.nodes()})
        row["nrr"] = round(len(result.observed_nodes) / important, 2) if important else None
        if result.verified:
            strict = result.action_set == "sayplan"  # LookPlanGraph moves room to room
            final = verify_plan(graph, result.full_plan, result.action_set, strict_navigation=strict).final_graph()
            score = score_against_goals(graph, final, task.predicates)
            row["correct"], row["precision"] = score.success, round(score.precision, 3)
            row["changed_nodes"] = sorted(changed_nodes(graph, final))
        else:
            row["correct"], row["precision"] = False, 0.0
    return row


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


def run_bench(
    tasks: Iterable[Task],
    config: BenchConfig,
    make_backend: Callable[[], LlmBackend],
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    config.out_dir.mkdir(parents=True, exist_ok=True)
    if config.record_dir:
        config.record_dir.mkdir(parents=True, exist_ok=True)
    if config.resume:
        dropped = repair_results(config.out_dir)
        if dropped:
            log(f"dropped {dropped} unfinished result line(s) from an interrupted run")
        done = {(r["planner"], r["task"]) for r in load_results(config.out_dir)}
    else:
        (config.out_dir / RESULTS_FILE).unlink(missing_ok=True)
        done = set()
    envs: dict[str, SceneGraph] = {}
    tasks = list(tasks)
    total = len(tasks) * len(config.planners)
    index = 0
    for task in tasks:
        if task.env not in envs:
            envs[task.env] = load_env(task.env)
        graph = apply_setup(envs[task.env], task)
        for planner_name in config.planners:
            index += 1
            if (planner_name, task.id) in done:
                log(f"[{index}/{total}] {planner_name} {task.id}: done earlier, skipped")
                continue
            backend: LlmBackend
            if config.replay_dir is not None:
                backend = ReplayBackend.from_file(config.replay_dir / transcript_name(planner_name, task.id))
            else:
                backend = make_backend()
            recorder = RecordingBackend(backend) if config.record_dir else None
            planner = make_planner(planner_name, recorder or backend, config.options)
            result = planner.plan(graph, task.instruction)
            if recorder is not None and config.record_dir is not None:
                recorder.save(config.record_dir / transcript_name(planner_name, task.id))
            row = score_run(graph, task, result)
            with (config.out_dir / RESULTS_FILE).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            verdict = "verified" if result.verified else f"failed ({result.failure.label})"
            log(
                f"[{index}/{total}] {planner_name} {task.id}: {verdict}, {len(result.calls)} calls, "
                f"{result.prompt_tokens + result.completion_tokens} tokens, {result.elapsed_s:.1f} s"
            )
    return load_results(config.out_dir)
