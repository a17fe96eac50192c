"""What users derive from a tracked graph, kept by each user per history (Fast Downward's PerTaskInformation).

A tracked graph (SceneGraph.track_changes) and its tracked copies (snapshots) share one `SceneGraph.history`, an
opaque key that changes when a copy's own change parts it from its source. A user keeps its cache per history
in a `PerHistory` of its own: the prompt text (graph/text.py), the abstract planner's workspaces, the LTL
catalogue and navigation, the LLM-as-planner schema enums. Each keeps itself in step with the graph through its
change stamps and log (NodeFragments.sync) or a key of its own; the graph knows nothing of them. A cache goes
when the last graph of its history does (the history is a weak key).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sayplan_core.graph.model import History, SceneGraph

T = TypeVar("T")
V = TypeVar("V")


class PerHistory(Generic[T]):
    """One cache per history of tracked graphs, made on first use (`make()`), held by its user. `name` registers it
    (REGISTERED): test_graph_caches.py checks every registered cache against its definition."""

    def __init__(self, name: str, make: Callable[[], T]) -> None:
        if name in REGISTERED:
            raise ValueError(f"a cache named {name!r} is registered already")
        REGISTERED[name] = self
        self.name = name
        self._make = make
        self._kept: weakref.WeakKeyDictionary[History, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # planners on several snapshots at once

    def of(self, graph: SceneGraph) -> T:
        """The cache of `graph`'s history; `graph` must be tracked."""
        history = graph.history
        if history is None:
            raise ValueError("caches are kept for tracked graphs only (SceneGraph.track_changes)")
        with self._lock:
            kept = self._kept.get(history)
            if kept is None:
                kept = self._kept[history] = self._make()
        return kept


#: Every PerHistory made, by name.
REGISTERED: dict[str, PerHistory[Any]] = {}


class Latest(Generic[V]):
    """A cache that is one value, replaced whole (readers on other threads see the old value or the new one)."""

    def __init__(self) -> None:
        self.value: V | None = None
