"""Bytes on the wire, follower CPU and server CPU per executed skill: full graph per skill (before) vs incremental.

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
The work is the same at every size: the distractors are objects the plan never touches, so the demo's updates are
byte for byte the same messages at every size (checked), touching the same few nodes (a pose, the agent, an
object). The sizes are timed side by side, update by update (each update applied to every size's copy in turn,
the first size rotating), so a change of machine load hits every row alike: rows timed one after the other on a
shared machine were up to 2.6x apart in either direction for no reason in the code.
- server: what the scene graph server spends per update (deserialize, convert, apply_in_place, then its RViz
  markers: drawn, turned into a MarkerArray and serialized). Before: every marker redrawn after every update (a
  full MarkerArray, as the server did), on the first `--before-sample` updates of one run; after: only the markers
  the update changed (viz.markers.MarkerCache), every update of every run, side by side like the followers.
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
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import add_distractors
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, apply_in_place, apply_update
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.node_options import SceneGraphServerOptions
from sayplan_core.viz.markers import MarkerCache
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_ros.conversions import (
    graph_to_msg,
    marker_changes_to_msg,
    markers_to_msg,
    msg_to_graph,
    msg_to_update,
    update_to_msg,
)


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


def serialized_updates(updates: list[GraphUpdate]) -> list[bytes]:
    out = []
    for version, update in enumerate(updates, start=2):
        msg = update_to_msg(update)
        msg.base_version, msg.version = version - 1, version
        out.append(serialize_message(msg))
    return out


def side_by_side(
    graphs: dict[int, SceneGraph], update_msgs: list[bytes], repeats: int
) -> dict[str, dict[int, list[float]]]:
    """CPU of each update at every size, update by update: a follower's (take_update) and the server's (apply +
    the markers it changed). Each size's copy takes update n before any takes n + 1; who goes first rotates."""
    follower: dict[int, list[float]] = {count: [] for count in graphs}
    server: dict[int, list[float]] = {count: [] for count in graphs}
    order = list(graphs)
    for _ in range(repeats):
        replicas, served = {}, {}
        for count, graph in graphs.items():
            replicas[count] = GraphReplica()
            replicas[count].take_full(graph, 1)  # a copy: the updates change it in place
            live, markers = graph.copy(), MarkerCache()
            markers.redraw(live)  # at start-up, not per update
            served[count] = (live, markers)
        for version, data in enumerate(update_msgs, start=2):
            order = order[1:] + order[:1]
            for count in order:
                started = time.process_time()
                replicas[count].take_update(msg_to_update(deserialize_message(data, GraphUpdateMsg)), version)
                follower[count].append(time.process_time() - started)
            for count in order:
                live, markers = served[count]
                started = time.process_time()
                update = msg_to_update(deserialize_message(data, GraphUpdateMsg))
                apply_in_place(live, update)
                serialize_message(marker_changes_to_msg(markers.update(live, update), "map", Time()))
                server[count].append(time.process_time() - started)
        for replica in replicas.values():
            assert replica.in_sync and replica.version == len(update_msgs) + 1, replica.problem
    return {"follower": follower, "server": server}


def server_before(graph: SceneGraph, update_msgs: list[bytes], sample: int) -> float:
    """The server as it was: apply, then every marker of the graph redrawn and published; mean CPU per update."""
    live, times = graph.copy(), []
    for data in update_msgs[:sample]:
        started = time.process_time()
        apply_in_place(live, msg_to_update(deserialize_message(data, GraphUpdateMsg)))
        serialize_message(markers_to_msg(live, [], "map", Time()))
        times.append(time.process_time() - started)
    return statistics.mean(times)


def measure(counts: list[int], args: argparse.Namespace, full_every: int) -> dict[int, dict[str, float]]:
    graphs = {c: add_distractors(load_env("office"), c, seed=1) if c else load_env("office") for c in counts}
    updates = {c: skill_updates(g) for c, g in graphs.items()}
    msgs = {c: serialized_updates(u) for c, u in updates.items()}
    first = msgs[counts[0]]
    same = [[deserialize_message(d, GraphUpdateMsg) for d in m] for m in msgs.values()]  # CDR padding may differ
    assert all(m == same[0] for m in same), "the demo's updates differ between sizes: not the same work"
    timed = side_by_side(graphs, first, args.repeats)
    rows = {}
    for count, graph in graphs.items():
        full_bytes = len(serialize_message(graph_to_msg(graph, 1)))
        before = [before_side(graph, updates[count], args.before_sample) for _ in range(args.repeats)]
        update_bytes = statistics.mean(len(d) for d in first)
        periodic = full_bytes / full_every if full_every else 0.0
        times, served = timed["follower"][count], timed["server"][count]
        rows[count] = {
            "nodes": len(graph),
            "skills": len(first),
            "before_bytes": statistics.median(r["before_bytes"] for r in before),
            "before_cpu_ms": statistics.median(r["before_cpu_ms"] for r in before),
            "update_bytes": update_bytes,
            "amortized_bytes": update_bytes + periodic + full_bytes / args.session,
            "old_amortized_bytes": update_bytes + full_bytes / 50 + full_bytes / args.session,
            "median_ms": 1000 * statistics.median(times),
            "p90_ms": 1000 * statistics.quantiles(times, n=10)[-1],
            "server_before_ms": 1000 * server_before(graph, first, args.before_sample),
            "server_ms": 1000 * statistics.median(served),
        }
    return rows


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
        f"skills; follower and server CPU per update: median of every update of {args.repeats} runs, all sizes "
        "timed side by side (the same updates at every size).",
        "",
        "| office + distractors | nodes | skills | full graph per skill (before) | amortized per skill, full graphs "
        "counted | before/after | same with a full graph every 50 | follower CPU before | follower per update "
        "(median, p90) | ratio to 1k | server per update, every marker redrawn (before) | server per update, "
        "changed markers only | server before/after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    print("\n".join(lines), flush=True)
    rows = measure([int(c) for c in args.sizes.split(",")], args, full_every)
    base = rows.get(1000)
    for count, row in rows.items():
        flat = f"{row['median_ms'] / base['median_ms']:.2f}x" if base and count >= 1000 else ""
        lines.append(
            f"| {count:,} | {row['nodes']:,.0f} | {row['skills']:.0f} | {row['before_bytes']:,.0f} B "
            f"| {row['amortized_bytes']:,.0f} B (updates {row['update_bytes']:,.0f} B) "
            f"| {row['before_bytes'] / row['amortized_bytes']:,.0f}x "
            f"| {row['before_bytes'] / row['old_amortized_bytes']:,.0f}x | {row['before_cpu_ms']:,.2f} ms "
            f"| {row['median_ms']:.3f} ms, {row['p90_ms']:.3f} ms | {flat} | {row['server_before_ms']:,.2f} ms "
            f"| {row['server_ms']:.3f} ms | {row['server_before_ms'] / row['server_ms']:,.0f}x |"
        )
        print(lines[-1], flush=True)
    if args.write:
        note = (
            "\n\nBefore: the whole graph published after every skill and rebuilt by each follower through the loader; "
            "after: the update with its version, patched into the follower's copy in place. Server: apply plus the "
            "RViz markers, all of them redrawn after every update (before) or only those the update changed (after). "
            "See the script's docstring and docs/concepts/graph_updates.md."
        )
        measured_doc.write(args.write, "Scene-graph updates: bytes and follower CPU per skill", "\n".join(lines) + note)


if __name__ == "__main__":
    main()
