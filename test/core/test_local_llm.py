"""Opt-in smoke test of the embedded model: runs only where `make local-llm` installed the runtime."""

from __future__ import annotations

import json

import pytest

from sayplan_core.llm.local_backend import local_runtime_available
from sayplan_core.llm.session import LlmSession
from sayplan_core.llm.types import LlmRequest

pytestmark = pytest.mark.skipif(
    not local_runtime_available(), reason="embedded LLM runtime not installed (make local-llm builds it, ~6 min)"
)


def test_embedded_model_answers_within_the_schema() -> None:
    from sayplan_core.llm.local_backend import LocalBackend

    schema = {
        "type": "object",
        "properties": {"room": {"type": "string", "enum": ["kitchen", "garage", "bedroom"]}},
        "required": ["room"],
        "additionalProperties": False,
    }
    session = LlmSession(LocalBackend(n_ctx=2048))
    request = LlmRequest([{"role": "user", "content": "Where is a fridge usually kept? Reply in JSON."}], schema)
    answer = json.loads(session.complete("search", request).text)
    assert answer["room"] in ("kitchen", "garage", "bedroom")
    assert session.calls[0].prompt_tokens > 0 and session.calls[0].completion_tokens > 0
