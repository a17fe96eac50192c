"""What two runs of one instruction did, side by side: the plans, the skill outcomes, the closed loop's events
and the final scene graph, and where they first part.

A run is summarised as lines of text (one per plan, skill or event) so that a difference reads as what a person
would compare: `pickup(coffee_mug): failed (grasp_failed)` against `pickup(coffee_mug): succeeded`. Timings and
free-text messages that carry them (durations, token counts) are left out: a replay on another machine must not
differ by them. `sayplan_replay` builds the two summaries from the recorded bag and the replayed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sayplan_core.outcomes import PlanCode, SkillCode, TaskCode

#: Sections in the order they are compared and reported: the events first, because they are the run's timeline
#: (their first difference is the earliest point where the runs part), then what followed from it.
SECTIONS = ("instruction", "events", "outcomes", "plans", "graph")
#: Graph differences listed at most (the count of the rest is given).
MAX_GRAPH_LINES = 8


def _label(enum: Any, code: int) -> str:
    try:
        return str(enum(code).label)
    except ValueError:
        return f"code {code}"


def step_text(action: str, target: str) -> str:
    return f"{action}({target})"


def plan_line(success: bool, error_code: int, verified: bool, steps: Iterable[tuple[str, str]]) -> str:
    """One plan_task result."""
    plan = ", ".join(step_text(a, t) for a, t in steps)
    if not success:
        return f"failed ({_label(PlanCode, error_code)}): {plan or 'no plan'}"
    return f"{'verified' if verified else 'unverified'}: {plan}"


def outcome_line(action: str, target: str, success: bool, error_code: int) -> str:
    """One skill result."""
    status = "succeeded" if success else f"failed ({_label(SkillCode, error_code)})"
    return f"{step_text(action, target)}: {status}"


def event_line(stage: str, status: str, step_index: int, step_count: int, step: tuple[str, str], code: int) -> str:
    """One closed-loop event, without its message (it carries timings); progress events are not passed here."""
    if stage == "executing":
        detail = f"{step_index + 1}/{step_count} {step_text(*step)} {status}"
        if code:
            detail += f" ({_label(SkillCode, code)})"
        return f"{stage}: {detail}"
    if stage in ("done", "failed", "canceled"):
        return f"{stage}: {_label(TaskCode, code)}" if code else stage
    return f"{stage}: {status}"


@dataclass
class RunSummary:
    """What one run did (see the module docstring)."""

    instruction: str = ""
    plans: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    graph: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Difference:
    section: str
    index: int  # position in the section (0-based), -1 for the graph as a whole
    recorded: str
    replayed: str

    def __str__(self) -> str:
        where = self.section if self.index < 0 else f"{self.section} #{self.index + 1}"
        return f"{where}: recorded {self.recorded!r}, now {self.replayed!r}"


def first_difference(section: str, recorded: Sequence[str], replayed: Sequence[str]) -> Difference | None:
    """The first line where two sections part (a missing line reads as '<none>')."""
    for index in range(max(len(recorded), len(replayed))):
        a = recorded[index] if index < len(recorded) else "<none>"
        b = replayed[index] if index < len(replayed) else "<none>"
        if a != b:
            return Difference(section, index, a, b)
    return None


def graph_differences(recorded: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    """Nodes and edges added, removed or changed between two graph dicts (sayplan native format)."""

    def nodes(graph: dict[str, Any]) -> dict[str, Any]:
        return {str(n.get("id")): n for n in graph.get("nodes", [])}

    def edges(graph: dict[str, Any]) -> set[str]:
        return {f"{e.get('source')} -{e.get('relation')}-> {e.get('target')}" for e in graph.get("edges", [])}

    lines: list[str] = []
    before, after = nodes(recorded), nodes(replayed)
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            lines.append(f"node {key} missing")
        elif key not in before:
            lines.append(f"node {key} added")
        elif before[key] != after[key]:
            changed = sorted(
                k for k in before[key].keys() | after[key].keys() if before[key].get(k) != after[key].get(k)
            )
            for name in changed:
                lines.append(f"node {key} {name}: {before[key].get(name)!r} -> {after[key].get(name)!r}")
    old, new = edges(recorded), edges(replayed)
    lines += [f"edge {e} missing" for e in sorted(old - new)]
    lines += [f"edge {e} added" for e in sorted(new - old)]
    return lines


def diff_runs(recorded: RunSummary, replayed: RunSummary) -> list[Difference]:
    """The first difference of each section, in SECTIONS order; empty when the runs did the same."""
    found: list[Difference] = []
    if recorded.instruction != replayed.instruction:
        found.append(Difference("instruction", -1, recorded.instruction, replayed.instruction))
    for section in SECTIONS[1:4]:
        difference = first_difference(section, getattr(recorded, section), getattr(replayed, section))
        if difference is not None:
            found.append(difference)
    graph = graph_differences(recorded.graph, replayed.graph)
    if graph:
        found.append(Difference("graph", -1, f"{len(graph)} difference(s)", "; ".join(graph[:MAX_GRAPH_LINES])))
    return found


def report(recorded: RunSummary, replayed: RunSummary, differences: list[Difference]) -> str:
    """A short readable report: counts per section, then each section's first difference."""
    lines = [
        f"{section}: recorded {len(getattr(recorded, section))}, now {len(getattr(replayed, section))}"
        for section in SECTIONS[1:4]
    ]
    if not differences:
        lines.append("same: plans, skill outcomes, events and the final scene graph match the recording")
        return "\n".join(lines)
    lines.append(f"DIFFERS in {len(differences)} section(s); first difference: {differences[0]}")
    lines += [f"  {d}" for d in differences[1:]]
    return "\n".join(lines)


def merge_transcripts(transcripts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One replay transcript from a run's per-goal transcripts (plan_task_001.json, ...), calls in goal order: the
    planner answers every goal of one task from one replay backend."""
    if not transcripts:
        raise ValueError("the run has no LLM transcripts (llm/plan_task_*.json)")
    instructions = {t.get("instruction") for t in transcripts} - {None}
    if len(instructions) > 1:
        raise ValueError(f"the run's transcripts answer {len(instructions)} different instructions")
    merged = dict(transcripts[0])
    merged["calls"] = [call for t in transcripts for call in t.get("calls", [])]
    return merged


def injected_failures(outcomes: Iterable[tuple[str, str, int, str]]) -> str:
    """The sim skill server's `failures` that reproduce the injected ones among (action, target, code, message)
    skill results: the simulated robot marks each message '(injected)'."""
    specs = [
        f"{action}:{target}:{_label(SkillCode, code)}"
        for action, target, code, message in outcomes
        if code and message.rstrip().endswith("(injected)")
    ]
    return ",".join(specs)
