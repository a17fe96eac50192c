"""LLM transcripts and what reaches them: a transcript answers only the instruction it was recorded for (it names
it), one that is not UTF-8 is refused naming the file, and credentials in a backend's base URL never reach a
transcript, the backend's description, an error or the selection note that is logged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llm_fake_servers import completion
from pytest_httpserver import HTTPServer
from test_llm_backends import REQUEST

from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.replay import RecordingBackend, ReplayBackend
from sayplan_core.llm.selection import LlmConfig, make_backend
from sayplan_core.llm.types import LlmFatalError, LlmTransientError


def test_a_transcript_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(b'{"calls": ["\xff\xfe"]}')
    with pytest.raises(LlmFatalError, match=f"transcript {path} is not UTF-8 text"):
        ReplayBackend.from_file(path)


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
    from sayplan_core.outcomes import PlanCode
    from sayplan_core.planners import make_planner

    recorder = RecordingBackend(transcript(say("expand", "kitchen")))
    make_planner("sayplan", recorder).plan(load_env("office"), INSTRUCTION)
    recorder.save(tmp_path / "t.json")
    replay = ReplayBackend.from_file(tmp_path / "t.json")
    result = make_planner("sayplan", replay).plan(load_env("office"), "Bring me the stapler.")
    assert result.failure is PlanCode.BACKEND_ERROR and "not 'Bring me the stapler.'" in result.message
