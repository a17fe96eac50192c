"""Preconditions and effects that action sets are assembled from.

A precondition returns None when it holds, or the reason it does not, phrased so
that "cannot <action>(<target>): <reason>" reads as a sentence. A reason that can
suggest a fix returns a `Refusal` naming the *role* of the action that would fix it
(navigate, access, open); the simulator words it with the verb the action set in
force gives that role, and leaves the hint out when the set has no such action.
Action sets (YAML under action_sets/) name these by key, so a new skill is a data
change and a new predicate is one function registered here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sayplan_core.graph.model import ALLOWED_PARENTS, EXCLUSIVE_STATES, with_state
from sayplan_core.sim.world_state import WorldState


@dataclass(frozen=True)
class Refusal:
    """Why a step cannot run, and the call that would fix it (by role, worded per action set)."""

    reason: str
    role: str = ""
    node: str = ""
    #: Fixed text around the call; "{call}" is replaced by `verb(node)`. Empty: the feedback is the reason alone
    #: (the fixing step is still known, for sets that insert it).
    hint: str = "{call} first"

    def text(self, verbs: Mapping[str, str]) -> str:
        verb = verbs.get(self.role) if self.role else None
        if verb is None or not self.hint:
            return self.reason
        return f"{self.reason}; {self.hint.replace('{call}', f'{verb}({self.node})')}"


Precondition = Callable[[WorldState, str, Any], "str | Refusal | None"]
Effect = Callable[[WorldState, str, Any], None]

PRECONDITIONS: dict[str, Precondition] = {}
EFFECTS: dict[str, Effect] = {}
#: Per effect, what the scene graph needs for it to apply (checked for every step, whatever preconditions its
#: action set lists), so that a plan that verifies always materialises, even under a user's own action set.
EFFECT_GUARDS: dict[str, Precondition] = {}


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
def in_agent_room(state: WorldState, target: str, _: Any) -> str | Refusal | None:
    agent_room = state.agent_room()
    target_room = state.room_of(target)
    if agent_room is not None and agent_room == target_room:
        return None
    if state.location is None:
        where = "the agent has no location yet"
    elif agent_room is None:
        where = f"the agent is at {state.location}, in no room"
    else:
        where = f"the agent is in {agent_room}"
    if target_room is None:
        return f"{where}, and {target} is in no room the agent can go to"
    return Refusal(f"{where}, but {target} is in {target_room}", "navigate", target_room)


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


@precondition("not_in_hand")
def not_in_hand(state: WorldState, target: str, _: Any) -> str | None:
    """A place for the held object: not the object itself, nor anything it carries (that would be a cycle)."""
    held = state.holding
    if held is None:
        return None
    if target == held:
        return f"{target} is what the agent is holding; an object cannot go on or inside itself"
    if held not in state.ancestors(target):
        return None
    if state.parent(target) == held:
        where = "in" if state.relation(target) == "inside_of" else "on"
        return f"{target} is {where} {held}, which the agent is holding; put {held} down first"
    return f"{target} is carried by {held}, which the agent is holding; put {held} down first"


# ----------------------------------------------------------------- access
@precondition("asset_accessed")
def asset_accessed(state: WorldState, target: str, _: Any) -> str | Refusal | None:
    if state.accessed is None:
        return Refusal("no asset has been accessed", "access", "<asset>", "call {call} at the agent's location first")
    return None


@precondition("under_accessed")
def under_accessed(state: WorldState, target: str, _: Any) -> str | Refusal | None:
    support = state.support_of(target)
    if support is None or support == state.accessed:
        return None
    if state.parent(target) == support:
        where = f"{'in' if state.relation(target) == 'inside_of' else 'on'} {support}"
    else:  # nested: say where it is and which asset carries it
        parent = state.parent(target)
        where = f"{'in' if state.relation(target) == 'inside_of' else 'on'} {parent}, at {support}"
    return Refusal(f"{target} is {where}, which has not been accessed", "access", support, "call {call} first")


@precondition("container_open")
def container_open(state: WorldState, target: str, _: Any) -> str | Refusal | None:
    """Closed containers hide and block what is inside them, at any depth. The refusal names the nearest closed
    container; opening it is the fix (its wording stays the reason alone, as feedback has always read)."""
    child = target
    for parent in state.ancestors(target):
        if state.node_type(parent) in ("room", "floor", "building", "agent"):
            break
        if state.relation(child) == "inside_of" and "closed" in state.states(parent):
            return Refusal(f"it is inside {parent}, which is closed", "open", parent, hint="")
        child = parent
    return None


@precondition("target_open")
def target_open(state: WorldState, target: str, _: Any) -> str | Refusal | None:
    return Refusal(f"{target} is closed", "open", target) if "closed" in state.states(target) else None


@precondition("is_container")
def is_container(state: WorldState, target: str, _: Any) -> str | None:
    return None if _container_like(state, target) else f"{target} is not a container"


# ----------------------------------------------------------------- states
def missing_affordance(state: WorldState, target: str, accepted: tuple[str, ...]) -> str | None:
    """None when the target lists one of the accepted affordance names, else feedback naming them."""
    if not accepted or not set(accepted).isdisjoint(state.graph.nodes[target].affordances):
        return None
    if len(accepted) == 1:
        return f"{target} does not afford {accepted[0]}"
    return f"{target} does not afford {accepted[0]} (it needs one of: {', '.join(accepted)})"


@precondition("has_affordance")
def has_affordance(state: WorldState, target: str, affordance: Any) -> str | None:
    """The same check as an action's `affordance` key, for sets that list it among their preconditions."""
    accepted = tuple(affordance) if isinstance(affordance, (list, tuple)) else (str(affordance),)
    return missing_affordance(state, target, accepted)


def same_state_group(a: str, b: str) -> bool:
    """True when setting `a` decides `b` too (the same state, or one it excludes: open/closed, on/off)."""
    return a == b or any(a in group and b in group for group in EXCLUSIVE_STATES)


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


# ----------------------------------------------------------------- what each effect needs of the graph
def _guard(name: str) -> Callable[[Precondition], Precondition]:
    def register(fn: Precondition) -> Precondition:
        EFFECT_GUARDS[name] = fn
        return fn

    return register


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


@_guard("move_agent")
def _agent_can_stand_at(state: WorldState, target: str, _: Any) -> str | None:
    kind = state.node_type(target)
    return None if kind in ("room", "pose") else f"{target} is {_a(kind)}; the agent can only be at a room or pose"


@_guard("grasp")
def _can_be_held(state: WorldState, target: str, _: Any) -> str | None:
    kind = state.node_type(target)
    if kind != "object":
        return f"{target} is {_a(kind)}; only an object can be held"
    if state.holding is not None and state.holding != target:
        return f"the agent is already holding {state.holding}"
    return None


@_guard("place_held")
def _can_be_put_down(state: WorldState, target: str, mode: Any) -> str | Refusal | None:
    if state.holding is None:
        return "the agent is holding nothing to put down"
    where = target if mode in ("ontop_of", "inside_of") else state.accessed
    if where is None:
        return "no asset has been accessed to put it on"
    if state.node_type(where) not in ALLOWED_PARENTS["object"] - {"agent"}:
        return f"{where} is {_a(state.node_type(where))}; an object cannot be put on or in it"
    return not_in_hand(state, where, None)


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
