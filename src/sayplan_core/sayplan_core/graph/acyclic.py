"""The hierarchy's cycle check, shared by both layouts of the native format (rows and columns).

Each loader checks the rest of its input its own way; a cycle among parents is found the same way in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sayplan_core.graph.model import GraphError


def check_acyclic(parents: Mapping[str, Any]) -> None:
    """No cycle in {child: (parent, ...)}; a GraphError naming a node on the first cycle found."""
    done: set[str] = set()
    for start in parents:
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = start
        while current is not None and current not in done:
            if current in seen:
                cycle = [*path[path.index(current) :], current]
                raise GraphError(f"cycle in the hierarchy: {' -> '.join(cycle)}", current)
            seen.add(current)
            path.append(current)
            current = parents[current][0] if current in parents else None
        done.update(path)
