"""Issue 24, LLM items (2 and 12): one wall-clock deadline per call that a server trickling its response
headers cannot stretch (retries and backoff included), cancel that ends a blocked read, Retry-After on Ollama,
capped answers and echoes, and reasons instead of internal errors. Real SDKs against real local servers."""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST, SCHEMA, completion, no_sleep_session, ollama_reply
from werkzeug import Request, Response

from sayplan_core.graph import limits
from sayplan_core.llm.http import MAX_ANSWER_BODY_BYTES, CallAbort, abortable
from sayplan_core.llm.ollama_backend import OllamaBackend
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.replay import ReplayBackend
from sayplan_core.llm.session import Budget, BudgetExhaustedError, LlmSession, PlanCancelledError
from sayplan_core.llm.types import LlmFatalError
from sayplan_core.retrieval.embedders import CachedEmbedder, EmbeddingError, OllamaEmbedder, OpenAIEmbedder

TRICKLE_S = 0.4  # one header byte this often: every read succeeds long before the per-read timeout
HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"z" * 200 + b"\r\n"


class HeaderTrickler:
    """A raw TCP server that reads a request and then sends its response headers one byte at a time.

    Neither SDK nor httpx's per-read timeout notices: each read gets a byte well within it. It stops
    (closing the connection) after `max_s` per connection, so the old code fails in bounded time.
    """

    def __init__(self, max_s: float = 12.0, port: int = 0) -> None:
        self.max_s = max_s
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5.0)
            try:
                conn.recv(65536)  # the request (small; the SDKs send it in one write)
                end = time.monotonic() + self.max_s
                for byte in HEADERS:
                    if self._stop.is_set() or time.monotonic() > end:
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(TRICKLE_S)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._server.close()


@pytest.fixture
def trickler() -> Iterator[HeaderTrickler]:
    server = HeaderTrickler()
    yield server
    server.close()


def backend_for(protocol: str, port: int, timeout_s: float) -> Any:
    if protocol == "openai":
        return OpenAIBackend("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=timeout_s)
    return OllamaBackend("llama-test", base_url=f"http://127.0.0.1:{port}", timeout_s=timeout_s)


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_trickled_headers_cannot_stretch_a_call_with_retries_past_its_deadline(
    trickler: HeaderTrickler, protocol: str
) -> None:
    deadline_s = 2.0
    session = LlmSession(backend_for(protocol, trickler.port, deadline_s), Budget(max_transient_retries=2))
    started = time.monotonic()
    with pytest.raises(BudgetExhaustedError) as caught:
        session.complete("plan", REQUEST)
    elapsed = time.monotonic() - started
    # the bound the issue states: the deadline plus a small margin (one read of at most one byte-gap)
    assert elapsed < deadline_s + 1.0, f"{protocol}: the call took {elapsed:.1f} s against a {deadline_s:g} s deadline"
    assert caught.value.backend_failure
    assert "timeout" in str(caught.value) or "deadline" in str(caught.value)


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_abort_ends_a_call_blocked_on_trickled_headers_within_a_second(trickler: HeaderTrickler, protocol: str) -> None:
    session = LlmSession(backend_for(protocol, trickler.port, 60.0), Budget(max_transient_retries=4))
    handle = CallAbort()
    outcome: list[BaseException] = []

    def run() -> None:
        with abortable(handle):
            try:
                session.complete("plan", REQUEST)
            except BaseException as exc:  # the test inspects what ended the call
                outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    while trickler.connections == 0:  # the request is on the wire and its headers are trickling
        time.sleep(0.05)
    time.sleep(1.0)
    aborted_at = time.monotonic()
    handle.abort()
    worker.join(timeout=10.0)
    ended_after = time.monotonic() - aborted_at
    assert not worker.is_alive()
    assert ended_after < 1.0, f"the call went on {ended_after:.1f} s after the abort"
    assert isinstance(outcome[0], PlanCancelledError)


def test_ollama_honours_retry_after(httpserver: HTTPServer) -> None:
    answers = [
        Response(json.dumps({"error": "busy"}), status=429, headers={"Retry-After": "3"}),
        Response(json.dumps(ollama_reply('{"node": "kitchen"}')), content_type="application/json"),
    ]
    httpserver.expect_request("/api/chat").respond_with_handler(lambda _: answers.pop(0))
    backend = OllamaBackend("llama-test", base_url=httpserver.url_for(""))
    session, sleeps = no_sleep_session(backend, backoff_initial_s=0.5, max_retry_after_s=10.0)
    assert session.complete("plan", REQUEST).text == '{"node": "kitchen"}'
    assert sleeps == [3.0]  # the server's 3 s, not the 0.5 s backoff


def serve_answers(httpserver: HTTPServer, texts: list[str], bodies: list[int], **usage: int) -> OpenAIBackend:
    def handler(request: Request) -> Response:
        bodies.append(len(request.data))
        return Response(json.dumps(completion(texts.pop(0), **usage)), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(handler)
    return OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"))


def test_a_huge_invalid_answer_is_not_echoed_into_later_requests(httpserver: HTTPServer) -> None:
    huge = "not json " * 530_000  # 4.8 MB
    bodies: list[int] = []
    backend = serve_answers(httpserver, [huge, huge[:400_000], '{"node": "kitchen"}'], bodies)
    session, _ = no_sleep_session(backend)
    assert session.ask("plan", REQUEST.messages, SCHEMA, lambda d: d) == {"node": "kitchen"}
    first = bodies[0]
    assert max(bodies) < first + 4 * limits.MAX_ECHO_CHARS + 2_000, f"request bodies grew: {bodies}"
    assert [c.outcome for c in session.calls] == ["bad_answer", "bad_answer", "ok"]
    assert "over the limit of 1000000" in session.calls[0].detail


def test_a_deeply_nested_answer_gets_a_reason_fed_back(httpserver: HTTPServer) -> None:
    deep = '{"node": ' * 50_000 + '"x"' + "}" * 50_000
    bodies: list[int] = []
    backend = serve_answers(httpserver, [deep, '{"node": "office"}'], bodies)
    session, _ = no_sleep_session(backend)
    assert session.ask("plan", REQUEST.messages, SCHEMA, lambda d: d) == {"node": "office"}
    assert session.calls[0].outcome == "bad_answer"
    assert "the answer is nested more than 32 levels deep" in session.calls[0].detail


def test_negative_token_usage_is_not_a_usage_report(httpserver: HTTPServer) -> None:
    bodies: list[int] = []
    texts = ['{"node": "kitchen"}'] * 3
    backend = serve_answers(httpserver, texts, bodies, prompt=-1_000_000, completion_tokens=5)
    session, _ = no_sleep_session(backend, max_transient_retries=2)
    with pytest.raises(BudgetExhaustedError, match=r"kept failing \(invalid_usage\) after 3 attempts") as caught:
        session.complete("plan", REQUEST)
    assert "prompt_tokens = -1000000" in str(caught.value)
    assert caught.value.backend_failure and session.tokens_used == 0


def test_an_oversized_request_is_not_sent(httpserver: HTTPServer) -> None:
    bodies: list[int] = []
    backend = serve_answers(httpserver, ['{"node": "kitchen"}'], bodies)
    session, _ = no_sleep_session(backend)
    big = [{"role": "user", "content": "x" * (limits.MAX_REQUEST_CHARS + 1)}]
    with pytest.raises(BudgetExhaustedError, match="over the limit of 8000000"):
        session.ask("plan", big, SCHEMA, lambda d: d)
    assert bodies == []


def test_a_transcript_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(b'{"calls": ["\xff\xfe"]}')
    with pytest.raises(LlmFatalError, match=f"transcript {path} is not UTF-8 text"):
        ReplayBackend.from_file(path)


def test_plans_in_answers_and_plan_text_are_bounded() -> None:
    from sayplan_core.envs import load_env
    from sayplan_core.llm.session import BadAnswerError
    from sayplan_core.planners.answers import parse_plan_items
    from sayplan_core.sim.action_set import load_action_set
    from sayplan_core.sim.plan import PlanFormatError, parse_plan

    steps = [{"action": "done", "target": ""}] * (limits.MAX_PLAN_STEPS + 1)
    with pytest.raises(BadAnswerError, match="the plan has 1001 steps, over the limit of 1000"):
        parse_plan_items(load_env("office"), load_action_set("sayplan"), steps)
    with pytest.raises(PlanFormatError, match="the plan is nested more than 32 levels deep"):
        parse_plan("[" * 5_000 + "]" * 5_000)
    with pytest.raises(PlanFormatError, match="over the limit of 1000"):
        parse_plan(" > ".join(["done"] * 1_001))
    assert [str(s) for s in parse_plan("goto(kitchen) > done")] == ["goto(kitchen)", "done"]


def read_request(conn: socket.socket) -> bool:
    """Read one whole HTTP request (headers and a Content-Length body); False when the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return False
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return False
        body += more
    return True


class KeepAliveServer:
    """A raw HTTP/1.1 server answering on keep-alive connections until `stall` is set; then requests get no answer.

    A stalled request is held for at most `hold_s`, then the connection is closed (so old code fails in bounded time).
    """

    def __init__(self, body: bytes, hold_s: float = 12.0, port: int = 0) -> None:
        self.body, self.hold_s = body, hold_s
        self.connections = 0
        self.requests = 0
        self.stalled = 0
        self.stall = threading.Event()
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n"
        with conn:
            conn.settimeout(self.hold_s)
            try:
                while read_request(conn):
                    self.requests += 1
                    if not self.stall.is_set():
                        conn.sendall(head.encode() + self.body)
                    else:
                        self.stalled += 1
                        self._stop.wait(self.hold_s)
                        return
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._server.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_cancel_of_a_later_goal_on_a_reused_keep_alive_connection_ends_within_a_second(protocol: str) -> None:
    answer = completion('{"node": "kitchen"}') if protocol == "openai" else ollama_reply('{"node": "kitchen"}')
    server = KeepAliveServer(json.dumps(answer).encode())
    backend = backend_for(protocol, server.port, 60.0)  # one backend, one connection pool, across goals
    try:
        with abortable(CallAbort()):  # the first goal, answered at once: its connection goes back to the pool
            assert LlmSession(backend, Budget(max_transient_retries=0)).complete("plan", REQUEST).text
        server.stall.set()
        handle = CallAbort()  # the next goal's own handle, as the planner node makes one per goal
        outcome: list[BaseException] = []

        def run() -> None:
            with abortable(handle):
                try:
                    LlmSession(backend, Budget(max_transient_retries=0)).complete("plan", REQUEST)
                except BaseException as exc:  # the test inspects what ended the call
                    outcome.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        while not server.stalled:  # the second request is on the wire, on the pooled connection
            time.sleep(0.05)
        time.sleep(0.5)
        aborted_at = time.monotonic()
        handle.abort()
        worker.join(timeout=20.0)
        ended_after = time.monotonic() - aborted_at
        assert server.connections == 1, "the second goal did not reuse the first goal's connection"
        assert ended_after < 1.0, f"{protocol}: the call went on {ended_after:.1f} s after the abort"
        assert isinstance(outcome[0], PlanCancelledError)
    finally:
        server.close()


class HugeBodyServer:
    """A raw server answering one request with a `total`-byte JSON answer, counting the bytes it got to send."""

    CHUNK = 1 << 20

    def __init__(self, protocol: str, answer_chars: int) -> None:
        envelope = json.dumps(completion("X") if protocol == "openai" else ollama_reply("X")).encode()
        self.before, self.after = envelope.split(b'"X"')
        self.answer_chars = answer_chars
        self.total = len(self.before) + 2 + answer_chars + len(self.after)
        self.sent = 0
        self.done = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self._server.accept()
        except OSError:
            return
        with conn:
            try:
                conn.settimeout(10.0)
                read_request(conn)
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {self.total}\r\n\r\n"
                conn.sendall(head.encode() + self.before + b'"')
                chunk = b"a" * self.CHUNK
                while self.sent < self.answer_chars:
                    n = min(self.CHUNK, self.answer_chars - self.sent)
                    conn.sendall(chunk[:n])
                    self.sent += n
                conn.sendall(b'"' + self.after)
            except OSError:  # the client stopped reading and closed the connection
                pass
            finally:
                self.done.set()

    def close(self) -> None:
        self._server.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_a_huge_answer_body_is_not_read_past_the_cap(protocol: str) -> None:
    server = HugeBodyServer(protocol, answer_chars=120_000_000)  # a 120 MB answer
    backend = backend_for(protocol, server.port, 60.0)
    session = LlmSession(backend, Budget(max_transient_retries=0, max_bad_answers_per_step=0))
    try:
        with pytest.raises(BudgetExhaustedError) as caught:
            session.ask("plan", REQUEST.messages, SCHEMA, lambda d: d)
        assert server.done.wait(10.0)
        # what the server got out: the cap plus what the socket buffers hold, far from the whole body
        assert server.sent < MAX_ANSWER_BODY_BYTES + 16 * HugeBodyServer.CHUNK, f"{server.sent} of {server.total}"
        assert f"over the limit of {limits.MAX_ANSWER_CHARS} characters" in caught.value.last_feedback
        assert [c.outcome for c in session.calls] == ["bad_answer"]
        assert session.calls[0].completion_tokens == REQUEST.max_tokens  # counted as a whole answer
    finally:
        server.close()
    # an answer at the limit is read whole (and refused as text by the session's own check, not by the cap)
    at_limit = HugeBodyServer(protocol, answer_chars=limits.MAX_ANSWER_CHARS)
    try:
        response = LlmSession(backend_for(protocol, at_limit.port, 60.0)).complete("plan", REQUEST)
        assert len(response.text) == limits.MAX_ANSWER_CHARS and not response.oversize_bytes
    finally:
        at_limit.close()


class GzipServer:
    """A raw server answering each request with a gzip-compressed JSON answer of `answer_chars` characters."""

    def __init__(self, protocol: str, answer_chars: int) -> None:
        envelope = json.dumps(completion("X") if protocol == "openai" else ollama_reply("X")).encode()
        before, after = envelope.split(b'"X"')
        packer = zlib.compressobj(wbits=31)  # gzip
        parts = [packer.compress(before + b'"')]
        chunk = b"a" * (1 << 20)
        for start in range(0, answer_chars, len(chunk)):
            parts.append(packer.compress(chunk[: min(len(chunk), answer_chars - start)]))
        parts += [packer.compress(b'"' + after), packer.flush()]
        self.body = b"".join(parts)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(10.0)
                    if read_request(conn):
                        head = (
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                            f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
                        )
                        conn.sendall(head.encode() + self.body)
                except OSError:
                    pass

    def close(self) -> None:
        self._server.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_a_compressed_answer_is_capped_on_what_it_expands_to(protocol: str) -> None:
    bomb = GzipServer(protocol, answer_chars=100_000_000)  # about 100 KB on the wire, 100 MB inflated
    session = LlmSession(
        backend_for(protocol, bomb.port, 60.0), Budget(max_transient_retries=0, max_bad_answers_per_step=0)
    )
    try:
        with pytest.raises(BudgetExhaustedError) as caught:
            session.ask("plan", REQUEST.messages, SCHEMA, lambda d: d)
        assert "reading stopped there" in caught.value.last_feedback
    finally:
        bomb.close()
    # an ordinary compressed answer is still read
    small = GzipServer(protocol, answer_chars=5_000)
    try:
        assert LlmSession(backend_for(protocol, small.port, 60.0)).complete("plan", REQUEST).text == "a" * 5_000
    finally:
        small.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_an_embedding_endpoint_trickling_its_headers_cannot_hold_a_batch_past_its_timeout(
    trickler: HeaderTrickler, protocol: str
) -> None:
    timeout_s = 2.0
    embedder: CachedEmbedder
    if protocol == "openai":
        embedder = OpenAIEmbedder("embed-test", base_url=f"http://127.0.0.1:{trickler.port}/v1", timeout_s=timeout_s)
    else:
        embedder = OllamaEmbedder("embed-test", host=f"http://127.0.0.1:{trickler.port}", timeout_s=timeout_s)
    started = time.monotonic()
    with pytest.raises(EmbeddingError):
        embedder.embed(["mug", "desk"])
    elapsed = time.monotonic() - started
    assert elapsed < timeout_s + 1.0, f"{protocol}: the batch took {elapsed:.1f} s against a {timeout_s:g} s timeout"
