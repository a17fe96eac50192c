"""Retrieval over scene graphs: sentence embeddings, vector stores, and an incrementally synced entity index."""

from sayplan_core.retrieval.embedders import (
    CachedEmbedder,
    Embedder,
    EmbeddingError,
    MiniLmEmbedder,
    default_embedder,
    make_embedder,
)
from sayplan_core.retrieval.entity_index import EntityDocument, EntityIndex, Hit, SyncStats, entity_label

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
