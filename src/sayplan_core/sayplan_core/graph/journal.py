"""The live graph's journal: every accepted update is on disk before anyone hears of it, so a crash loses nothing.

Without it, when scene_graph_server died the live graph (every perception and skill update since start) was gone.
The journal is a folder with two files:

- `snapshot.json`: the graph at some version, with the version and what it was started from. Written to a
  temporary file, fsynced, renamed over the old one and the folder fsynced: a crash leaves the old or the new one.
- `journal.jsonl`: one line per accepted update after that snapshot, `{"version": N, "update": {...}}`, appended and
  fsynced before the update is applied in memory or published. A crash mid-line leaves a torn last line, which
  recovery drops (that update was never acknowledged to its sender). Lines at or below the snapshot's version
  (a crash between a compaction's snapshot and its truncation) are skipped.

Every `compact_every` updates the graph is written as a new snapshot and the journal emptied, so a restart replays
at most that many updates and the folder stays the size of the graph.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from sayplan_core.graph import native_format
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place

SNAPSHOT = "snapshot.json"
JOURNAL = "journal.jsonl"
JOURNAL_FORMAT = "sayplan-graph-journal"


class JournalError(GraphError):
    """The journal cannot be written or read; says which file and why."""


def update_to_dict(update: GraphUpdate) -> dict[str, Any]:
    return {
        "source": update.source,
        "upsert": [
            {"node": native_format.node_to_dict(u.node, exact=True), "parent": u.parent, "relation": u.relation}
            for u in update.upsert
        ],
        "remove": list(update.remove),
        "connect": [[a, b, w] for a, b, w in update.connect],
        "disconnect": [[a, b] for a, b in update.disconnect],
    }


def update_from_dict(data: Any) -> GraphUpdate:
    if not isinstance(data, dict):
        raise GraphError("a journal update must be an object")
    upsert = [
        NodeUpsert(native_format.node_from_dict(u["node"], i), u.get("parent"), str(u.get("relation") or "in"))
        for i, u in enumerate(data.get("upsert") or [])
    ]
    connect = [(str(a), str(b), None if w is None else float(w)) for a, b, w in data.get("connect") or []]
    disconnect = [(str(a), str(b)) for a, b in data.get("disconnect") or []]
    return GraphUpdate(upsert, [str(r) for r in data.get("remove") or []], connect, disconnect, str(data["source"]))


def snapshot_dict(graph: SceneGraph, version: int, origin: str) -> dict[str, Any]:
    """Exact positions: a restart must give back the very graph it journaled."""
    return {
        "format": JOURNAL_FORMAT,
        "version": version,
        "origin": origin,
        "graph": native_format.graph_to_dict(graph, exact=True),
    }


class GraphJournal:
    """The journal folder of one scene-graph server (see the module docstring)."""

    def __init__(self, folder: str | Path, compact_every: int = 1000) -> None:
        self.folder = Path(folder)
        self.compact_every = max(1, int(compact_every))
        self._fd: int | None = None
        self._since_snapshot = 0

    # ------------------------------------------------------------------ start-up
    def recover(self, origin: str, require_agent: bool = True) -> tuple[SceneGraph, int, int] | None:
        """(graph, version, updates replayed) from the folder, or None when it holds no snapshot yet.
        A journal started from another `origin` (env) is refused: resuming it would serve another building."""
        path = self.folder / SNAPSHOT
        if not path.exists():
            return None
        text = native_format.read_text(path, "journal snapshot", native_format.MAX_FILE_BYTES)
        data = native_format.parse_json(text, str(path))
        if not isinstance(data, dict) or data.get("format") != JOURNAL_FORMAT:
            raise JournalError(f"{path} is not a scene-graph journal snapshot")
        if data.get("origin") != origin:
            raise JournalError(
                f"{self.folder} holds the live graph started from '{data.get('origin')}', not '{origin}': "
                "choose another journal_dir, or delete this one to start from the environment again"
            )
        try:
            version = int(data["version"])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise JournalError(f"{path}: the snapshot's version is missing or not a number ({exc!r:.80})") from None
        graph = native_format.graph_from_dict(data.get("graph"), str(path), require_agent=require_agent)
        replayed = 0
        for line_version, update in self._journal_lines():
            if line_version <= version:
                continue
            if line_version != version + 1:
                raise JournalError(f"{self.folder / JOURNAL}: version {line_version} follows {version}")
            try:
                apply_in_place(graph, update)  # the graph is this function's own: no copy per line
            except GraphError as exc:
                raise JournalError(f"{self.folder / JOURNAL}: version {line_version} cannot be applied: {exc}") from exc
            version, replayed = line_version, replayed + 1
        return graph, version, replayed

    def _journal_lines(self) -> list[tuple[int, GraphUpdate]]:
        path = self.folder / JOURNAL
        if not path.exists():
            return []
        raw = path.read_bytes()
        entries: list[tuple[int, GraphUpdate]] = []
        lines = raw.split(b"\n")
        good = len(raw) - len(lines[-1])  # whole lines; what follows the last newline is a write a crash cut short
        for number, line in enumerate(lines[:-1], start=1):
            try:
                data = json.loads(line)
                entries.append((int(data["version"]), update_from_dict(data["update"])))
            except (ValueError, KeyError, TypeError, RecursionError, OverflowError, AttributeError, GraphError) as exc:
                # a whole line was acknowledged: dropping it and what follows would lose updates silently
                raise JournalError(f"{path} line {number} cannot be read ({exc}); the journal needs repair") from exc
        if good < len(raw):
            with path.open("r+b") as fh:  # drop the torn tail, so the next append starts on a line of its own
                fh.truncate(good)
                os.fsync(fh.fileno())
        return entries

    def start(self, graph: SceneGraph, version: int, origin: str) -> None:
        """Open for appending; a fresh folder gets its first snapshot (the graph the server starts from)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not (self.folder / SNAPSHOT).exists():
                self.snapshot(graph, version, origin)
            self._fd = os.open(self.folder / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise JournalError(f"cannot open the journal in {self.folder}: {exc.strerror or exc}") from exc
        self._since_snapshot = 0

    # ------------------------------------------------------------------ while serving
    def append(self, version: int, update: GraphUpdate) -> None:
        """Write and fsync one accepted update before it is applied; on failure nothing of it stays on disk."""
        assert self._fd is not None, "start() first"
        line = (json.dumps({"version": version, "update": update_to_dict(update)}) + "\n").encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(28, "short write (disk full?)")
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)  # no half line left for recovery to stumble on
            raise JournalError(f"cannot journal the update in {self.folder}: {exc.strerror or exc}") from exc
        self._since_snapshot += 1

    def compact_due(self) -> bool:
        return self._since_snapshot >= self.compact_every

    def snapshot(self, graph: SceneGraph, version: int, origin: str) -> None:
        """Write the graph as the new snapshot (atomically), then empty the journal."""
        path = self.folder / SNAPSHOT
        tmp = path.with_suffix(".json.tmp")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                json.dump(snapshot_dict(graph, version, origin), fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            _fsync_dir(self.folder)
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
                os.fsync(self._fd)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise JournalError(f"cannot write the journal snapshot in {self.folder}: {exc.strerror or exc}") from exc
        self._since_snapshot = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
