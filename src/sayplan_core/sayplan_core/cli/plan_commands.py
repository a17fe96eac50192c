"""`sayplan verify|path|plan|bench|demo`: check plans, find paths, and plan with the LLM planners."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sayplan_core.cli.common import EXIT_FAILED, EXIT_RUN_ERRORS, EXIT_USAGE, CliError, emit, load_graph
from sayplan_core.graph import native_format
from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.selection import LlmConfig, make_backend
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.outcomes import PlanCode
from sayplan_core.planner_flags import PlannerChoice, planner_choice
from sayplan_core.planners import PLANNERS, Progress, make_planner
from sayplan_core.sim.action_set import ActionSet, builtin_action_sets, load_action_set
from sayplan_core.sim.plan import format_plan, parse_plan
from sayplan_core.sim.simulator import inserted_lines, verify_plan


def cmd_verify(args: argparse.Namespace) -> int:
    raw = _read_plan(args.plan)
    steps = parse_plan(raw)
    if not steps:
        raise CliError("--plan holds no steps")
    actions = load_action_set(args.action_set)
    for flag, wanted in (("--strict", args.strict), ("--expand", args.expand)):
        why = actions.walks_through_poses() if wanted else None
        if why is not None:
            raise CliError(f"{flag} spells out every pose on the way, and {why}; leave {flag} out")
    graph = load_graph(args.env)
    if args.expand:
        steps = PathPlanner(graph, goto_action=actions.verb("navigate") or "goto").expand_plan(steps)
    result = verify_plan(graph, steps, actions, strict_navigation=args.strict)
    payload = {
        "success": result.success,
        "failed_step": result.failed_step,
        "feedback": result.feedback,
        "notes": list(result.notes),
        "plan": [s.to_dict() for s in steps],
        "inserted": [{"before": index, **s.to_dict()} for index, s in result.inserted],
        "executed": [s.to_dict() for s in result.executed],
    }
    if result.success and result.inserted:  # an auto-inserting set: show the plan as it will run
        text = f"plan verified with {len(result.inserted)} step(s) inserted: {format_plan(result.executed)}"
    elif result.success:
        text = f"plan verified ({len(steps)} steps): {format_plan(steps)}"
    else:
        text = f"step {result.failed_step} {result.step}: {result.feedback}"
        hint = _action_set_hint(steps, actions)
        if hint:
            payload["hint"] = hint
            text = f"{text}\nhint: {hint}"
    inserted = [f"inserted: {line}" for line in inserted_lines(result, steps)]
    text = "\n".join([text, *inserted, *(f"note: {n}" for n in result.notes)])
    emit(args, payload, text)
    return 0 if result.success else EXIT_FAILED


def _action_set_hint(steps: Sequence[Any], actions: ActionSet) -> str:
    """When the plan uses actions the chosen set lacks: the bundled sets that have them (the plan is likely from
    one of those), or '' when it uses none the set lacks."""
    unknown = sorted({s.action for s in steps if s.action not in actions})
    if not unknown:
        return ""
    names = ", ".join(f"'{a}'" for a in unknown)
    fits = [n for n in builtin_action_sets() if n != actions.name and all(a in load_action_set(n) for a in unknown)]
    if fits:
        flags = " or ".join(f"--action-set {n}" for n in fits)
        return f"{names} is not in the {actions.name} action set; the plan looks written for {flags}"
    partly = [n for n in builtin_action_sets() if any(a in load_action_set(n) for a in unknown)]
    where = f" (bundled sets with some of them: {', '.join(partly)})" if partly else ""
    return f"no bundled action set has every action this plan uses ({names}){where}; pass --action-set FILE.yaml"


def _read_plan(value: str) -> Any:
    """--plan: '-' for stdin, a file (JSON or text), or the plan itself."""
    if not value.strip():
        raise CliError("--plan is empty: give a plan ('goto(kitchen) > done'), a plan file, or '-' for stdin")
    if value == "-":
        return sys.stdin.read(native_format.MAX_FILE_BYTES)
    path = Path(value)
    looks_like_plan = "(" in value or ">" in value
    if not looks_like_plan and (path.exists() or path.suffix in (".json", ".txt", ".yaml")):
        text = native_format.read_text(path, "plan file", 16 * 1024 * 1024)
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
        except RecursionError:
            raise CliError(f"plan file {path}: nested too deeply") from None
    return value


def cmd_path(args: argparse.Namespace) -> int:
    graph = load_graph(args.env)
    start = args.start or graph.agent_location()
    if start is None:
        raise CliError("no --from given and the graph's agent has no location")
    result = PathPlanner(graph).shortest_path(start, args.goal, args.method)
    payload = {"nodes": result.nodes, "cost": round(result.cost, 3)}
    emit(args, payload, f"{' > '.join(result.nodes)}  ({result.cost:.1f} m)")
    return 0


def llm_config(args: argparse.Namespace) -> LlmConfig:
    choice = planner_choice_of(args)
    return choice.node.llm_config(choice.options.temperature)


def planner_choice_of(args: argparse.Namespace) -> PlannerChoice:
    """The planner flags, checked by the options' own rules (errors name the flag the user typed)."""
    try:
        return planner_choice(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def cmd_plan(args: argparse.Namespace) -> int:
    graph = load_graph(args.env)
    choice = planner_choice_of(args)  # checked before any backend is contacted
    if args.formula is not None:
        return _plan_formula(args, graph, choice)
    if args.instruction is None:
        raise CliError("give --instruction (planned with an LLM) or --formula (an LTL formula, planned without one)")
    name = args.planner or "sayplan"
    backend, note = make_backend(choice.node.llm_config(choice.options.temperature))
    recorder = RecordingBackend(backend) if args.record_transcript else None
    planner = make_planner(name, recorder or backend, choice.options, choice.config(name))
    out = sys.stderr if args.json else sys.stdout
    print(note, file=out, flush=True)

    def show(p: Progress) -> None:
        where = f" {p.node}" if p.node else ""
        print(
            f"[{p.stage:>7}]{where} round {p.replanning_round} | {p.tokens_used} tokens | {p.message}",
            file=out,
            flush=True,
        )

    try:
        result = planner.plan(graph, args.instruction, on_progress=show)
    finally:
        if recorder is not None:
            recorder.save(args.record_transcript)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(result.summary())
        tokens = f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens"
        print(f"{len(result.calls)} LLM calls, {tokens}")
    if result.failure is PlanCode.BACKEND_ERROR:
        print(f"sayplan: error: {result.message}", file=sys.stderr)
        return EXIT_USAGE
    return 0 if result.success else EXIT_FAILED


def _plan_formula(args: argparse.Namespace, graph: SceneGraph, choice: PlannerChoice) -> int:
    """`plan --formula`: the ltl planner's search on a given formula; no LLM backend is made or asked."""
    from sayplan_core.ltl import AutomatonError, FormulaError
    from sayplan_core.planners.ltl import plan_formula

    if args.instruction is not None or (args.planner or "ltl") != "ltl":
        raise CliError("--formula plans with the ltl planner and no instruction: leave out --instruction/--planner")
    try:
        result = plan_formula(graph, args.formula, choice.config("ltl").reach_distance)
    except (FormulaError, AutomatonError) as exc:
        raise CliError(f"--formula: {exc}") from None
    print(json.dumps(result.to_dict(), indent=1) if args.json else f"{result.summary()}\n{result.message}")
    return 0 if result.success else EXIT_FAILED


def cmd_bench(args: argparse.Namespace) -> int:
    """Everything is checked before results.jsonl is touched (--fresh deletes it only once the bench can run)."""
    from sayplan_core.bench.report import write_report
    from sayplan_core.bench.runner import BenchConfig, options_settings, run_bench
    from sayplan_core.envs.tasks import load_tasks, sample_per_family
    from sayplan_core.folder_lock import folder_lock

    planners = [p.strip() for p in args.planners.split(",") if p.strip()]
    unknown = [p for p in planners if p not in PLANNERS]
    if unknown or not planners:
        raise CliError(f"unknown planner(s) {', '.join(unknown) or '(none)'} (available: {', '.join(PLANNERS)})")
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be 1 or more, got {args.limit}")
    if args.per_family is not None and args.per_family < 1:
        raise CliError(f"--per-family must be 1 or more, got {args.per_family}")
    tasks = load_tasks(args.tasks or None)
    if args.ids:
        wanted = [i.strip() for i in args.ids.split(",") if i.strip()]
        missing = sorted(set(wanted) - {t.id for t in tasks})
        if missing:
            raise CliError(f"unknown task id(s): {', '.join(missing)}")
        tasks = [t for t in tasks if t.id in wanted]
    if args.families:
        families = {f.strip() for f in args.families.split(",")}
        tasks = [t for t in tasks if t.family in families]
    if args.env:
        tasks = [t for t in tasks if t.env == args.env]
    if args.per_family is not None:
        tasks = sample_per_family(tasks, args.per_family, args.seed)
    if args.limit is not None:
        tasks = tasks[: args.limit]
    if not tasks:
        raise CliError("no tasks selected")
    choice = planner_choice_of(args)
    options, configs = choice.options, {name: choice.config(name) for name in planners}
    replay_dir = Path(args.replay_dir) if args.replay_dir else None
    if replay_dir is not None and not replay_dir.is_dir():
        raise CliError(f"--replay-dir {replay_dir} is not a folder")
    if replay_dir is None:
        llm_config(args).validate()
    out = Path(args.out)
    for flag, folder in (("--out", out), ("--record-dir", Path(args.record_dir) if args.record_dir else None)):
        if folder is not None and folder.exists() and not folder.is_dir():
            raise CliError(f"{flag} {folder} is a file, not a folder")
    backends: list[Any] = []

    def backend() -> Any:
        if not backends:  # one backend for the whole bench (the local model loads once)
            made, note = make_backend(llm_config(args))
            print(note, flush=True)
            backends.append(made)
        return backends[0]

    node = choice.node
    replayed = replay_dir is not None or bool(node.replay_transcript)
    settings: dict[str, Any] = {"llm": "replay" if replayed else node.llm, "model": node.model}
    settings.update(base_url=node.base_url, timeout_s=node.timeout_s)  # the timeout decides which calls fail
    if replay_dir is not None:
        settings["replay_dir"] = str(replay_dir.resolve())
    elif node.replay_transcript:
        settings["replay_transcript"] = str(Path(node.replay_transcript).resolve())
    settings.update(options_settings(options, configs))
    config = BenchConfig(
        planners=planners,
        out_dir=out,
        options=options,
        configs=configs,
        record_dir=Path(args.record_dir) if args.record_dir else None,
        replay_dir=replay_dir,
        resume=not args.fresh,
        settings=settings,
    )
    print(f"bench: {len(tasks)} tasks x {len(planners)} planners -> {out}", flush=True)
    with folder_lock(out, "bench output folder"):  # the bench and its report: no other bench writes there meanwhile
        rows = run_bench(tasks, config, backend)
        where = f"replayed from {args.replay_dir}" if args.replay_dir else f"LLM: {args.llm} {args.model}".strip()
        errors = sum(1 for r in rows if r.get("error"))
        note = f"{len(rows)} runs ({errors} raised); {where}." if errors else f"{len(rows)} runs; {where}."
        paths = write_report(rows, out, note)
    print("\n".join(f"wrote {p}" for p in paths.values()))
    print(paths["report"].read_text(encoding="utf-8"))
    if errors:
        print(f"sayplan: {errors} run(s) raised; see the errors column and {paths['report']}", file=sys.stderr)
        return EXIT_RUN_ERRORS
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from sayplan_core.demo import run_demo, run_llm_demo

    if args.llm == "replay" and not args.replay_transcript:
        return run_demo(env=args.env, task_id=args.task)
    options = planner_choice_of(args).options
    backend, note = make_backend(llm_config(args))
    print(note, flush=True)
    return run_llm_demo(backend, options, env=args.env, task_id=args.task)
