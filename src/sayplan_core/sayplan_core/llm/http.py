"""HTTP plumbing shared by the network backends: a total deadline per call, and URLs safe to print.

httpx's timeouts bound each network operation, not a whole call: a server that sends a
byte every few seconds keeps a call alive for minutes. The transport here checks a
per-call deadline on every chunk of the response as it arrives and fails the call
once it has passed, so a call takes at most its timeout plus one network read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every request this thread makes inside the block must be answered within `seconds` in total."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _past_deadline() -> bool:
    limit = getattr(_local, "deadline", None)
    return limit is not None and time.monotonic() > limit


@cache
def _transport_class(mod: Any) -> Any:
    """The deadline transport for one httpx flavour (the OpenAI SDK ships `httpx2`, Ollama's uses `httpx`).

    Exceeding the deadline raises the flavour's own TimeoutException, so each SDK reports it as its timeout.
    """

    class DeadlineExceededError(mod.TimeoutException):  # type: ignore[misc]
        pass

    def check(request: Any) -> None:
        if _past_deadline():
            raise DeadlineExceededError("the call took longer than its deadline", request=request)

    class DeadlineStream(mod.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, request: Any) -> None:
            self._inner, self._request = inner, request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                check(self._request)
                yield chunk

        def close(self) -> None:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()

    class DeadlineTransport(mod.BaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = mod.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            check(request)
            response = self._inner.handle_request(request)
            response.stream = DeadlineStream(response.stream, request)
            return response

        def close(self) -> None:
            self._inner.close()

    return DeadlineTransport


def deadline_transport(httpx_module: Any) -> Any:
    """A transport for `httpx_module` whose response bodies are read under the calling thread's deadline."""
    return _transport_class(httpx_module)()


def http_client(httpx_module: Any, timeout_s: float) -> Any:
    """A client for an SDK: each network operation bounded by `timeout_s`, each call by `deadline()`."""
    return httpx_module.Client(timeout=httpx_module.Timeout(timeout_s), transport=deadline_transport(httpx_module))


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


def retry_after_s(headers: Any) -> float | None:
    """Seconds a server asked us to wait (`Retry-After: 12`), or None; an HTTP date is not honoured."""
    value = headers.get("retry-after") if headers is not None and hasattr(headers, "get") else None
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and 0 <= seconds < 1e6 else None
