"""Unchanging copies of a graph that its owner changes in place, for readers on other threads.

A follower and the server apply every update to their graph in place (sayplan_core.graph.updates.apply_in_place),
so the graph object is never a stable view: a planner that kept it would see it change under it mid-plan. Readers
that keep a graph (a plan, a skill, a fetch answer) get a snapshot instead: a copy taken the first time someone asks
for a version and shared by everyone who asks for that version again, so the copy (O(graph)) is paid once per
version actually read (about once per goal), never per update. Short reads that end before the owner's lock is
released may look at the live graph itself.

The cache holds no lock: its owner calls `of` with its own lock held, the lock its updates take too.
"""

from __future__ import annotations

import weakref

from sayplan_core.graph.model import SceneGraph


class GraphSnapshots:
    """The latest snapshot taken, and which graph object and version it copies."""

    def __init__(self) -> None:
        self._source: weakref.ref[SceneGraph] | None = None
        self._version = -1
        self._copy: SceneGraph | None = None
        self.taken = 0  # copies made (a figure for tests and benches)

    def of(self, graph: SceneGraph, version: int) -> SceneGraph:
        """A copy of `graph` as it is at `version`, the same object for every call until either changes.

        The owner must bump `version` with every change it makes in place (a rolled-back update changes nothing).
        Readers must not change the copy: it is shared with every other reader of that version.
        """
        source = self._source() if self._source is not None else None
        if self._copy is None or source is not graph or version != self._version:
            # the owner changes its graph only through apply_in_place (the mutators), and readers never change a
            # snapshot: both may be tracked, so the prompt text of the next version redoes only what changed
            graph.track_changes()
            self._copy = graph.copy(tracked=True)
            self._copy.close_layers()  # shared by readers: a networkx edit behind the stamps is refused
            self._source, self._version = weakref.ref(graph), version
            self.taken += 1
        return self._copy
