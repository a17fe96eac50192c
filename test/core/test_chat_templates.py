"""The chat format the embedded model reads: the GGUF's own template, or its architecture's when it carries none.

The gemma-270m pack is a conversion of Google's base model and has no template; it was refused outright (every
bench run of it raised) until Gemma's turn format became a built-in. The expected prompts below are written from
Google's Gemma formatting guide (turns opened by <start_of_turn>user / model, closed by <end_of_turn>, no system
role: the system text opens the first user turn), not from our template. The model object is a stand-in for
llama-cpp-python's Llama exposing only what the formatter reads; the formatter itself is llama-cpp-python's.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from sayplan_core.llm.local_backend import _chat_formatter
from sayplan_core.llm.types import LlmFatalError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="the embedded LLM runtime is not installed (make local-llm): its chat formatter is what is checked",
)

TOKENS = {1: "<eos>", 2: "<bos>"}


class _Vocab:
    def token_get_text(self, token: int) -> str:
        return TOKENS[token]


class _Model:
    """What the formatter reads of a loaded GGUF: its metadata, the text of two tokens, the end token."""

    def __init__(self, metadata: dict[str, Any]) -> None:
        self.metadata = metadata
        self._model = _Vocab()

    def token_eos(self) -> int:
        return 1


def _gguf(architecture: str, template: str | None = None) -> _Model:
    metadata: dict[str, Any] = {
        "general.architecture": architecture,
        "tokenizer.ggml.bos_token_id": "2",
        "tokenizer.ggml.eos_token_id": "1",
    }
    if template is not None:
        metadata["tokenizer.chat_template"] = template
    return _Model(metadata)


def _prompt(model: _Model, messages: list[dict[str, str]]) -> str:
    import llama_cpp

    return str(_chat_formatter(llama_cpp, model)(messages=messages).prompt)


def _turns(*turns: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in turns]


#: conversations and the prompt Google's Gemma format gives them, written from its description
CONVERSATIONS = {
    "system text in the first user turn": (
        _turns(
            ("system", "You plan for a robot."),
            ("user", "Find a carrot."),
            ("assistant", '{"command": "expand"}'),
            ("user", "The kitchen is expanded."),
        ),
        "<bos><start_of_turn>user\nYou plan for a robot.\n\nFind a carrot.<end_of_turn>\n"
        '<start_of_turn>model\n{"command": "expand"}<end_of_turn>\n'
        "<start_of_turn>user\nThe kitchen is expanded.<end_of_turn>\n"
        "<start_of_turn>model\n",
    ),
    "no system message": (
        _turns(("user", "Hello")),
        "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    ),
    "system text with no user turn after it: a user turn of its own, not dropped": (
        _turns(("user", "Find a carrot."), ("assistant", "{}"), ("system", "Answer in JSON.")),
        "<bos><start_of_turn>user\nFind a carrot.<end_of_turn>\n<start_of_turn>model\n{}<end_of_turn>\n"
        "<start_of_turn>user\nAnswer in JSON.<end_of_turn>\n<start_of_turn>model\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CONVERSATIONS))
@pytest.mark.parametrize("architecture", ["gemma3", "gemma2", "gemma"])
def test_a_gemma_gguf_without_a_template_reads_gemmas_turns(architecture: str, case: str) -> None:
    messages, expected = CONVERSATIONS[case]
    assert _prompt(_gguf(architecture), messages) == expected


def test_the_ggufs_own_template_wins_over_the_built_in_one() -> None:
    own = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}[model]"
    prompt = _prompt(_gguf("gemma3", own), [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
    assert prompt == "[system]S[user]U[model]"


def test_a_gguf_of_another_architecture_without_a_template_is_refused_with_one_line_naming_it() -> None:
    with pytest.raises(LlmFatalError) as caught:
        _prompt(_gguf("mamba"), [{"role": "user", "content": "Hello"}])
    text = str(caught.value)
    assert "no chat template" in text and "'mamba'" in text and "gemma3" in text and "\n" not in text
