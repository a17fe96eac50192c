"""`sayplan` command line: inspect and convert graphs, verify plans, plan paths, run the demo.

Errors are one line on stderr and a non-zero exit; `--json` prints machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from sayplan_core.envs import list_envs, load_env
from sayplan_core.graph import native_format
from sayplan_core.graph.importers import (
    FORMATS,
    ImportOptions,
    PerTask,
    import_file,
    is_task_list,
    read_agent_at_by_task,
    read_connectivity,
    read_connectivity_by_task,
    read_grasif_tasks,
    read_labels,
    read_types,
)
from sayplan_core.graph.importers.common import unread_note
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import SUPPORTED_ENCODINGS, count_tokens
from sayplan_core.graph.views import collapse, floors_first
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.selection import LlmConfig, make_backend, probe_llm, resolve_backend_name
from sayplan_core.llm.types import LlmError
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.outcomes import PlanCode
from sayplan_core.planner_flags import PlannerChoice, add_planner_arguments, planner_choice
from sayplan_core.planners import PLANNERS, Progress, make_planner
from sayplan_core.sim.action_set import ActionSet, ActionSetError, builtin_action_sets, load_action_set
from sayplan_core.sim.plan import PlanFormatError, format_plan, parse_plan
from sayplan_core.sim.simulator import inserted_lines, verify_plan

EXIT_USAGE = 2
EXIT_FAILED = 1
#: `sayplan bench`: every run was recorded, but some raised (error rows in the report)
EXIT_RUN_ERRORS = 3
#: `sayplan env import` of a task list: the good tasks were written, some bad ones skipped (each named on stderr)
EXIT_TASKS_SKIPPED = 4


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    print(json.dumps(payload, indent=1) if args.json else text)


def _progress(line: str) -> None:
    print(f"sayplan: {line}", file=sys.stderr, flush=True)


def _load(env: str) -> SceneGraph:
    return load_env(env, progress=_progress)


def token_table(graph: SceneGraph, encoding: str = "cl100k_base") -> dict[str, Any]:
    """SayPlan table 4/5 style breakdown: tokens per entity group, full vs collapsed (without and with poses), and
    on a building of two floors or more the floor-level collapse SayPlan starts from above `floor_view_rooms`."""
    from sayplan_core.graph.text import node_record
    from sayplan_core.planners.sayplan import SayPlanOptions

    rows: dict[str, dict[str, float]] = {}
    for node_type in ("room", "pose", "asset", "object", "agent"):
        ids = graph.ids_of_type(node_type)
        if not ids:
            continue
        total = sum(count_tokens(json.dumps(node_record(graph, n), separators=(",", ":")), encoding) for n in ids)
        rows[node_type] = {"count": len(ids), "tokens": total, "average": round(total / len(ids), 2)}
    full = count_tokens(to_prompt_text(graph), encoding)
    collapsed = count_tokens(collapse(graph).text(), encoding)
    with_poses = count_tokens(collapse(graph, with_poses=True).text(), encoding)

    def cut(part: int) -> float:
        return round(100.0 * (1 - part / full), 1) if full else 0.0

    floor_level: dict[str, Any] = {}
    if graph.count("floor") >= 2:
        tokens = count_tokens(collapse(graph, top_only=True).text(), encoding)
        rooms_above = SayPlanOptions().floor_view_rooms
        floor_level = {
            "floor_level_tokens": tokens,
            "floor_level_reduction_percent": round(100.0 * (1 - tokens / full), 2) if full else 0.0,  # not 100.0
            "sayplan_starts_at_floors": floors_first(graph, rooms_above),
            "floor_view_rooms": rooms_above,
        }

    return {
        "env": graph.name,
        "encoding": encoding,
        "groups": rows,
        "full_tokens": full,
        "collapsed_tokens": collapsed,
        "reduction_percent": cut(collapsed),
        "collapsed_with_poses_tokens": with_poses,
        "reduction_with_poses_percent": cut(with_poses),
        **floor_level,
    }


# ----------------------------------------------------------------------------- commands
def cmd_env_list(args: argparse.Namespace) -> int:
    _emit(args, {"envs": list_envs()}, "\n".join(list_envs()))
    return 0


def cmd_env_show(args: argparse.Namespace) -> int:
    """A graph without an agent (an import not given --agent-at) is shown too, with a note: listing its room and
    pose ids is how a newcomer finds what --agent-at can name."""
    graph = load_env(args.env, require_agent=False, progress=_progress)
    counts = {t: graph.count(t) for t in ("floor", "room", "pose", "workspace", "asset", "object", "agent")}
    if args.collapsed:
        text = collapse(graph, with_poses=args.with_poses).text()
    elif args.native:
        text = native_format.dumps(graph, layout="rows")  # shown to be read, at any size
    else:
        text = to_prompt_text(graph)
    payload = {"name": graph.name, "counts": counts, "nav_edges": graph.nav.number_of_edges()}
    lines = [f"{graph.name}: " + ", ".join(f"{v} {k}s" for k, v in counts.items() if v)]
    if graph.agent_id is None:
        places = sorted(graph.ids_of_type("room") + graph.ids_of_type("pose"))
        note = (
            "no agent: this graph cannot be planned on until it is imported again with --agent-at <room|pose> "
            f"(rooms and poses: {', '.join(places)})"
        )
        payload["note"] = note
        lines.append(f"{note}; {graph.nav.number_of_edges()} navigation edges")
    else:
        lines.append(f"agent at {graph.agent_location()}, {graph.nav.number_of_edges()} navigation edges")
    if args.text:
        lines.append(text)
        payload["text"] = text
    _emit(args, payload, "\n".join(lines))
    return 0


def cmd_env_tokens(args: argparse.Namespace) -> int:
    table = token_table(_load(args.env), args.encoding)
    lines = [f"{table['env']} ({table['encoding']})", f"{'entity':<8} {'count':>6} {'tokens':>8} {'avg':>7}"]
    for name, row in table["groups"].items():
        lines.append(f"{name:<8} {row['count']:>6} {row['tokens']:>8} {row['average']:>7}")
    lines.append(f"full graph {table['full_tokens']} tokens, collapsed {table['collapsed_tokens']} tokens")
    lines.append(f"reduction {table['reduction_percent']}%")
    lines.append(
        f"collapsed with pose nodes {table['collapsed_with_poses_tokens']} tokens, "
        f"reduction {table['reduction_with_poses_percent']}%"
    )
    if "floor_level_tokens" in table:
        starts = "starts" if table["sayplan_starts_at_floors"] else "does not start"
        lines.append(
            f"floors only {table['floor_level_tokens']} tokens, reduction {table['floor_level_reduction_percent']}% "
            f"(SayPlan {starts} there: floor_view_rooms {table['floor_view_rooms']})"
        )
    _emit(args, table, "\n".join(lines))
    return 0


def import_options(args: argparse.Namespace, per_task: PerTask | None = None) -> ImportOptions:
    """The import flags; a --connectivity or --agent-at file keyed by task id is in `per_task` instead."""
    per_task = per_task or PerTask()
    links = args.connectivity if per_task.connectivity is None else ""
    return ImportOptions(
        connectivity=read_connectivity(links) if links else None,
        types=read_types(args.types) if args.types else {},
        agent_at=args.agent_at if per_task.agent_at is None else "",
        labels=read_labels(args.types) if args.types else {},
    )


def per_task_options(args: argparse.Namespace) -> PerTask:
    """--connectivity / --agent-at files keyed by task id (for a task list); empty when they are not."""
    return PerTask(
        connectivity=read_connectivity_by_task(args.connectivity) if args.connectivity else None,
        agent_at=read_agent_at_by_task(args.agent_at),
    )


def _writable(path: Path, what: str) -> None:
    if not path.parent.is_dir():
        raise CliError(f"cannot write {what} {path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise CliError(f"cannot write {what} {path}: it is a folder")


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, so a failed write leaves the old file whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_env_import(args: argparse.Namespace) -> int:
    source, out = Path(args.source), Path(args.output)
    per_task = per_task_options(args)
    options = import_options(args, per_task)  # option files are read and checked before the input
    if args.format in ("auto", "grasif") and is_task_list(source):
        return _import_tasks(args, source, out, options, per_task)
    if per_task != PerTask():
        raise CliError(f"{source} is one scene: --connectivity/--agent-at files keyed by task id are for task lists")
    if args.action_set:
        raise CliError(f"{source} is one scene: --action-set checks the goals of a task list")
    _writable(out, "graph file")
    imported = import_file(source, args.format, options)
    write_text_atomic(out, native_format.dumps(imported.graph, layout=args.layout) + "\n")
    msg = f"imported {imported.summary()} from {source} ({imported.format}) into {out}"
    payload: dict[str, Any] = {
        "nodes": len(imported.graph),
        "output": str(out),
        "format": imported.format,
        "notes": imported.notes,
        "synthetic_links": imported.synthetic_links,
        "unlinked_floors": imported.apart_floors,
    }
    if imported.id_map:
        ids = id_map_path(out)
        links = {"synthetic_links": imported.synthetic_links, "unlinked_floors": imported.apart_floors}
        write_text_atomic(ids, _id_map_text(str(source), imported.format, imported.id_map, links))
        payload["id_map"] = str(ids)
        msg += f"; source ids -> ours in {ids}"
    _emit(args, payload, msg)
    if imported.synthetic_links:
        print(f"sayplan: warning: {imported.synthetic_warning()}", file=sys.stderr)
    if imported.unread_keys:  # on stderr as well: a summary piped away must not hide what was left out
        print(f"sayplan: warning: {unread_note(imported.unread_keys)}", file=sys.stderr)
    if imported.dropped:
        left = ", ".join(f"{count} {kind}" for kind, count in sorted(imported.dropped.items()))
        print(f"sayplan: warning: left out of the graph (each named in the summary): {left}", file=sys.stderr)
    return 0


def id_map_path(graph_file: Path) -> Path:
    """Where the id map of a graph file goes: beside it, `office.json` -> `office.ids.json`."""
    return graph_file.with_name(f"{graph_file.stem}.ids.json")


def _id_map_text(source: str, fmt: str, ids: dict[str, Any], extra: dict[str, Any] | None = None) -> str:
    return json.dumps({"source": source, "format": fmt, **(extra or {}), "ids": ids}, indent=1) + "\n"


def cmd_env_export(args: argparse.Namespace) -> int:
    """A graph (bundled or a file) out to a Hydra / Spark-DSG file, with our id -> spark symbol beside it."""
    from sayplan_core.graph.importers.hydra_export import export_hydra

    out = Path(args.output)
    _writable(out, "graph file")
    graph = load_env(args.env, require_agent=False, progress=_progress)
    symbols = export_hydra(graph, out)
    ids = id_map_path(out)
    write_text_atomic(ids, _id_map_text(args.env, "native", symbols))
    msg = f"exported {len(graph)} nodes of {args.env} to {out} (hydra); our ids -> spark_dsg symbols in {ids}"
    _emit(args, {"nodes": len(graph), "output": str(out), "format": "hydra", "id_map": str(ids)}, msg)
    return 0


#: Longest file name stem a task's scenes get (file systems refuse names over 255 bytes).
MAX_TASK_STEM = 120


def _task_stem(task_id: str) -> str:
    """The file name stem of a task's scenes: its id with anything but letters, digits, `_`, `.`, `-` made `_`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task_id)


def _task_stems(task_ids: list[str]) -> dict[str, str]:
    """A stem per task whose two files (`<stem>.json`, `<stem>.goal.json`) no other task's files and neither
    tasks.yaml nor tasks.ids.json share, compared case-blind: ids `x` and `x.goal`, or `a/b` and `a_b`, would
    otherwise overwrite each other's scenes; long ids are cut so the file system takes the name."""
    taken = {"tasks.yaml", "tasks.ids.json"}
    out: dict[str, str] = {}
    for task_id in task_ids:
        base = _task_stem(task_id)[:MAX_TASK_STEM] or "task"
        stem, k = base, 1
        while {f"{stem}.json".casefold(), f"{stem}.goal.json".casefold()} & taken:
            k += 1
            stem = f"{base}-{k}"
        taken |= {f"{stem}.json".casefold(), f"{stem}.goal.json".casefold()}
        out[task_id] = stem
    return out


def _import_tasks(args: argparse.Namespace, source: Path, out: Path, options: ImportOptions, per_task: PerTask) -> int:
    """A GRASIF task list: each good task's init and goal scenes as native graphs, plus a task file for
    `sayplan bench`; each bad task named on stderr with all its problems, and exit code 4 when any was skipped."""
    if out.suffix in (".json", ".yaml", ".yml") or (out.exists() and not out.is_dir()):
        raise CliError(f"{source} holds task scenes: give a folder to write them into, not {out}")
    if not out.parent.is_dir():
        raise CliError(f"cannot write into {out}: folder {out.parent} does not exist")
    # everything is read and checked before anything is written
    found = read_grasif_tasks(source, options, per_task, args.action_set or "lookplangraph")
    skipped = found.skipped_text(options.max_problems)
    if not found.tasks:  # each task on its own line, then the one-line error
        for line in skipped:
            print(f"sayplan: skipped {line}", file=sys.stderr)
        raise CliError(f"{source}: none of its {len(skipped)} task(s) can be imported (each is named above)")
    clash = [t.id for t in found.tasks if _task_stem(t.id) == "tasks.ids"]
    if clash:
        raise CliError(f"{source}: task id '{clash[0]}' would overwrite the id map tasks.ids.json; rename the task")
    out.mkdir(exist_ok=True)
    entries: list[dict[str, Any]] = []
    notes: list[str] = list(found.notes)
    task_ids: dict[str, Any] = {}
    stems = _task_stems([task.id for task in found.tasks])
    for task in found.tasks:
        stem = stems[task.id]
        write_text_atomic(out / f"{stem}.json", native_format.dumps(task.init.graph, layout=args.layout) + "\n")
        write_text_atomic(out / f"{stem}.goal.json", native_format.dumps(task.goal.graph, layout=args.layout) + "\n")
        entries.append(
            {
                "id": task.id,
                "env": f"{stem}.json",
                "family": "grasif",
                "instruction": task.instruction,
                "goal": {"graph": f"{stem}.goal.json"},
            }
        )
        notes.extend(n for n in task.init.notes if n not in notes)
        task_ids[task.id] = {
            "env": f"{stem}.json",
            "synthetic_links": task.init.synthetic_links,
            "ids": task.init.id_map,
            "goal_ids": task.goal.id_map,
        }
    header = f"# Imported from {source} by `sayplan env import`; env and goal paths are relative to this file.\n"
    write_text_atomic(out / "tasks.yaml", header + yaml.safe_dump({"tasks": entries}, sort_keys=False))
    ids = id_map_path(out / "tasks.yaml")  # task id -> the id maps of its start and goal scenes
    write_text_atomic(ids, _id_map_text(str(source), "grasif", task_ids))
    left_out = f", skipped {len(skipped)} (named on stderr)" if skipped else ""
    msg = f"imported {len(found.tasks)} task scene(s){left_out} from {source} into {out} (tasks.yaml, scenes, goals)"
    synthetic = {task.id: task.init.synthetic_links for task in found.tasks if task.init.synthetic_links}
    payload = {
        "tasks": len(found.tasks),
        "output": str(out),
        "notes": notes,
        "skipped": found.skipped,
        "id_map": str(ids),
        "synthetic_links": synthetic,
    }
    _emit(args, payload, "; ".join([msg, *notes, f"source ids -> ours per task in {ids}"]))
    for line in skipped:
        print(f"sayplan: skipped {line}", file=sys.stderr)
    if synthetic:
        named = ", ".join(sorted(synthetic))
        print(
            f"sayplan: warning: {sum(synthetic.values())} navigation link(s) in the start scenes of "
            f"{len(synthetic)} task(s) are synthetic (the data has no room connectivity; a hallway pose per floor "
            f"joins its rooms): {named}; --connectivity FILE (one list, or one per task id) loads real doors",
            file=sys.stderr,
        )
    return EXIT_TASKS_SKIPPED if skipped else 0


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
    graph = _load(args.env)
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
    _emit(args, payload, text)
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
    graph = _load(args.env)
    start = args.start or graph.agent_location()
    if start is None:
        raise CliError("no --from given and the graph's agent has no location")
    result = PathPlanner(graph).shortest_path(start, args.goal, args.method)
    payload = {"nodes": result.nodes, "cost": round(result.cost, 3)}
    _emit(args, payload, f"{' > '.join(result.nodes)}  ({result.cost:.1f} m)")
    return 0


def llm_config(args: argparse.Namespace) -> LlmConfig:
    choice = _choice(args)
    return choice.node.llm_config(choice.options.temperature)


def _choice(args: argparse.Namespace) -> PlannerChoice:
    """The planner flags, checked by the options' own rules (errors name the flag the user typed)."""
    try:
        return planner_choice(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def cmd_plan(args: argparse.Namespace) -> int:
    graph = _load(args.env)
    choice = _choice(args)  # checked before any backend is contacted
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
    from sayplan_core.envs.tasks import load_tasks
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
    choice = _choice(args)
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


def cmd_plugins(args: argparse.Namespace) -> int:
    """The planners and robots installed (entry points), each with its options; the ones left out, and why."""
    from sayplan_core.options import table
    from sayplan_core.plugins import ROBOT_REGISTRY

    def options(cls: type) -> list[dict[str, Any]]:
        return [
            {"name": s.name, "default": s.default, "range": s.range_text(), "read": s.when, "meaning": s.description}
            for s in table(cls)
        ]

    planners = [{"id": n, "summary": c.summary, "options": options(c.Options)} for n, c in PLANNERS.items()]
    robots = [
        {"id": n, "summary": r.summary, "node": r.node_name, "package": r.package, "options": options(r.Options)}
        for n, r in ROBOT_REGISTRY.items()
    ]
    left_out = PLANNERS.problems() + ROBOT_REGISTRY.problems()
    lines = ["planners:"] + [f"  {p['id']:<20} {p['summary']}" for p in planners]
    lines += ["robots:"] + [f"  {r['id']:<20} {r['summary']} (node {r['node']})" for r in robots]
    lines += [f"left out: {p}" for p in left_out]
    _emit(args, {"planners": planners, "robots": robots, "left_out": left_out}, "\n".join(lines))
    return 0


def cmd_llm_which(args: argparse.Namespace) -> int:
    """The backend `--llm` means here and why; for the embedded model also its file, hash state and runtime (the
    first word stays the backend's name: the Makefile reads it)."""
    config = llm_config(args)
    config.validate()
    name, why = resolve_backend_name(config)
    payload: dict[str, Any] = {"backend": name, "reason": why}
    text = f"{name} ({why})"
    if name == "local":
        payload["local"] = local_model_state(config.model)
        text += f"; {payload['local']['summary']}"
    _emit(args, payload, text)
    return 0


def local_model_state(model: str) -> dict[str, Any]:
    """Which file the embedded model would load, whether it is there and checked, and the runtime; hashes nothing
    (`sayplan llm check` does)."""
    import importlib.util

    from sayplan_core.llm import model_packs

    runtime = (
        "llama-cpp-python installed" if importlib.util.find_spec("llama_cpp") else "llama-cpp-python NOT installed"
    )
    name = model or model_packs.DEFAULT_PACK
    if name in model_packs.PACKS:
        status = model_packs.pack_status(name)
        state = {
            "not assembled": f"not assembled yet: {status.parts_installed} of {status.parts_total} parts installed",
            "not checked": "SHA-256 checked when it loads",
            "mismatch": "WRONG SIZE: it will be refused",
            "ok": "SHA-256 verified",
        }[status.hash_state]
        summary = f"model pack {name}: {status.path} ({state}); {runtime}"
        return {
            "model": name,
            "path": str(status.path),
            "state": status.hash_state,
            "runtime": runtime,
            "summary": summary,
        }
    try:
        path = str(model_packs.locate_model(name))
        state = "a file of your own: its hash is checked only if it is a known pack's"
    except model_packs.ModelPackError as exc:
        path, state = name, f"refused: {exc}"
    return {"model": name, "path": path, "state": state, "runtime": runtime, "summary": f"{path} ({state}); {runtime}"}


def cmd_llm_check(args: argparse.Namespace) -> int:
    """Exit 0 when the backend would answer, 1 when not; one line either way, and no tokens spent."""
    if not 0 < args.probe_timeout <= 600:
        raise CliError(f"--probe-timeout must be between 0 and 600 seconds, got {args.probe_timeout:g}")
    probe = probe_llm(llm_config(args), args.probe_timeout, deep=True)  # the embedded model's file is hashed too
    payload = {"ok": probe.ok, "backend": probe.backend, "detail": probe.detail}
    _emit(args, payload, f"{probe.backend}: {'ok' if probe.ok else 'NOT reachable'}: {probe.detail}")
    return 0 if probe.ok else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    from sayplan_core.demo import run_demo, run_llm_demo

    if args.llm == "replay" and not args.replay_transcript:
        return run_demo(env=args.env, task_id=args.task)
    options = _choice(args).options
    backend, note = make_backend(llm_config(args))
    print(note, flush=True)
    return run_llm_demo(backend, options, env=args.env, task_id=args.task)


# ----------------------------------------------------------------------------- parser
def version() -> str:
    """The installed distribution's version (setup.py); from a source tree, package.xml's."""
    from importlib import metadata

    try:
        return metadata.version("sayplan_core")
    except metadata.PackageNotFoundError:
        manifest = Path(__file__).resolve().parents[1] / "package.xml"
        found = re.search(r"<version>\s*([^<\s]+)\s*</version>", manifest.read_text(encoding="utf-8"))
        return found.group(1) if found else "unknown"


def add_global_flags(parser: argparse.ArgumentParser, top: bool) -> None:
    """The flags every command takes, before or after its name (`sayplan --json path ...` = `sayplan path ... --json`).

    Below the top level their default is SUPPRESS: a subcommand that was not given the flag must not
    reset what the top level read (argparse copies a subparser's defaults over the namespace).
    """
    unset: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--json", action="store_true", help="machine-readable output", **unset)
    parser.add_argument("--version", action="version", version=f"sayplan {version()}", help="print the version")


class _Commands:
    """add_subparsers whose every parser (at any depth) takes the global flags too."""

    def __init__(self, action: Any) -> None:
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._action.add_parser(name, **kwargs)
        add_global_flags(parser, top=False)
        return parser


def _commands(parser: argparse.ArgumentParser, dest: str) -> _Commands:
    return _Commands(parser.add_subparsers(dest=dest, required=True))


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="sayplan", description="LLM task planning over 3D scene graphs")
    add_global_flags(parser, top=True)
    sub = _commands(parser, "command")

    env = _commands(sub.add_parser("env", help="inspect and convert scene graphs"), "env_cmd")
    p = env.add_parser("list", help="bundled environments")
    p.set_defaults(func=cmd_env_list)
    p = env.add_parser("show", help="summary of an environment (and its text with --text)")
    p.add_argument("env", help="bundled env name or graph file")
    p.add_argument("--text", action="store_true", help="print the graph text")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--collapsed", action="store_true", help="with --text: the collapsed view")
    view.add_argument("--native", action="store_true", help="with --text: native JSON")
    p.add_argument("--with-poses", action="store_true", help="with --collapsed: keep the pose nodes and their links")
    p.set_defaults(func=cmd_env_show)
    p = env.add_parser("tokens", help="token table: full vs collapsed graph (SayPlan tables 4/5)")
    p.add_argument("env")
    p.add_argument("--encoding", choices=SUPPORTED_ENCODINGS, default="cl100k_base")
    p.set_defaults(func=cmd_env_tokens)
    p = env.add_parser(
        "import", help="convert SayPlan / GRASIF JSON, Stanford 3DSG .npz or Hydra (spark_dsg) graphs to native JSON"
    )
    p.add_argument("source")
    p.add_argument("output", help="native graph file; a folder for a GRASIF task list (scenes, goals, tasks.yaml)")
    p.add_argument("--format", choices=FORMATS, default="auto")
    p.add_argument(
        "--connectivity",
        default="",
        help="YAML/JSON list of links ('a b' or [a, b, metres]): real doors between rooms; for a task list, "
        "one such list per task id ({task-id: [links]})",
    )
    p.add_argument(
        "--types",
        default="",
        help="YAML/JSON {object: [class, ...], asset: [...], labels: {3: cup}}: fix a dataset's types (labels: "
        "class names of Hydra's numeric labels)",
    )
    p.add_argument(
        "--agent-at",
        default="",
        help="room or pose node where the robot is (needed to plan on the graph); for a task list, a YAML/JSON "
        "file {task-id: node}",
    )
    p.add_argument(
        "--action-set",
        default="",
        help="for a task list: the action set (bundled name or YAML file; default lookplangraph) whose actions a "
        "goal's states and moves are checked against; a task whose goal needs what no action gives is skipped",
    )
    p.add_argument(
        "--layout",
        choices=(native_format.AUTO, *native_format.LAYOUTS),
        default=native_format.AUTO,
        help="of the native file written: rows (readable), columns (compact, loads in about half the time; "
        f"docs/concepts/graph_loading.md) or auto (the default: columns from {native_format.COLUMNS_FROM_NODES:,} "
        "nodes on, rows below)",
    )
    p.set_defaults(func=cmd_env_import)
    p = env.add_parser("export", help="write a graph as a Hydra / Spark-DSG file (.json or binary .sparkdsg)")
    p.add_argument("env", help="bundled env name or graph file")
    p.add_argument("output", help="Hydra graph file: .json or .sparkdsg (spark_dsg's binary encoding)")
    p.set_defaults(func=cmd_env_export)

    p = sub.add_parser("verify", help="run the scene-graph simulator on a plan")
    p.add_argument("--env", required=True)
    p.add_argument("--plan", required=True, help="plan file (JSON list or text), '-' for stdin, or the plan itself")
    p.add_argument("--action-set", default="sayplan", help="sayplan, lookplangraph or a YAML file")
    p.add_argument("--expand", action="store_true", help="fill in navigation with the path planner first")
    p.add_argument("--strict", action="store_true", help="each goto must move to an adjacent node")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("path", help="shortest path between two room/pose nodes")
    p.add_argument("--env", required=True)
    p.add_argument("--from", dest="start", default=None, help="start node (default: the agent's location)")
    p.add_argument("--to", dest="goal", required=True)
    p.add_argument("--method", choices=("dijkstra", "astar"), default="dijkstra")
    p.set_defaults(func=cmd_path)

    p = sub.add_parser("plan", help="plan an instruction with an LLM planner (or an LTL formula) and verify it")
    p.add_argument("--env", required=True)
    p.add_argument("--instruction", default=None)
    p.add_argument("--formula", default=None, help="an LTLf formula (prefix or list notation): ltl, no LLM")
    p.add_argument("--planner", default=None, choices=sorted(PLANNERS), help="default: sayplan")
    add_planner_arguments(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("bench", help="run a task set with several planners; Markdown + CSV report and plots")
    p.add_argument("--tasks", default="", help="task file (default: the bundled 90 SayPlan tasks)")
    p.add_argument("--planners", default="sayplan,sayplan_lite,llm_p,llm_as_planner")
    p.add_argument("--out", default="bench_out", help="output folder (results.jsonl, report.md, results.csv, *.png)")
    p.add_argument("--ids", default="", help="comma-separated task ids")
    p.add_argument("--families", default="", help="simple_search,complex_search,simple_planning,long_horizon")
    p.add_argument("--env", default="", help="only tasks of this env")
    p.add_argument("--limit", type=int, default=None, help="first N selected tasks (N >= 1)")
    p.add_argument("--per-family", type=int, default=None, help="N tasks of each family, drawn with --seed (N >= 1)")
    p.add_argument("--seed", type=int, default=0, help="the seed --per-family draws with (default 0)")
    p.add_argument("--record-dir", default="", help="save each run's transcript here")
    p.add_argument("--replay-dir", default="", help="answer each run from <planner>__<task>.json here")
    p.add_argument("--fresh", action="store_true", help="discard earlier results instead of resuming")
    add_planner_arguments(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("demo", help="the main job end to end on the bundled office")
    p.add_argument("--env", default="office")
    p.add_argument("--task", default="office-lh-05", help="task id from the bundled task set")
    add_planner_arguments(p, default_llm="replay")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("plugins", help="the planners and robots installed, with their options")
    p.set_defaults(func=cmd_plugins)

    llm = _commands(sub.add_parser("llm", help="LLM backend helpers"), "llm_cmd")
    p = llm.add_parser("which", help="which backend --llm auto picks here, and why")
    add_planner_arguments(p)
    p.set_defaults(func=cmd_llm_which)
    p = llm.add_parser("check", help="would the LLM answer? lists models, never asks one (exit 0 yes, 1 no)")
    p.add_argument(
        "--probe-timeout",
        type=float,
        default=30.0,
        help="give up after this many seconds [0 - 600] (hashing the embedded model's 1.1 GB file takes a few)",
    )
    add_planner_arguments(p)
    p.set_defaults(func=cmd_llm_check)
    return parser


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


#: What the user can fix (a bad file, option or answer): "sayplan: error: ...". Anything else is a bug.
USER_ERRORS = (GraphError, PlanFormatError, ActionSetError, CliError, ValueError, LlmError, OSError)


def main(argv: Sequence[str] | None = None) -> int:
    """Every outcome is an exit code: 0 done, 1 plan not verified (`llm check`: not reachable), 2 error (one line
    on stderr), 3 bench runs raised, 4 a task list imported with some tasks skipped (each named on stderr),
    130 interrupted; a closed output pipe (`| head`) ends quietly with 141, as a SIGPIPE would."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        print("sayplan: interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        print("sayplan: error: input nested too deeply", file=sys.stderr)
        return EXIT_USAGE
    except USER_ERRORS as exc:
        print(f"sayplan: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, and said to be one
        print(f"sayplan: internal error: {type(exc).__name__}: {_one_line(exc)} (please report it)", file=sys.stderr)
        return EXIT_USAGE


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 2000 else text[:2000] + " ..."


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
