"""Scene-graph entities as documents in a vector index, kept in step with a changing graph.

Each room, workspace, asset and object is one document: its label is the content
that gets embedded, its type, place, states and affordances are metadata for
filtering. `sync` diffs the graph against the indexed documents and touches only
what changed: a moved or re-stated object changes metadata only (no re-embedding),
a renamed one is re-embedded, a removed one leaves the index without a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sayplan_core.graph.model import SceneGraph
from sayplan_core.retrieval.embedders import Embedder
from sayplan_core.retrieval.vector_store import VectorStore, make_store

INDEXED_TYPES = ("room", "workspace", "asset", "object")


@dataclass(frozen=True)
class EntityDocument:
    node_id: str
    content: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class Hit:
    node_id: str
    score: float


@dataclass
class SyncStats:
    added: int = 0
    modified: int = 0
    removed: int = 0
    embedded: int = 0  # texts sent to the embedder (cache misses)

    def __str__(self) -> str:
        return f"+{self.added} ~{self.modified} -{self.removed} ({self.embedded} embedded)"


def entity_label(graph: SceneGraph, node_id: str) -> str:
    node = graph.nodes[node_id]
    return node.name or node_id.replace("_", " ")


def entity_document(graph: SceneGraph, node_id: str) -> EntityDocument:
    node = graph.nodes[node_id]
    metadata: dict[str, Any] = {
        "type": node.type,
        "room": graph.room_of(node_id) or "",
        "parent": graph.parent(node_id) or "",
        "relation": graph.relation(node_id) or "",
        "states": tuple(node.states),
        "affordances": tuple(node.affordances),
    }
    metadata.update({k: v for k, v in node.attributes.items() if k not in metadata})
    return EntityDocument(node_id, entity_label(graph, node_id), metadata)


def _matches(metadata: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    for key, wanted in where.items():
        value = metadata.get(key)
        if isinstance(value, tuple | list):
            if wanted not in value:
                return False
        elif value != wanted:
            return False
    return True


@dataclass
class EntityIndex:
    embedder: Embedder
    store_kind: str = "faiss"
    types: tuple[str, ...] = INDEXED_TYPES
    documents: dict[str, EntityDocument] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._store: VectorStore | None = None
        self._int_id: dict[str, int] = {}
        self._node_of: dict[int, str] = {}
        self._next_id = 0

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def store(self) -> VectorStore:
        if self._store is None:
            self._store = make_store(self.store_kind, self.embedder.dim)
        return self._store

    def sync(self, graph: SceneGraph, changed: Iterable[str] | None = None) -> SyncStats:
        """Bring the index in line with `graph`; `changed` limits the diff to those ids (an update's nodes)."""
        wanted = set(self.types)
        if changed is None:
            candidates = set(self.documents) | {n for n in graph.nodes if graph.nodes[n].type in wanted}
        else:
            candidates = set(changed)
        stats = SyncStats()
        to_embed: list[EntityDocument] = []
        removed: list[str] = []
        for node_id in sorted(candidates):
            present = node_id in graph.nodes and graph.nodes[node_id].type in wanted
            old = self.documents.get(node_id)
            if not present:
                if old is not None:
                    stats.removed += 1
                    removed.append(node_id)
                continue
            doc = entity_document(graph, node_id)
            if old is None:
                stats.added += 1
                to_embed.append(doc)
            elif old.content != doc.content:
                stats.modified += 1
                removed.append(node_id)
                to_embed.append(doc)
            elif old.metadata != doc.metadata:
                stats.modified += 1
                self.documents[node_id] = doc
        if removed:
            ids = np.array([self._int_id.pop(n) for n in removed], dtype=np.int64)
            self.store.remove(ids)
            for i in ids.tolist():
                del self._node_of[i]
            for node_id in removed:
                del self.documents[node_id]
        if to_embed:
            before = getattr(self.embedder, "texts_embedded", 0)
            vectors = self.embedder.embed([d.content for d in to_embed])
            stats.embedded = getattr(self.embedder, "texts_embedded", 0) - before
            ids = np.arange(self._next_id, self._next_id + len(to_embed), dtype=np.int64)
            self._next_id += len(to_embed)
            self.store.add(ids, vectors)
            for i, doc in zip(ids.tolist(), to_embed, strict=True):
                self._int_id[doc.node_id] = i
                self._node_of[i] = doc.node_id
                self.documents[doc.node_id] = doc
        return stats

    def search(
        self, query: str, k: int = 5, threshold: float = 0.0, where: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """Top-k entities at least `threshold` similar to `query`, optionally filtered on metadata."""
        if k <= 0 or not self.documents:
            return []
        vector = self.embedder.embed([query])
        # Filters apply after the search, so look further down the list when there are any.
        depth = len(self.documents) if where else k
        scores, ids = self.store.search(vector, depth)
        hits: list[Hit] = []
        for score, i in zip(scores[0].tolist(), ids[0].tolist(), strict=True):
            if i < 0 or score < threshold:
                continue
            node_id = self._node_of[i]
            if where and not _matches(self.documents[node_id].metadata, where):
                continue
            hits.append(Hit(node_id, float(score)))
            if len(hits) == k:
                break
        return hits
