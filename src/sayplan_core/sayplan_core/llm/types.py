"""The small interface every LLM backend implements, and the errors it may raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@dataclass(frozen=True)
class LlmRequest:
    messages: list[Message]
    schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    temperature: float = 0.0
    max_tokens: int = 1024
    images: tuple[bytes, ...] = ()  # PNG/JPEG bytes shown with the last user message (VLM calls)


@dataclass
class LlmResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str = "stop"
    refusal: str | None = None


class LlmError(Exception):
    """Base of backend errors."""


class LlmTransientError(LlmError):
    """Worth retrying after a pause: timeout, connection refused, HTTP 429 or 5xx."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class LlmFatalError(LlmError):
    """Retrying will not help: bad credentials, unknown model, malformed request."""


@dataclass
class BackendInfo:
    name: str
    model: str
    base_url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.name} ({self.model}{where})"


class LlmBackend(Protocol):
    info: BackendInfo

    def complete(self, request: LlmRequest) -> LlmResponse: ...
