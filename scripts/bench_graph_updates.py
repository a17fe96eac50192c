"""Bytes on the wire and follower CPU per executed skill: full graph per skill (before) vs incremental updates.

    scripts/ws_env.sh python scripts/bench_graph_updates.py [--repeats 5] [--sizes 0,1000,10000,100000]
        [--write docs/measured/graph_updates.md]

The demo task (office-lh-05, its reference plan, run by the simulated robot) produces one GraphUpdate per skill.
For the office with 0, 1,000, 10,000 and 100,000 distractor objects (about 240 to 100k nodes), in one run:
- before: the server publishes the whole graph after every skill (graph_to_msg, CDR-serialized) and every
  follower rebuilds its copy from it (deserialize + msg_to_graph through the validating loader). Measured on the
  first `--before-sample` skills (a full graph is the same size and cost at every skill);
- after: the server publishes each update with its version; a follower deserializes it and patches its copy in
  place (GraphReplica.take_update: apply_in_place + validation). "follower per update" is the median over every
  update of every run of that whole path, timed one update at a time; "ratio to 1k" compares it with the 1,000-
  distractor row (the target: at most 0.3 ms, and flat within 1.5x from 1k to 100k nodes).
Bytes per skill count every full graph the server publishes: the periodic ones (`full_graph_every`, now 0 by
default) and the one at start-up, amortized over a session of `--session` skills (the demo's updates repeated).
A follower that joins late or misses an update fetches the full graph once (get_scene_graph), which is not per
skill. One follower's CPU (the stack has three: planner, path planner, perception); CPU time, not wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import measured_doc
from rclpy.serialization import deserialize_message, serialize_message

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import add_distractors
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, apply_update
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.node_options import SceneGraphServerOptions
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_ros.conversions import graph_to_msg, msg_to_graph, msg_to_update, update_to_msg


def skill_updates(graph: SceneGraph) -> list[GraphUpdate]:
    """The updates the simulated robot reports while it runs the demo task's reference plan."""
    task = next(t for t in load_tasks() if t.id == "office-lh-05")
    assert task.reference_plan, "the demo task has a reference plan"
    world = SimulatedWorld(graph)
    updates = []
    for step in PathPlanner(graph).expand_plan(task.reference_plan):
        result = world.execute(step.action, step.target)
        assert result.success, result.message
        updates.append(result.update)
    return updates


def before_side(graph: SceneGraph, updates: list[GraphUpdate], sample: int) -> dict[str, float]:
    """A full graph per skill: its bytes and a follower's CPU to rebuild its copy, over the first skills."""
    full_msgs, live = [], graph
    for version, update in enumerate(updates[:sample], start=2):
        live = apply_update(live, update)
        full_msgs.append(serialize_message(graph_to_msg(live, version)))
    started = time.process_time()
    for data in full_msgs:
        msg_to_graph(deserialize_message(data, SceneGraphMsg), require_agent=False)
    cpu = time.process_time() - started
    return {"before_bytes": statistics.mean(len(d) for d in full_msgs), "before_cpu_ms": 1000 * cpu / len(full_msgs)}


def after_side(graph: SceneGraph, update_msgs: list[bytes]) -> list[float]:
    """A follower patching its copy with every update: the CPU of each (deserialize, convert, apply, validate)."""
    replica = GraphReplica()
    replica.take_full(graph, 1)  # a copy: the updates change it in place
    times = []
    for version, data in enumerate(update_msgs, start=2):
        started = time.process_time()
        replica.take_update(msg_to_update(deserialize_message(data, GraphUpdateMsg)), version)
        times.append(time.process_time() - started)
    assert replica.in_sync and replica.version == len(update_msgs) + 1, replica.problem
    return times


def measure(count: int, args: argparse.Namespace, full_every: int) -> dict[str, float]:
    graph = add_distractors(load_env("office"), count, seed=1) if count else load_env("office")
    updates = skill_updates(graph)
    update_msgs = []
    for version, update in enumerate(updates, start=2):
        msg = update_to_msg(update)
        msg.base_version, msg.version = version - 1, version
        update_msgs.append(serialize_message(msg))
    full_bytes = len(serialize_message(graph_to_msg(graph, 1)))
    before = [before_side(graph, updates, args.before_sample) for _ in range(args.repeats)]
    times = [t for _ in range(args.repeats) for t in after_side(graph, update_msgs)]
    update_bytes = statistics.mean(len(d) for d in update_msgs)
    periodic = full_bytes / full_every if full_every else 0.0
    return {
        "nodes": len(graph),
        "skills": len(updates),
        "before_bytes": statistics.median(r["before_bytes"] for r in before),
        "before_cpu_ms": statistics.median(r["before_cpu_ms"] for r in before),
        "update_bytes": update_bytes,
        "amortized_bytes": update_bytes + periodic + full_bytes / args.session,
        "old_amortized_bytes": update_bytes + full_bytes / 50 + full_bytes / args.session,
        "median_ms": 1000 * statistics.median(times),
        "p90_ms": 1000 * statistics.quantiles(times, n=10)[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="0,1000,10000,100000", help="distractor counts, comma-separated")
    parser.add_argument("--before-sample", type=int, default=3, help="skills the full-graph-per-skill side runs")
    parser.add_argument("--session", type=int, default=1000, help="skills the start-up full graph is amortized over")
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file (docs/measured/)")
    args = parser.parse_args()
    full_every = SceneGraphServerOptions().full_graph_every
    periodic = f"a full graph every {full_every} updates" if full_every else "no periodic full graph (the default)"
    lines = [
        f"Per executed skill, one follower; {periodic}; the start-up full graph amortized over {args.session:,} "
        f"skills; follower CPU per update: median of every update of {args.repeats} runs.",
        "",
        "| office + distractors | nodes | skills | full graph per skill (before) | amortized per skill, full graphs "
        "counted | before/after | same with a full graph every 50 | follower CPU before | follower per update "
        "(median, p90) | ratio to 1k |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    print("\n".join(lines))
    rows: dict[int, dict[str, float]] = {}
    for count in (int(c) for c in args.sizes.split(",")):
        row = rows[count] = measure(count, args, full_every)
        base = rows.get(1000)
        flat = f"{row['median_ms'] / base['median_ms']:.2f}x" if base and count >= 1000 else ""
        lines.append(
            f"| {count:,} | {row['nodes']:,.0f} | {row['skills']:.0f} | {row['before_bytes']:,.0f} B "
            f"| {row['amortized_bytes']:,.0f} B (updates {row['update_bytes']:,.0f} B) "
            f"| {row['before_bytes'] / row['amortized_bytes']:,.0f}x "
            f"| {row['before_bytes'] / row['old_amortized_bytes']:,.0f}x | {row['before_cpu_ms']:,.2f} ms "
            f"| {row['median_ms']:.3f} ms, {row['p90_ms']:.3f} ms | {flat} |"
        )
        print(lines[-1], flush=True)
    if args.write:
        note = (
            "\n\nBefore: the whole graph published after every skill and rebuilt by each follower through the loader; "
            "after: the update with its version, patched into the follower's copy in place (see the script's "
            "docstring and docs/concepts/graph_updates.md)."
        )
        measured_doc.write(args.write, "Scene-graph updates: bytes and follower CPU per skill", "\n".join(lines) + note)


if __name__ == "__main__":
    main()
