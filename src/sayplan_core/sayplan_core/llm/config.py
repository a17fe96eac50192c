"""The LLM configuration: which backend and model, how long a call may take, and what `auto` means here.

Read by `selection`, which builds the backend, and by `probe`, which checks it would answer without building it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sayplan_core.llm.types import LlmFatalError

BACKENDS = ("auto", "openai", "ollama", "local", "replay")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "ollama": "llama3.1:8b", "local": "qwen-1.5b"}
#: the deadline of one call to a server when the configuration says 0 (the embedded model has its own,
#: `local_backend.DEFAULT_TIMEOUT_S`: it reads prompts on the CPU)
SERVER_TIMEOUT_S = 60.0


@dataclass
class LlmConfig:
    backend: str = "auto"
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable and never logged
    temperature: float = 0.0
    timeout_s: float = 0.0  # 0: the backend's default (SERVER_TIMEOUT_S, or the embedded model's own)
    retries: int = 4
    replay_path: str = ""

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise LlmFatalError(f"unknown LLM backend '{self.backend}' (use one of: {', '.join(BACKENDS)})")
        if not 0.0 <= self.temperature <= 2.0:
            raise LlmFatalError(f"temperature must be between 0 and 2, got {self.temperature}")
        if not self.timeout_s >= 0:
            raise LlmFatalError(f"timeout must be 0 (the backend's default) or positive, got {self.timeout_s}")
        if self.retries < 0:
            raise LlmFatalError(f"retries must be 0 or more, got {self.retries}")
        if self.backend == "replay" and not self.replay_path:
            raise LlmFatalError("the replay backend needs a transcript path")


def resolve_backend_name(config: LlmConfig, ollama_wait_s: float = 1.5) -> tuple[str, str]:
    """Which backend `auto` means here, and why (waiting at most `ollama_wait_s` for an Ollama server)."""
    if config.backend != "auto":
        return config.backend, "requested"
    if os.environ.get(config.api_key_env):
        return "openai", f"{config.api_key_env} is set"
    from sayplan_core.llm.ollama_backend import ollama_answers

    if ollama_wait_s > 0 and ollama_answers(config.base_url or None, ollama_wait_s):
        return "ollama", "an Ollama server answers"
    return "local", f"no {config.api_key_env} and no Ollama server"
