"""Both network backends retry resets, refusals, cut-off answers and 5xx inside the call's deadline; they wait
what a server's Retry-After asks (within the budget; a longer wait is refused), and failed attempts cost no tokens.

The server is a raw socket: closing with SO_LINGER 0 sends a real TCP RST, which is what a crashed or
restarting Ollama / vLLM does to a request in flight; after its N failures it answers with the protocol's
own JSON (test_llm_backends' shapes of Ollama's /api/chat and OpenAI's /v1/chat/completions).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from llm_fake_servers import completion, ollama_reply, read_request
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST, no_sleep_session
from werkzeug import Response

from sayplan_core import cli
from sayplan_core.cli.common import EXIT_USAGE
from sayplan_core.llm import http
from sayplan_core.llm.ollama_backend import OllamaBackend
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import Budget, BudgetExhaustedError, LlmSession
from sayplan_core.llm.types import LlmBackend

#: run alone (make pytest's serial phase): it bounds a call with retries by its deadline in wall-clock seconds
pytestmark = pytest.mark.serial

ANSWER = '{"node": "kitchen"}'
BODIES = {"ollama": ollama_reply(ANSWER), "openai": completion(ANSWER)}


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


@dataclass
class FlakyServer:
    """Fails its first `failures` connections the way `how` says, then answers each request with `body`."""

    body: dict[str, Any]
    failures: int
    how: str = "reset"  # reset: RST after reading the request; truncate: half the JSON, then a clean close
    connections: int = 0
    sock: socket.socket = field(default_factory=socket.socket)

    def start(self, port: int = 0) -> FlakyServer:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with conn:
                read_request(conn)
                payload = json.dumps(self.body).encode()
                if self.connections <= self.failures and self.how == "reset":
                    reset(conn)
                    continue
                if self.connections <= self.failures:  # truncate: no Content-Length, so the close ends the body
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                    conn.sendall(head + payload[: len(payload) // 2])
                    continue
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[FlakyServer]]:
    started: list[FlakyServer] = []
    yield started
    for server in started:
        server.stop()


def backend_for(protocol: str, url: str, timeout_s: float = 10.0) -> LlmBackend:
    if protocol == "ollama":
        return OllamaBackend("llama-test", base_url=url, timeout_s=timeout_s)
    return OpenAIBackend("gpt-test", base_url=f"{url}/v1", api_key="sk-test", timeout_s=timeout_s)


def session_for(backend: LlmBackend, waits: list[float], **budget: Any) -> LlmSession:
    def sleep(seconds: float) -> None:  # the session's real pause, watched
        waits.append(seconds)
        http.pause(seconds)

    return LlmSession(backend, Budget(**budget), sleep=sleep)


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_resets_are_retried_with_exponential_backoff_then_answered(protocol: str, servers: list[FlakyServer]) -> None:
    server = FlakyServer(BODIES[protocol], failures=3).start()
    servers.append(server)
    waits: list[float] = []
    session = session_for(backend_for(protocol, server.url), waits, backoff_initial_s=0.05, backoff_max_s=0.15)
    response = session.complete("search", REQUEST)
    assert response.text == ANSWER
    assert server.connections == 4
    assert [c.outcome for c in session.calls] == ["transient_error"] * 3 + ["ok"]
    assert waits == [0.05, 0.1, 0.15]  # doubled each time, capped at backoff_max_s
    for call in session.calls[:3]:
        assert f"{protocol} at {server.url}" in call.detail and "reset the connection" in call.detail


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_a_cut_off_answer_is_retried(protocol: str, servers: list[FlakyServer]) -> None:
    server = FlakyServer(BODIES[protocol], failures=1, how="truncate").start()
    servers.append(server)
    waits: list[float] = []
    session = session_for(backend_for(protocol, server.url), waits, backoff_initial_s=0.05)
    assert session.complete("search", REQUEST).text == ANSWER
    assert session.calls[0].outcome == "transient_error" and "not JSON" in session.calls[0].detail


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_refused_until_the_server_comes_up(protocol: str, servers: list[FlakyServer]) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on `port` until the server starts, during the session's second backoff wait
    server = FlakyServer(BODIES[protocol], failures=0)
    servers.append(server)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            server.start(port)
        http.pause(seconds)

    backend = backend_for(protocol, f"http://127.0.0.1:{port}")
    session = LlmSession(backend, Budget(backoff_initial_s=0.05), sleep=sleep)
    assert session.complete("search", REQUEST).text == ANSWER
    assert [c.outcome for c in session.calls] == ["transient_error"] * 2 + ["ok"]
    assert all(f"{protocol} at http://127.0.0.1:{port}" in c.detail for c in session.calls[:2])
    assert all("refused the connection" in c.detail for c in session.calls[:2])
    assert server.connections == 1


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_5xx_is_retried_then_answered(protocol: str, httpserver: HTTPServer) -> None:
    path = "/api/chat" if protocol == "ollama" else "/v1/chat/completions"
    httpserver.expect_ordered_request(path).respond_with_json({"error": "loading model"}, status=503)
    httpserver.expect_ordered_request(path).respond_with_json({"error": {"message": "bad gateway"}}, status=502)
    httpserver.expect_ordered_request(path).respond_with_json(BODIES[protocol])
    url = httpserver.url_for("").rstrip("/")
    waits: list[float] = []
    session = session_for(backend_for(protocol, url), waits, backoff_initial_s=0.05)
    assert session.complete("search", REQUEST).text == ANSWER
    details = [c.detail for c in session.calls[:2]]
    assert "HTTP 503" in details[0] and "HTTP 502" in details[1] and all(url in d for d in details)


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_resets_without_end_stop_at_the_deadline_with_one_clear_line(protocol: str, servers: list[FlakyServer]) -> None:
    server = FlakyServer(BODIES[protocol], failures=10**9).start()
    servers.append(server)
    waits: list[float] = []
    deadline_s = 1.5
    backend = backend_for(protocol, server.url, timeout_s=deadline_s)
    session = session_for(backend, waits, backoff_initial_s=0.05, backoff_max_s=0.4, max_transient_retries=100)
    start = time.monotonic()
    with pytest.raises(BudgetExhaustedError) as caught:
        session.complete("search", REQUEST)
    took = time.monotonic() - start
    assert took <= deadline_s + 0.5, f"the call took {took:.2f} s with a deadline of {deadline_s} s"
    assert server.connections >= 4 and max(waits) <= 0.4
    message = str(caught.value)
    assert "\n" not in message and caught.value.backend_failure
    assert f"deadline of {deadline_s:g} s" in message
    assert f"{protocol} at {server.url}" in message and "reset the connection" in message


def test_the_cli_says_which_host_failed_and_how(servers: list[FlakyServer], capsys: pytest.CaptureFixture[str]) -> None:
    """The user's view of an Ollama that resets every request: one `error` line (never `internal error`), exit 2."""
    server = FlakyServer(BODIES["ollama"], failures=10**9).start()
    servers.append(server)
    argv = ["plan", "--env", "office", "--instruction", "find a mug", "--llm", "ollama", "--base-url", server.url]
    code = cli.main([*argv, "--retries", "2", "--timeout", "5"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == EXIT_USAGE
    assert len(errors) == 1 and errors[0].startswith("sayplan: error: LLM backend kept failing (connection) after 3")
    assert f"ollama at {server.url} reset the connection" in errors[0]
    assert server.connections == 3


# ------------------------------------------------------------------ Retry-After and what retries cost
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


def test_retry_after_is_honoured_within_the_budget_and_refused_beyond_it(httpserver: HTTPServer) -> None:
    answers = [
        Response("{}", status=429, headers={"Retry-After": "3"}),
        Response(json.dumps(completion('{"node": "kitchen"}')), content_type="application/json"),
    ]
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(lambda _: answers.pop(0))
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"))
    session, sleeps = no_sleep_session(backend, backoff_initial_s=0.5, max_retry_after_s=10.0)
    assert session.complete("plan", REQUEST).text == '{"node": "kitchen"}'
    assert sleeps == [3.0]  # the server's 3 s, not the 0.5 s backoff

    httpserver.clear()
    httpserver.expect_request("/v1/chat/completions").respond_with_response(
        Response("{}", status=503, headers={"Retry-After": "3600"})
    )
    session, sleeps = no_sleep_session(backend, max_retry_after_s=10.0)
    with pytest.raises(BudgetExhaustedError, match="asks to retry after 3600 s, longer than the 10 s allowed"):
        session.complete("plan", REQUEST)
    assert sleeps == []


def test_failed_attempts_cost_no_tokens(httpserver: HTTPServer) -> None:
    answers = [
        Response("{}", status=429),
        Response("{}", status=500),
        Response(
            json.dumps(completion('{"node": "kitchen"}', prompt=40, completion_tokens=5)),
            content_type="application/json",
        ),
    ]
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(lambda _: answers.pop(0))
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"))
    session, _ = no_sleep_session(backend, max_tokens=50)
    session.complete("plan", REQUEST)
    assert [c.outcome for c in session.calls] == ["transient_error", "transient_error", "ok"]
    assert session.tokens_used == 45  # only what the server reported for the answer
