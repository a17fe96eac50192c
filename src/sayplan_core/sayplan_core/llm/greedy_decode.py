"""Greedy decoding under a grammar, checking the model's own first choice before the whole vocabulary.

llama.cpp's grammar sampler, applied as a sampler chain does, walks every one of the vocabulary's
tokens (151k for Qwen) through the grammar at every step: with the enum-heavy answer schemas
that costs about as much as the model's forward pass on two cores. With greedy decoding only the
best legal token matters, and the model's best token is legal most of the time, so it is checked
alone first; when the grammar refuses it, its next best are checked one by one, and only when none
of them is allowed is the whole vocabulary filtered. The answer is the
same token for token as the sampler chain's greedy answer (the best token that the grammar
allows), which the tests check against llama-cpp-python's own completion.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sayplan_core.llm.types import LlmFatalError

#: the model's best tokens checked one by one when its first choice is refused, before the whole vocabulary
NEAREST = 32
#: the layout of llama.cpp's llama_token_data: id, logit, p
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)


@dataclass
class Decoded:
    """What one greedy decode wrote."""

    text: str
    tokens: int  # tokens written, the end-of-generation token not counted
    finish: str  # "stop" (end of generation or a stop string) or "length"
    refusals: int  # steps where the grammar refused the model's first choice
    full_filters: int  # of those, steps where none of its NEAREST best was allowed: the whole vocabulary filtered


class _Grammar:
    """A llama.cpp grammar sampler that checks one token or filters a whole row of logits."""

    def __init__(self, llama_cpp: Any, vocab: Any, grammar: Any, n_vocab: int) -> None:
        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:
            raise LlmFatalError("local model: llama.cpp refused the answer's grammar")
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self.full_filters = 0

    def _apply(self, rows: np.ndarray) -> None:
        data = rows.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data))
        array = self._lib.llama_token_data_array(data=data, size=len(rows), selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))

    def allows(self, token: int) -> bool:
        self._one[0] = (token, 0.0, 0.0)
        self._apply(self._one)
        return bool(np.isfinite(self._one[0]["logit"]))

    def best_allowed(self, logits: np.ndarray) -> int:
        """The best token the grammar allows: the first allowed of the model's NEAREST best, checked one by one in
        order (logit down, id up, as argmax breaks ties), else the whole vocabulary filtered. The first allowed of
        the nearest is the best of all, unless its logit ties one left outside them: then the whole vocabulary
        decides. A base model's refused tokens (Gemma's vocabulary has 262k) cost a few checks, not a full pass."""
        count = max(NEAREST, 1)
        nearest = np.argpartition(-logits, count)[:count] if len(logits) > count else np.arange(len(logits))
        ordered = sorted(nearest.tolist(), key=lambda t: (-float(logits[t]), t))
        floor = float(logits[ordered[-1]])
        for token in ordered:
            if self.allows(token):
                logit = float(logits[token])
                if math.isfinite(logit) and (logit > floor or len(ordered) == len(logits)):
                    return int(token)
                break  # at the floor (a tie may lie outside), or not a number: the whole vocabulary decides
        return self._filter_all(logits)

    def _filter_all(self, logits: np.ndarray) -> int:
        self.full_filters += 1
        self._all["logit"] = logits
        self._apply(self._all)
        best = int(np.argmax(self._all["logit"]))
        if not np.isfinite(self._all["logit"][best]):
            raise LlmFatalError("local model: the grammar allows no token here (the answer's grammar is broken)")
        return best

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        self._lib.llama_sampler_free(self._sampler)


def greedy_decode(
    llama_cpp: Any,
    llama: Any,
    last_prompt_token: int,
    max_tokens: int,
    grammar: Any | None,
    stops: Sequence[str],
    check: Callable[[int], None],
) -> Decoded:
    """Write up to `max_tokens` tokens after a prompt whose tokens but the last are already read.

    `check(written)` runs before each token (the caller's deadline and cancel); the model keeps every token it
    read, so the next call's prompt can reuse them."""
    vocab = llama._model.vocab
    n_vocab = int(llama.n_vocab())
    ctx = llama._ctx.ctx
    rules = _Grammar(llama_cpp, vocab, grammar, n_vocab) if grammar is not None else None
    written: list[int] = []
    text = b""
    finish = "length"
    refused = 0
    try:
        llama.eval([last_prompt_token])
        while len(written) < max_tokens:
            check(len(written))
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))
            token = int(np.argmax(logits))
            if rules is not None:
                if not rules.allows(token):
                    refused += 1
                    token = rules.best_allowed(logits)
                rules.accept(token)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                finish = "stop"
                break
            text += llama.detokenize([token])
            written.append(token)
            decoded = text.decode("utf-8", errors="ignore")
            cut = min((decoded.find(s) for s in stops if s and s in decoded), default=-1)
            if cut >= 0:
                return Decoded(decoded[:cut], len(written), "stop", refused, rules.full_filters if rules else 0)
            if len(written) < max_tokens:
                llama.eval([token])
    finally:
        if rules is not None:
            rules.close()
    filtered = rules.full_filters if rules is not None else 0
    return Decoded(text.decode("utf-8", errors="ignore"), len(written), finish, refused, filtered)
