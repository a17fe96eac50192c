"""What a planner declares about retrieval before it retrieves: the embedder option and its error type.

Kept apart from the embedders so that declaring a planner's options (every CLI command does, for its flags) loads
neither numpy nor a vector store: they load at the first goal that retrieves.
"""

from __future__ import annotations

from typing import Any

from sayplan_core.options import option

MINILM = "all-MiniLM-L6-v2"


class EmbeddingError(RuntimeError):
    """The embedder cannot run (a missing package, an unreachable endpoint, a bad answer)."""


def _endpoint_embedder(value: object) -> bool:
    kind, _, model = str(value).partition(":")
    return kind in ("openai", "ollama") and bool(model)


def embedder_option() -> Any:
    """The embedder option field, declared once for every planner that embeds text (`sayplan_core.options`)."""
    return option(
        "local",
        "sentence embeddings: local (MiniLM, offline), openai:<model> or ollama:<model>",
        choices=("local",),
        accepts=_endpoint_embedder,
        accepts_text="openai:<model>, ollama:<model>",
        flag="--embedder",
    )
