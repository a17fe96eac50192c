"""Hostile inputs to the embedded model: model files, model packs, message text, the lite planner's repeats.

Most tests here showed a bug found in review, fixed since (a FIFO named .gguf, raw OSErrors from assemble, a file
swapped in after its hash, the lite plan dialogue's repeats, requests that raised TypeError); the rest held.
Fake packs are real part packages written to a temporary directory (no mocks of the project's code); only two
tests load the real 0.5B model, and they skip when it is not installed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_packs import write_pack
from transcripts import BAD_PLAN, INSTRUCTION

from sayplan_core.envs import load_env
from sayplan_core.llm import http
from sayplan_core.llm.local_backend import local_runtime_available
from sayplan_core.llm.model_packs import ModelPack, ModelPackError, assemble, resolve_model, same_file
from sayplan_core.llm.session import _check_usage
from sayplan_core.llm.types import BackendInfo, LlmFatalError, LlmRequest, LlmResponse, LlmTransientError
from sayplan_core.planners import PlannerOptions
from sayplan_core.planners.sayplan import SayPlanOptions
from sayplan_core.planners.sayplan_lite import SayPlanLitePlanner

SRC = Path(__file__).resolve().parents[2] / "src" / "sayplan_core"
PAYLOAD = b"GGUF" + bytes(range(256)) * 400


@pytest.fixture
def pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelPack:
    root = tmp_path / "site"
    made = write_pack(root, "hostile", [PAYLOAD[:50_000], PAYLOAD[50_000:]], prefix="hostilepart")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("SAYPLAN_MODEL_DIR", str(tmp_path / "models"))
    return made


# ------------------------------------------------------------------ model files and packs
def test_llm_which_on_a_fifo_named_gguf_answers_instead_of_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "sayplan_core.cli", "llm", "which", "--llm", "local", "--model", str(fifo)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`sayplan llm which --model {fifo}` still blocked after 20 s (open() of a FIFO)")
    assert done.stdout.split()[0] == "local" and "refused" in done.stdout


def test_assemble_onto_a_directory_named_like_the_model_says_so_in_one_line(pack: ModelPack) -> None:
    final = Path(os.environ["SAYPLAN_MODEL_DIR"]) / pack.file_name
    final.mkdir(parents=True)
    with pytest.raises(ModelPackError):
        assemble(pack)
    assert not list(final.parent.glob("*.tmp"))  # no temporary file left behind either way


def test_a_file_swapped_in_after_the_check_is_not_reported_verified(pack: ModelPack, tmp_path: Path) -> None:
    final = assemble(pack)
    impostor = tmp_path / "impostor.gguf"
    impostor.write_bytes(b"GGUF" + b"\0" * (pack.size - 4))  # same size, another hash

    def swap(done: int, total: int) -> None:  # another process replaces the file as the hash finishes
        if done == total and impostor.exists():
            os.replace(impostor, final)

    resolved = resolve_model(pack.name, progress=swap, packs={pack.name: pack})
    assert resolved.verified and resolved.identity is not None  # it did hash the pinned file...
    with resolved.path.open("rb") as reopened, pytest.raises(ModelPackError, match="changed after its SHA-256"):
        same_file(resolved.path, resolved.identity, reopened.fileno())  # ...and a loader opening the name refuses


def test_refusals_that_hold(pack: ModelPack, tmp_path: Path) -> None:
    """Held: a directory, a symlink to /dev/zero and a wrong pack file are refused with ModelPackError."""
    folder = tmp_path / "dir.gguf"
    folder.mkdir()
    zero = tmp_path / "zero.gguf"
    zero.symlink_to("/dev/zero")
    for path in (folder, zero):
        with pytest.raises(ModelPackError):
            resolve_model(str(path), packs={pack.name: pack})
    final = assemble(pack)
    (tmp_path / "site" / "hostilepart2" / "data" / "part02.bin").write_bytes(b"x" * (pack.size - 50_000))
    final.write_bytes(b"GGUF" + b"\1" * (pack.size - 4))  # a part and the file replaced after the assemble
    with pytest.raises(ModelPackError, match="SHA-256"):
        resolve_model(pack.name, packs={pack.name: pack})


# ------------------------------------------------------------------ usage fields of a replayed transcript
@pytest.mark.parametrize(
    "fields",
    [
        {"prompt_tokens": 10, "cached_tokens": 11},
        {"prompt_tokens": 10, "cached_tokens": True},
        {"prompt_tokens": 10, "cached_tokens": -1},
        {"prompt_s": math.nan},
        {"prompt_s": math.inf},
        {"decode_s": -0.5},
        {"decode_s": True},
        {"prompt_s": "1"},
    ],
)
def test_impossible_usage_from_a_transcript_is_refused(fields: dict[str, Any]) -> None:
    """Held: _check_usage refuses every one of these."""
    with pytest.raises(LlmTransientError, match="invalid_usage"):
        _check_usage(LlmResponse("{}", **fields))


# ------------------------------------------------------------------ the lite planner's plan dialogue
class PureModel:
    """A model at temperature 0: one fixed answer, whatever it is asked (the deterministic case at its plainest)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = json.dumps(answer)
        self.info = BackendInfo("pure", "pure-model")
        self.prompts: list[str] = []

    def start_task(self, instruction: str) -> None:
        """Any task."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.prompts.append(json.dumps(request.messages))
        return LlmResponse(self.answer, prompt_tokens=100, completion_tokens=10)


def test_lite_plan_dialogue_never_sends_a_prompt_twice_with_no_repeat() -> None:
    answer = {
        "chain_of_thought": "",
        "reasoning": "",
        "command": {"command_name": "done", "node_name": ""},  # the search ends at once
        "plan": [{"action": a, "target": t} for a, t in BAD_PLAN],  # and the plan is always the same bad one
        "answer": [],
    }
    model = PureModel(answer)
    options = PlannerOptions(max_search_steps=4, max_replans=4)
    config = SayPlanOptions(no_repeat=True)
    result = SayPlanLitePlanner(model, options, config).plan(load_env("office"), INSTRUCTION)
    assert not result.success
    assert len(model.prompts) == len(set(model.prompts)), "the same prompt went to the model twice"


# ------------------------------------------------------------------ the real 0.5B model (two tests)
@pytest.fixture(scope="module")
def qwen() -> Any:
    if "SAYPLAN_MODEL_DIR" in os.environ or not local_runtime_available("qwen-0.5b"):
        print("skipped: llama-cpp-python or the qwen-0.5b pack is not installed")
        pytest.skip("llama-cpp-python or the qwen-0.5b pack is not installed")
    from sayplan_core.llm.local_backend import LocalBackend

    return LocalBackend("qwen-0.5b", n_ctx=2048)


def test_defuse_leaves_no_control_token_in_any_message_text(qwen: Any) -> None:
    """Held: every control token's spelling, defused, tokenizes to no control token; other case and a split by
    whitespace were never control tokens."""
    import llama_cpp

    llama = qwen._llama
    model = llama._model
    kinds = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    special = {i for i in range(model.n_vocab()) if model.token_get_attr(i) & kinds}
    spellings = [str(model.token_get_text(i)) for i in sorted(special)]
    spellings = [s for s in spellings if len(s) > 1]
    assert "<|im_end|>" in spellings
    hostile = " ".join(spellings + [s.upper() for s in spellings] + [" ".join(s) for s in spellings])
    tokens = llama.tokenize(qwen.defuse(hostile).encode("utf-8"), add_bos=False, special=True)
    assert not special & set(tokens)
    assert qwen.defuse("a <|im_end|> b").replace("\u2060", "") == "a <|im_end|> b"


HOSTILE_REQUESTS = {
    "content None": LlmRequest([{"role": "user", "content": None}], max_tokens=8),  # type: ignore[dict-item]
    "content a list": LlmRequest([{"role": "user", "content": ["a"]}], max_tokens=8),  # type: ignore[dict-item]
    "max_tokens 0": LlmRequest([{"role": "user", "content": "Say hi."}], max_tokens=0),
    "max_tokens -1": LlmRequest([{"role": "user", "content": "Say hi."}], max_tokens=-1),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_REQUESTS))
def test_hostile_requests_are_refused_as_llm_errors_before_generating(qwen: Any, case: str) -> None:
    # the deadline bounds the max_tokens cases, which otherwise write until the context is full
    with http.deadline(3.0), pytest.raises(LlmFatalError):
        qwen.complete(HOSTILE_REQUESTS[case])


def test_a_lone_surrogate_in_the_text_is_read_as_a_question_mark(qwen: Any) -> None:
    """A JSON scene graph can carry one (a \\ud800 escape); the call answers instead of raising UnicodeEncodeError."""
    with http.deadline(120.0):
        answer = qwen.complete(LlmRequest([{"role": "user", "content": "room \ud800: say hi"}], max_tokens=4))
    assert answer.completion_tokens >= 1
