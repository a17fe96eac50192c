"""What an action does, named so code can act on it: its role.

An action set's verbs are words for an LLM (goto, go_to, fetch); a role says what the action does. Simulator
feedback names the set's own verb for a role ("goto(kitchen) first"), and a robot runs an action by its role, so
a new verb whose meaning is known is one YAML entry. A role is checked against the action's effects when the set
is loaded: `role: pick` on an action that does not grasp is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The relations `place_held` and `reveal` take: on top of the target, or inside it.
RELATIONS = ("ontop_of", "inside_of")


@dataclass(frozen=True)
class Role:
    meaning: str
    #: The effect an action of this role has.
    effect: str
    #: What that effect's argument must be: a value, RELATIONS (either relation) or None (no argument).
    argument: Any = None
    #: At most one action of a set plays it: feedback and inserted steps name that action.
    unique: bool = False

    def effect_text(self) -> str:
        """The effect this role needs as an action set writes it: `grasp`, `{set_state: open}`."""
        if self.argument is None:
            return self.effect
        if self.argument is RELATIONS:
            return f"{{{self.effect}: {' or '.join(RELATIONS)}}}"
        return f"{{{self.effect}: {self.argument}}}"

    def played_by(self, effects: Iterable[tuple[str, Any]]) -> bool:
        """Whether effects (name, argument) carry out this role."""
        for name, arg in effects:
            if name != self.effect:
                continue
            if self.argument is RELATIONS and arg in RELATIONS:
                return True
            if self.argument is not RELATIONS and arg == self.argument:
                return True
        return False


ROLES: dict[str, Role] = {
    "navigate": Role("moves the agent to a room or pose", "move_agent", unique=True),
    "access": Role("makes an asset's objects reachable (SayPlan's access)", "set_accessed", unique=True),
    "open": Role("opens a closed node", "set_state", "open", unique=True),
    "close": Role("closes an open node", "set_state", "closed"),
    "switch_on": Role("switches a node on", "set_state", "on"),
    "switch_off": Role("switches a node off", "set_state", "off"),
    "pick": Role("takes an object into the hand", "grasp"),
    "place": Role("puts the held object down at the accessed asset (the target is the object)", "place_held"),
    "put": Role("puts the held object on or in the target", "place_held", RELATIONS),
    "look": Role("looks on or in the target and adds what it sees to the graph", "reveal", RELATIONS),
    "finish": Role("ends the plan", "finish"),
}


def roles_played(effects: Iterable[tuple[str, Any]]) -> list[str]:
    """The roles these effects would carry out (to suggest one for an action that declares none)."""
    listed = list(effects)
    return [name for name, role in ROLES.items() if role.played_by(listed)]
