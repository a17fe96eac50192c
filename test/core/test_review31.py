"""Hostile review of issue 28's fast paths (columns loader, in-place updates, the follower, token counting).

Found and fixed (each test below fails on the code before its fix):

- A follower that joins after more updates than the latched update history holds (100), and gets that history
  before the latched start-up graph, took the start-up graph, dropped the updates past the gap and reported itself
  in sync at the start-up version, without fetching: planners planned on the building as it was at start-up until
  the next update happened to arrive. `GraphReplica.take_full` now keeps the copy out of sync and asks for one
  fetch (the buffer is emptied, so a stray update still cannot make it fetch forever).
- A columns file whose hierarchy columns hold the relation "connected_to" (in its `relations` table) loaded that
  edge as a navigation link: `to_rows` handed the rows loader an edge that a rows file reads as a link. The reference
  decoder refuses it (a hierarchy edge must be a placement); now the loader does too, with a GraphError.
- `loads(text, progress=...)` said "parsed 0 nodes" for every columns file (it counted the rows layout's `nodes`).
- An update (or `SceneGraph.connect`) with an int weight beyond a float's range escaped as a raw OverflowError;
  an upsert whose parent or relation is not a string (an unhashable list) as a raw TypeError. Both are GraphErrors
  now, and the graph is as it was.
- `GraphJournal.recover` let raw OverflowError (a version `Infinity`, a weight of 400 digits), TypeError (a parent
  given as a list) and KeyError (a snapshot without its version) escape instead of JournalError.
- `count_tokens` is documented exact for text of any size, but a piece could be cut between a line break and a "/"
  (o200k's punctuation tokens take "/" after their line breaks: "}\\n/" is one token): one token too many.
- GraphFollower._on_update checked the update's epoch, released the lock to read the message, then took the
  update: a full graph of a new server start taken in between had the old start's update patched into the new
  copy. The epoch is now checked again in the lock that takes the update.

- docs/measured/README.md said JSON parsing alone is about 30 ms at 10k nodes, that the cause of the growth from 10k
  to 100k is not found (graph_loading.md says otherwise) and that perception's target is not reached; rewritten.
"""

from __future__ import annotations

import json
import threading
import types
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_native_columns import buildings, outcome, reference_load

from sayplan_core.graph import native_format, tokens
from sayplan_core.graph.journal import GraphJournal, JournalError
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.native_format import graph_to_dict
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place


def small() -> SceneGraph:
    graph = SceneGraph("t")
    graph.add_node(Node("b", "building"))
    graph.add_node(Node("f", "floor"), "b")
    graph.add_node(Node("r1", "room"), "f")
    graph.add_node(Node("r2", "room"), "f")
    graph.add_node(Node("robot", "agent", attributes={"location": "r1"}))
    return graph


# ---------------------------------------------------------------------------------------------------- columns
def test_a_navigation_relation_in_the_hierarchy_columns_is_refused() -> None:
    graph = SceneGraph("t")
    graph.add_node(Node("r1", "room"))
    graph.add_node(Node("r2", "room"))
    graph.add_node(Node("robot", "agent", attributes={"location": "r1"}))
    data = orjson.loads(native_format.dumps(graph, layout="columns"))
    data["relations"].append("connected_to")
    data["child"].append(data["ids"].index("r1"))
    data["parent"].append(data["ids"].index("r2"))
    data["relation"].append(len(data["relations"]) - 1)
    assert outcome(reference_load, data)[0] == "refused"
    with pytest.raises(GraphError, match="unknown relation 'connected_to'"):
        native_format.loads(json.dumps(data))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(buildings(), st.data())
def test_any_relation_table_loads_or_fails_as_in_the_reference(graph: SceneGraph, data: st.DataObject) -> None:
    """The relation table rewritten with names from every relation there is (and one that is none)."""
    columns = orjson.loads(native_format.dumps(graph, layout="columns"))
    names = ["in", "ontop_of", "inside_of", "inside_hand", "connected_to", "beside"]
    columns["relations"] = data.draw(st.lists(st.sampled_from(names), min_size=4, max_size=5, unique=True))
    expected = outcome(reference_load, columns)
    got = outcome(lambda d: native_format.loads(json.dumps(d)), columns)
    assert got == expected


def test_progress_counts_the_nodes_of_a_columns_file() -> None:
    lines: list[str] = []
    native_format.loads(native_format.dumps(small(), layout="columns"), progress=lines.append)
    assert "parsed 5 nodes" in lines[0], lines
    lines.clear()
    with pytest.raises(GraphError):  # a rows file whose nodes are no list: the loader's error, not the progress's
        native_format.loads('{"nodes": 5}', progress=lines.append)
    assert "parsed 0 nodes" in lines[0]


# ---------------------------------------------------------------------------------------------------- updates
@pytest.mark.parametrize("weight", [10**400, -(10**400)], ids=["huge", "-huge"])
def test_a_weight_past_a_floats_range_is_a_graph_error_and_changes_nothing(weight: int) -> None:
    graph = small()
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
    graph = small()
    before = graph_to_dict(graph, exact=True)
    update = GraphUpdate(upsert=[NodeUpsert(Node("r3", "room"), parent, relation)])
    with pytest.raises(GraphError):
        apply_in_place(graph, update)
    assert graph_to_dict(graph, exact=True) == before
    replica = GraphReplica()
    replica.take_full(small(), 1)
    assert replica.take_update(update, 2) is True and "cannot apply scene graph update 2" in replica.problem
    assert graph_to_dict(replica.graph, exact=True) == before  # type: ignore[arg-type]


def _journal(tmp_path: Path, line: str) -> GraphJournal:
    journal = GraphJournal(tmp_path)
    journal.start(small(), 1, "env")
    journal.close()
    (tmp_path / "journal.jsonl").write_text(line + "\n")
    return GraphJournal(tmp_path)


@pytest.mark.parametrize(
    "line",
    [
        '{"version": Infinity, "update": {"source": ""}}',
        '{"version": 2, "update": {"source": "", "connect": [["r1", "r2", ' + "9" * 400 + "]]}}",
        '{"version": 2, "update": {"source": "", "upsert": [{"node": {"id": "x", "type": "room"}, "parent": ["f"]}]}}',
    ],
)
def test_a_bad_journal_line_is_a_journal_error(tmp_path: Path, line: str) -> None:
    with pytest.raises(JournalError):
        _journal(tmp_path, line).recover("env")


@pytest.mark.parametrize("version", [None, "x", [], {}])
def test_a_snapshot_without_a_version_is_a_journal_error(tmp_path: Path, version: Any) -> None:
    snapshot = {"format": "sayplan-graph-journal", "origin": "env", "graph": graph_to_dict(small())}
    if version is not None:
        snapshot["version"] = version
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    with pytest.raises(JournalError):
        GraphJournal(tmp_path).recover("env")


# ---------------------------------------------------------------------------------------------------- tokens
def test_token_counts_are_exact_when_a_piece_would_end_before_a_slash() -> None:
    """The last place before the 50,000th character that looks safe is a line break followed by "/" (and the one
    before it, after "q", is safe)."""
    text = "ab " * 16000 + 'q",' + "ab " * 659 + "}\n/" + "cd " * 300 + '"x",' * 12000
    for encoding in tokens.SUPPORTED_ENCODINGS:
        assert tokens.count_tokens(text, encoding) == len(tokens._encoding(encoding).encode(text)), encoding


# ---------------------------------------------------------------------------------------------------- follower
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
    fetches: list[int] = []
    monkeypatch.setattr(follower, "_trusted", lambda topic: True)
    monkeypatch.setattr(follower, "_request_full", lambda: fetches.append(1))
    monkeypatch.setattr(gf, "msg_to_graph", lambda msg, require_agent: msg.graph)
    follower._take_full(types.SimpleNamespace(version=1, epoch=11, graph=small()), "scene_graph")  # type: ignore[arg-type]

    new_start = small()
    new_start.add_node(Node("r9", "room"), "f")
    old_update = GraphUpdate(remove=["r2"], source="old start")

    def read_while_the_server_restarts(msg: Any) -> GraphUpdate:
        follower._take_full(types.SimpleNamespace(version=1, epoch=22, graph=new_start), "scene_graph")  # type: ignore[arg-type]
        return old_update

    monkeypatch.setattr(gf, "msg_to_update", read_while_the_server_restarts)
    follower._on_update(types.SimpleNamespace(version=2, epoch=11))  # type: ignore[arg-type]
    graph, version = follower._replica.graph, follower._replica.version
    assert graph is not None and "r2" in graph and "r9" in graph and version == 1, (version, sorted(graph or []))
    assert fetches  # the copy of the new start is fetched again, as for any update of another start


# ---------------------------------------------------------------------------------------------------- replica
def test_a_late_joiner_whose_update_history_starts_past_the_start_up_graph_is_not_in_sync() -> None:
    """Latched: the start-up graph (version 1) and the last updates (here 150 to 152) of a server that took 152;
    the updates arrived first (the full graph is the larger message). The copy must not claim to be in sync at
    version 1: it says so and fetches once, and the server's answer repairs it."""
    start = small()
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


# ---------------------------------------------------------------------------------------------------- docs
def test_the_measured_index_agrees_with_graph_loading_md() -> None:
    root = Path(__file__).resolve().parents[2]
    measured = (root / "docs/measured/README.md").read_text()
    assert "JSON parsing alone is about 30 ms" not in measured
    assert "the cause is not yet found" not in measured
    assert "it is not reached yet" not in measured  # perception's target, met since
