"""What every importer shares: reading JSON input, relation and attribute normalisation, the native builder."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME, FORMAT_VERSION, graph_from_dict


def norm_relation(rel: str) -> str:
    rel = rel.strip().lower()
    return {"on_top_of": "ontop_of", "on": "ontop_of", "inside": "inside_of", "in": "inside_of"}.get(rel, rel)


def attributes(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.split(",") if p.strip()]
        return {"tags": parts}
    if isinstance(raw, list):
        return {"tags": [str(p) for p in raw]}
    return {"value": raw}


def load_json(path_or_data: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    if isinstance(path_or_data, Mapping):
        return path_or_data, "<dict>"
    path = Path(path_or_data)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GraphError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise GraphError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, Mapping):
        raise GraphError(f"{path}: expected a JSON object at the top level")
    return data, str(path)


class Builder:
    """Collects native nodes/edges; duplicate ids are caught by the native loader."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.types: dict[str, str] = {}

    def node(self, node_id: str, node_type: str, **fields: Any) -> dict[str, Any]:
        item: dict[str, Any] = {"id": node_id, "type": node_type}
        item.update({k: v for k, v in fields.items() if v not in (None, [], {}, "")})
        self.nodes.append(item)
        self.types.setdefault(node_id, node_type)
        return item

    def child(self, child: str, relation: str, parent: str) -> None:
        self.edges.append({"source": child, "relation": relation, "target": parent})

    def link(self, a: str, b: str) -> None:
        self.edges.append({"source": a, "relation": "connected_to", "target": b})

    def build(self, source: str) -> SceneGraph:
        data = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name}
        data["nodes"] = self.nodes
        data["edges"] = self.edges
        return graph_from_dict(data, source=source, require_agent=False)  # an imported map may not hold the robot yet
