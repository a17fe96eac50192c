"""What OpenAIBackend makes of what an OpenAI-compatible server answers. Real SDK against a real local HTTP server.

OpenAIBackend posts through the SDK (`client.post(..., cast_to=object)`) and reads the answer itself (`_answer`):
an answer whose Content-Type is not JSON (none at all, or text/plain, as some compatible servers and proxies send)
is still decoded as JSON; `"usage": {}` reads as counts missing (which the session refuses as invalid_usage); a
message whose content is a number, list or object, and JSON nested deeper than the decoder recurses, are a
transient bad_response. Every other hostile shape (null, numbers, strings, nested lists, choices empty, null
or a string, message null, content null, refusal set, usage of the wrong type, a cut body, HTTP 400/401/429/500/503
with and without JSON) ends in a typed LLM error through the session, never an AttributeError, TypeError, KeyError
or RecursionError."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import BadAnswerError, BudgetExhaustedError, LlmSession
from sayplan_core.llm.types import LlmError, LlmRequest, LlmTransientError

REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-test",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"a": 1}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


class Server:
    """A chat endpoint that answers what the test sets: status, Content-Type (None: no header) and body."""

    def __init__(self) -> None:
        self.status, self.content_type, self.body = 200, "application/json", json.dumps(REPLY).encode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(server.status)
                if server.content_type is not None:
                    self.send_header("Content-Type", server.content_type)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, body: bytes, content_type: str | None = "application/json", status: int = 200) -> None:
        self.status, self.content_type, self.body = status, content_type, body


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    out = Server()
    thread = threading.Thread(target=out.http.serve_forever, daemon=True)
    thread.start()
    yield out
    out.http.shutdown()
    out.http.server_close()


def ask(server: Server) -> Any:
    return OpenAIBackend("gpt-test", base_url=server.url, timeout_s=5).complete(
        LlmRequest([{"role": "user", "content": "hi"}])
    )


def with_message(message: Any = None, **fields: Any) -> bytes:
    data = copy.deepcopy(REPLY)
    if message is not None:
        data["choices"][0]["message"] = message
    data.update(fields)
    return json.dumps(data).encode()


@pytest.mark.parametrize("content_type", [None, "text/plain", "text/html; charset=utf-8"])
def test_a_json_answer_not_labelled_as_json_is_read(server: Server, content_type: str | None) -> None:
    """Some compatible servers and proxies send JSON with no Content-Type or as text: it is decoded all the same."""
    server.answer(json.dumps(REPLY).encode(), content_type)
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens, answer.model) == ('{"a": 1}', 3, 2, "gpt-test")


def test_text_that_is_not_json_under_any_type_is_a_bad_response(server: Server) -> None:
    server.answer(b"<html>gateway</html>", "text/html")
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


def test_a_usage_object_without_counts_reads_as_before(server: Server) -> None:
    """The counts missing are None, which the session refuses as a usage report (invalid_usage)."""
    server.answer(with_message(usage={}))
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ('{"a": 1}', None, None)


@pytest.mark.parametrize("content", [5, 1.5, True, ["x"], [{"type": "text", "text": "{}"}], {"a": 1}])
def test_content_that_is_not_text_is_a_bad_response(server: Server, content: Any) -> None:
    """A number, list or object where the text should be is a transient bad response, not the answer's text."""
    server.answer(with_message({"role": "assistant", "content": content}))
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


@pytest.mark.parametrize(
    "body", [b"[" * 100_000 + b"]" * 100_000, b'{"choices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"]
)
def test_json_nested_too_deeply_is_a_bad_response(server: Server, body: bytes) -> None:
    server.answer(body)
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


HOSTILE: list[tuple[bytes, str | None, int]] = [
    (b"null", "application/json", 200),
    (b"42", "application/json", 200),
    (b'"x"', "application/json", 200),
    (b"[[[1]]]", "application/json", 200),
    (b"{}", "application/json", 200),
    (with_message(choices=[]), "application/json", 200),
    (with_message(choices=None), "application/json", 200),
    (with_message(choices="abc"), "application/json", 200),
    (with_message(choices=[None]), "application/json", 200),
    (with_message(choices=[{"message": None}]), "application/json", 200),
    (with_message("hi"), "application/json", 200),
    (with_message({"role": "assistant", "content": None}), "application/json", 200),
    (with_message({"role": "assistant", "content": None, "refusal": "no"}), "application/json", 200),
    (with_message(usage="x"), "application/json", 200),
    (with_message({"role": "assistant", "content": 5}), "application/json", 200),
    (with_message({"role": "assistant", "content": ["{}"]}), "application/json", 200),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", 200),
    (with_message(usage=[1]), "application/json", 200),
    (with_message(usage={"prompt_tokens": "3"}), "application/json", 200),
    (with_message(model=5), "application/json", 200),
    (json.dumps(REPLY).encode()[:40], "application/json", 200),
    (b"null", None, 200),
    (b"[1]", "text/plain", 200),
    (b'{"error": {"message": "bad"}}', "application/json", 400),
    (b"bad", "text/plain", 401),
    (b"[1]", "application/json", 429),
    (b'{"error": "x"}', "application/json", 500),
    (b"oops", "text/html", 503),
]


@pytest.mark.parametrize(("body", "content_type", "status"), HOSTILE)
def test_hostile_answers_through_the_session_end_in_typed_errors(
    server: Server, body: bytes, content_type: str | None, status: int
) -> None:
    """Through LlmSession.ask, as a planner asks: an answer, a BadAnswerError retried, or a typed LLM error; never
    an AttributeError, TypeError or KeyError."""
    server.answer(body, content_type, status)
    session = LlmSession(OpenAIBackend("gpt-test", base_url=server.url, timeout_s=5), sleep=lambda s: None)
    try:
        session.ask("plan", [{"role": "user", "content": "hi"}], None, lambda data: data)
    except Exception as exc:  # the point: which exceptions come out
        assert isinstance(exc, (LlmError, BudgetExhaustedError, BadAnswerError)), repr(exc)
        assert not isinstance(exc, (AttributeError, TypeError, KeyError, RecursionError)), repr(exc)
