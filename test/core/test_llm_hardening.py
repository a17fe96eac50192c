"""Hostile or slow LLM endpoints: a whole-call deadline, Retry-After, failed calls that cost no tokens, and
credentials in URLs that never reach logs or transcripts. Real SDKs against a real local HTTP server.

OpenAIBackend posts through the SDK (`client.post(..., cast_to=object)`) and reads the answer itself (`_answer`):
an answer whose Content-Type is not JSON (none at all, or text/plain, as some compatible servers and proxies send)
is still decoded as JSON; `"usage": {}` reads as counts missing (which the session refuses as invalid_usage); a
message whose content is a number, list or object, and JSON nested deeper than the decoder recurses, are a
transient bad_response. Every other hostile shape tried (null, numbers, strings, nested lists, choices empty, null
or a string, message null, content null, refusal set, usage of the wrong type, a cut body, HTTP 400/401/429/500/503
with and without JSON) ends in a typed LLM error through the session, never an AttributeError, TypeError, KeyError
or RecursionError."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST, completion, no_sleep_session, ollama_reply
from werkzeug import Request, Response

from sayplan_core.llm.ollama_backend import OllamaBackend
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.selection import LlmConfig, make_backend
from sayplan_core.llm.session import BadAnswerError, BudgetExhaustedError, LlmSession
from sayplan_core.llm.types import LlmError, LlmRequest, LlmTransientError

TRICKLE_S = 0.25  # one byte this often: each read succeeds long before the per-read timeout


def trickle(body: bytes) -> Iterator[bytes]:
    for i in range(len(body)):
        time.sleep(TRICKLE_S)
        yield body[i : i + 1]


def trickling(body: dict[str, Any]) -> Any:
    data = json.dumps(body).encode()  # about 400 bytes: 100 s at this pace

    def handler(_: Request) -> Response:
        return Response(trickle(data), content_type="application/json", headers={"Content-Length": str(len(data))})

    return handler


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
    assert elapsed < 1.0 + 4 * TRICKLE_S, f"the call took {elapsed:.1f} s against a 1 s deadline"


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


def test_credentials_in_the_base_url_never_reach_logs_or_transcripts(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion('{"node": "kitchen"}'))
    url = httpserver.url_for("/v1").replace("http://", "http://alice:s3cret@")
    backend, note = make_backend(LlmConfig(backend="openai", base_url=url, api_key_env="SAYPLAN_NO_SUCH_KEY"))
    assert "s3cret" not in note and "alice" not in note and "***@" in note
    recorder = RecordingBackend(backend)
    recorder.complete(REQUEST)
    recorder.save(tmp_path / "t.json")
    assert "s3cret" not in (tmp_path / "t.json").read_text()
    down = OpenAIBackend("gpt-test", base_url="http://bob:hunter2@127.0.0.1:9/v1", timeout_s=1.0)
    with pytest.raises(LlmTransientError) as caught:
        down.complete(REQUEST)
    assert "hunter2" not in str(caught.value) and "hunter2" not in down.info.describe()


def test_a_transcript_answers_only_the_instruction_it_was_made_for(tmp_path: Path, capsys: Any) -> None:
    from sayplan_core.cli import main as cli_main

    bundled = Path(__file__).resolve().parents[2] / "src/sayplan_ros/transcripts/demo_office_lh05.json"
    assert json.loads(bundled.read_text())["instruction"] == "Make Niko a coffee and place the mug on his desk."
    code = cli_main(["plan", "--env", "office", "--instruction", "Water the plants.", "--replay", str(bundled)])
    err = capsys.readouterr().err
    assert code == 2 and "was recorded for the instruction 'Make Niko a coffee" in err
    assert len(err.strip().splitlines()) == 1


def test_recorded_transcripts_name_their_instruction(tmp_path: Path) -> None:
    from transcripts import INSTRUCTION, say, transcript

    from sayplan_core.envs import load_env
    from sayplan_core.llm.replay import ReplayBackend
    from sayplan_core.outcomes import PlanCode
    from sayplan_core.planners import make_planner

    recorder = RecordingBackend(transcript(say("expand", "kitchen")))
    make_planner("sayplan", recorder).plan(load_env("office"), INSTRUCTION)
    recorder.save(tmp_path / "t.json")
    replay = ReplayBackend.from_file(tmp_path / "t.json")
    result = make_planner("sayplan", replay).plan(load_env("office"), "Bring me the stapler.")
    assert result.failure is PlanCode.BACKEND_ERROR and "not 'Bring me the stapler.'" in result.message


# -------------------------------------------------------------------------- what an OpenAI-compatible server answers
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
    """a1a255d's create() parsed it (ChatCompletion's parse tries the JSON whatever the type); cast_to=object
    returned the text, which _answer refused as a bad response on every call."""
    server.answer(json.dumps(REPLY).encode(), content_type)
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens, answer.model) == ('{"a": 1}', 3, 2, "gpt-test")


def test_text_that_is_not_json_under_any_type_is_a_bad_response(server: Server) -> None:
    server.answer(b"<html>gateway</html>", "text/html")
    with pytest.raises(LlmTransientError) as refused:
        ask(server)
    assert refused.value.kind == "bad_response"


def test_a_usage_object_without_counts_reads_as_before(server: Server) -> None:
    """As a1a255d: the counts missing are None, which the session refuses as a usage report (invalid_usage)."""
    server.answer(with_message(usage={}))
    answer = ask(server)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ('{"a": 1}', None, None)


@pytest.mark.parametrize("content", [5, 1.5, True, ["x"], [{"type": "text", "text": "{}"}], {"a": 1}])
def test_content_that_is_not_text_is_a_bad_response(server: Server, content: Any) -> None:
    """Before, it came back as the response's text and parse_json_answer failed with a TypeError/AttributeError
    that escaped the session."""
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
