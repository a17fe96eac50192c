"""Live graph updates: an update either yields a graph the loader accepts, or is refused whole.

The oracle is the native loader itself, applied from scratch: whatever apply_update
returns must survive a save/load round trip, and a refused update leaves the input
exactly as it was. A weight past a float's range (an int of 400 digits) and an upsert whose parent or relation
is not a string are GraphErrors that change nothing, in place, through `SceneGraph.connect` and in a follower's
replica, not a raw OverflowError or TypeError.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hostile_updates import forged
from hypothesis import event, given
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph import GraphError, graph_from_dict, graph_to_dict
from sayplan_core.graph.model import NODE_TYPES, Node, SceneGraph
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place, apply_update

OFFICE = load_env("office")


def two_rooms() -> SceneGraph:
    """A building with one floor, two rooms and the robot in the first (shared with test_graph_journal.py,
    test_graph_replica.py and test_native_columns.py)."""
    graph = SceneGraph("t")
    graph.add_node(Node("b", "building"))
    graph.add_node(Node("f", "floor"), "b")
    graph.add_node(Node("r1", "room"), "f")
    graph.add_node(Node("r2", "room"), "f")
    graph.add_node(Node("robot", "agent", attributes={"location": "r1"}))
    return graph


def upsert_of(graph: SceneGraph, node_id: str, **changes: object) -> NodeUpsert:
    node = forged(graph.nodes[node_id], **changes)  # maybe what the constructor refuses (a nan position)
    return NodeUpsert(node, graph.parent(node_id), graph.relation(node_id) or "in")


def test_removing_the_agent_is_refused() -> None:
    with pytest.raises(GraphError, match="no agent node"):
        apply_update(OFFICE, GraphUpdate(remove=[OFFICE.agent_id or ""]))


def test_removing_the_pose_the_agent_stands_on_is_refused() -> None:
    here = OFFICE.agent_location()
    assert here is not None
    with pytest.raises(GraphError, match=f"'{here}', which does not exist"):
        apply_update(OFFICE, GraphUpdate(remove=[here]))


def test_a_non_finite_position_is_refused_before_it_reaches_the_graph() -> None:
    with pytest.raises(GraphError, match="position must be finite"):
        apply_update(OFFICE, GraphUpdate(upsert=[upsert_of(OFFICE, "coffee_mug", position=(float("nan"), 0.0, 0.0))]))


def test_a_graph_that_never_held_the_robot_may_grow_without_one() -> None:
    """Perception builds a map before the robot is placed in it."""
    empty = SceneGraph("map")
    grown = apply_update(empty, GraphUpdate(upsert=[NodeUpsert(Node("kitchen", "room"))]))
    assert "kitchen" in grown and grown.agent_id is None


def signature(graph: SceneGraph) -> dict[str, object]:
    return graph_to_dict(graph)


NODES = sorted(OFFICE.nodes)
PARENTS = sorted(n for n in OFFICE.nodes if OFFICE.nodes[n].type != "agent")
NAV = sorted(OFFICE.nav.nodes)
FLOATS = st.one_of(st.floats(-50, 50), st.sampled_from([float("nan"), float("inf")]))


@st.composite
def updates(draw: st.DrawFn) -> GraphUpdate:
    """Random, often malformed updates over the office's own ids (plus a few new ones)."""
    upserts = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            node_id = draw(st.sampled_from(NODES))
            node = OFFICE.nodes[node_id]
            if draw(st.booleans()):
                node = replace(node, type=draw(st.sampled_from(NODE_TYPES)))
        else:
            node_id = draw(st.sampled_from(["new_cup", "new_room", "new_pose"]))
            node = Node(node_id, draw(st.sampled_from(NODE_TYPES)), node_id)
        if draw(st.booleans()):
            node = forged(node, position=(draw(FLOATS), draw(FLOATS), 0.0))  # maybe not finite
        if node.type == "agent" and draw(st.booleans()):
            node = replace(node, attributes={**node.attributes, "location": draw(st.sampled_from(NODES))})
        parent = draw(st.one_of(st.none(), st.sampled_from(PARENTS)))
        relation = draw(st.sampled_from(["in", "ontop_of", "inside_of", "inside_hand"]))
        upserts.append(NodeUpsert(node, parent, relation))
    return GraphUpdate(
        upsert=upserts,
        remove=draw(st.lists(st.sampled_from(NODES), max_size=2)),
        connect=[
            (a, b, draw(st.one_of(st.none(), FLOATS)))
            for a, b in draw(st.lists(st.tuples(st.sampled_from(NAV), st.sampled_from(NAV)), max_size=2))
        ],
        disconnect=draw(st.lists(st.tuples(st.sampled_from(NAV), st.sampled_from(NAV)), max_size=1)),
    )


@given(updates())
def test_an_update_yields_a_loadable_graph_or_changes_nothing(update: GraphUpdate) -> None:
    before = signature(OFFICE)
    try:
        out = apply_update(OFFICE, update)
    except GraphError:
        event("refused")
        assert signature(OFFICE) == before  # refused whole: the live graph is untouched
        return
    event("applied")
    # the updated graph is one the loader itself accepts, agent included
    reloaded = graph_from_dict(graph_to_dict(out))
    assert reloaded.agent_id is not None and reloaded.agent_location() in reloaded.nav
    assert signature(OFFICE) == before


@pytest.mark.parametrize("weight", [10**400, -(10**400)], ids=["huge", "-huge"])
def test_a_weight_past_a_floats_range_is_a_graph_error_and_changes_nothing(weight: int) -> None:
    graph = two_rooms()
    before = graph_to_dict(graph, exact=True)
    with pytest.raises(GraphError, match="weight must be a finite number"):
        apply_in_place(graph, GraphUpdate(upsert=[NodeUpsert(Node("r3", "room"), "f")], connect=[("r1", "r3", weight)]))
    assert graph_to_dict(graph, exact=True) == before
    with pytest.raises(GraphError, match="weight must be a finite number"):
        graph.connect("r1", "r2", weight)
    with pytest.raises(GraphError, match="weight must be a finite number"):
        graph.connect("r1", "r2", "3")  # type: ignore[arg-type]


@pytest.mark.parametrize("parent, relation", [(["f"], "in"), (7, "in"), ("f", ["in"]), ("f", None)])
def test_an_upsert_with_a_parent_or_relation_of_the_wrong_type_is_a_graph_error(parent: Any, relation: Any) -> None:
    graph = two_rooms()
    before = graph_to_dict(graph, exact=True)
    update = GraphUpdate(upsert=[NodeUpsert(Node("r3", "room"), parent, relation)])
    with pytest.raises(GraphError):
        apply_in_place(graph, update)
    assert graph_to_dict(graph, exact=True) == before
    replica = GraphReplica()
    replica.take_full(two_rooms(), 1)
    assert replica.take_update(update, 2) is True and "cannot apply scene graph update 2" in replica.problem
    assert graph_to_dict(replica.graph, exact=True) == before  # type: ignore[arg-type]
