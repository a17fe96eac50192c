"""Figures for the planner table that need no LLM: retrieval sizes, vector search, LTL optimality and speed.

    scripts/ws_env.sh python scripts/bench_planners.py [--out docs/measured/planners.md] [--quick]

1. Context size (cl100k tokens of the scene-graph part of each prompt) on the bundled planning tasks, with 0, 300
   and 1000 distractor objects, for Full-Mem (whole graph every step), SayPlan (collapsed graph, the goal rooms
   expanded one call at a time: an ideal search) and EmbodiedRAG-strict (the subgraph retrieved for the task's goal
   nodes, recomputed after every step of the reference plan). Pre-retrieval is an oracle here: the labels of the
   nodes the goal names; an LLM's list would differ. Retrieval recall: goal nodes present in the first subgraph.
2. Vector search: faiss IndexFlatIP vs numpy, per query and per update, at several index sizes; the cost of
   embedding a query; the local model's load time and example step-relevance scores.
3. LTL: MONA automaton build times for 2..10 propositions; missions of six shapes (reach in any order, ordered,
   always-avoid, three objects in one room, until, implication) from random starts, planned by product A* with the
   consistent heuristic, by the same search without it, and by the in-order baseline.
   `--sections ltl` runs this part alone (about a minute).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import networkx as nx
import numpy as np

from sayplan_core.envs import load_env
from sayplan_core.envs.generator import BuildingSpec, add_distractors, generate_building
from sayplan_core.envs.tasks import apply_setup, load_tasks
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.graph.views import collapse
from sayplan_core.ltl import (
    NoSatisfyingPathError,
    ProductSearch,
    build_dfa,
    dijkstra_to_each_goal,
    holds,
    parse_prefix,
)
from sayplan_core.planners.embodiedrag import EntityQuery, Retrieval
from sayplan_core.retrieval import EntityIndex, MiniLmEmbedder, default_embedder, entity_label
from sayplan_core.retrieval.vector_store import FaissStore, NumpyStore, VectorStore
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState


def tokens_section(distractor_counts: list[int], lines: list[str]) -> None:
    # planning tasks (office) with their reference plans, search tasks (home) as a single call
    tasks = [t for t in load_tasks() if (t.predicates and t.reference_plan) or (t.search and t.search.nodes())]
    actions = load_action_set("sayplan")
    lines += [
        "## Context tokens per planning call (scene-graph part): planning tasks along their reference plans, "
        "search tasks as one call",
        "",
        "| env | distractors | tasks | Full-Mem per step | SayPlan per call | EmbodiedRAG per step "
        "| Full-Mem cumulative | SayPlan cumulative | EmbodiedRAG cumulative | retrieval recall |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    embedder = default_embedder()
    for env in ("office", "home"):
        base = load_env(env)
        for count in distractor_counts:
            graph0 = add_distractors(base, count, seed=1) if count else base
            index = EntityIndex(embedder)
            index.sync(graph0)
            full_step, say_call, rag_step, full_cum, say_cum, rag_cum, recall = [], [], [], [], [], [], []
            for task in (t for t in tasks if t.env == env):
                graph = apply_setup(graph0, task)
                index.sync(graph)
                named = [n for g in task.predicates for n in g.nodes()] if task.predicates else task.search.nodes()  # type: ignore[union-attr]
                goal_nodes = sorted({n for n in named if n in graph.nodes})
                plan = list(task.reference_plan) if task.predicates else [PlanStep("done", "")]
                steps = [s for s in plan if s.action != "goto"]
                # Full-Mem: the whole graph at every step
                full = count_tokens(to_prompt_text(graph))
                full_step.append(full)
                full_cum.append(full * len(steps))
                # SayPlan: collapsed, then one expand per goal room, then the plan call
                view = collapse(graph)
                calls = [count_tokens(view.text())]
                for room in dict.fromkeys(graph.room_of(n) for n in goal_nodes):
                    if room and room not in view.expanded:
                        view.expand(room)
                        calls.append(count_tokens(view.text()))
                say_call.append(statistics.mean(calls))
                say_cum.append(sum(calls))
                # EmbodiedRAG-strict with oracle pre-retrieval, re-retrieved after every executed step
                retrieval = Retrieval(index, top_k=3, threshold=0.45)
                retrieval.add([EntityQuery(entity_label(graph, n), ("states",)) for n in goal_nodes])
                state = WorldState.from_graph(graph)
                per_step = []
                first_ids: list[str] = []
                for step in plan:
                    text, ids = retrieval.subgraph_text(state.apply_to())
                    first_ids = first_ids or ids
                    if step.action != "goto":
                        per_step.append(count_tokens(text))
                    apply_step(state, step, actions)
                    index.sync(state.apply_to(), state.changed_nodes())
                index.sync(graph)
                rag_step.append(statistics.mean(per_step) if per_step else 0)
                rag_cum.append(sum(per_step))
                recall.append(sum(n in first_ids for n in goal_nodes) / max(1, len(goal_nodes)))
            n = len(full_step)
            lines.append(
                f"| {env} | {count} | {n} | {statistics.mean(full_step):.0f} | {statistics.mean(say_call):.0f} | "
                f"{statistics.mean(rag_step):.0f} | {statistics.mean(full_cum):.0f} | {statistics.mean(say_cum):.0f} | "
                f"{statistics.mean(rag_cum):.0f} | {statistics.mean(recall):.2f} |"
            )
            print(lines[-1], flush=True)
    lines.append("")


def timed(fn: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1000


def churn(store: VectorStore, ids: np.ndarray, vectors: np.ndarray) -> None:
    store.add(ids, vectors)
    store.remove(ids)


def vector_section(sizes: list[int], lines: list[str]) -> None:
    lines += [
        "## Vector search, 384-d, exact inner product (ms)",
        "",
        "| entities | faiss query | numpy query | faiss add+remove 10 | numpy add+remove 10 |",
        "| --- | --- | --- | --- | --- |",
    ]
    rng = np.random.default_rng(0)
    for size in sizes:
        vectors = rng.normal(size=(size, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = np.arange(size, dtype=np.int64)
        query = vectors[:1].copy()
        row = [f"{size}"]
        stores: list[VectorStore] = [FaissStore(384), NumpyStore(384)]
        for store in stores:
            store.add(ids, vectors)
        for store in stores:
            row.append(f"{timed(partial(store.search, query, 5), 200):.3f}")
        extra = np.arange(size, size + 10, dtype=np.int64)
        for store in stores:
            row.append(f"{timed(partial(churn, store, extra, vectors[:10]), 50):.3f}")
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    embedder = MiniLmEmbedder()  # its own text cache: every label is embedded (the model itself is shared)
    embedder.embed(["warm-up"])
    graph = add_distractors(load_env("office"), 1000, seed=1)
    before = embedder.texts_embedded
    start = time.perf_counter()
    index = EntityIndex(embedder)
    index.sync(graph)
    build = time.perf_counter() - start
    fresh = embedder.texts_embedded - before
    graph.set_parent("coffee_mug", "nikos_desk", "ontop_of")
    start = time.perf_counter()
    stats = index.sync(graph, ["coffee_mug"])
    update = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    full_diff = index.sync(graph)
    diff_ms = (time.perf_counter() - start) * 1000
    lines += [
        "",
        f"Office + 1000 distractors: {len(index)} documents indexed in {build:.1f} s "
        f"(MiniLM on the CPU, {fresh} distinct labels embedded); "
        f"moving one object: {update:.2f} ms ({stats}); a full-graph diff with nothing changed: {diff_ms:.1f} ms "
        f"({full_diff}).",
        "",
    ]
    print(lines[-2], flush=True)
    queries = [f"query number {i} about a mug" for i in range(50)]  # unseen texts: no cache hits
    start = time.perf_counter()
    for text in queries:
        embedder.embed([text])
    per_query = (time.perf_counter() - start) / len(queries) * 1000
    lines += [f"Embedding one query (MiniLM, CPU): {per_query:.1f} ms.", ""]
    print(lines[-2], flush=True)


def embedding_section(lines: list[str]) -> None:
    """How long the local model takes to load, and what its step-relevance scores look like (abstract planner)."""
    start = time.perf_counter()
    embedder = MiniLmEmbedder()
    embedder.embed(["load"])
    load_s = time.perf_counter() - start
    command = "Put the fruit in the same place."
    steps = [
        "put the apple on the kitchen bench with the other fruit",
        "move the orange to the fridge",
        "move the banana to the kitchen bench",
        "move the coffee mug to the desk",
        "move the stapler to the kitchen bench",
    ]
    scores = embedder.embed(steps) @ embedder.embed([command])[0]
    lines += [
        "## The local embedding model",
        "",
        f"Import and load of all-MiniLM-L6-v2 (torch, CPU) in a fresh process: {load_s:.1f} s.",
        "",
        f'Step relevance to "{command}" (cosine, the abstract planner drops steps under 0.5):',
        "",
        "| step | cosine |",
        "| --- | --- |",
        *[f"| {step} | {score:.2f} |" for step, score in zip(steps, scores.tolist(), strict=True)],
        "",
    ]
    print("\n".join(lines[-len(steps) - 6 :]), flush=True)


def _chain(op: str, parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{op} {parts[0]} {_chain(op, parts[1:])}"


def _ordered(goals: list[str]) -> str:
    return f"F {goals[0]}" if len(goals) == 1 else f"F & {goals[0]} {_ordered(goals[1:])}"


def automaton_shapes(n: int) -> dict[str, str]:
    """Mission shapes over n propositions x0..x{n-1}, for the automaton build times."""
    x = [f"x{i}" for i in range(n)]
    half = max(1, n // 2)
    return {
        "ordered reach": _ordered(x),
        "reach in any order": _chain("&", [f"F {a}" for a in x]),
        "reach, always avoid": _chain("&", [f"F {a}" for a in x[: n - half]] + [f"G ! {a}" for a in x[n - half :]]),
        "ordered, avoid until the first": _chain(
            "&", [_ordered(x[: n - half])] + [f"U ! {a} {x[0]}" for a in x[n - half :]]
        ),
        "implications": _chain("&", [f"F {x[0]}"] + [f"G -> {x[i]} F {x[i + 1]}" for i in range(1, n - 1)] or ["true"]),
        "equivalences": _chain(
            "&", [f"F {x[0]}"] + [f"<-> F {x[i]} F {x[i + 1]}" for i in range(1, n - 1)] or ["true"]
        ),
    }


def automaton_rows(repeat: int, lines: list[str]) -> None:
    from sayplan_core.ltl.automaton import _run_mona  # the cache, cleared so that every build runs MONA

    lines += [
        "## LTL automata: build time by number of propositions (MONA, read from its explicit output)",
        "",
        "| propositions | formulas | builds | median ms | max ms | max DFA states |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n in range(2, 11):
        times: list[float] = []
        states = 0
        for text in automaton_shapes(n).values():
            formula = parse_prefix(text)
            for _ in range(repeat):
                _run_mona.cache_clear()
                t0 = time.perf_counter()
                dfa = build_dfa(formula)
                times.append((time.perf_counter() - t0) * 1000)
                states = max(states, len(dfa.states))
        lines.append(
            f"| {n} | {len(automaton_shapes(n))} | {len(times)} | {statistics.median(times):.1f} | "
            f"{max(times):.1f} | {states} |"
        )
        print(lines[-1], flush=True)
    lines.append("")


MISSIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    # shape: (template over rooms r*, objects o*, one room's assets and objects i*, and a pose a on the in-order
    # baseline's path, to avoid; the goals the in-order baseline visits, in this order)
    "reach 3, any order": ("& F {r0} & F {r1} F {o0}", ("r0", "r1", "o0")),
    "ordered reach 3": ("F & {r0} F & {r1} F {o0}", ("r0", "r1", "o0")),
    "reach 2, always avoid 1": ("& & F {r0} F {o0} G ! {a}", ("r0", "o0")),
    "3 objects in one room": ("& & F {i0} F {i1} F {i2}", ("i0", "i1", "i2")),
    "until": ("& U ! {a} {r0} F {o0}", ("r0", "o0")),
    "implication": ("& F {r0} G -> {r1} F {o0}", ("r0",)),
}


def _connected_without(graph: SceneGraph, removed: str, places: list[str]) -> bool:
    """Whether all `places` stay in one navigation component when `removed` is taken out."""
    view = nx.restricted_view(graph.nav, [removed], [])
    return all(nx.has_path(view, places[0], p) for p in places[1:])


def _mission(
    template: str, goal_keys: tuple[str, ...], graph: SceneGraph, start: str, rng: random.Random
) -> tuple[str, list[str]]:
    rooms = graph.ids_of_type("room")
    full = [r for r in rooms if sum(graph.nodes[d].type in ("asset", "object") for d in graph.descendants(r)) >= 3]
    room = rng.choice(full)
    inside = rng.sample([d for d in graph.descendants(room) if graph.nodes[d].type in ("asset", "object")], 3)
    r = rng.sample(rooms, 3)
    values = {"r0": r[0], "r1": r[1], "r2": r[2], "o0": rng.choice(graph.ids_of_type("object"))}
    values |= {f"i{k}": inside[k] for k in range(3)}
    goals = [values[k] for k in goal_keys]
    if "{a}" in template:
        # a pose the in-order path walks through and the robot can go around, so that avoiding it matters;
        # else (tree-shaped corridors) a room that is not a goal
        walked = dijkstra_to_each_goal(graph, start, goals).nodes[1:-1]
        places = [start, *(g if graph.nodes[g].type in ("room", "pose") else graph.room_of(g) or start for g in goals)]
        around = [
            n
            for n in dict.fromkeys(walked)
            if n in graph.nav
            and graph.nodes[n].type == "pose"
            and n not in places
            and _connected_without(graph, n, places)
        ]
        values["a"] = rng.choice(around or [x for x in rooms if x not in places])
    return template.format(**values), goals


def ltl_section(missions: int, lines: list[str], repeat: int = 5) -> None:
    """Automaton build times, then missions of several shapes from random starts on four buildings."""
    automaton_rows(repeat, lines)
    lines += [
        "## LTL missions: product A* vs the search without its heuristic and the in-order baseline",
        "",
        "| graph | nav nodes | mission | runs | no path | A* ms | A* expansions | no-heuristic ms "
        "| no-heuristic expansions | optimal / in-order cost | in-order violates |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    graphs = {
        "office": load_env("office"),
        "home": load_env("home"),
        "generated 4x25 rooms": generate_building(BuildingSpec(floors=4, rooms_per_floor=25, seed=2)),
        "generated 10x200 rooms": generate_building(BuildingSpec(floors=10, rooms_per_floor=200, seed=2)),
    }
    for name, graph in graphs.items():
        navs = sorted(graph.nav.nodes)
        for kind, (template, goal_keys) in MISSIONS.items():
            rng = random.Random(f"{name} {kind}")
            rows: list[tuple[float, ...]] = []
            unsatisfiable = 0
            while len(rows) + unsatisfiable < missions:
                start = rng.choice(navs)
                text, goals = _mission(template, goal_keys, graph, start, rng)
                formula = parse_prefix(text)
                dfa = build_dfa(formula)
                t0 = time.perf_counter()
                try:
                    informed = ProductSearch(graph, dfa).search(start)
                except NoSatisfyingPathError:
                    unsatisfiable += 1
                    continue
                t1 = time.perf_counter()
                blind = ProductSearch(graph, dfa, use_heuristic=False).search(start)
                t2 = time.perf_counter()
                if abs(informed.cost - blind.cost) > 1e-6 or not holds(formula, informed.trace):
                    raise AssertionError(f"{text} from {start}: A* {informed.cost}, no heuristic {blind.cost}")
                base = dijkstra_to_each_goal(graph, start, goals, label_atoms=formula.atoms())
                rows.append(
                    (
                        (t1 - t0) * 1000,
                        informed.expansions,
                        (t2 - t1) * 1000,
                        blind.expansions,
                        informed.cost / base.cost if base.cost > 0 else 1.0,
                        0.0 if holds(formula, base.trace) else 1.0,
                    )
                )
            med = [statistics.median(c) for c in zip(*rows, strict=True)] if rows else [math.nan] * 6
            violates = sum(r[5] for r in rows)
            lines.append(
                f"| {name} | {graph.nav.number_of_nodes()} | {kind} | {len(rows)} | {unsatisfiable} | {med[0]:.1f} | "
                f"{med[1]:.0f} | {med[2]:.1f} | {med[3]:.0f} | {med[4]:.2f} | {violates:.0f}/{len(rows)} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "Medians over the missions of each row, each from a random start node. Every A* cost equals the cost of "
        "the search without the heuristic (checked), and every A* path satisfies its formula by the LTLf evaluator "
        "(checked). The in-order baseline walks to the nearest place where each goal holds, in the order the "
        "mission lists them, ignoring everything else in the mission; 'optimal / in-order cost' below 1 means the "
        "product search found a cheaper valid order, above 1 that the baseline's path is cheaper but breaks the "
        "mission ('in-order violates' counts those runs, checked by the evaluator). Search times include building "
        "the domain's labels and the heuristic's lower bounds; automata are cached by formula shape.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the tables to this Markdown file")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and missions (a smoke run)")
    parser.add_argument(
        "--sections",
        default="embedding,tokens,vectors,ltl",
        help="comma-separated subset of embedding, tokens, vectors, ltl",
    )
    args = parser.parse_args(argv)
    lines = ["# Planner figures without an LLM", "", "`scripts/ws_env.sh python scripts/bench_planners.py`", ""]
    sections = set(args.sections.split(","))
    if unknown := sections - {"embedding", "tokens", "vectors", "ltl"}:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    if "embedding" in sections:
        embedding_section(lines)  # first: it times the model load
    if "tokens" in sections:
        tokens_section([0, 300] if args.quick else [0, 300, 1000], lines)
    if "vectors" in sections:
        vector_section([1000] if args.quick else [1000, 10_000, 100_000], lines)
    if "ltl" in sections:
        ltl_section(3 if args.quick else 20, lines, 1 if args.quick else 5)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
