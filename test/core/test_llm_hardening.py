"""Hostile or slow LLM endpoints: a whole-call deadline, Retry-After, failed calls that cost no tokens, and
credentials in URLs that never reach logs or transcripts. Real SDKs against a real local HTTP server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
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
from sayplan_core.llm.session import BudgetExhaustedError
from sayplan_core.llm.types import LlmTransientError

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
