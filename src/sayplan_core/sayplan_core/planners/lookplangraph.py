"""LookPlanGraph (Onishchenko et al.): act one step at a time on a memory graph that grows as the agent looks.

The memory graph starts with rooms and immovable assets only. Each call the LLM
proposes one action for the agent; the simulator checks it on the memory graph
(infeasible: the feedback goes back, at most `max_retries` times per step) and a
feasible action is executed. `look_on` / `look_inside` add the objects found there:
from the ground-truth graph in simulation, or from a VLM hook on a robot. The
prompt shows only the agent's room and the nodes it has touched (their filtering).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import ShownRecords, graph_records
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners import prompts
from sayplan_core.planners.aids import RepeatGuard, no_repeat_option, with_note
from sayplan_core.planners.answers import _enum, _node, _obj, parse_one_action
from sayplan_core.planners.base import PlanJob, Planner, Progress
from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import RevealHook, WorldState

MAX_STEPS = 40


def memory_graph(truth: SceneGraph) -> SceneGraph:
    """Rooms, poses, assets and the agent (with what it holds); movable objects are left to be found."""
    agent = truth.agent_id
    held = set(truth.children(agent)) if agent is not None else set()
    return truth.subgraph([n for n, node in truth.nodes.items() if node.type != "object" or n in held])


def truth_reveal_hook(truth: SceneGraph) -> RevealHook:
    """In simulation, looking reveals the ground truth's objects on / in the asset.

    The objects are added to the state's graph in place (the truth's nodes, shared: they are immutable): the state
    must be over a graph of its own, as the planner's memory graph is.
    """

    def hook(state: WorldState, asset: str, relation: str) -> list[str]:
        found = [c for c in truth.children(asset) if truth.relation(c) == relation and c not in state.graph]
        if not found:
            return []
        upsert = [NodeUpsert(truth.nodes[c], asset, relation) for c in found]
        apply_in_place(state.graph, GraphUpdate(source="look", upsert=upsert))
        return found

    return hook


def system_prompt(actions: ActionSet) -> str:
    return f"""You control a mobile robot, one action at a time. The graph shows the room the robot is in, the
assets there, and what it has found so far; movable objects appear only after the robot looks on or into an asset.

{prompts.functions_block(actions)}

{prompts.STATES}

Answer with one JSON object: {{"chain_of_thought": "short reasoning",
  "next_move": {{"function_name": "<function>", "function_target": "<node>"}}}}
Call done when the instruction is carried out. If Feedback says your last move was impossible, choose another."""


def visible_nodes(state: WorldState, touched: list[str]) -> list[str]:
    """Every room; the agent's room and what is in it; the nodes touched so far with the assets and objects they
    rest on or in; the agent and what it holds. Where the state has things now: an object that was moved is shown
    where it is, not where the memory graph first had it."""
    graph = state.graph
    room = state.agent_room()
    ids = set(graph.ids_of_type("room"))
    if room:
        ids.add(room)
        ids.update(state.descendants(room))
    for node in touched:
        if node in graph.nodes:
            ids.add(node)
            ids.update(a for a in state.ancestors(node) if state.node_type(a) in ("asset", "object"))
    if graph.agent_id:
        ids.add(graph.agent_id)
    if state.holding:
        ids.add(state.holding)
    return sorted(ids)


def state_text(memory: SceneGraph, ids: list[str]) -> str:
    """The memory graph as the model sees it: its nodes `ids`, with the state's changes committed to it
    (`WorldState.commit`, so no copy of the memory graph is made to show them)."""
    return json.dumps(graph_records(memory, ids), separators=(",", ":"))


class ShownMemory:
    """The memory graph as each step shows it: commits the state's changes (`WorldState.commit`) and keeps each
    node's text from one step to the next (graph/text.py ShownRecords), redoing only the nodes the step changed
    (the state's changes and what looking revealed). `state_text` without it writes every record at every step,
    1,000 rooms at 1,000 rooms."""

    def __init__(self, state: WorldState) -> None:
        self.state = state
        self.shown = ShownRecords(state.graph)
        self.revealed = len(state.revealed)

    def step(self, touched: list[str]) -> tuple[list[str], str]:
        """Commit the state's changes; the visible ids and their text."""
        state = self.state
        changed = state.changed_nodes() | set(state.revealed[self.revealed :])
        self.revealed = len(state.revealed)
        state.commit()  # the memory graph is the planner's own: it follows the world in place
        self.shown.forget(changed)
        ids = visible_nodes(state, touched)
        return ids, self.shown.text(ids)


@dataclass(frozen=True)
class LookPlanGraphOptions:
    #: a 1.5B model at temperature 0 looked on the same asset until its calls ran out: the same state, the same
    #: prompt, the same answer (docs/measured/real_model.md)
    no_repeat: bool = no_repeat_option()


class LookPlanGraphPlanner(Planner):
    name = "lookplangraph"
    summary = "LookPlanGraph: one action at a time on a memory graph that grows by looking"
    Options = LookPlanGraphOptions
    action_sets = ("lookplangraph",)
    config: LookPlanGraphOptions
    max_retries = 5  # infeasible proposals per step (the paper's limit)

    def _run(self, job: PlanJob) -> None:
        truth, instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        result.stepwise = True
        state = WorldState.from_graph(memory_graph(truth), reveal_hook=truth_reveal_hook(truth))
        system = system_prompt(actions)
        touched: list[str] = []
        feedback = job.context
        retries = 0
        shown = ShownMemory(state)
        repeats = RepeatGuard(self.config.no_repeat, finish="if the instruction is carried out, call done")
        for step in range(MAX_STEPS):
            ids, text = shown.step(touched)
            schema = _obj(
                {
                    "chain_of_thought": {"type": "string"},
                    "next_move": _obj(
                        {
                            "function_name": {"type": "string", "enum": _enum(actions.names())},
                            "function_target": {"type": "string", "enum": _enum([*ids, ""])},
                        }
                    ),
                }
            )
            user = prompts.dynamic(instruction, text, [], feedback)
            note = repeats.note(user)
            sent = prompts.dynamic(instruction, text, [], with_note(feedback, note)) if note else user
            move = session.ask(
                "replan" if retries else "plan",
                [{"role": "system", "content": system}, {"role": "user", "content": sent}],
                schema,
                lambda data: self._parse(state.graph, actions, data),
                "next_move",
            )
            repeats.answered(user, move)
            outcome = apply_step(state, move, actions)
            result.explored_nodes = sorted(set(result.explored_nodes) | set(state.revealed))
            result.observed_nodes = sorted(state.graph.nodes)
            progress(
                Progress(
                    PlanStage.VERIFY, step, move.target, retries, session.tokens_used, outcome.feedback or str(move)
                )
            )
            if not outcome.ok:
                result.feedback_history.append(outcome.feedback)
                feedback = outcome.feedback
                retries += 1
                result.replanning_rounds += 1
                if retries > self.max_retries:
                    result.message = f"no feasible move after {self.max_retries} retries; last feedback: {feedback}"
                    return
                continue
            retries, feedback = 0, (f"{move}: {outcome.note}" if outcome.note else "")  # a no-op says so
            result.plan.append(move)
            result.full_plan.append(move)
            if move.target:
                touched.append(move.target)
            if state.finished:
                result.success = result.verified = True
                result.message = "task done"
                return
        result.message = f"no done() within {MAX_STEPS} steps"

    @staticmethod
    def _parse(graph: SceneGraph, actions: ActionSet, data: dict[str, Any]) -> PlanStep:
        name, target = parse_one_action(actions, data.get("next_move"), "next_move", "function_name", "function_target")
        if target and name != "done":
            _node(graph, target, "function_target:")
        return PlanStep(name, target if name != "done" else "")
