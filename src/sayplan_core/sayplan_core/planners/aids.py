"""Aids for small models that keep SayPlan's method: what the model may say and hear, never what it decides.

A 1.5B model answering at temperature 0 is a function of its prompt: asked the same
question again it gives the same answer, so a refused command repeated until the call
budget runs out is the usual way such a run fails. Each aid is a planner option, so
the bench can switch it off and measure its effect:

- legal commands (`legal_commands`): the answer schema names only what the state
  allows: expand a node that would show something new, contract an expanded one;
- no repeats (`no_repeat`): a prompt is never sent twice; a state seen before, or
  a plan that failed before, gets a note that says what was answered there and why it
  did not help;
- names in the feedback (`reveal_names`): an expansion's feedback lists what it
  showed, not only how many nodes;
- a search example (`search_example`): the system prompt also shows a search task
  that ends with a plan as soon as the item is in the graph;
- short answers (`thought_chars`, `plan_steps`): the free-text fields and the plan
  have a length limit in the schema, which bounds the time a model on a CPU spends
  writing them, and ends a model that loops (writing steps until its token limit cut
  the answer, then again on each retry) after a plan the simulator can answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sayplan_core.planners.answers import Command
from sayplan_core.sim.plan import format_plan

#: the nodes an expansion's feedback names at most (a room of a large building shows hundreds)
REVEALED_NAMES = 24
#: the answers a repeated state's note recalls at most
_RECALLED = 4


def expansion_feedback(node: str, revealed: list[str], names: bool) -> str:
    """What the model hears after expand(node): how many nodes appeared, and with `names` which ones."""
    text = f"expanded {node}: {len(revealed)} nodes revealed"
    if not names or not revealed:
        return text
    shown = ", ".join(revealed[:REVEALED_NAMES])
    more = f" and {len(revealed) - REVEALED_NAMES} more" if len(revealed) > REVEALED_NAMES else ""
    return f"{text}: {shown}{more}"


def describe(command: Command) -> str:
    """A command in a few words, for a note that recalls it."""
    if command.name == "plan":
        return f"plan {format_plan(command.plan)}" if command.plan else "an empty plan"
    return f"{command.name}({command.node})" if command.node else command.name


@dataclass
class RepeatGuard:
    """Remembers what the model answered in each state it was shown, and which plans failed.

    on=False: every method is a no-op, the planner behaves as without the aid.
    """

    on: bool = True
    _answers: dict[str, list[str]] = field(default_factory=dict)
    _failed: set[tuple[str, ...]] = field(default_factory=set)

    def note(self, prompt: str) -> str:
        """A note to add to the feedback when `prompt` was sent before ("" otherwise): with it, the next prompt
        differs from every earlier one, and the model hears what it answered then."""
        if not self.on:
            return ""
        earlier = self._answers.get(_digest(prompt))
        if not earlier:
            return ""
        recalled = "; ".join(earlier[-_RECALLED:])
        return (
            f"Note: you saw this same state {len(earlier)} time(s) before and answered: {recalled}. That did not "
            "get the task done: choose something else (if everything the instruction needs is visible, plan)."
        )

    def answered(self, prompt: str, command: Command) -> None:
        if self.on:
            self._answers.setdefault(_digest(prompt), []).append(describe(command))

    def failed_before(self, command: Command) -> bool:
        """The same plan (and answer) failed verification before."""
        return self.on and _plan_key(command) in self._failed

    def plan_failed(self, command: Command) -> None:
        if self.on:
            self._failed.add(_plan_key(command))


def repeated_plan_feedback(feedback: str) -> str:
    """The feedback for a plan that is the same as one that already failed."""
    return f"{feedback} (You proposed this same plan before and it failed the same way: change it where it fails.)"


def with_note(feedback: str, note: str) -> str:
    """The feedback with a repeat note after it (either may be empty)."""
    return f"{feedback} {note}" if feedback and note else feedback or note


def _digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def _plan_key(command: Command) -> tuple[str, ...]:
    return (*(str(step) for step in command.plan), "|", *command.answer)
