"""What an LLM exchange may weigh: an answer over the limit (in characters, in bytes on the wire or inflated from
gzip, in nesting depth) is refused with a reason fed back, is never echoed whole into later requests, and is not read
past the cap; a usage report with negative counts is no usage report; a request over the limit is not sent; a plan in
an answer or in text is bounded in steps and depth. Real SDKs against real local servers."""

from __future__ import annotations

import json
import socket
import threading
import zlib

import pytest
from llm_fake_servers import completion, local_backend, ollama_reply, read_request
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST, SCHEMA, no_sleep_session
from werkzeug import Request, Response

from sayplan_core.graph import limits
from sayplan_core.llm.http import MAX_ANSWER_BODY_BYTES
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import Budget, BudgetExhaustedError, LlmSession


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
    backend = local_backend(protocol, server.port, 60.0)
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
        response = LlmSession(local_backend(protocol, at_limit.port, 60.0)).complete("plan", REQUEST)
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
        local_backend(protocol, bomb.port, 60.0), Budget(max_transient_retries=0, max_bad_answers_per_step=0)
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
        assert LlmSession(local_backend(protocol, small.port, 60.0)).complete("plan", REQUEST).text == "a" * 5_000
    finally:
        small.close()
