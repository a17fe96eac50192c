"""The planner's work on the monitor: each plan_task goal's steps (what the search expanded or contracted, what the
simulator said of a plan) and its LLM calls (stage, tokens, latency, outcome), as rows a viewer reads.

Both come from the planner's `plan_results` report (PlanReport, one per goal, published when the goal ends): its
`progress` holds every step the planner reported as feedback, in order (feedback can be lost, the report cannot),
and its `llm_calls` every call. A viewer learns them per goal, not step by step: the live one-line account of each
step is on the execution events already (the executor forwards the feedback there). `PlanningLog` numbers the
goals it is shown and turns each report into rows, keeping the last HISTORY of each kind for viewers that join.

What a search step did is said by the planner's feedback text, the one the model itself hears (SayPlanPlanner's
`search_step`, which SayPlan-lite shares, and sayplan_core.planners.aids.expansion_feedback): `expanded <node>...`
or `contracted <node>`; any other text on a search step that names a node is the refusal the model was told (an
unknown node, a room that cannot be expanded). A test keeps this reading in step with those texts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

#: rows of each kind a viewer that subscribes gets first
HISTORY = 200
#: what a search step did: the feedback's first word -> the command the model gave
_DONE_WORDS = {"expanded": "expand", "contracted": "contract"}
REFUSED = "refused"


def search_action(stage: str, node: str, message: str) -> str:
    """`expand` or `contract` for a search step that did so, `refused` for one the graph refused, "" for every
    other step (a plan, a verification, a search step that names no node, such as a retrieval)."""
    if stage != "search" or not node:
        return ""
    word, _, rest = message.partition(" ")
    command = _DONE_WORDS.get(word)
    if command is not None and (rest == node or rest.startswith(node + ":")):
        return command
    return REFUSED


def _schema(title: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": properties}


_STRING, _INT, _NUMBER, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_GOAL = {"goal": _INT, "instruction": _STRING, "planner": _STRING, "goal_success": _BOOL}
PLANNER_STEP_SCHEMA = _schema(
    "sayplan.PlannerStep",
    {
        **_GOAL,
        "sequence": _INT,
        "stage": _STRING,
        "search": _STRING,
        "node": _STRING,
        "step": _INT,
        "replanning_round": _INT,
        "tokens_used": _INT,
        "message": _STRING,
    },
)
LLM_CALL_SCHEMA = _schema(
    "sayplan.LlmCall",
    {
        **_GOAL,
        "index": _INT,
        "stage": _STRING,
        "model": _STRING,
        "prompt_tokens": _INT,
        "completion_tokens": _INT,
        "latency_s": _NUMBER,
        "outcome": _STRING,
    },
)


class PlanningLog:
    """Rows of every report it is shown, numbered by goal (1, 2, ... in the order the reports came)."""

    def __init__(self, history: int = HISTORY) -> None:
        self.goals = 0
        self.steps: deque[dict[str, Any]] = deque(maxlen=history)
        self.calls: deque[dict[str, Any]] = deque(maxlen=history)

    def add(
        self,
        instruction: str,
        planner: str,
        success: bool,
        steps: Iterable[Mapping[str, Any]],
        calls: Iterable[Mapping[str, Any]],
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """One goal's report: `steps` with the PlanProgress fields, `calls` with the LlmCallStats fields. Returns
        the rows to send, a step's with `search` (search_action) added; each carries the goal's number."""
        self.goals += 1
        goal = {"goal": self.goals, "instruction": instruction, "planner": planner, "goal_success": bool(success)}
        step_rows = []
        for sequence, step in enumerate(steps):
            stage, node, message = str(step["stage"]), str(step["node"]), str(step["message"])
            step_rows.append(
                {
                    **goal,
                    "sequence": sequence,
                    "stage": stage,
                    "search": search_action(stage, node, message),
                    "node": node,
                    "step": int(step["step"]),
                    "replanning_round": int(step["replanning_round"]),
                    "tokens_used": int(step["tokens_used"]),
                    "message": message,
                }
            )
        call_rows = [
            {
                **goal,
                "index": index,
                "stage": str(call["stage"]),
                "model": str(call["model"]),
                "prompt_tokens": int(call["prompt_tokens"]),
                "completion_tokens": int(call["completion_tokens"]),
                "latency_s": float(call["latency_s"]),
                "outcome": str(call["outcome"]),
            }
            for index, call in enumerate(calls)
        ]
        self.steps.extend(step_rows)
        self.calls.extend(call_rows)
        return step_rows, call_rows
