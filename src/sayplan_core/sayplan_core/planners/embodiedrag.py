"""EmbodiedRAG (Booker et al.): plan on a retrieved subgraph instead of the whole scene graph.

1. Pre-retrieval: the LLM, without seeing the graph, lists the entities (and attributes)
   the task needs.
2. Retrieval: each entity's thresholded top-k documents of the entity index, plus their
   ancestors (the induced subgraph). States are always shown (open/closed decides what is
   feasible); other attributes (affordances) only for entities whose query asked for them.
3. A ReAct loop: each call returns a thought and one action; the simulator executes it
   on the world state (an infeasible action comes back as an observation). The index is
   re-synced after every action, so moved objects and changed states show up.
4. `embodiedrag` (the paper's -feedback variant) turns each thought into new retrievals
   with a self-query call; `embodiedrag_strict` keeps the pre-retrieved entities only.
   Neither ever sees the full graph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from sayplan_core import (
    retrieval as retrieval_lib,  # its index and embedders (numpy) load at the first goal, not with the CLI
)
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import graph_records
from sayplan_core.llm.session import BadAnswerError, LlmSession
from sayplan_core.options import option
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners import prompts
from sayplan_core.planners.answers import _enum, _node, _obj, parse_one_action
from sayplan_core.planners.base import PlanJob, Planner, PlanResult, Progress
from sayplan_core.planners.sayplan import verify_high_level
from sayplan_core.retrieval.settings import embedder_option
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState

if TYPE_CHECKING:
    from sayplan_core.retrieval.entity_index import EntityIndex

MAX_STEPS = 40
ATTRIBUTES = ("states", "affordances")
STRUCTURE_KEYS = frozenset({"id", "name", "room", "workspace", "floor", "state", "location", "holding"})


@dataclass(frozen=True)
class EntityQuery:
    name: str
    attributes: tuple[str, ...] = ()


@dataclass
class Retrieval:
    """The queries so far and the subgraph they induce on the current graph."""

    index: EntityIndex
    top_k: int
    threshold: float
    queries: list[EntityQuery] = field(default_factory=list)

    def add(self, queries: list[EntityQuery]) -> None:
        """Add new queries; a repeated name (any case) only adds its attributes to the existing one."""
        known = {q.name.lower(): i for i, q in enumerate(self.queries)}
        for query in queries:
            i = known.get(query.name.lower())
            if i is None:
                known[query.name.lower()] = len(self.queries)
                self.queries.append(query)
            else:
                merged = tuple(dict.fromkeys(self.queries[i].attributes + query.attributes))
                self.queries[i] = EntityQuery(self.queries[i].name, merged)

    def retrieved(self) -> dict[str, set[str]]:
        """Retrieved node id -> the attributes to show for it."""
        out: dict[str, set[str]] = {}
        for query in self.queries:
            for hit in self.index.search(query.name, self.top_k, self.threshold):
                out.setdefault(hit.node_id, set()).update(query.attributes)
        return out

    def subgraph_text(self, graph: SceneGraph) -> tuple[str, list[str]]:
        """The induced subgraph as prompt JSON, and its node ids (the targets the model may name)."""
        retrieved = self.retrieved()
        ids = set(retrieved)
        for node_id in retrieved:
            ids.update(a for a in graph.ancestors(node_id) if graph.nodes[a].type in ("room", "workspace", "asset"))
        agent = graph.agent_id
        if agent:
            ids.add(agent)
            for extra in (graph.agent_location(), graph.held_object()):
                if extra:
                    ids.add(extra)
        records = graph_records(graph, ids)
        for group in records["nodes"].values():
            for rec in group:
                keep = STRUCTURE_KEYS | retrieved.get(rec["id"], set()) | {"states"}
                for key in [k for k in rec if k not in keep]:
                    del rec[key]
        return json.dumps(records, separators=(",", ":")), sorted(ids)


def pre_retrieval_system() -> str:
    return f"""A robot must carry out a task in a building it knows through a 3D scene graph you cannot see.
List the objects, furniture and rooms that matter for the task, as short noun phrases, most important first
(at most 8). For each, list which attributes matter, from: {", ".join(ATTRIBUTES)}.
Answer with one JSON object: {{"entities": [{{"name": "<noun phrase>", "attributes": ["<attribute>", ...]}}]}}"""


def react_system(actions: ActionSet) -> str:
    return f"""You control a mobile manipulator robot, one action per answer (ReAct: think, then act).
You see only the part of the scene graph that was retrieved for this task; if something you need is missing,
say in your thought what you are looking for. A path planner handles navigation: goto any room directly.

{prompts.functions_block(actions)}

{prompts.STATES}

Answer with one JSON object: {{"thought": "what you know and what to do next",
  "action": {{"name": "<function>", "target": "<node id from the subgraph, or empty for done>"}}}}
Call done when the task is carried out."""


def self_query_system() -> str:
    return f"""Turn a robot planner's thought into look-ups in its scene-graph database.
Name the objects, furniture or rooms the thought says it needs or is looking for (at most 4), and the attributes
that matter for each, from: {", ".join(ATTRIBUTES)}. Answer with one JSON object:
{{"entities": [{{"name": "<noun phrase>", "attributes": ["<attribute>", ...]}}]}}. An empty list is fine."""


def entities_schema() -> dict[str, Any]:
    item = _obj(
        {
            "name": {"type": "string"},
            "attributes": {"type": "array", "items": {"type": "string", "enum": [*ATTRIBUTES]}},
        }
    )
    return _obj({"entities": {"type": "array", "items": item}})


def parse_entities(data: dict[str, Any], limit: int) -> list[EntityQuery]:
    raw = data.get("entities")
    if not isinstance(raw, list):
        raise BadAnswerError("the answer needs an 'entities' list")
    out: list[EntityQuery] = []
    for item in raw[:limit]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise BadAnswerError("each entity needs a non-empty 'name'")
        attributes = item.get("attributes", [])
        if not isinstance(attributes, list) or any(a not in ATTRIBUTES for a in attributes):
            raise BadAnswerError(f"attributes must be chosen from {', '.join(ATTRIBUTES)}")
        out.append(EntityQuery(item["name"].strip(), tuple(attributes)))
    return out


@dataclass(frozen=True)
class RetrievalOptions:
    """Retrieval of scene-graph entities by sentence embeddings (EmbodiedRAG)."""

    embedder: str = embedder_option()
    retrieval_top_k: int = option(
        3, "entities retrieved per query", minimum=1, maximum=100, per_goal=True, flag="--top-k"
    )
    retrieval_threshold: float = option(
        0.45,
        "minimum cosine similarity of a retrieved entity",
        minimum=-1.0,
        maximum=1.0,
        per_goal=True,
        flag="--retrieval-threshold",
    )
    vector_store: str = option("faiss", "vector search, both exact", choices=("faiss", "numpy"), flag="--vector-store")


class EmbodiedRagPlanner(Planner):
    name = "embodiedrag"
    summary = "EmbodiedRAG-feedback: pre-retrieval, ReAct on the retrieved subgraph, self-query from each thought"
    Options = RetrievalOptions
    config: RetrievalOptions
    self_query = True
    max_retries = 5  # consecutive infeasible actions before giving up

    def _run(self, job: PlanJob) -> None:
        truth, instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        result.stepwise = True
        options = self.config
        index = retrieval_lib.EntityIndex(retrieval_lib.make_embedder(options.embedder), options.vector_store)
        state = WorldState.from_graph(truth)
        index.sync(truth)
        retrieval = Retrieval(index, options.retrieval_top_k, options.retrieval_threshold)
        entities = session.ask(
            "pre_retrieval",
            [
                {"role": "system", "content": pre_retrieval_system()},
                {"role": "user", "content": f"Task: {instruction}"},
            ],
            entities_schema(),
            lambda data: parse_entities(data, 8),
            "entities",
        )
        retrieval.add(entities)
        progress(
            Progress(PlanStage.SEARCH, 0, "", 0, session.tokens_used, f"pre-retrieval: {[q.name for q in entities]}")
        )
        history: list[str] = [f"note: {job.context}"] if job.context else []
        failures = 0
        for step in range(MAX_STEPS):
            graph = state.apply_to()
            text, ids = retrieval.subgraph_text(graph)
            result.observed_nodes = sorted(set(result.observed_nodes) | set(ids))
            user = (
                f"Task: {instruction}\nRetrieved scene graph: {text}\n"
                f"History:\n{chr(10).join(history) if history else '(nothing yet)'}"
            )
            thought, move = session.ask(
                "plan",
                [{"role": "system", "content": react_system(actions)}, {"role": "user", "content": user}],
                self._schema(actions, ids),
                partial(self._parse, graph, ids, actions),
                "react",
            )
            outcome = apply_step(state, move, actions)
            progress(
                Progress(
                    PlanStage.VERIFY, step, move.target, failures, session.tokens_used, outcome.feedback or str(move)
                )
            )
            if outcome.ok:
                failures = 0
                result.plan.append(move)
                history.append(f"{len(result.plan)}. {move}: done")
                if state.finished:
                    self._finish(truth, actions, result)
                    progress(Progress(PlanStage.DONE, step, "", 0, session.tokens_used, result.message))
                    return
                index.sync(state.apply_to(), state.changed_nodes())
            else:
                failures += 1
                result.replanning_rounds += 1
                result.feedback_history.append(outcome.feedback)
                history.append(f"-. {move}: FAILED: {outcome.feedback}")
                if failures > self.max_retries:
                    result.message = f"{failures} infeasible actions in a row; last feedback: {outcome.feedback}"
                    return
            if self.self_query and thought:
                self._self_query(session, retrieval, thought)
        result.message = f"no done() within {MAX_STEPS} steps"

    def _self_query(self, session: LlmSession, retrieval: Retrieval, thought: str) -> None:
        queries = session.ask(
            "self_query",
            [{"role": "system", "content": self_query_system()}, {"role": "user", "content": f"Thought: {thought}"}],
            entities_schema(),
            lambda data: parse_entities(data, 4),
            "entities",
        )
        retrieval.add(queries)

    @staticmethod
    def _finish(truth: SceneGraph, actions: ActionSet, result: PlanResult) -> None:
        check = verify_high_level(truth, result.plan, actions)
        result.full_plan = check.full_plan
        result.success = result.verified = check.ok
        result.message = (
            "task done" if check.ok else f"executed step by step, but the full plan fails: {check.feedback}"
        )

    @staticmethod
    def _schema(actions: ActionSet, ids: list[str]) -> dict[str, Any]:
        action = _obj(
            {
                "name": {"type": "string", "enum": _enum(actions.names())},
                "target": {"type": "string", "enum": _enum([*ids, ""])},
            }
        )
        return _obj({"thought": {"type": "string"}, "action": action})

    @staticmethod
    def _parse(graph: SceneGraph, ids: list[str], actions: ActionSet, data: dict[str, Any]) -> tuple[str, PlanStep]:
        thought, action = data.get("thought", ""), data.get("action")
        if not isinstance(thought, str):
            raise BadAnswerError("'thought' must be a string")
        name, target = parse_one_action(actions, action, "action", "name", "target")
        if name == "done":
            return thought, PlanStep("done", "")
        _node(graph, target, "target:")
        if target not in ids:
            raise BadAnswerError(f"'{target}' is not in the retrieved subgraph; name what you need in your thought")
        return thought, PlanStep(name, target)


class EmbodiedRagStrictPlanner(EmbodiedRagPlanner):
    """EmbodiedRAG-strict: retrieval from the pre-retrieved entities only, no self-query."""

    name = "embodiedrag_strict"
    summary = "EmbodiedRAG-strict: retrieval from the pre-retrieved entities only, never the full graph"
    self_query = False
