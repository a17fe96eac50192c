"""Optimal scene-graph planning for navigation missions (Dai et al.): NL -> LTL -> automaton -> product A*.

Two LLM calls, each re-asked with the error when its answer fails a check:
1. grounding: the mission's places and objects -> unique node ids of the graph;
2. translation: the mission -> an LTL formula in prefix notation over those ids,
   which must parse, name only grounded ids, be syntactically co-safe, and give a
   satisfiable automaton.
The path is then found without the LLM, by A* on the product of the navigation graph
and the automaton with a consistent heuristic, so it is the cheapest path that
satisfies the formula. The plan is the sequence of goto hops, verified by the simulator.
"""

from __future__ import annotations

import json
from typing import Any

from sayplan_core.graph.model import SceneGraph
from sayplan_core.llm.session import BadAnswerError
from sayplan_core.ltl import (
    AutomatonError,
    Dfa,
    FormulaError,
    NoSatisfyingPathError,
    ProductSearch,
    build_dfa,
    check_co_safe,
    parse_prefix,
    require_tools,
)
from sayplan_core.outcomes import PlanStage
from sayplan_core.planners.answers import _enum, _obj
from sayplan_core.planners.base import PlanJob, Planner, Progress
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import verify_plan

GROUNDABLE = ("room", "pose", "asset", "object")

GROUND_SYSTEM = """You ground navigation missions for a mobile robot in a building. The building's scene graph lists
rooms with the assets and objects in them. For every place or object the mission mentions, give the one node id it
refers to. Answer with one JSON object: {"mapping": [{"phrase": "<words from the mission>", "node": "<node id>"}]}"""

TRANSLATE_SYSTEM = """Translate a robot navigation mission into linear temporal logic (LTL) in prefix notation.
Propositions are node ids: a node id is true while the robot is at that room, or in the room holding that asset or
object. Operators, written before their arguments: ! (not), & (and), | (or), F (eventually), X (next),
U (until: "U a b" means a holds until b). Do not use G (always): write "avoid a until b" as "U ! a b".
Examples: "go to the kitchen, then to the lab" -> F & kitchen F lab; "visit the kitchen and the lab in any order"
-> & F kitchen F lab; "reach the desk without passing through the lab" -> U ! lab desk.
Answer with one JSON object: {"formula": "<prefix formula over the given node ids>"}"""


def grounding_catalogue(graph: SceneGraph) -> str:
    """Rooms with their assets and objects, ids only: enough to ground names, far smaller than the graph."""
    rooms: dict[str, list[str]] = {}
    for node_id in sorted(graph.ids_of_type("asset", "object")):
        room = graph.room_of(node_id)
        if room:
            rooms.setdefault(room, []).append(node_id)
    for room in graph.ids_of_type("room"):
        rooms.setdefault(room, [])
    return json.dumps(dict(sorted(rooms.items())), separators=(",", ":"))


class LtlPlanner(Planner):
    name = "ltl"

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        try:
            require_tools()
        except AutomatonError as exc:
            result.message = f"the ltl planner cannot run here: {exc}"
            return
        ids = [n for n in graph.nodes if graph.nodes[n].type in GROUNDABLE]
        mapping = session.ask(
            "ground",
            [
                {"role": "system", "content": GROUND_SYSTEM},
                {"role": "user", "content": f"Scene graph: {grounding_catalogue(graph)}\nMission: {instruction}"},
            ],
            _obj(
                {
                    "mapping": {
                        "type": "array",
                        "items": _obj({"phrase": {"type": "string"}, "node": {"type": "string", "enum": _enum(ids)}}),
                    }
                }
            ),
            lambda data: self._parse_mapping(graph, data),
            "grounding",
        )
        result.explored_nodes = sorted(set(mapping.values()))
        progress(Progress(PlanStage.SEARCH, 0, "", 0, session.tokens_used, f"grounded: {mapping}"))
        listing = "\n".join(f"- {phrase}: {node}" for phrase, node in mapping.items())
        formula, dfa = session.ask(
            "translate",
            [
                {"role": "system", "content": TRANSLATE_SYSTEM},
                {"role": "user", "content": f"Mission: {instruction}\nNode ids:\n{listing}"},
            ],
            _obj({"formula": {"type": "string"}}),
            lambda data: self._parse_formula(set(mapping.values()), data),
            "formula",
        )
        progress(Progress(PlanStage.PLAN, 1, "", 0, session.tokens_used, f"formula: {formula}"))
        start = graph.agent_location()
        if start is None:
            result.message = "the scene graph has no agent location to start from"
            return
        try:
            path = ProductSearch(graph, dfa).search(start)
        except NoSatisfyingPathError as exc:
            result.message = f"{exc} ({formula})"
            return
        result.plan = [PlanStep("goto", hop) for hop in path.nodes[1:]] + [PlanStep("done", "")]
        result.full_plan = list(result.plan)
        check = verify_plan(graph, result.full_plan, "sayplan", strict_navigation=True)
        result.success = result.verified = check.success
        result.message = (
            f"optimal path for {formula}: cost {path.cost:.1f} over {len(path.nodes) - 1} hops "
            f"({path.expansions} A* expansions, {path.elapsed_s * 1000:.1f} ms)"
            if check.success
            else f"the path fails in the simulator: {check.feedback}"
        )
        progress(Progress(PlanStage.DONE, 2, "", 0, session.tokens_used, result.message))

    @staticmethod
    def _parse_mapping(graph: SceneGraph, data: dict[str, Any]) -> dict[str, str]:
        raw = data.get("mapping")
        if not isinstance(raw, list) or not raw:
            raise BadAnswerError("the answer needs a non-empty 'mapping' list")
        out: dict[str, str] = {}
        for item in raw:
            if not isinstance(item, dict) or not isinstance(item.get("phrase"), str):
                raise BadAnswerError("each mapping item needs a 'phrase' and a 'node'")
            node = item.get("node")
            if not isinstance(node, str) or node not in graph.nodes or graph.nodes[node].type not in GROUNDABLE:
                raise BadAnswerError(f"'{node}' is not a room, pose, asset or object id of the scene graph")
            out[item["phrase"]] = node
        return out

    @staticmethod
    def _parse_formula(atoms: set[str], data: dict[str, Any]) -> tuple[str, Dfa]:
        text = data.get("formula")
        if not isinstance(text, str):
            raise BadAnswerError("the answer needs a 'formula' string")
        try:
            formula = parse_prefix(text, atoms)
            check_co_safe(formula)
            dfa = build_dfa(formula)
        except FormulaError as exc:
            raise BadAnswerError(f"formula '{text}': {exc}") from None
        except AutomatonError as exc:
            raise BadAnswerError(f"formula '{text}' could not be turned into an automaton: {exc}") from None
        return formula.prefix(), dfa
