"""The small interface every LLM backend implements, the errors it may raise, and URLs safe to print."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

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
    #: the server's response was longer than this many bytes and was not read whole (0: read whole)
    oversize_bytes: int = 0
    #: prompt tokens the backend reused from its previous call instead of reading them again (0: none, or unknown)
    cached_tokens: int = 0
    #: seconds spent reading the prompt and writing the answer, where the backend measures them (0: unknown)
    prompt_s: float = 0.0
    decode_s: float = 0.0


class LlmError(Exception):
    """Base of backend errors."""


class LlmTransientError(LlmError):
    """Worth retrying after a pause: timeout, connection refused, HTTP 429 or 5xx.

    retry_after_s: how long the server asked us to wait (a Retry-After header), when it said.
    """

    def __init__(self, kind: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.retry_after_s = retry_after_s


class LlmFatalError(LlmError):
    """Retrying will not help: bad credentials, unknown model, malformed request."""


@dataclass
class BackendInfo:
    """What a backend is, safe to print and to store: the URL never carries credentials."""

    name: str
    model: str
    base_url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.base_url = redact_url(self.base_url)

    def describe(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.name} ({self.model}{where})"


class LlmBackend(Protocol):
    info: BackendInfo

    def start_task(self, instruction: str) -> None:
        """Called before a task's first request (a replayed transcript refuses another task's instruction)."""

    def complete(self, request: LlmRequest) -> LlmResponse: ...


def redact_url(url: str) -> str:
    """The text with any `user:password@` of a URL in it replaced by `***@`, for logs, transcripts and messages."""
    if not url or "@" not in url:
        return url
    out = []
    for word in url.split(" "):
        out.append(_redact_one(word) if "://" in word and "@" in word else word)
    return " ".join(out)


def _redact_one(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<URL with credentials>"
    if parts.username is None and parts.password is None:
        return url
    if port is not None:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))
