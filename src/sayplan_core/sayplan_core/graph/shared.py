"""Closing a graph that readers share (a snapshot, graph/snapshots.py) to edits that go round its mutators.

Such an edit is not stamped, so it would reach the prompt text and navigation components kept for later versions
(graph/caches.py). A closed graph refuses writes to its node table (`graph.nodes[k] = ...`, `del`, `pop`) and
networkx's edits of its layers (`graph.nav.add_edge`, networkx's `freeze`); its own mutators still work, through
`put`/`drop` and `opened`. A pickle or deep copy of a closed graph is open, as copy() is. Still round it, on
purpose or by reaching into internals: dict's own methods called on the table (`dict.update(graph.nodes, ...)`),
assigning `graph.nodes`, networkx's dicts (`graph.tree.edges[a, b][...]`, `graph.nav._adj`), the type index's sets
(`graph.type_index(t)`) and `object.__setattr__`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import networkx as nx
from networkx.classes.function import frozen

from sayplan_core.graph.node import GraphError

#: How the mutators write a node table, closed or not (a plain dict's own methods).
put = dict.__setitem__
drop = dict.__delitem__


class ClosedNodes(dict):  # type: ignore[type-arg]  # dict[str, Node]: reads as fast as a dict's
    """The node table of a closed graph: writes raise (reads are a dict's own); pickled or copied, a plain dict."""

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise GraphError("this graph is shared by readers (a snapshot): change it only through its mutators")

    __setitem__ = __delitem__ = __ior__ = pop = popitem = clear = update = setdefault = _refuse

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return dict, (dict(self),)


def freeze(*layers: nx.Graph) -> None:
    for layer in layers:
        nx.freeze(layer)


def thaw(layer: nx.Graph) -> bool:
    """Open a frozen networkx graph in place (readers hold the same object); whether it was frozen."""
    if not nx.is_frozen(layer):
        return False
    for name in [name for name, value in vars(layer).items() if value is frozen]:
        delattr(layer, name)
    del layer.frozen
    return True


@contextmanager
def opened(*layers: nx.Graph) -> Iterator[None]:
    """The layers open for one mutator, closed again after it if they were (other readers hold them)."""
    closed = [layer for layer in layers if thaw(layer)]
    try:
        yield
    finally:
        freeze(*closed)
