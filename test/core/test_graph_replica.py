"""A follower's replica of the live graph: patched by updates, repaired by a full graph after a loss.

The oracle is the owner's own graph: after every delivery pattern (updates lost,
duplicated, a full graph now and then), once the replica has asked for and received a
full graph when it said it must, it equals the owner's graph version for version.
"""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_to_dict
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_update

OFFICE = load_env("office")
PLACES = ["kitchen_bench", "fridge", "lunch_table", "kitchen_cupboard"]


def move(graph: object, node: str, parent: str) -> GraphUpdate:
    source = OFFICE.nodes[node]
    relation = "inside_of" if parent in ("fridge", "kitchen_cupboard") else "ontop_of"
    return GraphUpdate(upsert=[NodeUpsert(copy.deepcopy(source), parent, relation)])


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["orange", "apple1"]),
            st.sampled_from(PLACES),
            st.sampled_from(["send", "drop", "twice", "full"]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_the_replica_equals_the_owner_after_any_losses(script: list[tuple[str, str, str]]) -> None:
    owner, version = OFFICE, 1
    history = {1: graph_to_dict(OFFICE)}
    replica = GraphReplica()
    replica.take_full(OFFICE, 1)
    fetch_pending = False
    for node, place, delivery in script:
        update = move(owner, node, place)
        owner, version = apply_update(owner, update), version + 1
        history[version] = graph_to_dict(owner)
        if delivery in ("send", "twice"):
            fetch_pending |= replica.take_update(update, version)
        if delivery == "twice":  # a duplicate changes nothing
            held = replica.version
            fetch_pending |= replica.take_update(update, version)
            assert replica.version == held
        if delivery == "full":
            fetch_pending = replica.take_full(owner, version)
        if fetch_pending:  # the follower fetches: the owner answers with its graph now
            fetch_pending = replica.take_full(owner, version)
        # never a wrong graph: the copy is exactly the owner's graph of the version it claims
        # (a lost update goes unnoticed only until the next one arrives)
        assert replica.graph is not None and graph_to_dict(replica.graph) == history[replica.version]
        if not replica.in_sync:
            assert replica.problem and replica.version < version  # behind, and it says so
    replica.take_full(owner, version)
    assert replica.in_sync and graph_to_dict(replica.graph) == graph_to_dict(owner)


def test_a_missing_update_is_reported_and_a_full_graph_repairs_it() -> None:
    replica = GraphReplica()
    replica.take_full(OFFICE, 1)
    second = apply_update(OFFICE, move(OFFICE, "orange", "fridge"))
    third_update = move(second, "orange", "lunch_table")
    third = apply_update(second, third_update)
    assert replica.take_update(third_update, 3)  # version 2 never came: fetch
    assert not replica.in_sync and "update 2 is missing" in replica.problem
    assert not replica.take_full(third, 3)
    assert replica.in_sync and replica.version == 3 and replica.stats["fetches"] == 1


def test_an_update_that_does_not_apply_is_never_skipped() -> None:
    replica = GraphReplica()
    replica.take_full(OFFICE, 1)
    bad = GraphUpdate(remove=["pose7"])  # the agent stands there
    assert replica.take_update(bad, 2)
    assert replica.version == 1 and "cannot apply scene graph update 2" in replica.problem
    assert not replica.in_sync


def test_updates_that_arrive_before_the_first_full_graph_are_kept() -> None:
    replica = GraphReplica()
    update = move(OFFICE, "orange", "fridge")
    assert not replica.take_update(update, 2)
    assert not replica.take_full(OFFICE, 1)
    assert replica.version == 2 and replica.graph is not None and replica.graph.parent("orange") == "fridge"
