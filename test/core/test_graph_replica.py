"""A follower's replica of the live graph: patched by updates, repaired by a full graph after a loss.

The oracle is the owner's own graph: after every delivery pattern (updates lost,
duplicated, a full graph now and then), once the replica has asked for and received a
full graph when it said it must, it equals the owner's graph version for version.

A late joiner that gets the latched update history (past its gap) before the latched start-up graph must not
report itself in sync at the start-up version: it says what is missing and fetches once. GraphFollower checks an
update's epoch again in the lock that takes it, so an update of the old server start read while a new start's full
graph is taken is not patched into the new copy.
"""

from __future__ import annotations

import copy
import threading
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_graph_updates import two_rooms

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_to_dict
from sayplan_core.graph.model import Node
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place, apply_update

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


def test_a_late_joiner_whose_update_history_starts_past_the_start_up_graph_is_not_in_sync() -> None:
    """Latched: the start-up graph (version 1) and the last updates (here 150 to 152) of a server that took 152;
    the updates arrived first (the full graph is the larger message). The copy must not claim to be in sync at
    version 1: it says so and fetches once, and the server's answer repairs it."""
    start = two_rooms()
    owner, history = start.copy(), []
    for version in range(2, 153):
        update = GraphUpdate(
            upsert=[NodeUpsert(Node("robot", "agent", attributes={"location": f"r{version % 2 + 1}"}))]
        )
        apply_in_place(owner, update)
        history.append((version, update))
    replica = GraphReplica()
    for version, update in history[-3:]:
        assert replica.take_update(update, version) is False
    assert replica.take_full(start, 1) is True
    assert not replica.in_sync and "missing" in replica.problem
    assert replica.take_full(owner, 152) is False
    assert replica.in_sync and graph_to_dict(replica.graph) == graph_to_dict(owner)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------------ the follower
class _Logger:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, text: str) -> None:
        self.lines.append(text)

    error = info = warning


def test_an_update_of_the_old_start_is_not_patched_into_a_new_starts_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new start's full graph taken while an update of the old start is being read (another callback thread)."""
    pytest.importorskip("rclpy")
    from sayplan_ros import graph_follower as gf

    logger = _Logger()
    follower = object.__new__(gf.GraphFollower)
    follower._node = types.SimpleNamespace(get_logger=lambda: logger)  # type: ignore[assignment]
    follower._lock = threading.Lock()
    follower._changed = threading.Condition(follower._lock)
    follower._ready_waiters = []
    follower._replica = GraphReplica()
    follower._epoch = 0
    follower._refused = 0
    follower._applied = {}
    fetches: list[int] = []
    monkeypatch.setattr(follower, "_trusted", lambda topic: True)
    monkeypatch.setattr(follower, "_request_full", lambda unless_epoch=None: not fetches.append(1))
    monkeypatch.setattr(gf, "msg_to_graph", lambda msg, require_agent: msg.graph)
    follower._take_full(types.SimpleNamespace(version=1, epoch=11, graph=two_rooms()), "scene_graph")  # type: ignore[arg-type]

    new_start = two_rooms()
    new_start.add_node(Node("r9", "room"), "f")
    old_update = GraphUpdate(remove=["r2"], source="old start")

    def read_while_the_server_restarts(msg: Any) -> GraphUpdate:
        follower._take_full(types.SimpleNamespace(version=1, epoch=22, graph=new_start), "scene_graph")  # type: ignore[arg-type]
        return old_update

    monkeypatch.setattr(gf, "msg_to_update", read_while_the_server_restarts)
    from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg

    follower._on_update(GraphUpdateMsg(version=2, epoch=11))
    graph, version = follower._replica.graph, follower._replica.version
    assert graph is not None and "r2" in graph and "r9" in graph and version == 1, (version, sorted(graph or []))
    assert fetches  # the copy of the new start is fetched again, as for any update of another start
