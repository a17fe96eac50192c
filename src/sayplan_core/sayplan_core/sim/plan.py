"""Plan steps and their text forms: `goto(kitchen) > pickup(mug) > done`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sayplan_core.graph import limits

_STEP = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([^()]*?)\s*\))?\s*$")


class PlanFormatError(ValueError):
    """A plan (from a file, a message or an LLM) could not be read."""


@dataclass(frozen=True)
class PlanStep:
    action: str
    target: str = ""

    def __str__(self) -> str:
        return f"{self.action}({self.target})" if self.target else self.action

    def to_dict(self) -> dict[str, str]:
        return {"action": self.action, "target": self.target}


def parse_step(raw: Any, index: int = 0) -> PlanStep:
    if isinstance(raw, PlanStep):
        return raw
    if isinstance(raw, Mapping):
        action = raw.get("action", raw.get("function_name", raw.get("name")))
        target = raw.get("target", raw.get("function_target", raw.get("node", "")))
        if not isinstance(action, str) or not action:
            raise PlanFormatError(f"step {index}: missing 'action' in {dict(raw)!r}")
        return PlanStep(action.strip(), "" if target is None else str(target).strip())
    if isinstance(raw, (list, tuple)) and 1 <= len(raw) <= 2:
        return PlanStep(str(raw[0]).strip(), str(raw[1]).strip() if len(raw) == 2 else "")
    if isinstance(raw, str):
        match = _STEP.match(raw)
        if not match:
            raise PlanFormatError(f"step {index}: cannot read {raw!r}; write it as action(target)")
        target = (match.group(2) or "").strip().strip("'\"")
        if "," in target:
            raise PlanFormatError(f"step {index}: {raw!r} has several arguments; actions take one node")
        return PlanStep(match.group(1), target)
    raise PlanFormatError(f"step {index}: expected 'action(target)', got {raw!r}")


def _check_steps(count: int) -> None:
    if count > limits.MAX_PLAN_STEPS:
        raise PlanFormatError(f"the plan has {count} steps, over the limit of {limits.MAX_PLAN_STEPS}")


def parse_plan(raw: Any) -> list[PlanStep]:
    """Read a plan from `a(x) > b(y)`, a list of steps, or {"plan": [...]}."""
    if isinstance(raw, Mapping):
        if "plan" not in raw:
            raise PlanFormatError("a plan object needs a 'plan' list")
        raw = raw["plan"]
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("[") or text.startswith("{"):
            try:
                limits.check_json_text(text, "the plan", limits.MAX_ANSWER_CHARS)
            except limits.InputLimitError as exc:
                raise PlanFormatError(str(exc)) from None
            try:
                return parse_plan(json.loads(text))
            except json.JSONDecodeError:
                text = text.strip("[]")
        parts = [p for p in re.split(r"\s*(?:>|->|,(?![^()]*\)))\s*", text) if p.strip()]
        _check_steps(len(parts))
        return [parse_step(p, i) for i, p in enumerate(parts)]
    if isinstance(raw, Iterable):
        items = list(raw)
        _check_steps(len(items))
        return [parse_step(item, i) for i, item in enumerate(items)]
    raise PlanFormatError(f"cannot read a plan from {type(raw).__name__}")


def format_plan(steps: Iterable[PlanStep]) -> str:
    return " > ".join(str(s) for s in steps)
