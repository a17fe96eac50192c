#!/usr/bin/env python3
"""Memory per node of a held scene graph: the server's loaded graph, a follower's copy, a snapshot of it.

    scripts/ws_env.sh python scripts/bench_graph_memory.py --write docs/measured/graph_memory.md
    scripts/ws_env.sh python scripts/bench_graph_memory.py [--sizes 10000 100000] [--where 20000]

For each generated building the parent writes its inputs once: the native file (columns layout, as the server
loads it) and the CDR bytes of the get_scene_graph answer a follower takes (one columns payload). Each figure then
comes from a fresh child process, which imports everything, reads its input, notes its resident set (VmRSS), builds
the graph as that role does, drops the input and the message, collects, and notes VmRSS again: the growth, plus
the input's own size (read in the first note, freed before the second), over the node count. Roles: the server
(`load_env(path)`), a follower (deserialize + `msg_to_graph`), a follower with one snapshot (what a planner reads
per version, `GraphSnapshots.of`), and as yardsticks the same nodes and edges in a plain networkx DiGraph with
the same attributes as dicts, and the rows file's text parsed by `json.loads`. Issue 42's target: a follower's copy
<= 0.5 KB/node at 100k nodes. RSS counts whole pages and the allocator's free lists, so a figure is good to a few
percent; it does not move with the machine's load. `--where` adds where a follower's bytes go, line by line
(tracemalloc in one more child), the map for cutting them.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TARGET_KB = 0.5
ROLES = ("server", "follower", "follower + snapshot", "networkx dicts", "json.loads rows")


def rss_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) * 1024


def child(role: str, folder: Path) -> dict[str, float]:
    """Build what `role` holds from the inputs in `folder`; its resident growth per node."""
    import networkx as nx
    from rclpy.serialization import deserialize_message

    from sayplan_core.envs import load_env
    from sayplan_core.graph.snapshots import GraphSnapshots
    from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
    from sayplan_ros.conversions import msg_to_graph

    source = {"server": "graph.json", "json.loads rows": "rows.json", "networkx dicts": "rows.json"}.get(role)
    data: Any = (folder / (source or "answer.cdr")).read_bytes()
    if role == "server":
        data = b""  # the server reads the file itself
    gc.collect()
    before = rss_bytes()
    input_size = len(data)
    kept: list[Any] = []
    if role == "server":
        kept.append(load_env(str(folder / "graph.json"), require_agent=False))
    elif role in ("follower", "follower + snapshot"):
        msg = deserialize_message(data, SceneGraphMsg)
        graph = msg_to_graph(msg, require_agent=False)
        del msg
        kept.append(graph)
        if role == "follower + snapshot":
            kept.append(GraphSnapshots().of(graph, 1))
    elif role == "json.loads rows":
        kept.append(json.loads(data))
    else:
        rows = json.loads(data)
        plain = nx.DiGraph()
        for node in rows["nodes"]:
            plain.add_node(node["id"], **{k: v for k, v in node.items() if k != "id"})
        for edge in rows["edges"]:
            plain.add_edge(edge["target"], edge["source"], relation=edge["relation"])
        del rows
        kept.append(plain)
    del data
    gc.collect()
    grown = rss_bytes() - before + input_size
    nodes = len(kept[0]) if role != "json.loads rows" else len(kept[0]["nodes"])
    return {"bytes": float(grown), "nodes": float(nodes)}


#: the allocation sites the breakdown lists, largest first
SITES_SHOWN = 12


def traced_follower(folder: Path) -> dict[str, Any]:
    """Where a follower's bytes go: tracemalloc over deserialize + `msg_to_graph`, the blocks still held once the
    message is dropped, by the line that allocated them (bytes per node). Python's own allocations only: the
    message's C buffers are freed by then."""
    import linecache
    import tracemalloc

    from rclpy.serialization import deserialize_message

    from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
    from sayplan_ros.conversions import msg_to_graph

    data = (folder / "answer.cdr").read_bytes()
    tracemalloc.start()
    msg = deserialize_message(data, SceneGraphMsg)
    graph = msg_to_graph(msg, require_agent=False)
    del msg, data
    gc.collect()
    imports = [tracemalloc.Filter(False, f"<frozen importlib._{part}>") for part in ("bootstrap", "bootstrap_external")]
    stats = tracemalloc.take_snapshot().filter_traces(imports).statistics("lineno")  # modules loaded on the way
    tracemalloc.stop()
    nodes = len(graph)
    sites = []
    for stat in stats[:SITES_SHOWN]:
        frame = stat.traceback[0]
        where = frame.filename.split("/site-packages/")[-1].split("/sayplan_core/")[-1].split("/sayplan_ros/")[-1]
        code = linecache.getline(frame.filename, frame.lineno).strip()
        sites.append({"site": f"{where}:{frame.lineno}", "code": code, "per_node": stat.size / nodes})
    return {"nodes": nodes, "total": sum(stat.size for stat in stats) / nodes, "sites": sites}


def breakdown(size: int) -> list[str]:
    """The traced follower at `size` nodes, as a Markdown section."""
    from sayplan_core.envs.generator import generate_building, spec_for_size
    from sayplan_ros.conversions import WIRE_LAYOUT, graph_to_msg

    with tempfile.TemporaryDirectory(prefix="sayplan-memory-") as name:
        folder = Path(name)
        from rclpy.serialization import serialize_message

        graph = generate_building(spec_for_size(size, seed=1))
        (folder / "answer.cdr").write_bytes(serialize_message(graph_to_msg(graph, 1, WIRE_LAYOUT)))
        del graph
        print(f"  {size} nodes: follower, traced ...", file=sys.stderr, flush=True)
        traced: dict[str, Any] = run_child("traced", folder)
    lines = [
        "",
        f"## Where a follower's bytes go ({traced['nodes']} nodes, tracemalloc, bytes per node by allocating line)",
        "",
        f"Python allocations held: {traced['total']:.0f} B/node (RSS above also counts the allocator's pages).",
        "",
        "| B/node | where | line |",
        "|---|---|---|",
    ]
    for site in traced["sites"]:
        code = site["code"].replace("|", "\\|")
        lines.append(f"| {site['per_node']:.0f} | {site['site']} | `{code}` |")
    return lines


def run_child(role: str, folder: Path) -> Any:
    """What the `role` child printed last, as JSON (a role's figures, or the traced breakdown)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", role, "--folder", str(folder)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_graph_memory: the {role} child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(size: int, folder: Path) -> dict[str, Any]:
    from rclpy.serialization import serialize_message

    from sayplan_core.envs.generator import generate_building, spec_for_size
    from sayplan_core.graph import native_format
    from sayplan_ros.conversions import WIRE_LAYOUT, graph_to_msg

    graph = generate_building(spec_for_size(size, seed=1))
    native_format.save(graph, folder / "graph.json", layout="columns")
    (folder / "rows.json").write_text(native_format.dumps(graph, indent=None, layout="rows"), encoding="utf-8")
    (folder / "answer.cdr").write_bytes(serialize_message(graph_to_msg(graph, 1, WIRE_LAYOUT)))
    row: dict[str, Any] = {"nodes": len(graph)}
    del graph
    for role in ROLES:
        print(f"  {size} nodes: {role} ...", file=sys.stderr, flush=True)
        got = run_child(role, folder)
        row[role] = got["bytes"] / got["nodes"] / 1024
    return row


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Resident memory per node of a held graph (KB/node; one fresh process per figure)",
        "",
        "| nodes | " + " | ".join(ROLES) + " | follower / networkx | target (follower) |",
        "|---|" + "---|" * (len(ROLES) + 2),
    ]
    for r in rows:
        ratio = r["follower"] / r["networkx dicts"]
        met = ("met" if r["follower"] <= TARGET_KB else "not met") if r["nodes"] >= 50_000 else "-"
        target = f"<= {TARGET_KB} ({met})" if met != "-" else "-"
        lines.append(
            f"| {r['nodes']} | " + " | ".join(f"{r[role]:.2f}" for role in ROLES) + f" | {ratio:.2f} | {target} |"
        )
    lines += [
        "",
        "Server: `load_env` of the columns file. Follower: the get_scene_graph answer (one columns payload) "
        "deserialized and read by `msg_to_graph`; with a snapshot: plus the copy a planner reads once per "
        "version. networkx dicts: the same nodes (their fields as attributes) and hierarchy edges in a plain "
        "DiGraph; json.loads rows: the rows file's text parsed. Each: the growth of VmRSS over the build with the "
        "input freed, plus the input's size, over the node count. Issue 42's target is for a follower at 100k.",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file")
    parser.add_argument(
        "--where",
        type=int,
        default=20_000,
        metavar="NODES",
        help="also list where a follower's bytes go at this size (tracemalloc; 0: not)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        found = traced_follower(args.folder) if args.child == "traced" else child(args.child, args.folder)
        print(json.dumps(found))
        return 0
    import measured_doc

    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="sayplan-memory-") as folder:
            rows.append(measure(size, Path(folder)))
    text = markdown(rows) + (breakdown(args.where) if args.where > 0 else [])
    measured_doc.publish(args.write, "Graph memory: bytes per node held", "\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
