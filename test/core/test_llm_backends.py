"""LLM backends through their real SDKs against a local HTTP server speaking each protocol."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest
from llm_fake_servers import completion, ollama_reply
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sayplan_core.llm.ollama_backend import OllamaBackend, ollama_answers
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.replay import RecordingBackend, ReplayBackend, ReplayMismatchError
from sayplan_core.llm.selection import LlmConfig, make_backend, resolve_backend_name
from sayplan_core.llm.session import BadAnswerError, Budget, BudgetExhaustedError, LlmSession, parse_json_answer
from sayplan_core.llm.types import LlmFatalError, LlmRequest, LlmResponse, LlmTransientError

SCHEMA = {
    "type": "object",
    "properties": {"node": {"type": "string", "enum": ["kitchen", "office"]}},
    "required": ["node"],
    "additionalProperties": False,
}
REQUEST = LlmRequest([{"role": "user", "content": "Which room has the fridge?"}], SCHEMA, "room")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def no_sleep_session(backend: Any, **budget: Any) -> tuple[LlmSession, list[float]]:
    sleeps: list[float] = []
    return LlmSession(backend, Budget(**budget), sleep=sleeps.append), sleeps


# ------------------------------------------------------------------ OpenAI protocol
def test_openai_sends_the_json_schema_and_reads_usage(httpserver: HTTPServer) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        seen.append(json.loads(request.data))
        assert request.headers["Authorization"] == "Bearer sk-test"
        return Response(json.dumps(completion('{"node": "kitchen"}')), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(handler)
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="sk-test")
    response = backend.complete(REQUEST)
    assert response.text == '{"node": "kitchen"}'
    assert (response.prompt_tokens, response.completion_tokens) == (21, 7)
    body = seen[0]
    assert body["model"] == "gpt-test" and body["temperature"] == 0.0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["node"]["enum"] == ["kitchen", "office"]


def test_openai_429_is_retried_with_backoff(httpserver: HTTPServer) -> None:
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "slow down"}}, status=429
    )
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "oops"}}, status=503
    )
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"node": "office"}'))
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="sk-test")
    session, sleeps = no_sleep_session(backend)
    response = session.complete("search", REQUEST)
    assert response.text == '{"node": "office"}'
    assert [c.outcome for c in session.calls] == ["transient_error", "transient_error", "ok"]
    assert sleeps == [0.5, 1.0]


def test_openai_persistent_5xx_exhausts_retries(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json({"error": {"message": "down"}}, status=500)
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="sk-test")
    session, sleeps = no_sleep_session(backend, max_transient_retries=2)
    with pytest.raises(BudgetExhaustedError, match=r"kept failing \(http_500\) after 3 attempts") as info:
        session.complete("plan", REQUEST)
    assert info.value.backend_failure and sleeps == [0.5, 1.0]


def test_openai_timeout_is_transient(httpserver: HTTPServer) -> None:
    def slow(_: Request) -> Response:
        time.sleep(1.0)
        return Response(json.dumps(completion("{}")), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="sk-test", timeout_s=0.2)
    with pytest.raises(LlmTransientError) as info:
        backend.complete(REQUEST)
    assert info.value.kind == "timeout"


def test_openai_auth_error_is_fatal(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json({"error": {"message": "bad key"}}, status=401)
    backend = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="sk-wrong")
    with pytest.raises(LlmFatalError, match="HTTP 401"):
        backend.complete(REQUEST)


def test_openai_refusal_becomes_a_bad_answer(httpserver: HTTPServer) -> None:
    body = completion("")
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    httpserver.expect_request("/v1/chat/completions").respond_with_json(body)
    response = OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="k").complete(REQUEST)
    with pytest.raises(BadAnswerError, match=r"the model refused: I can't help with that\."):
        parse_json_answer(response)


# ------------------------------------------------------------------ Ollama protocol
def test_ollama_sends_format_schema_and_reads_counts(httpserver: HTTPServer) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        seen.append(json.loads(request.data))
        return Response(json.dumps(ollama_reply('{"node": "kitchen"}')), content_type="application/json")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(handler)
    backend = OllamaBackend("llama-test", base_url=httpserver.url_for(""))
    response = backend.complete(REQUEST)
    assert response.text == '{"node": "kitchen"}'
    assert (response.prompt_tokens, response.completion_tokens) == (30, 6)
    assert seen[0]["format"] == SCHEMA and seen[0]["options"]["temperature"] == 0.0
    assert seen[0]["messages"] == REQUEST.messages and seen[0]["stream"] is False


def test_ollama_503_is_transient_and_404_fatal(httpserver: HTTPServer) -> None:
    httpserver.expect_ordered_request("/api/chat").respond_with_json({"error": "loading model"}, status=503)
    httpserver.expect_ordered_request("/api/chat").respond_with_json({"error": "model 'x' not found"}, status=404)
    backend = OllamaBackend("x", base_url=httpserver.url_for(""))
    with pytest.raises(LlmTransientError, match="http_503"):
        backend.complete(REQUEST)
    with pytest.raises(LlmFatalError, match="not found"):
        backend.complete(REQUEST)


@pytest.mark.serial  # a port found free must stay free until the call: no other process may open one meanwhile
def test_ollama_server_down_is_a_connection_error() -> None:
    backend = OllamaBackend("x", base_url=f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(LlmTransientError) as info:
        backend.complete(REQUEST)
    assert info.value.kind == "connection"


# ------------------------------------------------------------------ selection
def test_auto_selection(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.0"})
    monkeypatch.delenv("SAYPLAN_TEST_KEY", raising=False)
    config = LlmConfig(backend="auto", base_url=httpserver.url_for(""), api_key_env="SAYPLAN_TEST_KEY")
    assert resolve_backend_name(config) == ("ollama", "an Ollama server answers")
    backend, note = make_backend(config)
    assert backend.info.name == "ollama" and "an Ollama server answers" in note
    monkeypatch.setenv("SAYPLAN_TEST_KEY", "sk-secret-value")
    backend, note = make_backend(config)
    assert backend.info.name == "openai" and "SAYPLAN_TEST_KEY is set" in note
    assert "sk-secret-value" not in note and "sk-secret-value" not in backend.info.describe()
    monkeypatch.delenv("SAYPLAN_TEST_KEY")
    down = LlmConfig(backend="auto", base_url=f"http://127.0.0.1:{free_port()}", api_key_env="SAYPLAN_TEST_KEY")
    assert resolve_backend_name(down)[0] == "local"
    assert not ollama_answers(down.base_url)


def test_config_validation() -> None:
    with pytest.raises(LlmFatalError, match="unknown LLM backend 'gpt'"):
        make_backend(LlmConfig(backend="gpt"))
    with pytest.raises(LlmFatalError, match="temperature"):
        make_backend(LlmConfig(backend="ollama", temperature=5))
    with pytest.raises(LlmFatalError, match="needs a transcript path"):
        make_backend(LlmConfig(backend="replay"))


# ------------------------------------------------------------------ record and replay
def test_record_then_replay_is_identical(httpserver: HTTPServer, tmp_path: Any) -> None:
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "busy"}}, status=429
    )
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"node": "kitchen"}'))
    recorder = RecordingBackend(OpenAIBackend("gpt-test", base_url=httpserver.url_for("/v1"), api_key="k"))
    session, _ = no_sleep_session(recorder)
    first = session.complete("search", REQUEST)
    path = tmp_path / "t.json"
    recorder.save(path)
    replay = ReplayBackend.from_file(path)
    session2, sleeps = no_sleep_session(replay)
    second = session2.complete("search", REQUEST)
    assert second.text == first.text and second.prompt_tokens == first.prompt_tokens
    assert sleeps == [0.5]  # the recorded 429 is replayed too
    with pytest.raises(ReplayMismatchError, match="more LLM calls than the 2 recorded"):
        replay.complete(REQUEST)
    other = LlmRequest([{"role": "user", "content": "Which room has the oven?"}], SCHEMA)
    with pytest.raises(ReplayMismatchError, match="differs at character 19"):
        ReplayBackend.from_file(path).complete(other)


def test_parse_json_answer_forms() -> None:
    assert parse_json_answer(LlmResponse('```json\n{"a": 1}\n```')) == {"a": 1}
    with pytest.raises(BadAnswerError, match="not valid JSON"):
        parse_json_answer(LlmResponse("Sure, I will expand the kitchen."))
    with pytest.raises(BadAnswerError, match="must be a JSON object"):
        parse_json_answer(LlmResponse("[1, 2]"))
    with pytest.raises(BadAnswerError, match="cut off"):
        parse_json_answer(LlmResponse('{"a": ', finish_reason="length"))
