"""A follower's copy of a versioned scene graph, kept in step by incremental updates.

The owner of the live graph numbers its versions 1, 2, 3 ... and publishes every
update it applies with the version it produced, plus a full graph now and then. A
replica patches its copy with each next update, buffers updates that arrive ahead of
it, and asks for a full graph only when an update is missing (a gap). A version it
cannot take is never skipped silently: the replica records why it is out of sync,
and its owner must not plan on it until a full graph repairs it.

The copy is patched in place (updates.apply_in_place), in time proportional to what each update touches, and an
update that cannot be taken leaves it as it was. So `graph` is the live copy, not a snapshot: an owner that shares
it with other threads hands them sayplan_core.graph.snapshots copies (sayplan_ros.graph_follower does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, apply_in_place

#: Updates kept while waiting for the one before them (a full graph usually arrives first).
MAX_BUFFERED = 1000


@dataclass
class GraphReplica:
    graph: SceneGraph | None = None
    version: int = 0
    #: why the copy is behind the owner's graph (empty when in sync as far as the replica knows)
    problem: str = ""
    _ahead: dict[int, GraphUpdate] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {"full": 0, "patched": 0, "fetches": 0})
    #: called with the copy after each change: the update just applied to it, or None when a full graph replaced
    #: it (a viewer that draws only what changed: the Foxglove bridge); runs in the caller's thread, under its lock
    on_change: Callable[[SceneGraph, GraphUpdate | None], None] | None = field(default=None, repr=False, compare=False)

    @property
    def in_sync(self) -> bool:
        return self.graph is not None and not self.problem

    def take_full(self, graph: SceneGraph, version: int, owned: bool = False) -> bool:
        """A full graph (latched topic or a fetch); returns True when a full graph must still be fetched.

        owned: `graph` is the replica's to change (freshly read from a message); else it is copied first, since
        the copy is patched in place and the caller's graph must not change under it.

        The full graph is the owner's word at `version`: buffered updates that follow on from
        it are applied. Any that cannot (a gap after it) are dropped, but they show the owner is past this graph
        (a late joiner that got the latched update history before the latched start-up graph, and more updates
        than that history holds): the copy is out of sync and a full graph is fetched, once, since the next full
        graph finds nothing buffered (a stray update cannot make the replica fetch forever).
        """
        stale = self.graph is not None and (version < self.version or (version == self.version and not self.problem))
        if stale:
            return self._settle()
        self.graph, self.version, self.problem = graph if owned else graph.copy(), version, ""
        self.stats["full"] += 1
        if self.on_change is not None:
            self.on_change(self.graph, None)
        self._ahead = {v: u for v, u in self._ahead.items() if v > version}
        fetch = self._settle()
        if fetch and self.problem.startswith("scene graph update"):
            self._ahead.clear()
        return fetch

    def refuse_full(self, version: int, reason: str) -> None:
        """A full graph that could not be read: the copy is out of sync until a good one arrives."""
        if version >= self.version:
            self.problem = f"cannot take scene graph version {version}: {reason}"

    def take_update(self, update: GraphUpdate, version: int) -> bool:
        """Patch the copy with the update that produced `version`; True when a full graph must be fetched."""
        if self.graph is not None and version <= self.version:
            return False  # already in the copy
        if len(self._ahead) < MAX_BUFFERED:
            self._ahead[version] = update
        if self.graph is None:
            return False  # the first full graph is on its way (latched); it drains the buffer
        return self._settle()

    def _settle(self) -> bool:
        """Apply every next update held; report a gap or a bad update as the reason to fetch a full graph."""
        if self.graph is None:
            return False
        while self.version + 1 in self._ahead and not self.problem:
            update = self._ahead.pop(self.version + 1)
            try:
                apply_in_place(self.graph, update)
            except GraphError as exc:  # the copy is as it was: the update is taken whole or not at all
                self.problem = f"cannot apply scene graph update {self.version + 1}: {exc}"
                self._ahead.clear()
                return True
            self.version += 1
            self.stats["patched"] += 1
            if self.on_change is not None:
                self.on_change(self.graph, update)
        if self.problem:
            return True
        if self._ahead:
            self.problem = f"scene graph update {self.version + 1} is missing (next received: {min(self._ahead)})"
            self.stats["fetches"] += 1
            return True
        return False
