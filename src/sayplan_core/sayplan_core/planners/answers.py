"""JSON schemas for planner answers (enums from the visible graph) and their validation.

The schema restricts a conforming answer to actions of the action set and node ids
the model can see; validation repeats every check, because a server may ignore the
schema. Validation failures become BadAnswerError feedback to the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sayplan_core.graph import limits
from sayplan_core.graph.model import SceneGraph, UnknownNodeError
from sayplan_core.llm.session import BadAnswerError
from sayplan_core.sim.action_set import ActionSet
from sayplan_core.sim.plan import PlanStep


def _enum(values: Iterable[str]) -> list[str]:
    out = list(dict.fromkeys(sorted(values)))  # sorted(set(...)), but linear when the values come sorted
    return out or [""]


def plan_items_schema(actions: ActionSet, node_ids: Iterable[str], max_items: int = 0) -> dict[str, Any]:
    """A plan: a list of {action, target}; max_items > 0 caps its length in the schema (an aid: a small model
    that loops writing steps is stopped by the grammar, not by the token limit)."""
    bound = {"maxItems": max_items} if max_items else {}
    return {
        "type": "array",
        **bound,
        "items": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": _enum(actions.names())},
                "target": {"type": "string", "enum": _enum([*node_ids, ""])},
            },
            "required": ["action", "target"],
            "additionalProperties": False,
        },
    }


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


@dataclass(frozen=True)
class Legal:
    """What a search command may name in the current state (`aids.legal_commands`): expand only a node that would
    show something new, contract only an expanded one. A command with nothing to name is left out."""

    expand: list[str]
    contract: list[str]


def _text(max_chars: int) -> dict[str, Any]:
    """A free-text field, at most `max_chars` characters long (0: no limit)."""
    return {"type": "string", "maxLength": max_chars} if max_chars else {"type": "string"}


def _commands(final: str, navigable: Iterable[str], legal: Legal | None, extra: dict[str, Any]) -> dict[str, Any]:
    """The `command` object: one enum of nodes for every command, or with `legal` one variant per command, each
    naming only the nodes it may take (`final`, the command that ends the search, takes none)."""
    if legal is None:
        names = {"type": "string", "enum": ["expand", "contract", final]}
        return _obj({"command_name": names, "node_name": {"type": "string", "enum": _enum([*navigable, ""])}, **extra})
    variants = [
        _obj(
            {
                "command_name": {"type": "string", "enum": [name]},
                "node_name": {"type": "string", "enum": _enum(nodes)},
                **extra,
            }
        )
        for name, nodes in (("expand", legal.expand), ("contract", legal.contract))
        if nodes
    ]
    variants.append(
        _obj(
            {
                "command_name": {"type": "string", "enum": [final]},
                "node_name": {"type": "string", "enum": [""]},
                **extra,
            }
        )
    )
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def sayplan_schema(
    actions: ActionSet,
    visible: Iterable[str],
    navigable: Iterable[str],
    legal: Legal | None = None,
    thought_chars: int = 0,
    plan_steps: int = 0,
) -> dict[str, Any]:
    visible = list(visible)
    extra = {
        "plan": plan_items_schema(actions, visible, plan_steps),
        "answer": {"type": "array", "items": {"type": "string", "enum": _enum(visible)}},
    }
    return _obj(
        {
            "chain_of_thought": _text(thought_chars),
            "reasoning": _text(thought_chars),
            "mode": {"type": "string", "enum": ["exploring", "planning"]},
            "command": _commands("plan", navigable, legal, extra),
        }
    )


def lite_search_schema(expandable: Iterable[str], legal: Legal | None = None, thought_chars: int = 0) -> dict[str, Any]:
    return _obj(
        {
            "chain_of_thought": _text(thought_chars),
            "reasoning": _text(thought_chars),
            "command": _commands("done", expandable, legal, {}),
        }
    )


def plan_schema(
    actions: ActionSet, visible: Iterable[str], thought_chars: int = 0, plan_steps: int = 0
) -> dict[str, Any]:
    visible = list(visible)
    return _obj(
        {
            "chain_of_thought": _text(thought_chars),
            "plan": plan_items_schema(actions, visible, plan_steps),
            "answer": {"type": "array", "items": {"type": "string", "enum": _enum(visible)}},
        }
    )


@dataclass
class Command:
    name: str
    node: str = ""
    plan: list[PlanStep] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    thought: str = ""


def _field(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise BadAnswerError(f"the answer has no '{key}' field{where}")
    value = data[key]
    if not isinstance(value, kind):
        raise BadAnswerError(f"'{key}'{where} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _node(graph: SceneGraph, node_id: str, role: str) -> str:
    if node_id not in graph.nodes:
        raise BadAnswerError(f"{role} {UnknownNodeError(node_id, graph.nodes)}")
    return node_id


def parse_plan_items(graph: SceneGraph, actions: ActionSet, raw: Any) -> list[PlanStep]:
    if not isinstance(raw, list):
        raise BadAnswerError(f"'plan' must be a list of {{action, target}} objects, got {type(raw).__name__}")
    if len(raw) > limits.MAX_PLAN_STEPS:
        raise BadAnswerError(f"the plan has {len(raw)} steps, over the limit of {limits.MAX_PLAN_STEPS}")
    if not raw:
        raise BadAnswerError("the plan is empty; give the steps, ending with done")
    steps = []
    for index, item in enumerate(raw):
        if isinstance(item, str):
            from sayplan_core.sim.plan import PlanFormatError, parse_step

            try:
                step = parse_step(item, index)
            except PlanFormatError as exc:
                raise BadAnswerError(str(exc)) from None
        elif isinstance(item, dict):
            action, target = item.get("action"), item.get("target", "")
            if not isinstance(action, str) or not isinstance(target, str):
                raise BadAnswerError(f"plan step {index} must be {{'action': str, 'target': str}}, got {item!r}")
            step = PlanStep(action.strip(), target.strip())
        else:
            raise BadAnswerError(f"plan step {index} must be an object, got {item!r}")
        if step.action not in actions:
            raise BadAnswerError(
                f"plan step {index} uses unknown action '{step.action}' (use: {', '.join(actions.names())})"
            )
        if step.target:
            _node(graph, step.target, f"plan step {index}:")
        steps.append(step)
    return steps


def parse_answer_list(graph: SceneGraph, raw: Any) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise BadAnswerError("'answer' must be a list of node ids")
    return [_node(graph, x, "answer:") for x in raw if x]


def _thought(data: dict[str, Any]) -> str:
    raw = data.get("chain_of_thought", "")
    return " -> ".join(str(x) for x in raw) if isinstance(raw, list) else str(raw)


def parse_sayplan_command(graph: SceneGraph, actions: ActionSet, data: dict[str, Any]) -> Command:
    command = _field(data, "command", dict, "")
    name = _field(command, "command_name", str, " in 'command'").strip()
    aliases = {"expand_node": "expand", "contract_node": "contract", "verify_plan": "plan"}
    name = aliases.get(name, name)
    if name not in ("expand", "contract", "plan"):
        raise BadAnswerError(f"unknown command '{name}' (use expand, contract or plan)")
    if name in ("expand", "contract"):
        node = _field(command, "node_name", str, " in 'command'").strip()
        if not node:
            raise BadAnswerError(f"command {name} needs a node_name")
        return Command(name, _node(graph, node, f"{name}:"), thought=_thought(data))
    steps = parse_plan_items(graph, actions, command.get("plan"))
    return Command("plan", plan=steps, answer=parse_answer_list(graph, command.get("answer")), thought=_thought(data))


def parse_lite_search(graph: SceneGraph, data: dict[str, Any]) -> Command:
    command = _field(data, "command", dict, "")
    name = _field(command, "command_name", str, " in 'command'").strip()
    name = {"expand_node": "expand", "contract_node": "contract", "verify_plan": "done"}.get(name, name)
    if name not in ("expand", "contract", "done"):
        raise BadAnswerError(f"unknown command '{name}' (use expand, contract or done)")
    if name == "done":
        return Command("done", thought=_thought(data))
    node = _field(command, "node_name", str, " in 'command'").strip()
    if not node:
        raise BadAnswerError(f"command {name} needs a node_name")
    return Command(name, _node(graph, node, f"{name}:"), thought=_thought(data))


def parse_plan_answer(graph: SceneGraph, actions: ActionSet, data: dict[str, Any]) -> Command:
    steps = parse_plan_items(graph, actions, data.get("plan"))
    return Command("plan", plan=steps, answer=parse_answer_list(graph, data.get("answer")), thought=_thought(data))


def parse_one_action(actions: ActionSet, move: Any, where: str, name_key: str, target_key: str) -> tuple[str, str]:
    """A single {name, target} action of a step-wise planner's answer, checked against the action set.

    Returns the action name and the stripped target; the target's existence is the caller's check.
    """
    if not isinstance(move, dict):
        raise BadAnswerError(f"the answer has no '{where}' object")
    name, target = move.get(name_key), move.get(target_key, "")
    if not isinstance(name, str) or name not in actions:
        raise BadAnswerError(f"unknown function '{name}' (use: {', '.join(actions.names())})")
    if not isinstance(target, str):
        raise BadAnswerError(f"'{target_key}' must be a node id")
    return name, target.strip()
