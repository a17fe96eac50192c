"""SceneGraph.copy fills networkx's dicts directly (model.py _copy_tree, _copy_nav) instead of calling networkx's
copy, and a snapshot's nodes refuse writes (SnapshotNode). The oracle is networkx's own copy: the same node and
adjacency dicts in the same order (the order decides ties in searches), each edge's data a new dict shared by both
directions. Random graphs built and edited through the mutators, edges removed and re-added so that adjacency
orders are not the ones a copy would produce."""

from __future__ import annotations

from typing import Any

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.graph.model import Node, SceneGraph, SnapshotNode


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
        assert {type(node) for node in copied.nodes.values()} == {SnapshotNode if tracked else Node}
        assert copied.nodes == graph.nodes
