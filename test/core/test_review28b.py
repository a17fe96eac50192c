"""Hostile review of the issue-28 speed-ups (review28): what broke, kept as tests.

1. A columns file whose unplaced nodes come first made the bulk loader quadratic: `columns._positions` put each
   unplaced node's None in place with `list.insert`, which shifts every position after it. A 9 MB file of 400,000
   objects, half of them unplaced and listed first, took 16 s of CPU against 2 s for the same file with the
   unplaced nodes last (measured by hand with time.process_time). A file is untrusted, so its load time must grow
   with its size, not with its square.
"""

from __future__ import annotations

import json
import time

from sayplan_core.graph import graph_from_dict, loads
from sayplan_core.graph.native_format import graph_to_dict


def _objects_file(count: int, unplaced: list[int]) -> str:
    """A columns file of `count` objects (no agent), the nodes `unplaced` without a position, the others at x=i."""
    skip = set(unplaced)
    positions = [v for i in range(count) if i not in skip for v in (float(i), 0.0, 0.0)]
    data = {
        "format": "sayplan-3dsg",
        "version": 2,
        "layout": "columns",
        "types": ["object"],
        "ids": [f"o{i}" for i in range(count)],
        "type": [0] * count,
        "unplaced": unplaced,
        "positions": positions,
    }
    return json.dumps(data)


def test_unplaced_nodes_first_load_as_the_rows_reference_says() -> None:
    """The oracle is the rows loader on the same nodes written out one by one."""
    count = 50
    unplaced = [0, 1, 2, 7, 30, 49]
    graph = loads(_objects_file(count, unplaced), require_agent=False)
    rows = {
        "nodes": [
            {"id": f"o{i}", "type": "object", **({} if i in unplaced else {"position": [float(i), 0.0, 0.0]})}
            for i in range(count)
        ],
        "edges": [],
    }
    assert graph_to_dict(graph) == graph_to_dict(graph_from_dict(rows, require_agent=False))
    assert [graph.nodes[f"o{i}"].position is None for i in range(count)] == [i in unplaced for i in range(count)]


def _cpu(text: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        loads(text, require_agent=False)
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2]


def test_unplaced_nodes_first_cost_no_more_than_unplaced_last() -> None:
    """Side by side in one process (a ratio, not a time): the same nodes, half unplaced, listed first or last.

    Before the fix the ratio was about 7 at this size and grows with it; after, about 1. The bound 3 is generous.
    """
    count = 300_000
    half = count // 2
    first = _objects_file(count, list(range(half)))
    last = _objects_file(count, list(range(count - half, count)))
    ratio = _cpu(first, runs=1) / _cpu(last, runs=1)
    assert ratio < 3.0, f"unplaced-first load costs {ratio:.1f}x the unplaced-last one"
