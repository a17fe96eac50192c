"""Goal checking and plan scoring.

Goals come either as predicates (what the task file stores) or as a goal graph
(GRASIF style). Scoring follows LookPlanGraph: success when every important node
is as the goal wants it, plan precision = correctly changed nodes / changed nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sayplan_core.graph.model import GraphError, SceneGraph

GOAL_KINDS = ("placed", "state", "holding", "agent_at", "not_placed")


@dataclass(frozen=True)
class GoalPredicate:
    """One condition on the final graph.

    placed:     `node` is `relation` (ontop_of / inside_of / in_room) `target`;
                `target` may list alternatives separated by '|'.
    not_placed: the negation of placed.
    state:      `node` has `state` (or, with negate, does not).
    holding:    the agent holds `node` (empty node = holds nothing).
    agent_at:   the agent is at `target` (a room or pose; a room also matches its poses).
    `node` may list alternatives separated by '|'; at least `count` of them must
    satisfy the goal (default 1: any one).
    """

    kind: str
    node: str = ""
    relation: str = ""
    target: str = ""
    state: str = ""
    negate: bool = False
    count: int = 1

    def __str__(self) -> str:
        if self.kind in ("placed", "not_placed"):
            prefix = "not " if self.kind == "not_placed" else ""
            many = f"{self.count} of " if self.count > 1 else ""
            return f"{prefix}{self.relation}({many}{self.node}, {self.target})"
        if self.kind == "state":
            return f"{'not ' if self.negate else ''}{self.state}({self.node})"
        if self.kind == "holding":
            return f"holding({self.node or 'nothing'})"
        return f"agent_at({self.target})"

    def nodes(self) -> list[str]:
        return [n for n in self.node.split("|") if n]


def goal_from_dict(raw: Any) -> GoalPredicate:
    if not isinstance(raw, Mapping):
        raise ValueError(f"goal must be an object, got {raw!r}")
    kind = raw.get("kind")
    if kind not in GOAL_KINDS:
        raise ValueError(f"goal {dict(raw)!r}: kind must be one of {', '.join(GOAL_KINDS)}")
    known = {"kind", "node", "relation", "target", "state", "negate", "count"}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"goal {dict(raw)!r}: unknown field(s) {', '.join(sorted(unknown))}")
    goal = GoalPredicate(
        kind=str(kind),
        node=str(raw.get("node", "")),
        relation=str(raw.get("relation", "")),
        target=str(raw.get("target", "")),
        state=str(raw.get("state", "")),
        negate=bool(raw.get("negate", False)),
        count=int(raw.get("count", 1)),
    )
    if goal.count < 1 or goal.count > max(1, len(goal.nodes())):
        raise ValueError(f"goal {goal}: count must be between 1 and the number of listed nodes")
    if goal.kind in ("placed", "not_placed") and goal.relation not in ("ontop_of", "inside_of", "in_room"):
        raise ValueError(f"goal {goal}: relation must be ontop_of, inside_of or in_room")
    if goal.kind == "state" and not goal.state:
        raise ValueError(f"goal {dict(raw)!r}: a state goal needs 'state'")
    return goal


def _holds_one(graph: SceneGraph, goal: GoalPredicate, node: str) -> bool:
    if goal.kind in ("placed", "not_placed"):
        targets = goal.target.split("|")
        if goal.relation == "in_room":
            ok = graph.room_of(node) in targets
        else:
            ok = graph.parent(node) in targets and graph.relation(node) == goal.relation
        return ok if goal.kind == "placed" else not ok
    if goal.kind == "state":
        has = goal.state in graph.nodes[node].states
        return has != goal.negate
    raise AssertionError(goal.kind)


def holds(graph: SceneGraph, goal: GoalPredicate) -> bool:
    if goal.kind == "holding":
        held = graph.held_object()
        return held in goal.nodes() if goal.node else held is None
    if goal.kind == "agent_at":
        loc = graph.agent_location()
        if loc is None:
            return False
        return loc in goal.target.split("|") or graph.room_of(loc) in goal.target.split("|")
    satisfied = 0
    for node in goal.nodes():
        if node not in graph.nodes:
            raise GraphError(f"goal {goal} names node '{node}', which is not in the graph", node)
        if _holds_one(graph, goal, node):
            satisfied += 1
    if goal.kind == "not_placed":
        return satisfied == len(goal.nodes())
    return satisfied >= goal.count


@dataclass
class GoalReport:
    success: bool
    satisfied: list[GoalPredicate] = field(default_factory=list)
    unsatisfied: list[GoalPredicate] = field(default_factory=list)

    def summary(self) -> str:
        if self.success:
            return f"all {len(self.satisfied)} goal conditions hold"
        return "unmet: " + "; ".join(str(g) for g in self.unsatisfied)


def check_goals(graph: SceneGraph, goals: Iterable[GoalPredicate]) -> GoalReport:
    report = GoalReport(success=True)
    for goal in goals:
        if holds(graph, goal):
            report.satisfied.append(goal)
        else:
            report.unsatisfied.append(goal)
            report.success = False
    return report


# ----------------------------------------------------------------- plan scoring
def agent_place(graph: SceneGraph) -> str | None:
    """Where the agent is, as a goal graph means it: its room, or the pose itself when that is in no room."""
    loc = graph.agent_location()
    if loc is None or loc not in graph.nodes:
        return loc
    return graph.room_of(loc) or loc


def node_signature(graph: SceneGraph, node_id: str) -> tuple[Any, ...]:
    """What a plan can change about a node: where it is and what state it is in (the agent: where, and what held)."""
    node = graph.nodes[node_id]
    if node.type == "agent":
        return ("agent", agent_place(graph), graph.held_object())
    return (graph.parent(node_id), graph.relation(node_id), tuple(sorted(node.states)))


def changed_nodes(before: SceneGraph, after: SceneGraph) -> set[str]:
    out = set()
    for node_id in after.nodes:
        if (
            node_id in before.nodes
            and after.nodes[node_id].type in ("object", "asset", "workspace")
            and node_signature(before, node_id) != node_signature(after, node_id)
        ):
            out.add(node_id)
    return out


@dataclass
class PlanScore:
    success: bool
    precision: float
    changed: list[str]
    correct: list[str]
    important: list[str]


def agent_goal(initial: SceneGraph, goal: SceneGraph) -> dict[str, str]:
    """What a goal graph asks of the agent: its place and what it holds, each only where the goal states it and
    it differs from the start. A goal agent with no location, or holding nothing, states nothing: what it put
    down is scored through that object's own node, and a goal that never says where the agent ends must not fail
    every plan."""
    wanted: dict[str, str] = {}
    place = agent_place(goal)
    if place is not None and place != agent_place(initial):
        wanted["place"] = place
    held = goal.held_object()
    if held is not None and held != initial.held_object():
        wanted["holding"] = held
    return wanted


def score_against_goal_graph(initial: SceneGraph, final: SceneGraph, goal: SceneGraph) -> PlanScore:
    """Success: every node the goal graph changes is as the goal has it, the agent included (its room and what
    it holds, as far as the goal states and changes them; see agent_goal). Precision counts objects and assets
    only: every plan moves the agent."""
    important = changed_nodes(initial, goal)
    wanted = agent_goal(initial, goal) if goal.agent_id is not None else {}
    changed = changed_nodes(initial, final)
    correct = {n for n in changed if n in goal.nodes and node_signature(final, n) == node_signature(goal, n)}
    success = all(n in final.nodes and node_signature(final, n) == node_signature(goal, n) for n in important)
    if "place" in wanted and agent_place(final) != wanted["place"]:
        success = False
    if "holding" in wanted and final.held_object() != wanted["holding"]:
        success = False
    precision = len(correct) / len(changed) if changed else (1.0 if not important else 0.0)
    if wanted and goal.agent_id is not None:
        important.add(goal.agent_id)
    return PlanScore(success, precision, sorted(changed), sorted(correct), sorted(important))


def score_against_goals(initial: SceneGraph, final: SceneGraph, goals: Iterable[GoalPredicate]) -> PlanScore:
    """Precision with predicates: a changed node is correct when every goal that names it holds."""
    goals = list(goals)
    report = check_goals(final, goals)
    named: dict[str, list[GoalPredicate]] = {}
    for goal in goals:
        for node in goal.nodes():
            named.setdefault(node, []).append(goal)
    important = sorted(named)
    changed = changed_nodes(initial, final)
    correct = {n for n in changed if n in named and all(g in report.satisfied for g in named[n])}
    precision = len(correct) / len(changed) if changed else (1.0 if report.success else 0.0)
    return PlanScore(report.success, precision, sorted(changed), sorted(correct), important)
