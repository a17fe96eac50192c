#!/usr/bin/env python3
"""Graph load times: our native format against spark_dsg loading the same graph from its JSON and binary files.

    scripts/ws_env.sh python scripts/bench_graph_load.py --write docs/measured/graph_load.md
    scripts/ws_env.sh python scripts/bench_graph_load.py [--sizes 10000 100000] [--repeat 7]

For each generated building the graph is saved as a native file in both layouts (`save`, `save(...,
layout="columns")`) and exported with `export_hydra` to .json and .sparkdsg. One run then loads the four files in
turn, --repeat times, and reports medians of CPU time (time.process_time): ours is `load(path)` (read, parse,
build, every check) plus the collector's first pass over what it built; spark_dsg's is `DynamicSceneGraph.load` in
a child process (its readers can crash on odd input, so it never runs in this one), timed there. The target and
the ratios to spark_dsg are the columns layout's, the one meant for large graphs. "Item by item" is the loader
this one replaced (json module, one check and one networkx call per node and edge), kept as the path that names a
bad file's culprit. Targets (issue 28): 10k nodes <= 30 ms, 100k <= 400 ms.

The loads are interleaved and each frees the graph before the next, so at 100k nodes every load faults its memory
in afresh, as a program's first load does; the time includes that and the collector's first pass on purpose.
CPU time moves by 15-30% between runs on a shared machine: compare layouts or builds within one run, and see
docs/concepts/graph_loading.md for instruction counts, which do not.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import measured_doc

from sayplan_core.envs.generator import generate_building, spec_for_size
from sayplan_core.graph.importers.hydra_export import export_hydra
from sayplan_core.graph.model import gc_paused
from sayplan_core.graph.native_format import _checked_graph, graph_to_dict, load, read_text, save, validate

TARGET_MS = {10_000: 30.0, 100_000: 400.0}

#: The child process: reads a path per line, loads it with spark_dsg, answers with its CPU time in ms.
WORKER = """
import sys, time
import spark_dsg
for line in sys.stdin:
    start = time.process_time()
    graph = spark_dsg.DynamicSceneGraph.load(line.strip())
    took = (time.process_time() - start) * 1000
    print(f"{took} {graph.num_nodes()}", flush=True)
    del graph
"""


class SparkWorker:
    """spark_dsg in a child process, kept for the whole run."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def load_ms(self, path: Path) -> tuple[float, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        if len(answer) != 2:
            raise SystemExit(f"spark_dsg's process failed on {path} (exit {self.proc.poll()})")
        return float(answer[0]), int(answer[1])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def ours_ms(path: Path) -> float:
    start = time.process_time()
    graph = load(path)
    gc.collect(0)  # the collector's first pass over the new objects, which would otherwise come just after
    took = (time.process_time() - start) * 1000
    del graph
    return took


def item_by_item_ms(path: Path) -> float:
    """The replaced loader: json module and _checked_graph (one check and networkx call per item)."""
    start = time.process_time()
    with gc_paused():
        data = json.loads(read_text(path))
        graph = _checked_graph(str(data.get("name", "")), data["nodes"], data["edges"], str(path))
        validate(graph)
        del data
    gc.collect(0)
    took = (time.process_time() - start) * 1000
    del graph
    return took


def measure(size: int, repeat: int, folder: Path, spark: SparkWorker) -> dict[str, Any]:
    graph = generate_building(spec_for_size(size, seed=1))
    native, columns, hydra_json, hydra_bin = (
        folder / f"g{size}.json",
        folder / f"g{size}.columns.json",
        folder / f"g{size}.hydra.json",
        folder / f"g{size}.sparkdsg",
    )
    save(graph, native, layout="rows")
    save(graph, columns, layout="columns")
    print(f"exporting {len(graph)} nodes to spark_dsg's formats ...", file=sys.stderr, flush=True)
    export_hydra(graph, hydra_json)
    export_hydra(graph, hydra_bin)
    for path in (native, columns):
        if graph_to_dict(load(path), exact=False) != graph_to_dict(graph, exact=False):
            raise SystemExit(f"{path} does not load back as the graph saved")
    runs: dict[str, list[float]] = {"ours": [], "rows": [], "item_by_item": [], "spark_json": [], "spark_binary": []}
    spark_nodes = set()
    for _ in range(repeat):
        runs["ours"].append(ours_ms(columns))
        runs["rows"].append(ours_ms(native))
        took, count = spark.load_ms(hydra_json)
        runs["spark_json"].append(took)
        spark_nodes.add(count)
        took, count = spark.load_ms(hydra_bin)
        runs["spark_binary"].append(took)
        spark_nodes.add(count)
    for _ in range(max(1, repeat // 3)):
        runs["item_by_item"].append(item_by_item_ms(native))
    row: dict[str, Any] = {key: statistics.median(values) for key, values in runs.items()}
    row.update(
        nodes=len(graph),
        spark_nodes=sorted(spark_nodes),
        mb={
            k: p.stat().st_size / 1e6
            for k, p in (("ours", columns), ("rows", native), ("json", hydra_json), ("binary", hydra_bin))
        },
    )
    return row


def markdown(rows: list[dict[str, Any]], repeat: int) -> list[str]:
    out = [
        f"## Loading a generated building (median CPU ms of {repeat} runs, side by side in one run)",
        "",
        "| nodes | ours (columns) | target | spark_dsg JSON | spark_dsg binary | columns / spark JSON "
        "| columns / spark binary | ours (rows) | item by item (before) | speed-up (columns) "
        "| file MB: columns / rows / JSON / binary |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        target = TARGET_MS.get(r["nodes"] // 1000 * 1000) or TARGET_MS.get(round(r["nodes"], -4))
        verdict = "-" if target is None else f"<= {target:.0f} ({'met' if r['ours'] <= target else 'not met'})"
        mb = r["mb"]
        out.append(
            f"| {r['nodes']} | {r['ours']:.1f} | {verdict} | {r['spark_json']:.1f} | {r['spark_binary']:.1f} "
            f"| {r['ours'] / r['spark_json']:.2f} | {r['ours'] / r['spark_binary']:.2f} | {r['rows']:.1f} "
            f"| {r['item_by_item']:.1f} | {r['item_by_item'] / r['ours']:.1f}x "
            f"| {mb['ours']:.1f} / {mb['rows']:.1f} / {mb['json']:.1f} / {mb['binary']:.1f} |"
        )
    out += [
        "",
        "Ours: `load(path)` (read, orjson parse, build, every check, the collector's first pass) of the file "
        '`save(graph, path, layout="columns")` writes, and of the rows file; spark_dsg: '
        "`DynamicSceneGraph.load` in a child process (nodes it read: "
        + ", ".join(str(r["spark_nodes"]) for r in rows)
        + "). Item by item: the loader before issue 28 (json module, a check and a networkx call per item), "
        "still the path that names a bad file's culprit.",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    args = measured_doc.size_args(__doc__, argv)
    spark = SparkWorker()
    try:
        with tempfile.TemporaryDirectory() as folder:
            rows = [measure(size, args.repeat, Path(folder), spark) for size in args.sizes]
    finally:
        spark.close()
    text = "\n".join(markdown(rows, args.repeat))
    measured_doc.publish(args.write, "Graph load: native format and spark_dsg", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
