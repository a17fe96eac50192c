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


#: Text is counted in pieces of at most this many characters: the tokenizer refuses one input of more than 200,000
#: tokens, and a character is at most 4 bytes, each byte at most one token.
CHUNK_CHARS = 50_000


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact for text of any size: long text is cut only where the tokenizer's own pre-splitting cuts anyway."""
    enc = _encoding(encoding)
    return sum(len(enc.encode(piece)) for piece in _pieces(text))


def _pieces(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    while len(text) - start > CHUNK_CHARS:
        end = _boundary(text, start, start + CHUNK_CHARS - 1)
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


#: Characters that never continue a word or a number: its pre-token ends before them in both encodings (the
#: apostrophe is left out: o200k keeps "'s" with its word).
_WORD_ENDS = frozenset('",:;{}[]()<>=')


def _boundary(text: str, start: int, limit: int) -> int:
    """The last place before `limit` where the tokenizers' own pre-splitting cuts, so no token spans it: after a
    line break that the next line does not continue with white space or "/", or between a letter or digit and a quote,
    comma, colon or bracket (neither a word nor a number takes those after it; graph JSON is full of such
    places). With neither, `limit` (50,000 characters with no such place: the count may then be off by one or
    two)."""
    for at in range(limit, start, -1):
        if safe_cut(text, at):
            return at
    return limit


def safe_cut(text: str, at: int) -> bool:
    """No token of either encoding spans position `at` (see `_boundary`)."""
    before, here = text[at - 1], text[at]
    # o200k's punctuation tokens take "/" after their line breaks ("}\n/" is one token)
    return (before == "\n" and not here.isspace() and here != "/") or (before.isalnum() and here in _WORD_ENDS)


def encoding_for_model(model: str) -> str:
    """GPT-4o/4.1/o-series/gpt-5 use o200k_base; GPT-4 and GPT-3.5 use cl100k_base."""
    lowered = model.lower()
    if lowered.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")):
        return "o200k_base"
    return "cl100k_base"
