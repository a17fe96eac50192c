"""Planning for abstract commands (Kwon et al.): "Put the food ingredients in the same place".

The graph is shown as a workspace -> objects dictionary. The LLM writes several
candidate plans, each a list of steps "move <object> to <workspace>" with a sentence.
Each step is scored by the cosine between its sentence's embedding and the command's;
steps below the threshold (default 0.5) are dropped and a plan scores the sum of what
is left (their final plan selection). The best plan is compiled into the SayPlan action
set by rules (goto, access, open when closed, pickup, release) and verified by the
simulator; if it fails, the next best candidate is tried. Nothing the LLM writes is
executed as code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sayplan_core import retrieval  # its embedders (numpy) load at the first goal, not with the CLI
from sayplan_core.graph.caches import PerHistory
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import GraphReader, NodeFragments, dumps_ascii, room_readers
from sayplan_core.llm.session import BadAnswerError
from sayplan_core.options import option
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.planners.answers import _enum, _obj
from sayplan_core.planners.base import PlanFailedError, PlanJob, Planner, Progress
from sayplan_core.planners.sayplan import verify_high_level
from sayplan_core.retrieval.settings import embedder_option
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState

WORKSPACE_TYPES = ("asset", "workspace")


@dataclass(frozen=True)
class MoveStep:
    sentence: str
    obj: str
    workspace: str


@dataclass
class Candidate:
    steps: list[MoveStep]
    scores: list[float]
    kept: list[MoveStep]

    @property
    def score(self) -> float:
        return sum(s for s, step in zip(self.scores, self.steps, strict=True) if step in self.kept)


def workspace_dictionary(graph: SceneGraph) -> dict[str, list[str]]:
    """Kwon et al.'s prompt view: every workspace (asset) and the objects on or in it, by room."""
    reader = GraphReader(graph)  # 3,000 assets at 1,000 rooms: one walk up per room, not per asset
    out: dict[str, list[str]] = {}
    for asset in sorted(graph.ids_of_type(*WORKSPACE_TYPES)):
        room = reader.room_of(asset) or "?"
        objects = [c for c in reader.descendants(asset) if graph.nodes[c].type == "object"]
        out[f"{asset} ({room})"] = sorted(objects)
    return out


def workspace_text(graph: SceneGraph) -> str:
    """The dictionary as the prompt shows it (compact JSON); on a tracked graph, kept per workspace across
    versions, so a small update redoes only the workspaces it touched (test_prompt_cache.py)."""
    if graph.change_stamps is None:
        return json.dumps(workspace_dictionary(graph), separators=(",", ":"))
    return _WORKSPACES.of(graph).text(graph)


class _WorkspaceFragments(NodeFragments):
    """Each workspace's '"<id> (<room>)":[objects]' entry. An entry reads the workspace's room (through its
    ancestors) and every object below it, so a change redoes the workspaces above the changed nodes and those
    whose room is read through them."""

    types = frozenset(WORKSPACE_TYPES)

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, str] = {}
        self.keys: dict[str, str] = {}
        self.ordered: list[str] = []
        self.ordered_revision: tuple[int, ...] = ()
        self.joined = ""

    def drop(self, node_id: str) -> None:
        self.entries.pop(node_id, None)
        self.keys.pop(node_id, None)

    def text(self, graph: SceneGraph) -> str:
        with self.lock:
            changed = self.sync(graph)
            nodes = graph.nodes
            if len(changed) < len(nodes):
                reader = GraphReader(graph)
                redo = room_readers(graph, changed)
                for node_id in changed:
                    current: str | None = node_id
                    while current is not None:
                        redo.add(current)
                        current = reader.parent(current)
            else:  # every node is new to the cache: every workspace, and no entry of another node is kept
                redo = set(self.order["asset"]) | set(self.order["workspace"])
                for node_id in self.entries.keys() - redo:
                    self.drop(node_id)
            reader = GraphReader(graph)
            touched = False
            for node_id in redo:
                node = nodes.get(node_id)
                if node is None or node.type not in WORKSPACE_TYPES:
                    touched |= node_id in self.entries
                    self.drop(node_id)
                    continue
                key = f"{node_id} ({reader.room_of(node_id) or '?'})"
                objects = sorted(c for c in reader.descendants(node_id) if nodes[c].type == "object")
                self.keys[node_id] = key
                self.entries[node_id] = f"{dumps_ascii(key)}:{dumps_ascii(objects)}"
                touched = True
            self.stored(graph, changed)
            revision = tuple(self.revision[t] for t in WORKSPACE_TYPES)
            if revision != self.ordered_revision:
                self.ordered = sorted(self.order["asset"] + self.order["workspace"])
                self.ordered_revision = revision
                touched = True
            if touched:
                self.joined = "{" + ",".join([self.entries[n] for n in self.ordered]) + "}"
            if len(set(self.keys.values())) != len(self.keys):  # two workspaces with one key: the dict keeps one
                return json.dumps(workspace_dictionary(graph), separators=(",", ":"))
            return self.joined


def system_prompt(count: int) -> str:
    return f"""You plan for a household robot that moves objects between workspaces. You get a user command, which
may name no objects ("tidy the fruit"), and the building as a dictionary: workspace (room) -> objects on or in it.
Write {count} different candidate plans that carry out the command. Each step moves one object to one workspace;
give each step a short sentence saying what it does, e.g. "move the banana to the kitchen bench".
Answer with one JSON object: {{"plans": [{{"steps": [{{"sentence": "...", "object": "<object id>",
"workspace": "<workspace id>"}}]}}]}}"""


def compile_moves(graph: SceneGraph, moves: list[MoveStep]) -> tuple[list[PlanStep], str]:
    """Rule-based translation of moves into SayPlan actions; returns the plan and the first problem, if any."""
    actions = load_action_set("sayplan")
    state = WorldState.from_graph(graph)
    plan: list[PlanStep] = []

    def do(action: str, target: str = "") -> str:
        step = PlanStep(action, target)
        outcome = apply_step(state, step, actions)
        if outcome.ok:
            plan.append(step)
        return outcome.feedback if not outcome.ok else ""

    def reach(asset: str) -> str:
        room = state.room_of(asset)
        problems = [do("goto", room)] if room and room != state.agent_room() else []
        problems.append(do("access", asset))
        if "closed" in state.states(asset) and "open" in graph.nodes[asset].affordances:
            problems.append(do("open", asset))
        return next((p for p in problems if p), "")

    for move in moves:
        support = next((a for a in state.ancestors(move.obj) if state.node_type(a) in WORKSPACE_TYPES), None)
        if support == move.workspace and state.holding != move.obj:
            continue  # already there
        if state.holding != move.obj:
            if support is None:
                return plan, f"{move.obj} is not on or in any workspace"
            problem = reach(support) or do("pickup", move.obj)
            if problem:
                return plan, problem
        problem = reach(move.workspace) or do("release", move.obj)
        if problem:
            return plan, problem
    do("done")
    return plan, ""


@dataclass(frozen=True)
class AbstractOptions:
    """Candidate plans and the step relevance cut-off (Kwon et al.)."""

    embedder: str = embedder_option()
    candidate_plans: int = option(
        3, "candidate plans asked of the LLM", minimum=1, maximum=10, per_goal=True, flag="--candidate-plans"
    )
    step_threshold: float = option(
        0.5,
        "steps less relevant to the command than this are dropped",
        minimum=-1.0,
        maximum=1.0,
        per_goal=True,
        flag="--step-threshold",
    )


class AbstractCommandPlanner(Planner):
    name = "abstract"
    summary = (
        "abstract commands (Kwon et al.): candidate plans, steps scored against the command, compiled and verified"
    )
    Options = AbstractOptions
    config: AbstractOptions

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        options = self.config
        objects = graph.ids_of_type("object")
        workspaces = graph.ids_of_type(*WORKSPACE_TYPES)
        step = _obj(
            {
                "sentence": {"type": "string"},
                "object": {"type": "string", "enum": _enum(objects)},
                "workspace": {"type": "string", "enum": _enum(workspaces)},
            }
        )
        schema = _obj({"plans": {"type": "array", "items": _obj({"steps": {"type": "array", "items": step}})}})
        context = f"\nNote: {job.context}" if job.context else ""
        user = f"Command: {instruction}\nWorkspaces: {workspace_text(graph)}{context}"
        plans = session.ask(
            "plan",
            [{"role": "system", "content": system_prompt(options.candidate_plans)}, {"role": "user", "content": user}],
            schema,
            lambda data: self._parse(graph, data),
            "candidate_plans",
        )
        embedder = retrieval.make_embedder(options.embedder)
        command = embedder.embed([instruction])[0]
        candidates = []
        for steps in plans:
            scores = [float(v) for v in embedder.embed([s.sentence for s in steps]) @ command]
            kept = [s for s, v in zip(steps, scores, strict=True) if v >= options.step_threshold]
            candidates.append(Candidate(steps, scores, kept))
        ranked = sorted(range(len(candidates)), key=lambda i: -candidates[i].score)
        summary = ", ".join(
            f"#{i + 1}: {candidates[i].score:.2f} ({len(candidates[i].kept)} steps kept)" for i in ranked
        )
        progress(Progress(PlanStage.PLAN, 0, "", 0, session.tokens_used, f"candidate scores {summary}"))
        for rank, i in enumerate(ranked):
            candidate = candidates[i]
            if not candidate.kept:
                result.feedback_history.append(f"candidate {i + 1}: no step reaches the relevance threshold")
                continue
            plan, problem = compile_moves(graph, candidate.kept)
            check = verify_high_level(graph, plan, load_action_set("sayplan")) if not problem else None
            if check is not None and check.ok:
                result.plan, result.full_plan = plan, check.full_plan
                result.success = result.verified = True
                result.replanning_rounds = rank
                dropped = len(candidate.steps) - len(candidate.kept)
                result.message = (
                    f"candidate {i + 1} of {len(candidates)} (relevance {candidate.score:.2f}, "
                    f"{dropped} step(s) below {options.step_threshold}) compiled and verified"
                )
                progress(Progress(PlanStage.DONE, 1, "", rank, session.tokens_used, result.message))
                return
            feedback = problem or (check.feedback if check else "")
            result.feedback_history.append(f"candidate {i + 1}: {feedback}")
        raise PlanFailedError(
            PlanCode.NOT_EXECUTABLE,
            "no candidate plan compiled into a verified plan: " + "; ".join(result.feedback_history),
        )

    @staticmethod
    def _parse(graph: SceneGraph, data: dict[str, Any]) -> list[list[MoveStep]]:
        raw = data.get("plans")
        if not isinstance(raw, list) or not raw:
            raise BadAnswerError("the answer needs a non-empty 'plans' list")
        plans: list[list[MoveStep]] = []
        for p, plan in enumerate(raw, 1):
            steps = plan.get("steps") if isinstance(plan, dict) else None
            if not isinstance(steps, list) or not steps:
                raise BadAnswerError(f"plan {p} needs a non-empty 'steps' list")
            out = []
            for s in steps:
                if not isinstance(s, dict) or not all(
                    isinstance(s.get(k), str) for k in ("sentence", "object", "workspace")
                ):
                    raise BadAnswerError(f"plan {p}: each step needs 'sentence', 'object' and 'workspace' strings")
                obj, ws = s["object"], s["workspace"]
                if obj not in graph.nodes or graph.nodes[obj].type != "object":
                    raise BadAnswerError(f"plan {p}: '{obj}' is not an object id")
                if ws not in graph.nodes or graph.nodes[ws].type not in WORKSPACE_TYPES:
                    raise BadAnswerError(f"plan {p}: '{ws}' is not a workspace id")
                out.append(MoveStep(s["sentence"], obj, ws))
            plans.append(out)
        return plans


#: The workspace dictionary's fragments, per history of tracked graphs (graph/caches.py).
_WORKSPACES = PerHistory("abstract workspaces", _WorkspaceFragments)
