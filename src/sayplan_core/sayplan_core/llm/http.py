"""HTTP plumbing shared by the network backends: a wall-clock deadline per call, and cancel.

httpx's timeouts bound each network operation, not a whole call: a server that sends a
byte every few seconds (of the headers or of the body) keeps a call alive for minutes.
The transport here connects through a network backend whose every connect, read and
write is bounded by what is left of the calling thread's deadline, so no transport
behaviour can hold a call past it. The sockets of a call can also be shut down from
another thread (`CallAbort.abort`), which ends a blocked read at once: a canceled ROS
goal does not wait for a slow server.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from sayplan_core.graph import limits
from sayplan_core.llm.types import LlmResponse

_local = threading.local()

#: bytes of an LLM server's response body: enough for an answer of `limits.MAX_ANSWER_CHARS` characters
#: however it is encoded (a character escaped as a UTF-16 surrogate pair takes 12 bytes) plus its envelope
MAX_ANSWER_BODY_BYTES = 12 * limits.MAX_ANSWER_CHARS + 1_000_000


class BodyTooLargeError(Exception):
    """A response body was longer than its transport's cap; reading stopped there.

    Not an httpx error on purpose: the SDKs let it through unwrapped, so a backend can report it.
    """

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(f"the server's response is over {limit_bytes} bytes; the rest was not read")
        self.limit_bytes = limit_bytes


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every request this thread makes inside the block must be answered within `seconds` in total.

    Nested blocks keep the earlier of the two ends (a call inside a goal's deadline cannot extend it).
    """
    previous = getattr(_local, "deadline", None)
    end = time.monotonic() + seconds
    _local.deadline = end if previous is None else min(previous, end)
    try:
        yield
    finally:
        _local.deadline = previous


def remaining_s() -> float | None:
    """Seconds left of this thread's deadline (None: no deadline)."""
    limit = getattr(_local, "deadline", None)
    return None if limit is None else limit - time.monotonic()


def _past_deadline() -> bool:
    left = remaining_s()
    return left is not None and left <= 0


class CallAbort:
    """Ends the network calls of one job (a planning goal) from another thread, and wakes its pauses."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[Any] = set()
        self._event = threading.Event()

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self) -> None:
        """Shut every open socket of the job down: a blocked read returns at once."""
        self._event.set()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def pause(self, seconds: float) -> None:
        """Sleep, but wake as soon as the job is aborted."""
        self._event.wait(max(0.0, seconds))

    def _register(self, sock: Any) -> None:
        with self._lock:
            self._sockets.add(sock)
        if self._event.is_set():
            _shutdown(sock)

    def _forget(self, sock: Any) -> None:
        with self._lock:
            self._sockets.discard(sock)


def _shutdown(sock: Any) -> None:
    import socket

    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def abortable(handle: CallAbort) -> Iterator[None]:
    """Requests this thread makes inside the block can be ended by `handle.abort()`."""
    previous = getattr(_local, "abort", None)
    _local.abort = handle
    try:
        yield
    finally:
        _local.abort = previous


def current_abort() -> CallAbort | None:
    return getattr(_local, "abort", None)


def pause(seconds: float) -> None:
    """A backoff wait that ends early when the thread's job is aborted (the default sleep of a session)."""
    handle = current_abort()
    if handle is not None:
        handle.pause(seconds)
    else:
        time.sleep(seconds)


def last_retry_after_s() -> float | None:
    """The Retry-After of the last response this thread received (SDKs that drop the headers lose it)."""
    return getattr(_local, "retry_after", None)


@cache
def _ssl_context(mod: Any) -> Any:
    """One TLS context per httpx flavour: loading the CA bundle takes a few tenths of a second, every time."""
    return mod.create_ssl_context()


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
        """A response body read under the deadline, and cut off past `max_bytes` of *decoded* data.

        A compressed body is inflated here, a piece at a time, so the cap bounds what it expands to.
        """

        def __init__(self, inner: Any, request: Any, max_bytes: int | None, inflate: bool) -> None:
            self._inner, self._request, self._max_bytes = inner, request, max_bytes
            self._inflate = zlib.decompressobj(wbits=47) if inflate else None  # 47: gzip or zlib header

        def __iter__(self) -> Iterator[bytes]:
            read = 0
            for chunk in self._inner:
                check(self._request)
                for piece in self._decoded(chunk):
                    read += len(piece)
                    if self._max_bytes is not None and read > self._max_bytes:
                        # stop here: the rest of the body is never read into memory
                        raise BodyTooLargeError(self._max_bytes)
                    yield piece
            if self._inflate is not None:
                yield self._inflate.flush()

        def _decoded(self, chunk: bytes) -> Iterator[bytes]:
            if self._inflate is None:
                yield chunk
                return
            data = chunk
            try:
                while data:
                    yield self._inflate.decompress(data, 1 << 16)
                    data = self._inflate.unconsumed_tail
            except zlib.error as exc:
                raise mod.DecodingError(
                    f"the compressed response body is corrupt: {exc}", request=self._request
                ) from None

        def close(self) -> None:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()

    core: Any = importlib.import_module(mod.__name__.replace("httpx", "httpcore"))

    def bounded(timeout: float | None) -> float | None:
        """An operation's timeout cut to what is left of the deadline; past it, the operation fails now."""
        left = remaining_s()
        if left is None:
            return timeout
        if left <= 0:
            raise core.ReadTimeout("the call took longer than its deadline")
        return left if timeout is None else min(timeout, left)

    class DeadlineNetworkStream(core.NetworkStream):  # type: ignore[misc]
        """A socket bounded by the deadline and owned by the job of the thread using it *now*.

        A pooled keep-alive connection outlives the goal that opened it, so the socket is (re)registered
        with the calling thread's CallAbort on every read and write, not only when it was opened.
        """

        def __init__(self, inner: Any) -> None:
            self._inner = inner
            self._sock = inner.get_extra_info("socket")
            self._handle: CallAbort | None = None
            self._bind()

        def _bind(self) -> None:
            handle = current_abort()
            if handle is not self._handle and self._sock is not None:
                if self._handle is not None:
                    self._handle._forget(self._sock)
                if handle is not None:
                    handle._register(self._sock)
            self._handle = handle

        def _check_abort(self) -> None:
            if self._handle is not None and self._handle.aborted:
                raise core.ReadError("the call was canceled")

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            self._bind()
            self._check_abort()
            data: bytes = self._inner.read(max_bytes, bounded(timeout))
            self._check_abort()
            return data

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._bind()
            self._check_abort()
            self._inner.write(buffer, bounded(timeout))

        def close(self) -> None:
            if self._handle is not None and self._sock is not None:
                self._handle._forget(self._sock)
            self._handle = None
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            if self._handle is not None and self._sock is not None:
                self._handle._forget(self._sock)  # the TLS stream registers the socket it wraps
                self._handle = None
            return DeadlineNetworkStream(self._inner.start_tls(ssl_context, server_hostname, bounded(timeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineNetworkBackend(core.NetworkBackend):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = core.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            stream = self._inner.connect_tcp(host, port, bounded(timeout), local_address, socket_options)
            return DeadlineNetworkStream(stream)

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return DeadlineNetworkStream(self._inner.connect_unix_socket(path, bounded(timeout), socket_options))

        def sleep(self, seconds: float) -> None:
            pause(seconds)

    class DeadlineTransport(mod.BaseTransport):  # type: ignore[misc]
        def __init__(self, max_body_bytes: int | None) -> None:
            self._max_body_bytes = max_body_bytes
            self._inner = mod.HTTPTransport()
            # the same pool httpx builds, connecting through the deadline backend (httpx has no
            # parameter for it); test_llm_deadline_and_abort's header trickle fails if this stops working
            self._inner._pool = core.ConnectionPool(
                ssl_context=_ssl_context(mod), network_backend=DeadlineNetworkBackend()
            )

        def handle_request(self, request: Any) -> Any:
            check(request)
            if self._max_body_bytes is not None:
                request.headers["Accept-Encoding"] = "gzip, deflate"  # only what the stream inflates itself
            _local.retry_after = None
            response = self._inner.handle_request(request)
            _local.retry_after = retry_after_s(response.headers)
            encoding = response.headers.get("content-encoding", "").strip().lower()
            inflate = self._max_body_bytes is not None and encoding not in ("", "identity")
            if inflate:
                if encoding not in ("gzip", "x-gzip", "deflate"):
                    response.close()
                    raise mod.DecodingError(f"unsupported Content-Encoding {encoding!r}", request=request)
                # decoded here under the cap, so httpx must not decode it again
                del response.headers["content-encoding"]
            response.stream = DeadlineStream(response.stream, request, self._max_body_bytes, inflate)
            return response

        def close(self) -> None:
            self._inner.close()

    return DeadlineTransport


def deadline_transport(httpx_module: Any, max_body_bytes: int | None = None) -> Any:
    """A transport for `httpx_module` whose response bodies are read under the calling thread's deadline.

    With `max_body_bytes`, reading a response body stops (BodyTooLargeError) as soon as it is longer.
    """
    return _transport_class(httpx_module)(max_body_bytes)


def http_client(httpx_module: Any, timeout_s: float, max_body_bytes: int | None = None) -> Any:
    """A client for an SDK: each network operation bounded by `timeout_s`, each call by `deadline()`."""
    return httpx_module.Client(
        timeout=httpx_module.Timeout(timeout_s), transport=deadline_transport(httpx_module, max_body_bytes)
    )


def oversized_answer(exc: BodyTooLargeError, max_tokens: int, latency_s: float, model: str) -> LlmResponse:
    """The answer a backend reports for a body cut off at its cap: refused with a reason fed back to the model.

    Its cost is counted as a whole answer of `max_tokens` (the server sent at least that much).
    """
    return LlmResponse(
        text="", completion_tokens=max_tokens, latency_s=latency_s, model=model, oversize_bytes=exc.limit_bytes
    )


def retry_after_s(headers: Any) -> float | None:
    """Seconds a server asked us to wait (`Retry-After: 12`), or None; an HTTP date is not honoured."""
    value = headers.get("retry-after") if headers is not None and hasattr(headers, "get") else None
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and 0 <= seconds < 1e6 else None


def network_cause(exc: BaseException) -> str:
    """What went wrong on the wire, in words a person can act on ("refused the connection", ...).

    Looks through the chain of causes for the OS error underneath the SDK's and httpx's wrappers
    (the OpenAI SDK's own text is only "Connection error.").
    """
    import socket

    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10 and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for link in chain:
        if isinstance(link, ConnectionRefusedError):
            return "refused the connection"
        if isinstance(link, ConnectionResetError):
            return "reset the connection"
        if isinstance(link, socket.gaierror):
            return "cannot be resolved (check the host name)"
    for link in chain:
        text = str(link).lower()
        for needle, cause in _CAUSES:
            if needle in text:
                return cause
    innermost = chain[-1]
    return f"failed: {type(innermost).__name__}: {one_line(str(innermost)) or 'no detail'}"


_CAUSES = (
    ("connection refused", "refused the connection"),
    ("connection reset", "reset the connection"),
    ("without sending a response", "closed the connection without answering"),
    ("without sending complete message body", "closed the connection in the middle of its answer"),
    ("name or service not known", "cannot be resolved (check the host name)"),
    ("temporary failure in name resolution", "cannot be resolved (check the host name)"),
    ("no route to host", "is unreachable (no route to host)"),
    ("network is unreachable", "is unreachable (network is unreachable)"),
    ("canceled", "was cut off: the call was canceled"),
    ("deadline", "did not answer in time"),
    ("timed out", "did not answer in time"),
)


def one_line(text: str, limit: int = 200) -> str:
    """`text` on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
