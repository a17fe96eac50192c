"""The live graph's journal (sayplan_core.graph.journal): what a crash at any point leaves, torn writes, compaction,
a full disk, and a journal of another building. The oracle is the chain of accepted updates applied to the start
graph in memory; the journal must give back exactly that graph and version. A bad line (a version `Infinity`, a
weight of 400 digits, a parent given as a list) or a snapshot without its version is a JournalError, never a raw
OverflowError, TypeError or KeyError."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_updates import ASSETS, OBJECTS, exact, updates
from test_graph_updates import two_rooms

from sayplan_core.envs import load_env
from sayplan_core.graph import graph_to_dict
from sayplan_core.graph.journal import JOURNAL, SNAPSHOT, GraphJournal, JournalError
from sayplan_core.graph.model import GraphError
from sayplan_core.graph.updates import GraphUpdate, apply_update

OFFICE = load_env("office")


@settings(max_examples=40, derandomize=True, deadline=None)
@given(st.lists(updates(), max_size=25), st.integers(1, 6), st.data())
def test_recovery_gives_back_every_accepted_update(
    tmp_path_factory: pytest.TempPathFactory, sequence: list[GraphUpdate], compact_every: int, data: st.DataObject
) -> None:
    """A server's life: each update is applied in memory (the oracle) and journaled only when it applies; a crash
    happens after a random number of them, with or without a torn half line; recovery gives the oracle back."""
    folder = tmp_path_factory.mktemp("journal")
    journal = GraphJournal(folder, compact_every)
    graph, version = OFFICE, 1
    journal.start(graph, version, "office")
    crash_after = data.draw(st.integers(0, len(sequence)))
    for update in sequence[:crash_after]:
        try:
            new = apply_update(graph, update)
        except GraphError:
            continue  # refused: nothing journaled, the graph unchanged
        journal.append(version + 1, update)
        graph, version = new, version + 1
        if journal.compact_due():
            journal.snapshot(graph, version, "office")
    journal.close()
    if data.draw(st.booleans()):  # killed in the middle of writing the next line
        with (folder / JOURNAL).open("ab") as fh:
            fh.write(b'{"version": 99, "update": {"source": "te')
    recovered = GraphJournal(folder, compact_every).recover("office")
    assert recovered is not None
    got, got_version, replayed = recovered
    assert got_version == version and replayed <= compact_every
    assert exact(got) == exact(graph)
    # the torn tail is gone: the next start appends on a line of its own
    text = (folder / JOURNAL).read_text()
    assert text == "" or text.endswith("\n")


def test_a_crash_between_a_snapshot_and_the_journal_truncation_replays_nothing_twice(tmp_path: Path) -> None:
    journal = GraphJournal(tmp_path, 100)
    journal.start(OFFICE, 1, "office")
    update = GraphUpdate(remove=[OBJECTS[0]], source="test")
    after = apply_update(OFFICE, update)
    journal.append(2, update)
    lines = (tmp_path / JOURNAL).read_bytes()
    journal.snapshot(after, 2, "office")
    (tmp_path / JOURNAL).write_bytes(lines)  # as if the crash came before the journal was emptied
    recovered = GraphJournal(tmp_path).recover("office")
    assert recovered is not None and recovered[1:] == (2, 0) and exact(recovered[0]) == exact(after)


def test_a_journal_of_another_environment_is_refused(tmp_path: Path) -> None:
    journal = GraphJournal(tmp_path)
    journal.start(OFFICE, 1, "office")
    with pytest.raises(JournalError, match="started from 'office', not 'home'"):
        GraphJournal(tmp_path).recover("home")
    assert GraphJournal(tmp_path / "empty").recover("home") is None


def test_a_gap_in_the_journal_is_refused(tmp_path: Path) -> None:
    journal = GraphJournal(tmp_path)
    journal.start(OFFICE, 1, "office")
    journal.append(3, GraphUpdate(remove=[OBJECTS[0]], source="test"))  # version 2 is missing
    with pytest.raises(JournalError, match="version 3 follows 1"):
        GraphJournal(tmp_path).recover("office")


def test_a_full_disk_refuses_the_update_and_keeps_what_was_acknowledged(tmp_path: Path) -> None:
    """The file-size limit of a child process stands in for a full disk: the append that does not fit fails with a
    JournalError, leaves no half line, and recovery gives back exactly the updates acknowledged before it."""
    script = f"""
import resource, signal, sys
from sayplan_core.envs import load_env
from sayplan_core.graph.journal import GraphJournal, JournalError
from sayplan_core.graph.model import Node
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
journal = GraphJournal(sys.argv[1])
journal.start(load_env("office"), 1, "office")
resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))
for i in range(1000):
    node = Node(f"mug_{{i}}", "object", attributes={{"note": "x" * 200}})
    try:
        journal.append(i + 2, GraphUpdate([NodeUpsert(node, "{ASSETS[0]}", "ontop_of")], source="test"))
    except JournalError as exc:
        print(i, exc)
        break
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    acknowledged, _, message = done.stdout.partition(" ")
    assert "cannot journal the update" in message and int(acknowledged) > 0
    recovered = GraphJournal(tmp_path).recover("office")
    assert recovered is not None and recovered[1] == int(acknowledged) + 1
    assert {f"mug_{i}" for i in range(int(acknowledged))} <= set(recovered[0].nodes)
    assert f"mug_{acknowledged}" not in recovered[0].nodes
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    assert len(lines) == int(acknowledged) and all(json.loads(line) for line in lines)
    assert json.loads((tmp_path / SNAPSHOT).read_text())["version"] == 1


def test_a_bad_whole_line_is_an_error_naming_the_line_not_a_silent_cut(tmp_path: Path) -> None:
    """Only a last line without its newline is a torn write; a whole line that cannot be read was acknowledged, and
    dropping it and everything after it would lose updates without a word."""
    journal = GraphJournal(tmp_path)
    journal.start(OFFICE, 1, "office")
    for version, node_id in enumerate(OBJECTS[:3], start=2):
        journal.append(version, GraphUpdate(remove=[node_id], source="test"))
    journal.close()
    lines = (tmp_path / JOURNAL).read_text().splitlines(keepends=True)
    lines[1] = (
        json.dumps({"version": 3, "update": {"source": "x", "upsert": [{"node": {"id": "a", "type": "?"}}]}}) + "\n"
    )
    (tmp_path / JOURNAL).write_text("".join(lines))
    with pytest.raises(JournalError, match=f"{tmp_path / JOURNAL} line 2 cannot be read"):
        GraphJournal(tmp_path).recover("office")
    assert len((tmp_path / JOURNAL).read_text().splitlines()) == 3  # nothing was cut
    lines[1] = json.dumps({"version": 3, "update": {"source": "x", "remove": ["no_such_node"]}}) + "\n"
    (tmp_path / JOURNAL).write_text("".join(lines))
    with pytest.raises(JournalError, match="version 3 cannot be applied: cannot remove 'no_such_node'"):
        GraphJournal(tmp_path).recover("office")


def _journal(tmp_path: Path, line: str) -> GraphJournal:
    journal = GraphJournal(tmp_path)
    journal.start(two_rooms(), 1, "env")
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
    snapshot = {"format": "sayplan-graph-journal", "origin": "env", "graph": graph_to_dict(two_rooms())}
    if version is not None:
        snapshot["version"] = version
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    with pytest.raises(JournalError):
        GraphJournal(tmp_path).recover("env")
