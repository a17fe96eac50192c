"""Where the bench scripts write their figures: a Markdown file under docs/measured/ that says what produced it.

The docs link to these files instead of copying figures by hand, so a figure and the command that measured it stay
together. The header records the date, the machine's load and two speed probes, because timings on a shared
machine vary with them: on the 2-core VM the same commit's planning overhead has measured 2-3x apart within an
hour with the load near 0, while a tight arithmetic loop stayed within 10%. The memory probe moved with it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import shlex
import statistics
import sys
import time
from pathlib import Path


def header(title: str) -> str:
    """`# title` and one line: the command that was run, when, on how many cores, under what load."""
    command = "scripts/ws_env.sh python " + shlex.join(sys.argv)
    load = os.getloadavg()[0]
    when = datetime.date.today().isoformat()
    alloc_ms, read_ns = machine_speed()
    return (
        f"# {title}\n\nWritten by `{command}` on {when} ({os.cpu_count()} cores, load average {load:.1f} "
        f"when written; machine speed then: {alloc_ms:.0f} ms CPU to allocate a million empty dicts, {read_ns:.0f} ns "
        "per random read of a million-entry dict; figures scale with these, graph walks with the second).\n\n"
    )


def machine_speed() -> tuple[float, float]:
    """How fast this machine runs Python right now: CPU ms to allocate a million empty dicts (allocation-bound),
    and CPU ns per read of a random key of a million-entry dict (memory-bound, as graph walks are). Medians of 5."""
    allocs: list[float] = []
    for _ in range(5):
        start = time.process_time()
        items: list[dict[str, int]] = [{} for _ in range(1_000_000)]
        allocs.append((time.process_time() - start) * 1000)
        del items
    table = {f"n{i}": i for i in range(1_000_000)}
    keys = list(table)
    random.Random(0).shuffle(keys)
    keys = keys[:200_000]
    reads: list[float] = []
    for _ in range(5):
        start = time.process_time()
        total = 0
        for key in keys:
            total += table[key]
        reads.append((time.process_time() - start) * 1e9 / len(keys))
    return statistics.median(allocs), statistics.median(reads)


def write(path: Path, title: str, text: str) -> None:
    """Write `text` under the header to `path` (its folder must exist)."""
    path.write_text(header(title) + text.rstrip("\n") + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def publish(path: Path | None, title: str, text: str) -> None:
    """Print the figures, and write them under the header to `path` when given (`--write`)."""
    print(text)
    if path is not None:
        write(path, title, text)


def size_args(doc: str, argv: list[str] | None, repeat: int = 7) -> argparse.Namespace:
    """The options of a bench over generated buildings: --sizes (nodes), --repeat (runs per figure), --write."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file")
    return parser.parse_args(argv)
