"""OpenAI chat completions through the official SDK; any compatible server via base_url
(vLLM, llama.cpp server, LM Studio, Ollama's /v1)."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import time
from typing import Any

import orjson

from sayplan_core.llm.http import (
    MAX_ANSWER_BODY_BYTES,
    BodyTooLargeError,
    deadline,
    http_client,
    network_cause,
    one_line,
    oversized_answer,
    retry_after_s,
)
from sayplan_core.llm.types import BackendInfo, LlmFatalError, LlmRequest, LlmResponse, LlmTransientError


class OpenAIBackend:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        strict_schema: bool = True,
    ) -> None:
        import openai

        self._openai = openai
        self.timeout_s = timeout_s
        # Retries are ours (bounded, budgeted, logged), so the SDK's are off; the HTTP client enforces a
        # deadline on the whole call, not only on each read.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url or None,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client(_sdk_httpx(), timeout_s, MAX_ANSWER_BODY_BYTES),
        )
        self.strict_schema = strict_schema
        self.info = BackendInfo("openai", model, base_url or "https://api.openai.com/v1")

    def start_task(self, instruction: str) -> None:
        """A live model answers any task."""

    @property
    def _where(self) -> str:
        return f"openai at {self.info.base_url}"

    def complete(self, request: LlmRequest) -> LlmResponse:
        openai = self._openai
        messages: list[Any] = list(request.messages)
        if request.images:
            last = messages[-1]
            parts: list[dict[str, Any]] = [{"type": "text", "text": last["content"]}]
            for image in request.images:
                url = f"data:{image_mime(image)};base64,{base64.b64encode(image).decode()}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
            messages[-1] = {"role": last["role"], "content": parts}
        # The body is built here and sent through the SDK's own POST (`client.post`, for endpoints and bodies the
        # typed methods do not cover): `create` would first walk the request against its TypedDicts (`transform`,
        # which hashes the model's Literal of every known model name and recurses through every message and the
        # schema) and find nothing to change in plain strings, numbers and dicts: about a third of a call's CPU.
        # The SDK still encodes the body, sets the headers and authenticates as `create` does, maps errors and
        # decodes the answer's JSON (`cast_to=object`: the data itself, not a ChatCompletion built field by field
        # without checks, which `_answer` reads the same way). Keys in `create`'s order: test_planning_speed_equiv
        # checks the bytes and headers on the wire against a plain `create`, and `_answer` against the model.
        body: dict[str, Any] = {"model": self.info.model, "messages": messages, "max_tokens": request.max_tokens}
        if request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.schema, "strict": self.strict_schema},
            }
        body["temperature"] = request.temperature
        content = encoded_body(body)
        start = time.perf_counter()
        try:
            with deadline(self.timeout_s):
                if content is None:
                    data = self._client.post("/chat/completions", body=body, cast_to=object, options=_create_options())
                else:
                    data = self._client.post(
                        "/chat/completions", content=content, cast_to=object, options=_create_options()
                    )
            if isinstance(data, str):  # the text of an answer not labelled as JSON (no Content-Type, text/plain):
                with contextlib.suppress(json.JSONDecodeError):  # ChatCompletion's parse read its JSON all the same
                    data = json.loads(data)
        except BodyTooLargeError as exc:
            return oversized_answer(exc, request.max_tokens, time.perf_counter() - start, self.info.model)
        except openai.APITimeoutError as exc:
            raise LlmTransientError(
                "timeout", f"{self._where}: no complete answer within {self.timeout_s:g} s"
            ) from exc
        except openai.APIConnectionError as exc:  # refused, reset, closed, corrupt body, canceled (CallAbort)
            raise LlmTransientError("connection", f"{self._where} {network_cause(exc)}") from exc
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            raise LlmTransientError(
                f"http_{exc.status_code}",
                f"{self._where} answered HTTP {exc.status_code}: {one_line(exc.message)}",
                retry_after_s(exc.response.headers),
            ) from exc
        except openai.APIStatusError as exc:
            raise LlmFatalError(f"HTTP {exc.status_code} from {self.info.base_url}: {exc.message}") from exc
        except json.JSONDecodeError as exc:  # a body cut short by a closed connection reads as broken JSON
            raise LlmTransientError(
                "bad_response", f"{self._where} sent a response that is not JSON: {exc.msg}"
            ) from exc
        except RecursionError as exc:  # JSON nested deeper than the decoder recurses
            raise LlmTransientError("bad_response", f"{self._where} sent JSON nested too deeply to read") from exc
        return self._answer(data, time.perf_counter() - start)

    def _answer(self, data: Any, latency: float) -> LlmResponse:
        """The response from a chat completion's JSON, read as the SDK's ChatCompletion reads it (fields taken as
        they are, unchecked); a shape it could not be read from at all is a bad response."""
        try:
            choices = data.get("choices") if isinstance(data, dict) else None
            if choices is not None and not isinstance(choices, list):
                raise TypeError("choices is not a list")
            if not choices:
                if isinstance(data, dict):
                    raise LlmTransientError("empty_response", "the server returned no choices")
                raise TypeError(f"the answer is {type(data).__name__}, not a JSON object")
            choice, usage = choices[0], data.get("usage")
            message = choice["message"]
            content = message.get("content")
            if content is not None and not isinstance(content, str):  # parse_json_answer would fail on it
                raise TypeError(f"the message's content is {type(content).__name__}, not a string")
            return LlmResponse(
                text=content or "",
                prompt_tokens=usage.get("prompt_tokens") if usage is not None else 0,  # missing: None, as the
                completion_tokens=usage.get("completion_tokens") if usage is not None else 0,  # model read it
                latency_s=latency,
                model=data.get("model") or self.info.model,
                finish_reason=str(choice.get("finish_reason") or "stop"),
                refusal=message.get("refusal"),
            )
        except (TypeError, KeyError, AttributeError) as exc:
            raise LlmTransientError(
                "bad_response", f"{self._where} sent a chat completion that cannot be read: {exc!r:.200}"
            ) from exc


#: Deeper bodies go to the SDK's encoder (orjson refuses nesting past 255 levels).
_MAX_ORJSON_DEPTH = 128
#: items both encoders write alike, whatever their value (orjson refuses a lone surrogate: encoded_body says None)
_PLAIN = frozenset({str, bool, type(None)})


def encoded_body(body: dict[str, Any]) -> bytes | None:
    """The bytes the SDK's encoder (json.dumps, compact, not ASCII-escaped, no NaN) makes of `body`, made by orjson
    (a whole-graph prompt of 1,000 rooms is about 1 MB of JSON-in-a-string: 3.5 ms through json.dumps, 1 ms here);
    None when the body holds anything whose encoding could differ (a float orjson writes otherwise, an integer
    past 64 bits, a non-string key, a subclass, deep nesting, a lone surrogate), which the SDK then encodes itself
    as before. test_planning_speed_equiv checks the bytes against the SDK's encoding."""
    if not _orjson_safe(body, 0):
        return None
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:  # a lone surrogate in a string: the SDK's encoder fails on it in its own way
        return None


def _orjson_safe(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-(2**63) <= value < 2**63)
    if kind is float:
        return math.isfinite(value) and orjson.dumps(value) == float.__repr__(value).encode()
    if depth >= _MAX_ORJSON_DEPTH:
        return False
    if kind is dict:
        return all(type(key) is str and _orjson_safe(item, depth + 1) for key, item in value.items())
    if kind is list or kind is tuple:
        if _PLAIN.issuperset(map(type, value)):  # an enum of 10k node ids: one pass in C, not 10k calls
            return True
        return all(_orjson_safe(item, depth + 1) for item in value)
    return False


def _create_options() -> Any:
    """The request options `chat.completions.create` passes when given nothing else (a new dict per call: the SDK
    keeps what it is given)."""
    return {"security": {"bearer_auth": True}}


def _sdk_httpx() -> Any:
    """The httpx flavour this openai SDK is built on (recent releases ship `httpx2`)."""
    import openai._base_client as base

    return getattr(base, "httpx2", None) or getattr(base, "httpx")  # noqa: B009


def image_mime(data: bytes) -> str:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:2] == b"\xff\xd8":
        return "image/jpeg"
    raise ValueError("images must be PNG or JPEG bytes")
