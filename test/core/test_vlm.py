"""The VLM look_on / look_inside hook through the real SDKs against a local HTTP server."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import numpy as np
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sayplan_core.envs import load_env
from sayplan_core.graph.updates import apply_update
from sayplan_core.llm.local_backend import LocalBackend, local_runtime_available
from sayplan_core.llm.ollama_backend import OllamaBackend
from sayplan_core.llm.openai_backend import OpenAIBackend
from sayplan_core.llm.session import Budget
from sayplan_core.llm.types import LlmFatalError, LlmRequest
from sayplan_core.perception.vlm import VlmAugmenter
from sayplan_core.sim import verify_plan


def png() -> bytes:
    import matplotlib.image

    buffer = io.BytesIO()
    matplotlib.image.imsave(buffer, np.zeros((4, 4, 3)), format="png")
    return buffer.getvalue()


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "1", "object": "chat.completion", "created": 1, "model": "vision",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 90, "completion_tokens": 20, "total_tokens": 110},
    }  # fmt: skip


ANSWER = json.dumps({"objects": [{"name": "Coffee Mug", "states": ["dirty"]}, {"name": "orange", "states": []}]})


def test_openai_vision_request_and_graph_update(httpserver: HTTPServer) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        seen.append(json.loads(request.data))
        return Response(json.dumps(completion(ANSWER)), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(handler)
    image = png()
    augmenter = VlmAugmenter(OpenAIBackend("vision", base_url=httpserver.url_for("/v1"), api_key="k"))
    graph = load_env("office")
    update = augmenter.look(graph, "kitchen_bench", "ontop_of", image)
    parts = seen[0]["messages"][-1]["content"]
    assert parts[0]["type"] == "text" and "on top of the kitchen bench" in parts[0]["text"]
    assert "Known objects there: empty coffee cup, orange, paper towel roll." in parts[0]["text"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(image).decode()
    added = {u.node.id: u for u in update.upsert}
    assert list(added) == ["coffee_mug_1"]  # 'orange' is already on the bench; 'coffee_mug' is another node's id
    mug = added["coffee_mug_1"]
    assert (mug.parent, mug.relation, mug.node.states) == ("kitchen_bench", "ontop_of", ("dirty",))
    grown = apply_update(graph, update)
    assert grown.parent("coffee_mug_1") == "kitchen_bench"


def test_ollama_vision_request(httpserver: HTTPServer) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        seen.append(json.loads(request.data))
        body = {"model": "llava", "created_at": "2026-11-22T00:00:00Z", "done": True,
                "message": {"role": "assistant", "content": json.dumps({"objects": []})}}  # fmt: skip
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/api/chat").respond_with_handler(handler)
    image = png()
    update = VlmAugmenter(OllamaBackend("llava", base_url=httpserver.url_for(""))).look(
        load_env("office"), "fridge", "inside_of", image
    )
    assert update.is_empty()
    assert seen[0]["messages"][-1]["images"] == [base64.b64encode(image).decode()]
    assert "inside the fridge" in seen[0]["messages"][-1]["content"]


def test_bad_vlm_answer_is_fed_back(httpserver: HTTPServer) -> None:
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(
        completion('{"objects": [{"states": []}]}')
    )
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(
        completion('{"objects": [{"name": "spoon", "states": []}]}')
    )
    augmenter = VlmAugmenter(
        OpenAIBackend("vision", base_url=httpserver.url_for("/v1"), api_key="k"), Budget(backoff_initial_s=0)
    )
    update = augmenter.look(load_env("office"), "lunch_table", "ontop_of", png())
    assert [u.node.id for u in update.upsert] == ["spoon_1"] and augmenter.calls == 2


def test_reveal_hook_grows_the_memory_graph_during_look_on(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion(json.dumps({"objects": [{"name": "stapler", "states": []}]}))
    )
    augmenter = VlmAugmenter(OpenAIBackend("vision", base_url=httpserver.url_for("/v1"), api_key="k"))
    hook = augmenter.reveal_hook(lambda asset, relation: png())
    result = verify_plan(
        load_env("office"), "go_to(admin) > look_on(admin_desk) > pick_up(stapler_1)", "lookplangraph", reveal_hook=hook
    )
    assert result.success, result.feedback
    assert result.state is not None and result.state.revealed == ["stapler_1"] and result.state.holding == "stapler_1"


@pytest.mark.skipif(
    not local_runtime_available("qwen-0.5b"), reason="embedded LLM runtime or qwen-0.5b not installed (make test-llm)"
)
def test_text_only_model_refuses_images() -> None:
    with pytest.raises(LlmFatalError, match="reads text only"):
        LocalBackend("qwen-0.5b", n_ctx=512).complete(LlmRequest([{"role": "user", "content": "x"}], images=(png(),)))
