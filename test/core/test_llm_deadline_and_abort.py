"""An LLM call ends by its one wall-clock deadline, retries and backoff included, whatever the server does (a body
trickled a byte at a time, response headers trickled, which no per-read timeout notices), and an abort ends a call
blocked on such a server within a second, also on a keep-alive connection an earlier goal opened. An embedding
batch is held to its timeout the same way. Real SDKs against real local servers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from llm_fake_servers import HeaderTrickler, KeepAliveServer, completion, local_backend, ollama_reply
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST
from werkzeug import Request, Response

from sayplan_core.llm.http import CallAbort, abortable
from sayplan_core.llm.ollama_backend import OllamaBackend
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import Budget, BudgetExhaustedError, LlmSession, PlanCanceledError
from sayplan_core.llm.types import LlmTransientError
from sayplan_core.retrieval.embedders import CachedEmbedder, EmbeddingError, OllamaEmbedder, OpenAIEmbedder

#: run alone (make pytest's serial phase): it bounds calls by their deadlines in wall-clock seconds
pytestmark = pytest.mark.serial

BODY_TRICKLE_S = 0.25  # one body byte this often: each read succeeds long before the per-read timeout


def trickle(body: bytes) -> Iterator[bytes]:
    for i in range(len(body)):
        time.sleep(BODY_TRICKLE_S)
        yield body[i : i + 1]


def trickling(body: dict[str, Any]) -> Any:
    data = json.dumps(body).encode()  # about 400 bytes: 100 s at this pace

    def handler(_: Request) -> Response:
        return Response(trickle(data), content_type="application/json", headers={"Content-Length": str(len(data))})

    return handler


@pytest.fixture
def trickler() -> Iterator[HeaderTrickler]:
    server = HeaderTrickler()
    yield server
    server.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_a_trickling_server_cannot_hold_a_call_past_its_deadline(httpserver: HTTPServer, protocol: str) -> None:
    if protocol == "openai":
        httpserver.expect_request("/v1/chat/completions").respond_with_handler(trickling(completion('{"node": "x"}')))
        backend: Any = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), timeout_s=1.0)
    else:
        httpserver.expect_request("/api/chat").respond_with_handler(trickling(ollama_reply('{"node": "x"}')))
        backend = OllamaBackend("llama-test", base_url=httpserver.url_for(""), timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(LlmTransientError, match="no complete answer within 1 s") as caught:
        backend.complete(REQUEST)
    elapsed = time.monotonic() - started
    assert caught.value.kind == "timeout"
    assert elapsed < 1.0 + 4 * BODY_TRICKLE_S, f"the call took {elapsed:.1f} s against a 1 s deadline"


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_trickled_headers_cannot_stretch_a_call_with_retries_past_its_deadline(
    trickler: HeaderTrickler, protocol: str
) -> None:
    deadline_s = 2.0
    session = LlmSession(local_backend(protocol, trickler.port, deadline_s), Budget(max_transient_retries=2))
    started = time.monotonic()
    with pytest.raises(BudgetExhaustedError) as caught:
        session.complete("plan", REQUEST)
    elapsed = time.monotonic() - started
    # the deadline plus a small margin (one read of at most one byte-gap)
    assert elapsed < deadline_s + 1.0, f"{protocol}: the call took {elapsed:.1f} s against a {deadline_s:g} s deadline"
    assert caught.value.backend_failure
    assert "timeout" in str(caught.value) or "deadline" in str(caught.value)


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_abort_ends_a_call_blocked_on_trickled_headers_within_a_second(trickler: HeaderTrickler, protocol: str) -> None:
    session = LlmSession(local_backend(protocol, trickler.port, 60.0), Budget(max_transient_retries=4))
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
    assert isinstance(outcome[0], PlanCanceledError)


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_cancel_of_a_later_goal_on_a_reused_keep_alive_connection_ends_within_a_second(protocol: str) -> None:
    answer = completion('{"node": "kitchen"}') if protocol == "openai" else ollama_reply('{"node": "kitchen"}')
    server = KeepAliveServer(json.dumps(answer).encode())
    backend = local_backend(protocol, server.port, 60.0)  # one backend, one connection pool, across goals
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
        assert isinstance(outcome[0], PlanCanceledError)
    finally:
        server.close()


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
