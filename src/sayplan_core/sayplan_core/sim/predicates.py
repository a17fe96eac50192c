"""Preconditions and effects that action sets are assembled from.

A precondition returns None when it holds, or the reason it does not, phrased so
that "cannot <action>(<target>): <reason>" reads as a sentence. Action sets (YAML
under action_sets/) name these by key, so a new skill is a data change and a new
predicate is one function registered here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sayplan_core.graph.model import with_state
from sayplan_core.sim.world_state import WorldState

Precondition = Callable[[WorldState, str, Any], "str | None"]
Effect = Callable[[WorldState, str, Any], None]

PRECONDITIONS: dict[str, Precondition] = {}
EFFECTS: dict[str, Effect] = {}


def precondition(name: str) -> Callable[[Precondition], Precondition]:
    def register(fn: Precondition) -> Precondition:
        PRECONDITIONS[name] = fn
        return fn

    return register


def effect(name: str) -> Callable[[Effect], Effect]:
    def register(fn: Effect) -> Effect:
        EFFECTS[name] = fn
        return fn

    return register


def _container_like(state: WorldState, node_id: str) -> bool:
    node = state.graph.nodes[node_id]
    return "open" in node.affordances or "contain" in node.affordances or bool(node.attributes.get("container"))


# ----------------------------------------------------------------- navigation
@precondition("reachable")
def reachable(state: WorldState, target: str, _: Any) -> str | None:
    here = state.location
    if here is None or here == target:
        return None
    graph = state.graph
    if state.strict_navigation:
        if graph.nav.has_edge(here, target):
            return None
        return f"{target} is not adjacent to the agent's location {here}; go through the pose nodes between them"
    if graph.nav_component(here) != graph.nav_component(target):
        return f"{target} cannot be reached from {here}: no path joins them"
    return None


@precondition("in_agent_room")
def in_agent_room(state: WorldState, target: str, _: Any) -> str | None:
    agent_room = state.agent_room()
    target_room = state.room_of(target)
    if agent_room is not None and agent_room == target_room:
        return None
    where = f"in {agent_room}" if agent_room else "nowhere yet"
    return f"the agent is {where}, but {target} is in {target_room}; goto({target_room}) first"


# ----------------------------------------------------------------- hand
@precondition("hand_empty")
def hand_empty(state: WorldState, target: str, _: Any) -> str | None:
    if state.holding is None:
        return None
    return f"the agent is already holding {state.holding}; it can hold one object at a time"


@precondition("holding_target")
def holding_target(state: WorldState, target: str, _: Any) -> str | None:
    if state.holding == target:
        return None
    if state.holding is None:
        return "the agent is holding nothing"
    return f"the agent is holding {state.holding}, not {target}"


@precondition("holding_any")
def holding_any(state: WorldState, target: str, _: Any) -> str | None:
    return None if state.holding is not None else "the agent is holding nothing"


@precondition("not_held")
def not_held(state: WorldState, target: str, _: Any) -> str | None:
    return f"{target} is already in the agent's hand" if state.holding == target else None


# ----------------------------------------------------------------- access
@precondition("asset_accessed")
def asset_accessed(state: WorldState, target: str, _: Any) -> str | None:
    if state.accessed is None:
        return "no asset has been accessed; call access(<asset>) at the agent's location first"
    return None


@precondition("under_accessed")
def under_accessed(state: WorldState, target: str, _: Any) -> str | None:
    support = state.support_of(target)
    if support is None or support == state.accessed:
        return None
    relation = "in" if state.relation(target) == "inside_of" else "on"
    return f"{target} is {relation} {support}, which has not been accessed; call access({support}) first"


@precondition("container_open")
def container_open(state: WorldState, target: str, _: Any) -> str | None:
    """Closed containers hide and block what is inside them, at any depth."""
    child = target
    for parent in state.ancestors(target):
        if state.node_type(parent) in ("room", "floor", "building", "agent"):
            break
        if state.relation(child) == "inside_of" and "closed" in state.states(parent):
            return f"it is inside {parent}, which is closed"
        child = parent
    return None


@precondition("target_open")
def target_open(state: WorldState, target: str, _: Any) -> str | None:
    return f"{target} is closed; open({target}) first" if "closed" in state.states(target) else None


@precondition("is_container")
def is_container(state: WorldState, target: str, _: Any) -> str | None:
    return None if _container_like(state, target) else f"{target} is not a container"


# ----------------------------------------------------------------- states
@precondition("has_affordance")
def has_affordance(state: WorldState, target: str, affordance: Any) -> str | None:
    if affordance in state.graph.nodes[target].affordances:
        return None
    return f"{target} does not afford {affordance}"


@precondition("has_state")
def has_state(state: WorldState, target: str, wanted: Any) -> str | None:
    current = state.states(target)
    if wanted in current:
        return None
    shown = ", ".join(current) if current else "in no state"
    return f"{target} is {shown}, not {wanted}"


@precondition("lacks_state")
def lacks_state(state: WorldState, target: str, unwanted: Any) -> str | None:
    return f"{target} is {unwanted}" if unwanted in state.states(target) else None


# ----------------------------------------------------------------- effects
@effect("move_agent")
def move_agent(state: WorldState, target: str, _: Any) -> None:
    state.location = target
    state.accessed = None


@effect("set_accessed")
def set_accessed(state: WorldState, target: str, _: Any) -> None:
    state.accessed = target


@effect("grasp")
def grasp(state: WorldState, target: str, _: Any) -> None:
    agent = state.graph.agent_id
    assert agent is not None
    state.move(target, agent, "inside_hand")
    state.holding = target


@effect("place_held")
def place_held(state: WorldState, target: str, mode: Any) -> None:
    """Put the held object down: on the accessed asset (SayPlan) or on/in the target (LookPlanGraph)."""
    held = state.holding
    assert held is not None
    where: str
    if mode in ("ontop_of", "inside_of"):
        where, relation = target, str(mode)
    else:
        assert state.accessed is not None
        where = state.accessed
        inside = _container_like(state, where) and "closed" not in state.states(where)
        relation = "inside_of" if inside else "ontop_of"
    state.move(held, where, relation)
    state.holding = None


@effect("set_state")
def set_state(state: WorldState, target: str, new_state: Any) -> None:
    state.set_states(target, with_state(state.states(target), str(new_state)))


@effect("reveal")
def reveal(state: WorldState, target: str, relation: Any) -> None:
    if state.reveal_hook is not None:
        state.revealed.extend(state.reveal_hook(state, target, str(relation)))


@effect("finish")
def finish(state: WorldState, target: str, _: Any) -> None:
    state.finished = True
