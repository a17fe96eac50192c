"""Embedded local model: llama.cpp (llama-cpp-python) running an instruct GGUF on the CPU.

For machines with no API key and no Ollama, and for robots that plan on board. The weights
come from a model pack (`model_packs`: Qwen2.5-Coder 1.5B by default), checked against the
official SHA-256 before every load.

A call is cut into pieces the caller can stop: the prompt is read in small batches and the
answer streamed token by token, and between any two of them the call's deadline and a
cancel (`http.CallAbort`) are checked, so either acts within a second even while a long
prompt is being read. The model's state stays between calls, so a prompt that shares its
beginning with the last one (SayPlan's static system prompt, a graph that grew by one
room) re-reads only what changed. Every answer reports what it cost: prompt tokens read and
reused, and tokens per second for reading and writing.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from sayplan_core import files
from sayplan_core.llm import http
from sayplan_core.llm.greedy_decode import greedy_decode
from sayplan_core.llm.types import BackendInfo, LlmFatalError, LlmRequest, LlmResponse, LlmTransientError

INSTALL_HINT = "install the embedded LLM runtime with scripts/install_local_llm.sh (or `make local-llm`)"
#: the deadline of one call when the configuration leaves it to the backend: a 1.5B model on two busy CPU cores
#: takes 10-100 s per call
DEFAULT_TIMEOUT_S = 600.0
#: prompt tokens read between two checks of the deadline and of a cancel (about 0.2-1 s on two cores)
PREFILL_CHUNK_TOKENS = 64
#: schemas whose grammar is kept (building one for a 100-id enum takes milliseconds, a planner repeats them)
_GRAMMAR_CACHE_SIZE = 16


def local_runtime_available(model: str = "") -> bool:
    """llama-cpp-python imports and the model (`model`: a pack name or .gguf path; "" the default) is there."""
    from sayplan_core.llm import model_packs

    try:
        importlib.import_module("llama_cpp")
        model_packs.locate_model(model)
    except (ImportError, model_packs.ModelPackError):
        return False
    return True


class LocalBackend:
    """One llama.cpp context; calls are serialized (one model, one KV cache)."""

    def __init__(
        self,
        model: str = "",
        n_ctx: int = 16384,
        n_threads: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        from sayplan_core.llm import model_packs

        try:
            llama_cpp = importlib.import_module("llama_cpp")
        except ImportError as exc:
            raise LlmFatalError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from exc
        try:
            resolved = model_packs.resolve_model(model)
        except model_packs.ModelPackError as exc:
            raise LlmFatalError(str(exc)) from None
        self.threads = n_threads or max(1, os.cpu_count() or 1)
        self.n_ctx = n_ctx
        self.timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
        self._llama_cpp = llama_cpp
        # llama.cpp opens the file by name: it is given this process's descriptor of the file just checked to be
        # the one hashed, so a file swapped in after the check is never the one loaded
        try:
            held = os.fdopen(files.open_regular(resolved.path, "model file"), "rb")  # never blocks on a FIFO
        except files.FileReadError as exc:
            raise LlmFatalError(str(exc)) from None
        with held:
            try:
                model_packs.same_file(resolved.path, resolved.identity, held.fileno())
            except model_packs.ModelPackError as exc:
                raise LlmFatalError(str(exc)) from None
            by_descriptor = Path(f"/proc/self/fd/{held.fileno()}")
            self._llama: Any = llama_cpp.Llama(
                model_path=str(by_descriptor if by_descriptor.exists() else resolved.path),
                n_ctx=n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,
            )
        self._format = _chat_formatter(llama_cpp, self._llama)
        self._specials = _special_tokens(llama_cpp, self._llama)
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        name = resolved.pack.name if resolved.pack is not None else resolved.path.name
        self.info = BackendInfo(
            "local",
            name,
            str(resolved.path),
            extra={"sha256_verified": resolved.verified, "note": resolved.note, "threads": self.threads},
        )

    def start_task(self, instruction: str) -> None:
        """A live model answers any task."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        if request.images:
            raise LlmFatalError("the embedded model reads text only; use --llm openai or ollama with a vision model")
        if not isinstance(request.max_tokens, int) or request.max_tokens < 1:
            raise LlmFatalError(f"local model: max_tokens must be 1 or more, got {request.max_tokens!r:.40}")
        for message in request.messages:
            if not isinstance(message.get("content"), str) or not isinstance(message.get("role"), str):
                raise LlmFatalError("local model: every message needs a text role and content")
        # a lone surrogate (a JSON \ud800 escape in a scene graph) cannot be encoded: the model reads '?' there
        messages = [
            {**m, "content": self.defuse(m["content"].encode("utf-8", "replace").decode("utf-8"))}
            for m in request.messages
        ]
        formatted = self._format(messages=messages)
        llama = self._llama
        tokens: list[int] = llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not getattr(formatted, "added_special", False), special=True
        )
        if len(tokens) + request.max_tokens > self.n_ctx:
            raise LlmFatalError(
                f"local model: the prompt has {len(tokens)} tokens; with {request.max_tokens} for the answer it "
                f"does not fit the context window of {self.n_ctx} tokens"
            )
        self._acquire()
        try:
            grammar = self._grammar(request.schema)
            start = time.perf_counter()
            reused = self._prefill(tokens)
            read = time.perf_counter()
            text, written, finish = self._decode(tokens, grammar, request, getattr(formatted, "stop", None))
            end = time.perf_counter()
        finally:
            self._lock.release()
        return LlmResponse(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=written,
            latency_s=end - start,
            model=self.info.model,
            finish_reason=finish,
            cached_tokens=reused,
            prompt_s=read - start,
            decode_s=end - read,
        )

    def _acquire(self) -> None:
        """Take the model (one call at a time), still honouring the caller's deadline and cancel while waiting."""
        while not self._lock.acquire(timeout=0.5):
            _check_stop("waiting for another call to the model to end")

    def defuse(self, text: str) -> str:
        """`text` with every spelling of one of the model's control tokens broken by a word joiner (U+2060).

        The prompt is tokenized with its special tokens parsed, so that the chat template's own `<|im_start|>` and
        `<|im_end|>` become the tokens the model was trained on; a node name or a feedback line that spelled one
        (a scene graph is untrusted input) would otherwise end the user's turn and open one of its own."""
        return text if self._specials is None else self._specials.sub(lambda m: f"{m[0][0]}\u2060{m[0][1:]}", text)

    # ------------------------------------------------------------------ the pieces of one call
    def _prefill(self, tokens: list[int]) -> int:
        """Read the prompt but its last token (the decode reads that one) in small batches, keeping the longest
        beginning the model already holds; returns how many tokens were reused."""
        llama = self._llama
        held = llama.input_ids[: llama.n_tokens].tolist()
        reused = 0
        for a, b in zip(held, tokens[:-1], strict=False):
            if a != b:
                break
            reused += 1
        llama.n_tokens = reused  # eval() drops the cache past this point before it reads
        position = reused
        while position < len(tokens) - 1:
            _check_stop(f"reading the prompt ({position} of {len(tokens)} tokens read)")
            chunk = tokens[position : min(position + PREFILL_CHUNK_TOKENS, len(tokens) - 1)]
            llama.eval(chunk)
            position += len(chunk)
        return reused

    def _decode(self, tokens: list[int], grammar: Any, request: LlmRequest, stop: Any) -> tuple[str, int, str]:
        if request.temperature == 0.0:
            stops = [stop] if isinstance(stop, str) else list(stop or [])
            out = greedy_decode(
                self._llama_cpp,
                self._llama,
                tokens[-1],
                request.max_tokens,
                grammar,
                stops,
                lambda written: _check_stop(f"writing the answer ({written} tokens written)"),
            )
            return out.text, out.tokens, out.finish
        pieces: list[str] = []
        finish = "length"
        stream = self._llama.create_completion(
            prompt=tokens,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            grammar=grammar,
            stop=stop,
            stream=True,
        )
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                pieces.append(choice.get("text") or "")
                if choice.get("finish_reason"):
                    finish = str(choice["finish_reason"])
                    break
                _check_stop(f"writing the answer ({self._llama.n_tokens - len(tokens)} tokens written)")
        finally:
            stream.close()
        # the answer's tokens are read back into the model as it writes, all but the last one sampled: an end
        # of answer (not counted) or the token that reached max_tokens (counted)
        written = max(0, self._llama.n_tokens - len(tokens)) + (1 if finish == "length" else 0)
        return "".join(pieces), written, finish

    def _grammar(self, schema: dict[str, Any] | None) -> Any:
        """The llama.cpp grammar that holds the answer to `schema` (None: free text)."""
        if schema is None:
            return None
        key = json.dumps(schema)  # not sorted: the grammar writes the properties in this order
        grammar = self._grammars.get(key)
        if grammar is None:
            try:
                grammar = self._llama_cpp.LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception as exc:  # llama.cpp's converter refuses some schemas: say which, do not guess
                raise LlmFatalError(f"local model: the answer schema cannot be turned into a grammar: {exc}") from exc
            self._grammars[key] = grammar
            if len(self._grammars) > _GRAMMAR_CACHE_SIZE:
                self._grammars.popitem(last=False)
        else:
            self._grammars.move_to_end(key)
        return grammar


def _check_stop(where: str) -> None:
    """Raise when the call's job was canceled or its deadline passed (checked between small pieces of work)."""
    handle = http.current_abort()
    if handle is not None and handle.aborted:
        raise LlmTransientError("canceled", f"the call was canceled while {where}")
    left = http.remaining_s()
    if left is not None and left <= 0:
        raise LlmTransientError("timeout", f"the call's deadline passed while {where}")


def _special_tokens(llama_cpp: Any, llama: Any) -> re.Pattern[str] | None:
    """A pattern matching the text of every control (or user-defined special) token of the model's vocabulary."""
    model = llama._model
    kinds = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    texts = {str(model.token_get_text(i)) for i in range(model.n_vocab()) if model.token_get_attr(i) & kinds}
    texts = {t for t in texts if len(t) > 1}
    if not texts:
        return None
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))


#: Gemma's turn format, for a Gemma GGUF that carries no template (the gemma-270m pack is a conversion of the base
#: model): Gemma has no system role, so the system text opens the next user turn, as Google's own template does
#: (system text with no user turn after it is a user turn of its own, never dropped)
_GEMMA_TURNS = (
    "{{ bos_token }}{% set ns = namespace(system='') %}"
    "{% for m in messages %}{% if m['role'] == 'system' %}{% set ns.system = ns.system + m['content'] + '\n\n' %}"
    "{% else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{% if m['role'] == 'user' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if ns.system %}<start_of_turn>user\n{{ ns.system | trim }}<end_of_turn>\n{% endif %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
#: the template used when a GGUF has none, by its `general.architecture`
BUILTIN_TEMPLATES = {"gemma": _GEMMA_TURNS, "gemma2": _GEMMA_TURNS, "gemma3": _GEMMA_TURNS}


def _chat_formatter(llama_cpp: Any, llama: Any) -> Any:
    """The model's own chat template (from the GGUF), as llama-cpp-python applies it in its chat API.

    A GGUF without one gets its architecture's turn format if we know it; any other is refused: guessing a
    format makes a model answer garbage that looks like a planning failure.
    """
    chat_format = importlib.import_module("llama_cpp.llama_chat_format")
    metadata = llama.metadata
    template = metadata.get("tokenizer.chat_template") or BUILTIN_TEMPLATES.get(
        str(metadata.get("general.architecture", ""))
    )
    if not template:
        architecture = str(metadata.get("general.architecture", "?"))[:40]
        raise LlmFatalError(
            f"local model: the GGUF file has no chat template (tokenizer.chat_template) and its architecture "
            f"{architecture!r} has no built-in one ({', '.join(sorted(BUILTIN_TEMPLATES))}); "
            "use an instruct model's GGUF"
        )

    def token_text(key: str) -> str:
        raw = metadata.get(key)
        if raw is None:
            return ""
        return str(llama._model.token_get_text(int(raw)))

    eos = token_text("tokenizer.ggml.eos_token_id")
    bos = token_text("tokenizer.ggml.bos_token_id")
    return chat_format.Jinja2ChatFormatter(
        template=template, eos_token=eos, bos_token=bos, stop_token_ids=[llama.token_eos()]
    )
