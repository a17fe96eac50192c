"""SceneGraph.copy fills networkx's dicts directly (model.py _copy_tree, _copy_nav) instead of calling networkx's
copy, and the copy shares the (immutable) nodes. The oracle is networkx's own copy: the same node and
adjacency dicts in the same order (the order decides ties in searches), each edge's data a new dict shared by both
directions. Random graphs built and edited through the mutators, edges removed and re-added so that adjacency
orders are not the ones a copy would produce.

The copy then stays consistent: after random changes through the mutators (test_graph_caches.py's `mutate`), the
copy's networkx dicts are those of networkx's copy (and which edge dicts are one object), its views follow further
changes of the copy, and every cache of the original is still its definition (`check_all`)."""

from __future__ import annotations

from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_caches import check_all, mutate, start

from sayplan_core.graph.model import Node, SceneGraph


def shape(graph: nx.Graph) -> list[Any]:
    """Every dict of a networkx graph, in order."""
    tables = [graph._node, graph._succ, graph._pred] if isinstance(graph, nx.DiGraph) else [graph._node, graph._adj]
    return [graph.graph, *[[(k, list(v.items()) if isinstance(v, dict) else v) for k, v in t.items()] for t in tables]]


def shared_data(graph: nx.Graph) -> bool:
    """Both directions of every edge hold one data dict (as add_edge leaves them)."""
    if isinstance(graph, nx.DiGraph):
        return all(graph._pred[v][u] is data for u, row in graph._succ.items() for v, data in row.items())
    return all(graph._adj[v][u] is data for u, row in graph._adj.items() for v, data in row.items())


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.data())
def test_a_copy_has_networkx_copy_dicts_in_the_same_order(data: st.DataObject) -> None:
    graph = SceneGraph("copy")
    graph.add_node(Node("building", "building"))
    graph.add_node(Node("floor0", "floor"), "building")
    rooms = [f"room{i}" for i in range(data.draw(st.integers(2, 8)))]
    for room in rooms:
        graph.add_node(Node(room, "room"), data.draw(st.sampled_from(["floor0", "building"])))
        graph.add_node(Node(f"{room}_desk", "asset"), room)
        graph.add_node(Node(f"{room}_cup", "object"), f"{room}_desk", "ontop_of")
    for _ in range(data.draw(st.integers(0, 30))):
        a, b = data.draw(st.lists(st.sampled_from(rooms), min_size=2, max_size=2, unique=True))
        if graph.nav.has_edge(a, b):
            graph.disconnect(a, b)
        else:
            graph.connect(b, a, data.draw(st.none() | st.floats(0, 5)))
        if data.draw(st.booleans()):
            cup = data.draw(st.sampled_from(rooms)) + "_cup"
            graph.set_parent(cup, data.draw(st.sampled_from(rooms)) + "_desk", "inside_of")
    for tracked in (False, True):
        graph.track_changes()
        copied = graph.copy(tracked=tracked)
        for mine, theirs, original in (
            (copied.tree, graph.tree.copy(), graph.tree),
            (copied.nav, graph.nav.copy(), graph.nav),
        ):
            assert shape(mine) == shape(theirs)
            assert shared_data(mine)
            assert all(mine._node[n] is not original._node[n] for n in original._node)  # copies, not shared
            assert all(mine._adj[u][v] is not data for u, row in original._adj.items() for v, data in row.items())
        assert copied.nodes == graph.nodes and copied.nodes is not graph.nodes
        assert all(copied.nodes[n] is node for n, node in graph.nodes.items())


def tables(graph: nx.Graph) -> list[Any]:
    """Every networkx dict of a graph, in order, and which edge dicts are one object."""
    if isinstance(graph, nx.DiGraph):
        shared = all(graph._succ[u][v] is graph._pred[v][u] for u in graph._succ for v in graph._succ[u])
        return [list(graph._node.items()), [(u, list(r.items())) for u, r in graph._succ.items()],
                [(u, list(r.items())) for u, r in graph._pred.items()], shared, graph._adj is graph._succ]  # fmt: skip
    shared = all(graph._adj[u][v] is graph._adj[v][u] for u in graph._adj for v in graph._adj[u])
    return [list(graph._node.items()), [(u, list(r.items())) for u, r in graph._adj.items()], shared]


def views(graph: nx.Graph) -> list[Any]:
    out = [sorted(graph.nodes), sorted(map(sorted, graph.edges)), {n: dict(graph.adj[n]) for n in graph.nodes}]
    if isinstance(graph, nx.DiGraph):
        out += [{n: dict(graph.pred[n]) for n in graph}, {n: dict(graph.succ[n]) for n in graph}]
    return out


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_copies_are_networkx_copies_and_stay_consistent_under_mutators(data: st.DataObject) -> None:
    graph = start()
    log: list[str] = []
    for _ in range(data.draw(st.integers(0, 12))):
        mutate(data, graph, log)
        assert len(graph.tree.nodes) == len(graph.tree.pred) and len(graph.nav.adj) >= 0  # cached views before the copy
    for tracked in (False, True):
        graph.track_changes()
        out = graph.copy(tracked=tracked)
        assert tables(out.tree) == tables(graph.tree.copy()) and tables(out.nav) == tables(graph.nav.copy())
        assert views(out.tree) == views(graph.tree) and views(out.nav) == views(graph.nav)
        for _ in range(data.draw(st.integers(0, 6))):  # the copy changed through its mutators: views follow
            mutate(data, out, [])
            assert views(out.tree) == views(nx.DiGraph(out.tree)) and views(out.nav) == views(nx.Graph(out.nav))
        check_all(graph)
