"""Token counting with the real OpenAI tokenizers, offline (bpe-openai embeds them)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

SUPPORTED_ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")
DEFAULT_ENCODING = "cl100k_base"


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    if name not in SUPPORTED_ENCODINGS:
        raise ValueError(f"unknown tokenizer '{name}' (use one of: {', '.join(SUPPORTED_ENCODINGS)})")
    import bpe_openai

    return bpe_openai.get_encoding(name)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return len(_encoding(encoding).encode(text))


def encoding_for_model(model: str) -> str:
    """GPT-4o/4.1/o-series/gpt-5 use o200k_base; GPT-4 and GPT-3.5 use cl100k_base."""
    lowered = model.lower()
    if lowered.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")):
        return "o200k_base"
    return "cl100k_base"
