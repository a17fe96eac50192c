"""Ollama's native /api/chat through the official `ollama` SDK (structured output via `format`)."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from typing import Any

from sayplan_core.llm.http import (
    MAX_ANSWER_BODY_BYTES,
    BodyTooLargeError,
    deadline,
    deadline_transport,
    last_retry_after_s,
    network_cause,
    one_line,
    oversized_answer,
)
from sayplan_core.llm.types import (
    BackendInfo,
    LlmFatalError,
    LlmRequest,
    LlmResponse,
    LlmTransientError,
    redact_url,
)

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_PORT = 11434
#: the longest OLLAMA_HOST or base_url read; a longer one is refused, not echoed
MAX_HOST_CHARS = 512
#: a host name, an IPv4 address or a bracketed IPv6 one (with a zone); empty: 127.0.0.1
_HOST = re.compile(r"[A-Za-z0-9._~-]*|\[[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*[0-9A-Fa-f](%[A-Za-z0-9._~-]+)?\]|\[::\]")


def ollama_host(base_url: str | None = None) -> str:
    """The Ollama server to use: an explicit base_url wins, then $OLLAMA_HOST, then 127.0.0.1:11434.

    Both forms are read as the official client reads OLLAMA_HOST: `host[:port][/path]`, the scheme
    optional (http), the port 11434 unless given (80/443 when only a scheme is), `:port` alone for
    127.0.0.1, IPv6 in brackets. A value the official client refuses (a port that is not a number in
    0-65535, an unclosed IPv6 bracket), or one with spaces, control characters or over
    `MAX_HOST_CHARS`, is refused with one bounded line (LlmFatalError) rather than read as a default.
    """
    given = base_url or ""  # not stripped: a value with spaces is refused, not read as another one
    from_env = os.environ.get("OLLAMA_HOST", "")
    if given and from_env:  # the SDK reads OLLAMA_HOST when it is imported, whatever base_url says
        _parse(from_env, "OLLAMA_HOST (the ollama SDK reads it even when base_url is set)")
    return (
        _parse(given, "the LLM base_url")
        if given
        else _parse(from_env, "OLLAMA_HOST")
        if from_env
        else DEFAULT_OLLAMA_URL
    )


def _parse(raw: str, where: str) -> str:
    """`raw` read as the official client reads OLLAMA_HOST, or LlmFatalError naming `where` and what is wrong. A
    few values the official client reads as a default are refused too: credentials (never echoed), a scheme with
    no host (`http://`, `http://:80`), a path with no host (`//host:5`), port 0."""
    said = f"{where} {one_line(redact_url(raw), 60)!r} is not host[:port][/path]"
    if len(raw) > MAX_HOST_CHARS or any(c.isspace() or not c.isprintable() or c in "?#" for c in raw):
        raise LlmFatalError(
            f"{said}: "
            + (
                f"{len(raw)} characters (at most {MAX_HOST_CHARS})"
                if len(raw) > MAX_HOST_CHARS
                else "it holds a space, a control character, '?' or '#'"
            )
        )
    if "@" in raw:  # not echoed: what precedes the @ may be a password, with or without a scheme
        raise LlmFatalError(f"{where} is not host[:port][/path]: credentials are not read from it (user:password@)")
    if raw.startswith("/"):
        raise LlmFatalError(f"{said}: it names no host, only a path")
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest = "http", raw
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise LlmFatalError(f"{said}: the scheme is not http or https")
    hostport, slash, path = rest.partition("/")
    path = f"/{path}".rstrip("/") if slash else ""
    if hostport.startswith("["):  # [IPv6] or [IPv6]:port
        close = hostport.find("]")
        if close < 0:
            raise LlmFatalError(f"{said}: the IPv6 '[' is not closed")
        host, port_text = hostport[: close + 1], hostport[close + 1 :]
        if port_text and not port_text.startswith(":"):
            raise LlmFatalError(f"{said}: text after the IPv6 ']'")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        if ":" in host:
            raise LlmFatalError(f"{said}: an IPv6 address goes in brackets, [::1]")
    if not _HOST.fullmatch(host):
        raise LlmFatalError(f"{said}: {one_line(host, 40)!r} is no host name")
    if sep and not host:
        raise LlmFatalError(f"{said}: a scheme with no host (write the host, or :port alone for 127.0.0.1)")
    default_port = (443 if scheme == "https" else 80) if sep else DEFAULT_OLLAMA_PORT
    if port_text and not (port_text.isascii() and port_text.isdigit() and int(port_text) <= 65535):
        raise LlmFatalError(f"{said}: the port {one_line(port_text, 20)!r} is not a number from 0 to 65535")
    if port_text and int(port_text) == 0:
        raise LlmFatalError(f"{said}: port 0 is no server's port")
    port = int(port_text or 0) or default_port
    return f"{scheme}://{host or '127.0.0.1'}:{port}{path}"


class OllamaBackend:
    def __init__(self, model: str, base_url: str | None = None, timeout_s: float = 60.0) -> None:
        import httpx

        host = ollama_host(base_url)  # a malformed host is refused in our words before the SDK reads it
        try:
            import ollama
        except ValueError as exc:  # the SDK parses $OLLAMA_HOST when it is imported
            raise LlmFatalError(f"the ollama SDK refuses OLLAMA_HOST: {one_line(str(exc), 120)}") from None
        self._ollama = ollama
        self.timeout_s = timeout_s
        # the transport enforces a deadline on the whole call, not only on each read
        self._client = ollama.Client(
            host=host, timeout=timeout_s, transport=deadline_transport(httpx, MAX_ANSWER_BODY_BYTES)
        )
        self.info = BackendInfo("ollama", model, host)

    def start_task(self, instruction: str) -> None:
        """A live model answers any task."""

    @property
    def _where(self) -> str:
        return f"ollama at {self.info.base_url}"

    def complete(self, request: LlmRequest) -> LlmResponse:
        import httpx
        import pydantic

        ollama = self._ollama
        options: dict[str, Any] = {"temperature": request.temperature, "num_predict": request.max_tokens}
        messages: list[Any] = list(request.messages)
        if request.images:
            messages[-1] = {**messages[-1], "images": [base64.b64encode(i).decode() for i in request.images]}
        start = time.perf_counter()
        try:
            with deadline(self.timeout_s):
                reply = self._client.chat(
                    model=self.info.model,
                    messages=messages,
                    format=request.schema if request.schema is not None else None,
                    options=options,
                )
        except BodyTooLargeError as exc:
            return oversized_answer(exc, request.max_tokens, time.perf_counter() - start, self.info.model)
        except ollama.ResponseError as exc:
            status = int(getattr(exc, "status_code", 0) or 0)
            error = one_line(str(exc.error))
            if status == 429 or status >= 500:
                # the SDK drops the response headers; the transport kept the Retry-After
                raise LlmTransientError(
                    f"http_{status}", f"{self._where} answered HTTP {status}: {error}", last_retry_after_s()
                ) from exc
            raise LlmFatalError(f"HTTP {status} from {self.info.base_url}: {error}") from exc
        except httpx.TimeoutException as exc:
            raise LlmTransientError(
                "timeout", f"{self._where}: no complete answer within {self.timeout_s:g} s"
            ) from exc
        except (httpx.RequestError, ConnectionError) as exc:  # refused, reset, corrupt body, canceled (CallAbort)
            raise LlmTransientError("connection", f"{self._where} {network_cause(exc)}") from exc
        except json.JSONDecodeError as exc:  # a body cut short by a closed connection reads as broken JSON
            raise LlmTransientError(
                "bad_response", f"{self._where} sent a response that is not JSON: {exc.msg}"
            ) from exc
        except pydantic.ValidationError as exc:
            if exc.title != "ChatResponse":  # our request, not the server's answer: a bug, not a network failure
                raise
            raise LlmTransientError("bad_response", f"{self._where} sent a response that is not a chat answer") from exc
        latency = time.perf_counter() - start
        message = reply.message
        return LlmResponse(
            text=(message.content or "") if message is not None else "",
            prompt_tokens=int(reply.prompt_eval_count or 0),
            completion_tokens=int(reply.eval_count or 0),
            latency_s=latency,
            model=str(reply.model or self.info.model),
            finish_reason=str(reply.done_reason or "stop"),
        )


def ollama_answers(base_url: str | None = None, timeout_s: float = 1.5) -> bool:
    """True when an Ollama server answers at base_url (or $OLLAMA_HOST) within `timeout_s` (for `llm: auto`)."""
    import httpx

    try:
        with (
            deadline(timeout_s),
            httpx.Client(timeout=timeout_s, transport=deadline_transport(httpx, 1_000_000)) as client,
        ):
            response = client.get(f"{ollama_host(base_url)}/api/version")
    except (httpx.HTTPError, BodyTooLargeError):
        return False
    return response.status_code == 200
