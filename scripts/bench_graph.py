#!/usr/bin/env python3
"""Scene-graph benchmarks: token tables for the bundled envs and operation times at scale.

    make bench    # scripts/ws_env.sh python scripts/bench_graph.py --write docs/measured/graph.md
    scripts/ws_env.sh python scripts/bench_graph.py [--sizes 1000 10000] [--repeat 15] [--json]

Prints Markdown tables; `--write docs/measured/graph.md` also writes them there (the docs link to that file instead
of copying its figures). Times are medians over --repeat runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import measured_doc

from sayplan_core.cli.env_commands import token_table
from sayplan_core.envs import load_env
from sayplan_core.envs.generator import generate_building, spec_for_size
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.native_format import dumps, loads
from sayplan_core.graph.views import collapse
from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import verify_plan

#: SayPlan's own token counts (Rana et al. 2023): full graph -> collapsed graph, GPT-4 tokenizer.
SAYPLAN_PAPER_TOKENS = {"office": (6731, 878), "home": (6598, 1817)}


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fifty_step_plan(graph: SceneGraph) -> list[PlanStep]:
    """A feasible 50-step plan that visits rooms spread over the whole building."""
    rooms = graph.ids_of_type("room")
    stride = max(1, len(rooms) // 12)
    plan: list[PlanStep] = []
    for room in rooms[::stride]:
        for asset in graph.children(room):
            node = graph.nodes[asset]
            if node.type == "asset" and "closed" not in node.states and graph.children(asset):
                obj = graph.children(asset)[0]
                plan += [
                    PlanStep("goto", room),
                    PlanStep("access", asset),
                    PlanStep("pickup", obj),
                    PlanStep("release", obj),
                ]
                break
        if len(plan) >= 49:
            break
    plan = plan[:49] if len(plan) >= 49 else plan
    while len(plan) % 4:
        plan.pop()
    return [*plan, PlanStep("done")][:50]


def scale_row(size: int, repeat: int) -> dict[str, Any]:
    graph = generate_building(spec_for_size(size, seed=1))
    text = dumps(graph, indent=None, layout="rows")  # the rows layout this bench has always timed
    planner = PathPlanner(graph)
    a, b = planner.farthest_pair()
    room = graph.ids_of_type("room")[len(graph.ids_of_type("room")) // 2]
    plan = fifty_step_plan(graph)
    result = verify_plan(graph, plan)
    if not result.success:
        raise SystemExit(f"benchmark plan is infeasible on {size} nodes: {result.feedback}")

    def expand() -> None:
        view = collapse(graph)
        view.expand(room)

    def search(method: str) -> None:
        # a new planner each time: it keeps the paths it found and computes edge costs on first use, so a reused
        # one would time a dictionary lookup; the component cache is dropped for the same reason
        graph._components = None
        PathPlanner(graph).shortest_path(a, b, method=method)

    return {
        "nodes": len(graph),
        "load_ms": median_ms(lambda: loads(text), max(1, repeat // 5)),
        "collapse_ms": median_ms(lambda: collapse(graph).visible_ids(), repeat),
        "expand_ms": median_ms(expand, repeat),
        "verify50_ms": median_ms(lambda: verify_plan(graph, plan), repeat),
        "plan_steps": len(plan),
        "dijkstra_ms": median_ms(lambda: search("dijkstra"), repeat),
        "astar_ms": median_ms(lambda: search("astar"), repeat),
        "path": f"{a} -> {b}",
    }


def markdown(tables: dict[str, dict[str, Any]], rows: list[dict[str, Any]], repeat: int) -> list[str]:
    """The tables as Markdown lines: tokens of the bundled envs (and SayPlan's own), operation times at scale."""
    out = ["## Tokens: full vs collapsed graph", ""]
    out.append(
        "| env | tokenizer | rooms | poses | assets | objects | full graph | collapsed | reduction "
        "| collapsed with poses | reduction with poses |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for key, t in tables.items():
        env, enc = key.split("/")
        g = t["groups"]
        out.append(
            f"| {env} | {enc} | {g['room']['count']} | {g['pose']['count']} | {g['asset']['count']} "
            f"| {g['object']['count']} | {t['full_tokens']} | {t['collapsed_tokens']} | {t['reduction_percent']}% "
            f"| {t['collapsed_with_poses_tokens']} | {t['reduction_with_poses_percent']}% |"
        )
    paper = ", ".join(
        f"{env} {full} -> {collapsed} ({(1 - collapsed / full) * 100:.1f}%)"
        for env, (full, collapsed) in SAYPLAN_PAPER_TOKENS.items()
    )
    out += ["", f"SayPlan (paper, its own graphs, GPT-4 tokenizer): {paper}.", ""]
    out += [f"## Scene-graph operations on generated buildings (median of {repeat} runs, ms)", ""]
    out.append(
        "| nodes | load JSON | collapse | expand room | verify 50-step plan | Dijkstra far rooms | A* far rooms |"
    )
    out.append("|---|---|---|---|---|---|---|")
    for r in rows:
        out.append(
            f"| {r['nodes']} | {r['load_ms']:.1f} | {r['collapse_ms']:.2f} | {r['expand_ms']:.2f} "
            f"| {r['verify50_ms']:.2f} | {r['dijkstra_ms']:.2f} | {r['astar_ms']:.2f} |"
        )
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        growth = last["nodes"] / first["nodes"]
        out += ["", f"Growth from {first['nodes']} to {last['nodes']} nodes ({growth:.0f}x):", ""]
        for key in ("load_ms", "collapse_ms", "expand_ms", "verify50_ms", "dijkstra_ms", "astar_ms"):
            ratio = last[key] / first[key] if first[key] else float("inf")
            out.append(f"- {key[:-3]}: {ratio:.1f}x")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--write", type=Path, help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)

    tables = {
        f"{env}/{enc}": token_table(load_env(env), enc)
        for env in ("office", "home")
        for enc in ("cl100k_base", "o200k_base")
    }
    rows = []
    for size in args.sizes:
        print(f"measuring a generated building of ~{size} nodes ...", file=sys.stderr, flush=True)
        rows.append(scale_row(size, args.repeat))
    if args.json:
        print(json.dumps({"tokens": tables, "scale": rows}, indent=1))
        return 0
    text = "\n".join(markdown(tables, rows, args.repeat))
    measured_doc.publish(args.write, "Scene-graph figures", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
