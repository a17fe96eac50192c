"""Backend configuration and selection, including `auto`."""

from __future__ import annotations

import os

from sayplan_core.llm.config import BACKENDS, DEFAULT_MODELS, SERVER_TIMEOUT_S, LlmConfig, resolve_backend_name
from sayplan_core.llm.probe import LlmProbe, probe_llm
from sayplan_core.llm.types import LlmBackend, LlmFatalError

__all__ = ["BACKENDS", "DEFAULT_MODELS", "LlmConfig", "LlmProbe", "make_backend", "probe_llm", "resolve_backend_name"]


def make_backend(config: LlmConfig) -> tuple[LlmBackend, str]:
    """Build the configured backend; returns it and a one-line note on the choice."""
    config.validate()
    name, why = resolve_backend_name(config)
    model = config.model or DEFAULT_MODELS.get(name, "")
    backend: LlmBackend
    if name == "openai":
        from sayplan_core.llm.openai_backend import OpenAIBackend

        key = os.environ.get(config.api_key_env)
        if not key and not config.base_url:
            raise LlmFatalError(f"the openai backend needs {config.api_key_env} set (or --base-url for a local server)")
        backend = OpenAIBackend(model, config.base_url or None, key, config.timeout_s or SERVER_TIMEOUT_S)
    elif name == "ollama":
        from sayplan_core.llm.ollama_backend import OllamaBackend

        backend = OllamaBackend(model, config.base_url or None, config.timeout_s or SERVER_TIMEOUT_S)
    elif name == "local":
        from sayplan_core.llm.local_backend import LocalBackend

        backend = LocalBackend(config.model, timeout_s=config.timeout_s or None)
    else:
        from sayplan_core.llm.replay import ReplayBackend

        backend = ReplayBackend.from_file(config.replay_path)
    return backend, f"LLM backend: {backend.info.describe()} ({why})"
