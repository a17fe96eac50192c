#!/usr/bin/env python3
"""Hydra (spark_dsg) export and import times on generated buildings, and whether the round trip is exact.

    scripts/ws_env.sh python scripts/bench_hydra.py [--sizes 1000 10000]

Prints a Markdown table; a binary import includes the child process that reads the file first.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sayplan_core.envs.generator import generate_building, spec_for_size
from sayplan_core.graph.importers.hydra import import_hydra
from sayplan_core.graph.importers.hydra_export import export_hydra
from sayplan_core.graph.native_format import graph_to_dict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    print("| nodes | file | export s | import s | identical |")
    print("|------:|------|---------:|---------:|-----------|")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            graph = generate_building(spec_for_size(size))
            for suffix in (".sparkdsg", ".json"):
                path = Path(folder) / f"graph{suffix}"
                start = time.perf_counter()
                export_hydra(graph, path)
                exported = time.perf_counter() - start
                start = time.perf_counter()
                back = import_hydra(path).graph
                imported = time.perf_counter() - start
                same = graph_to_dict(graph, exact=True) == graph_to_dict(back, exact=True)
                print(f"| {len(graph)} | {suffix} | {exported:.2f} | {imported:.2f} | {same} |")


if __name__ == "__main__":
    main()
