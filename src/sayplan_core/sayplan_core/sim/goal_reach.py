"""What a goal scene asks that no plan can give, read from the start scene and an action set (before any run).

A plan changes states only through actions whose effects set them (`set_state`), on targets of the action's
types that afford what the action needs, and never changes a node's affordances. So a goal state no such action
sets on that node, an affordance the start node lacks, or an object moved that nothing can pick up, makes the
goal unreachable; a task importer flags it like a goal naming a room the start scene lacks.
"""

from __future__ import annotations

from sayplan_core.closest import close_names
from sayplan_core.graph.model import Node, SceneGraph, a_or_an
from sayplan_core.sim.action_set import ActionSet, ActionSpec

#: Node types whose states and places a goal scene sets.
_CHANGEABLE = ("asset", "object", "workspace")


def _usable(spec: ActionSpec, node: Node) -> bool:
    """The action can take `node`: its type is a target, and it affords one of the names the action needs."""
    return node.type in spec.targets and (not spec.affordances or bool(set(spec.affordances) & set(node.affordances)))


def _setters(actions: ActionSet, state: str) -> list[ActionSpec]:
    return [
        spec
        for spec in actions.actions.values()
        if any(c.name == "set_state" and str(c.arg) == state for c in spec.effects)
    ]


def _needs(specs: list[ActionSpec]) -> str:
    """What the actions need of a target, for the message: `turn_on (affordance turn_on, on an asset or object)`."""
    parts = []
    for spec in specs:
        needs = f"affordance {' or '.join(spec.affordances)}" if spec.affordances else "no affordance"
        parts.append(f"{spec.name} ({needs}, on: {', '.join(spec.targets)})")
    return ", ".join(parts)


def _affords(node: Node) -> str:
    return f"'{node.id}' is {a_or_an(node.type)} affording {', '.join(node.affordances) or 'nothing'}"


def states_like(actions: ActionSet, state: str) -> str:
    """The states the set does set, closest to `state` first (a goal written `Open` for `open`)."""
    known = sorted({str(c.arg) for spec in actions.actions.values() for c in spec.effects if c.name == "set_state"})
    if not known:
        return ""
    close = [k for k in known if k.lower() == state.lower()] or close_names(state, known, 3)
    if close:
        return f" (did you mean {' or '.join(repr(k) for k in close)}?)"
    return f" (it sets: {', '.join(known)})"


def goal_problems(start: SceneGraph, goal: SceneGraph, actions: ActionSet) -> list[str]:
    """Every state, affordance or move the goal scene asks of a node of the start scene that `actions` cannot give
    it, one message per node and kind. Nodes the start scene lacks are not looked at (reported elsewhere)."""
    problems: list[str] = []
    grasps = [spec for spec in actions.actions.values() if any(c.name == "grasp" for c in spec.effects)]
    for node_id in sorted(goal.nodes):
        if node_id not in start.nodes or goal.nodes[node_id].type not in _CHANGEABLE:
            continue
        was, wanted = start.nodes[node_id], goal.nodes[node_id]
        lacking = [a for a in wanted.affordances if a not in was.affordances]
        if lacking:
            problems.append(
                f"the goal scene gives '{node_id}' affordance(s) its start lacks, and no action adds one: "
                f"{', '.join(lacking)} ({_affords(was)})"
            )
        for state in (s for s in wanted.states if s not in was.states):
            setters = _setters(actions, state)
            if not setters:
                problems.append(
                    f"the goal scene asks '{node_id}' to be '{state}', a state no action of the {actions.name} "
                    f"action set sets{states_like(actions, state)}"
                )
            elif not any(_usable(spec, was) for spec in setters):
                problems.append(
                    f"the goal scene asks '{node_id}' to be '{state}', which it cannot take: {_affords(was)}; "
                    f"the {actions.name} action set sets it only by {_needs(setters)}"
                )
        moved = (goal.parent(node_id), goal.relation(node_id)) != (start.parent(node_id), start.relation(node_id))
        if moved and was.type == "object" and not any(_usable(spec, was) for spec in grasps):
            how = _needs(grasps) if grasps else "no action (the set cannot pick anything up)"
            problems.append(
                f"the goal scene moves '{node_id}' (to '{goal.parent(node_id)}'), which cannot be picked up: "
                f"{_affords(was)}; the {actions.name} action set picks up by {how}"
            )
    return problems
