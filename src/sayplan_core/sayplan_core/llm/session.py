"""One task's conversation with an LLM: budget, retries, answer validation and accounting.

Two kinds of failure are handled differently. Transport failures (timeout, HTTP 429
or 5xx, connection) are retried with bounded exponential backoff, waiting longer when
the server says so (Retry-After, up to `max_retry_after_s`). Bad answers (not JSON,
wrong fields, unknown node or action, an empty plan, a refusal) are fed back to the
model as a new user message so it can correct itself. Every attempt counts against the
call budget; only answers count against the token budget, with the tokens the server
reports (estimated with the model's tokenizer when it reports none): a failed attempt
costs no tokens. When a budget runs out, BudgetExhaustedError says why and carries the
last feedback.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sayplan_core.graph import limits
from sayplan_core.graph.tokens import count_tokens
from sayplan_core.llm import http
from sayplan_core.llm.types import LlmBackend, LlmRequest, LlmResponse, LlmTransientError, Message

T = TypeVar("T")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class BadAnswerError(ValueError):
    """The model's answer cannot be used; the message is fed back to it."""


class BudgetExhaustedError(RuntimeError):
    def __init__(self, reason: str, last_feedback: str = "", backend_failure: bool = False) -> None:
        super().__init__(f"{reason}; last feedback: {last_feedback}" if last_feedback else reason)
        self.reason = reason
        self.last_feedback = last_feedback
        self.backend_failure = backend_failure


class PlanCanceledError(RuntimeError):
    """The caller asked to stop (a ROS goal was canceled, Ctrl-C)."""


@dataclass
class Budget:
    max_calls: int = 40
    max_tokens: int = 250_000
    max_bad_answers_per_step: int = 3
    max_transient_retries: int = 4
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    max_retry_after_s: float = 60.0  # a server asking for a longer pause ends the task instead


@dataclass
class CallStats:
    stage: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    outcome: str  # ok | bad_answer | transient_error
    detail: str = ""
    #: from the backend where it measures them (the embedded model): prompt tokens reused, seconds reading the
    #: prompt and writing the answer
    cached_tokens: int = 0
    prompt_s: float = 0.0
    decode_s: float = 0.0

    def rates(self) -> tuple[float | None, float | None]:
        """Prompt tokens read and answer tokens written per second (None where the backend did not measure)."""
        read = self.prompt_tokens - self.cached_tokens
        prompt = read / self.prompt_s if self.prompt_s > 0 and read > 0 else None
        decode = self.completion_tokens / self.decode_s if self.decode_s > 0 else None
        return prompt, decode

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class LlmSession:
    backend: LlmBackend
    budget: Budget = field(default_factory=Budget)
    temperature: float = 0.0
    max_answer_tokens: int = 1024
    should_cancel: Callable[[], bool] = lambda: False
    sleep: Callable[[float], None] = http.pause
    calls: list[CallStats] = field(default_factory=list)

    @property
    def tokens_used(self) -> int:
        return sum(c.total_tokens for c in self.calls)

    def _check_budget(self, last_feedback: str) -> None:
        handle = http.current_abort()
        if self.should_cancel() or (handle is not None and handle.aborted):
            raise PlanCanceledError("canceled")
        if len(self.calls) >= self.budget.max_calls:
            raise BudgetExhaustedError(f"call budget exhausted ({self.budget.max_calls} LLM calls)", last_feedback)
        if self.tokens_used >= self.budget.max_tokens:
            raise BudgetExhaustedError(
                f"token budget exhausted ({self.tokens_used} of {self.budget.max_tokens} tokens)", last_feedback
            )

    def complete(self, stage: str, request: LlmRequest, last_feedback: str = "") -> LlmResponse:
        """One answer, retrying transport failures with bounded backoff.

        A backend with a `timeout_s` gets one wall-clock deadline for the whole call: every attempt,
        every read of every attempt and every backoff wait fit in it, whatever the server does.
        """
        size = sum(len(m.get("content", "")) for m in request.messages)
        if size > limits.MAX_REQUEST_CHARS:
            raise BudgetExhaustedError(
                f"the {stage} request is {size} characters long, over the limit of {limits.MAX_REQUEST_CHARS}",
                last_feedback,
            )
        total = getattr(self.backend, "timeout_s", None)
        if not isinstance(total, (int, float)) or total <= 0:
            return self._attempts(stage, request, last_feedback, None)
        with http.deadline(float(total)):
            return self._attempts(stage, request, last_feedback, float(total))

    def _attempts(self, stage: str, request: LlmRequest, last_feedback: str, total: float | None) -> LlmResponse:
        delay = self.budget.backoff_initial_s
        for attempt in range(self.budget.max_transient_retries + 1):
            self._check_budget(last_feedback)
            try:
                response = self.backend.complete(request)
                _check_usage(response)
            except LlmTransientError as exc:
                handle = http.current_abort()
                if handle is not None and handle.aborted:  # the abort ended this attempt: not a backend failure
                    raise PlanCanceledError("canceled") from exc
                # a failed attempt used no tokens the server reported: it spends a call, not the token budget
                self.calls.append(CallStats(stage, self.backend.info.model, 0, 0, 0.0, "transient_error", str(exc)))
                last_feedback = f"LLM backend error: {exc}"
                if attempt == self.budget.max_transient_retries:
                    raise BudgetExhaustedError(
                        f"LLM backend kept failing ({exc.kind}) after {attempt + 1} attempts",
                        last_feedback,
                        backend_failure=True,
                    ) from exc
                wait = delay
                if exc.retry_after_s is not None:
                    if exc.retry_after_s > self.budget.max_retry_after_s:
                        raise BudgetExhaustedError(
                            f"the LLM server asks to retry after {exc.retry_after_s:g} s, longer than the "
                            f"{self.budget.max_retry_after_s:g} s allowed",
                            last_feedback,
                            backend_failure=True,
                        ) from exc
                    wait = max(wait, exc.retry_after_s)
                left = http.remaining_s()
                if total is not None and left is not None and left <= wait:
                    raise BudgetExhaustedError(
                        f"LLM call deadline of {total:g} s passed after {attempt + 1} attempt(s) ({exc.kind})",
                        last_feedback,
                        backend_failure=True,
                    ) from exc
                self.sleep(wait)
                delay = min(delay * 2, self.budget.backoff_max_s)
                continue
            if not response.prompt_tokens:
                response.prompt_tokens = sum(count_tokens(m["content"]) for m in request.messages)
            if not response.completion_tokens:
                response.completion_tokens = count_tokens(response.text)
            self.calls.append(
                CallStats(
                    stage,
                    response.model or self.backend.info.model,
                    response.prompt_tokens,
                    response.completion_tokens,
                    response.latency_s,
                    "ok",
                    cached_tokens=response.cached_tokens,
                    prompt_s=response.prompt_s,
                    decode_s=response.decode_s,
                )
            )
            return response
        raise AssertionError("unreachable")

    def ask(
        self,
        stage: str,
        messages: list[Message],
        schema: dict[str, Any] | None,
        validate: Callable[[dict[str, Any]], T],
        schema_name: str = "answer",
        images: tuple[bytes, ...] = (),
    ) -> T:
        """Ask until an answer passes `validate` (which raises BadAnswerError), feeding errors back."""
        conversation = list(messages)
        last_feedback = ""
        for _ in range(self.budget.max_bad_answers_per_step + 1):
            request = LlmRequest(conversation, schema, schema_name, self.temperature, self.max_answer_tokens, images)
            response = self.complete(stage, request, last_feedback)
            try:
                return validate(parse_json_answer(response))
            except BadAnswerError as exc:
                last_feedback = _clip(str(exc))
                self.calls[-1].outcome, self.calls[-1].detail = "bad_answer", last_feedback
                # what is echoed back is capped: a huge bad answer must not grow every later request
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": _clip(response.text)},
                    {
                        "role": "user",
                        "content": f"Your answer could not be used: {last_feedback}. "
                        "Answer again with one JSON object that follows the required format.",
                    },
                ]
        raise BudgetExhaustedError(
            f"no usable answer after {self.budget.max_bad_answers_per_step + 1} tries at the {stage} step",
            last_feedback,
        )


def _clip(text: str, limit: int = limits.MAX_ECHO_CHARS) -> str:
    """At most `limit` characters of `text`, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters not repeated)"


def _check_usage(response: LlmResponse) -> None:
    """Token counts a server reports must be whole numbers in range; anything else is not a usage report."""
    for what in ("prompt_tokens", "completion_tokens"):
        value = getattr(response, what)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limits.MAX_REPORTED_TOKENS:
            raise LlmTransientError(
                "invalid_usage",
                f"the server reported {what} = {value!r:.40}, not a token count between 0 and "
                f"{limits.MAX_REPORTED_TOKENS}",
            )
    cached = response.cached_tokens
    if isinstance(cached, bool) or not isinstance(cached, int) or not 0 <= cached <= response.prompt_tokens:
        raise LlmTransientError(
            "invalid_usage", f"the backend reported cached_tokens = {cached!r:.40}, not a count of prompt tokens"
        )
    for what in ("prompt_s", "decode_s"):
        seconds = getattr(response, what)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
            raise LlmTransientError("invalid_usage", f"the backend reported {what} = {seconds!r:.40}, not seconds")


def parse_json_answer(response: LlmResponse) -> dict[str, Any]:
    if response.refusal:
        raise BadAnswerError(f"the model refused: {response.refusal}")
    if response.oversize_bytes:
        raise BadAnswerError(
            f"the answer is over the limit of {limits.MAX_ANSWER_CHARS} characters (the server sent more than "
            f"{response.oversize_bytes} bytes; reading stopped there)"
        )
    if response.finish_reason == "length":
        raise BadAnswerError("the answer was cut off at the token limit; answer more briefly")
    if len(response.text) > limits.MAX_ANSWER_CHARS:
        raise BadAnswerError(
            f"the answer is {len(response.text)} characters long, over the limit of {limits.MAX_ANSWER_CHARS}"
        )
    text = response.text.strip()
    match = _FENCE.match(text)
    if match:
        text = match.group(1)
    if not text:
        raise BadAnswerError("the answer was empty")
    try:
        limits.check_json_text(text, "the answer", limits.MAX_ANSWER_CHARS)
    except limits.InputLimitError as exc:
        raise BadAnswerError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadAnswerError(f"the answer is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise BadAnswerError(f"the answer must be a JSON object, not {type(data).__name__}")
    return data
