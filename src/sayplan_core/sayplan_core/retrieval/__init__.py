"""Retrieval over scene graphs: sentence embeddings, vector stores, and an incrementally synced entity index.

The names below load on first use (PEP 562): importing the package, or its light `settings` module as every
planner's option declaration does, loads neither numpy nor a vector store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sayplan_core.lazy import lazy_attributes

if TYPE_CHECKING:
    from sayplan_core.retrieval.embedders import (
        CachedEmbedder,
        Embedder,
        MiniLmEmbedder,
        default_embedder,
        make_embedder,
    )
    from sayplan_core.retrieval.entity_index import EntityDocument, EntityIndex, Hit, SyncStats, entity_label
    from sayplan_core.retrieval.settings import EmbeddingError

_MODULE_OF = {
    "CachedEmbedder": "embedders",
    "Embedder": "embedders",
    "EmbeddingError": "settings",
    "MiniLmEmbedder": "embedders",
    "default_embedder": "embedders",
    "make_embedder": "embedders",
    "EntityDocument": "entity_index",
    "EntityIndex": "entity_index",
    "Hit": "entity_index",
    "SyncStats": "entity_index",
    "entity_label": "entity_index",
}

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingError",
    "EntityDocument",
    "EntityIndex",
    "Hit",
    "MiniLmEmbedder",
    "SyncStats",
    "default_embedder",
    "entity_label",
    "make_embedder",
]

__getattr__ = lazy_attributes(__name__, _MODULE_OF)
