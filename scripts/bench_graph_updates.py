"""Bytes on the wire and follower CPU per executed skill: full graph per skill (before) vs incremental updates.

    scripts/ws_env.sh python scripts/bench_graph_updates.py [--repeats 5] [--write docs/measured/graph_updates.md]

The demo task (office-lh-05, its reference plan, run by the simulated robot) produces
one GraphUpdate per skill. For the office with 0 and 1000 distractor objects, side by
side in one run:
- before: the server publishes the whole graph after every skill (graph_to_msg, CDR-serialized) and every
  follower rebuilds its copy from it (deserialize + msg_to_graph through the validating loader);
- after: the server publishes the update (with its version) and, every `full_graph_every` updates, the whole graph;
  a follower deserializes the update and patches its copy (GraphReplica.take_update: apply_update + validation).
Figures are medians over `--repeats` runs, per executed skill, for one follower (the stack has three: planner,
path planner, perception).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
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


def timed(fn: Callable[[], None]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def run(graph: SceneGraph, updates: list[GraphUpdate], full_every: int) -> dict[str, float]:
    # before: a full graph per skill
    states, live = [], graph
    for update in updates:
        live = apply_update(live, update)
        states.append(live)
    full_msgs = [serialize_message(graph_to_msg(g, v + 2)) for v, g in enumerate(states)]

    def before() -> None:
        for data in full_msgs:
            msg_to_graph(deserialize_message(data, SceneGraphMsg), require_agent=False)

    # after: the update per skill, plus a full graph every `full_every` updates
    update_msgs = []
    for version, update in enumerate(updates, start=2):
        msg = update_to_msg(update)
        msg.base_version, msg.version = version - 1, version
        update_msgs.append(serialize_message(msg))
    checkpoints = [full_msgs[i] for i in range(len(updates)) if full_every and (i + 2) % full_every == 0]

    def after() -> None:
        replica = GraphReplica()
        replica.take_full(graph, 1)
        for version, data in enumerate(update_msgs, start=2):
            replica.take_update(msg_to_update(deserialize_message(data, GraphUpdateMsg)), version)
        for data in checkpoints:  # a follower in step only reads the version of a periodic full graph
            deserialize_message(data, SceneGraphMsg)
        assert replica.in_sync and replica.version == len(updates) + 1

    n = len(updates)
    return {
        "before_bytes": sum(len(d) for d in full_msgs) / n,
        "after_bytes": (sum(len(d) for d in update_msgs) + sum(len(d) for d in checkpoints)) / n,
        "before_cpu_ms": 1000 * timed(before) / n,
        "after_cpu_ms": 1000 * timed(after) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file (docs/measured/)")
    args = parser.parse_args()
    full_every = SceneGraphServerOptions().full_graph_every
    lines = [
        f"Per executed skill, one follower; full graph every {full_every} updates; medians of {args.repeats} runs.",
        "",
        "| office + distractors | nodes | skills | bytes before | bytes after | follower CPU before | after |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    print("\n".join(lines))
    for count in (0, 1000):
        graph = add_distractors(load_env("office"), count, seed=1) if count else load_env("office")
        updates = skill_updates(graph)
        rows = [run(graph, updates, full_every) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        lines.append(
            f"| {count} | {len(graph)} | {len(updates)} | {med['before_bytes']:,.0f} | {med['after_bytes']:,.0f} "
            f"({med['before_bytes'] / med['after_bytes']:.0f}x less) | {med['before_cpu_ms']:.2f} ms "
            f"| {med['after_cpu_ms']:.2f} ms ({med['before_cpu_ms'] / med['after_cpu_ms']:.0f}x less) |"
        )
        print(lines[-1])
    if args.write:
        note = (
            "\n\nBefore: the whole graph published after every skill and rebuilt by each follower through the loader; "
            "after: the update with its version, patched into the follower's copy (see the script's docstring)."
        )
        measured_doc.write(args.write, "Scene-graph updates: bytes and follower CPU per skill", "\n".join(lines) + note)


if __name__ == "__main__":
    main()
