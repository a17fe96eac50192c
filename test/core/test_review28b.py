"""Hostile review of the issue-28 speed-ups (review28): what broke, kept as tests.

1. A columns file whose unplaced nodes come first made the bulk loader quadratic: `columns._positions` put each
   unplaced node's None in place with `list.insert`, which shifts every position after it. A 9 MB file of 400,000
   objects, half of them unplaced and listed first, took 16 s of CPU against 2 s for the same file with the
   unplaced nodes last (measured by hand with time.process_time). A file is untrusted, so its load time must grow
   with its size, not with its square. The fix is one pass; no timed test (the guide keeps timings in benches),
   the test below checks the result against the rows loader.
2. No node count bounded a native file: a columns file costs about 50 bytes of memory per byte of file (300,000
   nodes: 4.9 MB of file, 250 MB of peak memory; rows: 24), so a file under MAX_FILE_BYTES (256 MB) could take
   over 12 GB. Graphs in messages are bounded by limits.MAX_GRAPH_NODES; files now are too, before building.
"""

from __future__ import annotations

import json

import pytest

from sayplan_core.graph import GraphError, graph_from_dict, limits, loads
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


@pytest.mark.parametrize("layout", ["columns", "rows"])
def test_a_file_over_the_node_limit_is_refused_before_it_is_built(layout: str) -> None:
    count = limits.MAX_GRAPH_NODES + 1
    ids = [f"{i:x}" for i in range(count)]
    if layout == "columns":
        data: dict[str, object] = {
            "format": "sayplan-3dsg", "version": 2, "layout": "columns", "types": ["object"], "ids": ids,
            "type": [0] * count, "unplaced": list(range(count)), "positions": [],
        }  # fmt: skip
    else:
        data = {"format": "sayplan-3dsg", "version": 1, "nodes": [{"id": i, "type": "object"} for i in ids]}
    text = json.dumps(data, separators=(",", ":"))
    del data, ids
    with pytest.raises(GraphError, match=f"{count} nodes is over the {limits.MAX_GRAPH_NODES} node limit"):
        loads(text, require_agent=False)


def test_a_columns_file_over_the_navigation_edge_limit_is_refused() -> None:
    count = limits.MAX_GRAPH_EDGES + 1
    data = {
        "format": "sayplan-3dsg", "version": 2, "layout": "columns", "types": ["room"], "ids": ["a", "b"],
        "type": [0, 0], "unplaced": [0, 1], "positions": [], "links": [0, 1] * count,
    }  # fmt: skip
    with pytest.raises(GraphError, match="navigation edges is over"):
        loads(json.dumps(data, separators=(",", ":")), require_agent=False)
