"""Hand-written LLM transcripts shared by the planner, bench, closed-loop and ROS tests.

These stand in for a remote model: each answer is what a planner would receive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sayplan_core.llm.replay import TRANSCRIPT_FORMAT, ReplayBackend
from sayplan_core.llm.session import Budget
from sayplan_core.sim import goal_from_dict

INSTRUCTION = "Make Niko a coffee and place the mug on his desk."
GOAL = goal_from_dict({"kind": "placed", "node": "coffee_mug", "relation": "ontop_of", "target": "nikos_desk"})
GOOD_PLAN = [
    ("goto", "kitchen"), ("open", "kitchen_cupboard"), ("access", "kitchen_cupboard"), ("pickup", "coffee_mug"),
    ("access", "coffee_machine"), ("release", "coffee_mug"), ("turn_on", "coffee_machine"),
    ("turn_off", "coffee_machine"), ("pickup", "coffee_mug"), ("goto", "nikos_office"), ("access", "nikos_desk"),
    ("release", "coffee_mug"), ("done", ""),
]  # fmt: skip
BAD_PLAN = [step for step in GOOD_PLAN if step != ("open", "kitchen_cupboard")]
FAST = Budget(backoff_initial_s=0.0, backoff_max_s=0.0)


def steps(plan: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"action": a, "target": t} for a, t in plan]


def say(
    command: str, node: str = "", plan: list[tuple[str, str]] | None = None, answer: list[str] | None = None
) -> str:
    mode = "planning" if command == "plan" else "exploring"
    body = {"command_name": command, "node_name": node, "plan": steps(plan or []), "answer": answer or []}
    return json.dumps({"chain_of_thought": "...", "reasoning": "...", "mode": mode, "command": body})


def lite_search(command: str, node: str = "") -> str:
    return json.dumps(
        {"chain_of_thought": "...", "reasoning": "...", "command": {"command_name": command, "node_name": node}}
    )


def lite_plan(plan: list[tuple[str, str]], answer: list[str] | None = None) -> str:
    return json.dumps({"chain_of_thought": "...", "plan": steps(plan), "answer": answer or []})


def transcript(*answers: str | dict[str, Any]) -> ReplayBackend:
    calls = []
    for item in answers:
        if isinstance(item, dict):
            calls.append(item)
        else:
            calls.append({"response": {"text": item, "prompt_tokens": 1000, "completion_tokens": 50}})
    return ReplayBackend({"format": TRANSCRIPT_FORMAT, "version": 1, "calls": calls}, "hand-written")


def error(kind: str) -> dict[str, Any]:
    return {"error": {"kind": kind, "message": f"recorded {kind}"}}


def write_transcript(path: Path, *answers: str) -> Path:
    calls = [{"response": {"text": a, "prompt_tokens": 900, "completion_tokens": 40}} for a in answers]
    path.write_text(json.dumps({"format": TRANSCRIPT_FORMAT, "version": 1, "calls": calls}))
    return path
