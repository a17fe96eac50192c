"""`sayplan env show|tokens|import|export`: read, measure and convert scene graphs."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from sayplan_core.cli.common import (
    EXIT_TASKS_SKIPPED,
    CliError,
    check_writable,
    emit,
    load_graph,
    write_text_atomic,
)
from sayplan_core.graph import native_format
from sayplan_core.graph.importers import (
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
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.graph.views import collapse, floors_first


def cmd_env_show(args: argparse.Namespace) -> int:
    """A graph without an agent (an import not given --agent-at) is shown too, with a note: listing its room and
    pose ids is how a newcomer finds what --agent-at can name."""
    graph = load_graph(args.env, require_agent=False)
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
    emit(args, payload, "\n".join(lines))
    return 0


def cmd_env_tokens(args: argparse.Namespace) -> int:
    table = token_table(load_graph(args.env), args.encoding)
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
    emit(args, table, "\n".join(lines))
    return 0


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
    check_writable(out, "graph file")
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
    emit(args, payload, msg)
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
    check_writable(out, "graph file")
    graph = load_graph(args.env, require_agent=False)
    symbols = export_hydra(graph, out)
    ids = id_map_path(out)
    write_text_atomic(ids, _id_map_text(args.env, "native", symbols))
    msg = f"exported {len(graph)} nodes of {args.env} to {out} (hydra); our ids -> spark_dsg symbols in {ids}"
    emit(args, {"nodes": len(graph), "output": str(out), "format": "hydra", "id_map": str(ids)}, msg)
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
    emit(args, payload, "; ".join([msg, *notes, f"source ids -> ours per task in {ids}"]))
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
