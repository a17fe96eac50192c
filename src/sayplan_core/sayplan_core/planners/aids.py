"""Aids for small models that keep SayPlan's method: what the model may say and hear, never what it decides.

A 1.5B model answering at temperature 0 is a function of its prompt: asked the same
question again it gives the same answer, so a refused command repeated until the call
budget runs out is the usual way such a run fails. Each aid is a planner option, so
the bench can switch it off and measure its effect:

- legal commands (`legal_commands`): the answer schema names only what the state
  allows: expand a node that would show something new, contract an expanded one;
- no repeats (`no_repeat`): a prompt is never sent twice; a state seen before, or
  a plan that failed before, gets a note that says what was answered there and why it
  did not help (SayPlan, SayPlan Lite, and LookPlanGraph, whose one-move answers
  repeat a look that found nothing new);
- names in the feedback (`reveal_names`): an expansion's feedback lists what it
  showed, not only how many nodes;
- a search example (`search_example`): the system prompt also shows a search task
  that ends with a plan as soon as the item is in the graph;
- what the instruction names (`instruction_matches`): the feedback lists the visible
  assets and objects whose names share a word with the instruction, with their room
  and states, so a model that keeps searching hears that the item is already in view
  (a 1.5B model saw `printed_document` appear and expanded ten more rooms);
- short answers (`thought_chars`, `plan_steps`): the free-text fields and the plan
  have a length limit in the schema, which bounds the time a model on a CPU spends
  writing them, and ends a model that loops (writing steps until its token limit cut
  the answer, then again on each retry) after a plan the simulator can answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sayplan_core.graph.model import SceneGraph
from sayplan_core.options import option
from sayplan_core.planners.answers import Command
from sayplan_core.sim.plan import PlanStep, format_plan

#: the nodes an expansion's feedback names at most (a room of a large building shows hundreds)
REVEALED_NAMES = 24
#: the answers a repeated state's note recalls at most
_RECALLED = 4
#: the matching nodes the feedback lists at most, and the states shown for each
MATCHES_SHOWN = 12
_STATES_SHOWN = 3
#: words of an instruction that name no thing: its grammar and the verbs of fetching and finding
_FILLER_TEXT = """
    the and but not into onto from for with without are been its this
    that these those there here which what where who whom whose when how me my mine i you your we our us he him his
    she her they them their some any all each every one two three four five both either other another more most
    find get bring take put place give make show go fetch need needs want wants know let can could would should will
    please do does did done have has had just also then than so very up down out off over under near next was were
    don doesn didn isn aren wasn won locate closest nearest enough"""
FILLER_WORDS = frozenset(_FILLER_TEXT.split())
_WORD = re.compile(r"[a-z]+")


def expansion_feedback(node: str, revealed: list[str], names: bool) -> str:
    """What the model hears after expand(node): how many nodes appeared, and with `names` which ones."""
    text = f"expanded {node}: {len(revealed)} nodes revealed"
    if not names or not revealed:
        return text
    shown = ", ".join(revealed[:REVEALED_NAMES])
    more = f" and {len(revealed) - REVEALED_NAMES} more" if len(revealed) > REVEALED_NAMES else ""
    return f"{text}: {shown}{more}"


def thing_words(text: str) -> frozenset[str]:
    """The words of `text` that can name a thing, lower case and singular ("2 Bedrooms with pillows" -> bedroom,
    pillow; "potted_plant1" -> potted, plant)."""
    words = set()
    for word in _WORD.findall(text.lower().replace("_", " ")):
        if len(word) < 3 or word in FILLER_WORDS:
            continue
        words.add(_singular(word))
    return frozenset(words)


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def instruction_matches(graph: SceneGraph, instruction: str, ids: Iterable[str]) -> list[str]:
    """The assets and objects among `ids` whose name or id shares a thing word with the instruction, sorted."""
    wanted = thing_words(instruction)
    if not wanted:
        return []
    found = []
    for node_id in ids:
        node = graph.nodes.get(node_id)
        if node is None or node.type not in ("asset", "object"):
            continue
        if wanted & (thing_words(node.name) | thing_words(node_id)):
            found.append(node_id)
    return sorted(found)


def matches_feedback(graph: SceneGraph, matches: list[str], finish: str = "stop exploring and plan") -> str:
    """What the model hears about `matches` (instruction_matches): each with its room and states, and a reminder
    to `finish` once they are what the instruction asks for ("" for none)."""
    if not matches:
        return ""
    shown = []
    for node_id in matches[:MATCHES_SHOWN]:
        node = graph.nodes[node_id]
        where = [f"in {graph.room_of(node_id) or '?'}", *node.states[:_STATES_SHOWN]]
        shown.append(f"{node_id} ({', '.join(where)})")
    more = f" and {len(matches) - MATCHES_SHOWN} more" if len(matches) > MATCHES_SHOWN else ""
    return (
        f"In view, named like the instruction's words: {'; '.join(shown)}{more}. If these are what the instruction "
        "needs, {finish}."
    )


def no_repeat_option() -> Any:
    """The `no_repeat` option, declared alike by every planner that has it (one CLI flag sets it for each)."""
    return option(
        True,
        "never send the same prompt twice: a state the model was shown before gets a note saying what it answered "
        "there, and a plan that failed before says so (an aid for small models)",
        per_goal=True,
    )


def describe(command: Command | PlanStep) -> str:
    """An answer in a few words, for a note that recalls it: a command, or one move (LookPlanGraph)."""
    if isinstance(command, PlanStep):
        return str(command)
    if command.name == "plan":
        return f"plan {format_plan(command.plan)}" if command.plan else "an empty plan"
    return f"{command.name}({command.node})" if command.node else command.name


@dataclass
class RepeatGuard:
    """Remembers what the model answered in each state it was shown, and which plans failed.

    on=False: every method is a no-op, the planner behaves as without the aid.
    """

    on: bool = True
    #: the note's last advice: what ends the task in this planner's words
    finish: str = "if everything the instruction needs is visible, plan"
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
            f"get the task done: choose something else ({self.finish})."
        )

    def answered(self, prompt: str, command: Command | PlanStep) -> None:
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
