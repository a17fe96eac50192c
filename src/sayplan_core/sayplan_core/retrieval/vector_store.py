"""Inner-product vector stores with add/remove by id: faiss, or exact numpy search.

Both are exact (flat) searches. At scene-graph sizes (hundreds to tens of thousands of
entities) an approximate index buys nothing; scripts/bench_retrieval.py measures the two.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sayplan_core.retrieval.embedders import EmbeddingError, Vectors

Ids = npt.NDArray[np.int64]


class VectorStore(Protocol):
    name: str

    def __len__(self) -> int: ...

    def add(self, ids: Ids, vectors: Vectors) -> None: ...

    def remove(self, ids: Ids) -> None: ...

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.float32], Ids]: ...


class FaissStore:
    """faiss IndexIDMap2 over IndexFlatIP: exact search, removal without a rebuild."""

    name = "faiss"

    def __init__(self, dim: int) -> None:
        try:
            import faiss
        except ImportError as exc:
            raise EmbeddingError(f"faiss-cpu is not installed ({exc}); use store='numpy' or install it") from exc
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: Ids, vectors: Vectors) -> None:
        if len(ids):
            self._index.add_with_ids(vectors, ids)

    def remove(self, ids: Ids) -> None:
        if len(ids):
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.float32], Ids]:
        k = min(k, len(self))
        if k <= 0:
            return np.zeros((query.shape[0], 0), np.float32), np.zeros((query.shape[0], 0), np.int64)
        scores, ids = self._index.search(query, k)
        return scores, ids


class NumpyStore:
    """A dense matrix with swap-remove; one matrix product per query batch."""

    name = "numpy"

    def __init__(self, dim: int) -> None:
        self._vectors = np.zeros((64, dim), dtype=np.float32)
        self._ids = np.zeros(64, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, ids: Ids, vectors: Vectors) -> None:
        need = self._size + len(ids)
        if need > len(self._ids):
            capacity = max(need, 2 * len(self._ids))
            grown = np.zeros((capacity, self._vectors.shape[1]), dtype=np.float32)
            grown[: self._size] = self._vectors[: self._size]
            self._vectors = grown
            self._ids = np.resize(self._ids, capacity)
        for i, vec in zip(ids.tolist(), vectors, strict=True):
            self._vectors[self._size] = vec
            self._ids[self._size] = i
            self._row[i] = self._size
            self._size += 1

    def remove(self, ids: Ids) -> None:
        for i in ids.tolist():
            row = self._row.pop(i, None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:
                moved = int(self._ids[last])
                self._vectors[row] = self._vectors[last]
                self._ids[row] = moved
                self._row[moved] = row
            self._size = last

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.float32], Ids]:
        k = min(k, self._size)
        if k <= 0:
            return np.zeros((query.shape[0], 0), np.float32), np.zeros((query.shape[0], 0), np.int64)
        scores = query @ self._vectors[: self._size].T
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        return np.take_along_axis(top_scores, order, axis=1), self._ids[: self._size][top]


def make_store(kind: str, dim: int) -> VectorStore:
    if kind == "faiss":
        return FaissStore(dim)
    if kind == "numpy":
        return NumpyStore(dim)
    raise EmbeddingError(f"unknown vector store '{kind}' (faiss or numpy)")
