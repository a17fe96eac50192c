"""Optimal scene-graph planning for navigation missions (Dai et al.): NL -> LTLf -> automaton -> product A*.

Two LLM calls, each re-asked with the error when its answer fails a check:
1. grounding: the mission's floors, rooms, poses and objects -> unique node ids, from
   the building's attribute hierarchy (floors, their rooms with what each connects
   to and contains, their poses);
2. translation: the mission -> an LTLf formula in prefix notation over those ids,
   which must parse, name only grounded ids and be satisfiable on some finite trace.
The path is then found without the LLM, by A* on the product of the planning domain
(navigation nodes plus a stop at each named object, `ltl/domain.py`) and the
automaton, with a consistent heuristic, so it is the cheapest path that satisfies
the formula. Before success is reported, the trace of the path is checked against
the formula by the LTLf evaluator (`ltl/semantics.py`), independently of the
automaton, and the plan (goto hops, access at each object stop, done) by the
simulator.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sayplan_core import ltl as ltl_lib  # the product search (numpy) loads at the first mission, not with the CLI
from sayplan_core.closest import close_names
from sayplan_core.graph.caches import PerHistory
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.text import GraphReader, NodeFragments, dumps_ascii, sorted_ids
from sayplan_core.llm.session import BadAnswerError
from sayplan_core.ltl.automaton import AutomatonError, Dfa, build_dfa, require_tools
from sayplan_core.ltl.formula import Formula, FormulaError, parse_formula
from sayplan_core.ltl.semantics import holds, show_trace
from sayplan_core.ltl.vocabulary import ATOM_TYPES, DEFAULT_REACH_DISTANCE, DomainError
from sayplan_core.options import option
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.planners.answers import _enum, _obj
from sayplan_core.planners.base import PlanFailedError, PlanJob, Planner, PlanResult, Progress
from sayplan_core.sim.simulator import verify_plan

if TYPE_CHECKING:
    from sayplan_core.ltl.product_search import LtlPath

GROUNDABLE = ("floor", "room", "pose", "asset", "object", "workspace")
assert set(GROUNDABLE) == ATOM_TYPES

GROUND_SYSTEM = """You ground navigation missions for a mobile robot in a building. The building is given as its
floors; each floor lists its rooms (the rooms and poses each room connects to, and the assets and objects in it) and
its poses (waypoints in corridors and on stairs, with the poses each connects to). For every floor, room, pose, asset
or object the mission mentions, give the one node id it refers to.
Answer with one JSON object: {"mapping": [{"phrase": "<words from the mission>", "node": "<node id>"}]}"""

TRANSLATE_SYSTEM = """Translate a robot navigation mission into linear temporal logic on finite traces (LTLf) in
prefix notation. The trace is the sequence of places the robot is at, from its start to where it stops. Propositions
are node ids: a room id holds while the robot is in that room, a floor id while it is on that floor, a pose id at that
pose, an asset or object id while the robot is next to it. Operators, written before their arguments: ! (not),
& (and), | (or), -> (implies), <-> (equivalent), F (eventually), G (always: at every position until the robot stops),
X (at the next position), U (until: "U a b" means a holds at every position before b holds), R (release: "R a b"
means b holds until and including the position where a holds, or to the end).
Examples: "go to the kitchen, then to the lab" -> F & kitchen F lab; "visit the kitchen and the lab in any order"
-> & F kitchen F lab; "reach the desk and never enter the lab" -> & F desk G ! lab; "stay out of the lab until you
have been to the kitchen, and end at the desk" -> & U ! lab kitchen F desk; "if you pass the printer, visit the
kitchen afterwards; reach the desk" -> & F desk G -> printer F kitchen.
Answer with one JSON object: {"formula": "<prefix formula over the given node ids>"}"""


def grounding_hierarchy(graph: SceneGraph) -> dict[str, Any]:
    """The attribute hierarchy (Dai et al. fig. 2a): floors -> rooms (connections, contents) and poses, ids only;
    and the object in the robot's hand, if any."""
    floors: dict[str, dict[str, Any]] = {}
    reader = GraphReader(graph)  # 10k nodes at 1,000 rooms: each node read once

    def floor_entry(node_id: str) -> dict[str, Any]:
        floor = reader.enclosing(node_id, "floor") or "(no floor)"
        return floors.setdefault(floor, {"rooms": {}, "poses": {}})

    for room in graph.ids_of_type("room"):
        contents = sorted(
            n for n in reader.descendants(room) if graph.nodes[n].type in ("asset", "object", "workspace")
        )
        floor_entry(room)["rooms"][room] = {"connects_to": reader.neighbours(room), "contains": contents}
    for pose in graph.ids_of_type("pose"):
        poses = [n for n in reader.neighbours(pose) if graph.nodes[n].type == "pose"]
        entry = floor_entry(pose)
        parent = reader.parent(pose)
        inside = parent if parent and graph.nodes[parent].type == "room" else None  # SceneGraph.room_of a pose
        if inside is not None:
            entry["rooms"].setdefault(inside, {}).setdefault("poses", []).append(pose)
        entry["poses"][pose] = poses
    for floor in graph.ids_of_type("floor"):
        floors.setdefault(floor, {"rooms": {}, "poses": {}})
    catalogue: dict[str, Any] = dict(sorted(floors.items()))
    held = graph.held_object()
    if held is not None:  # in no room, but a proposition all the same (it holds everywhere)
        catalogue["in the robot's hand"] = [held]
    return catalogue


def grounding_catalogue(graph: SceneGraph) -> str:
    """The hierarchy as the grounding prompt shows it (compact JSON); on a tracked graph, each room's and pose's
    entry is kept across versions, so a small update redoes only the entries it touched (test_prompt_cache.py)."""
    if graph.change_stamps is None or _UNPLACED in graph.nodes or _HELD in graph.nodes:
        return json.dumps(grounding_hierarchy(graph), separators=(",", ":"))
    return _CATALOGUE.of(graph).text(graph)


_UNPLACED = "(no floor)"
_HELD = "in the robot's hand"


class _CatalogueFragments(NodeFragments):
    """Each room's and pose's '"<id>":{...}' entry, with the floor it is listed under. A room's entry reads its
    navigation edges, everything below it and its pose children; a pose's, its navigation edges; the floor of
    either, its ancestors. So a change redoes the rooms and poses at and above the changed nodes and the poses
    just below them (a pose's floor is read through the room it hangs under)."""

    types = frozenset({"floor", "room", "pose"})

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, tuple[str, str]] = {}

    def drop(self, node_id: str) -> None:
        self.entries.pop(node_id, None)

    def text(self, graph: SceneGraph) -> str:
        with self.lock:
            changed = self.sync(graph)
            nodes = graph.nodes
            reader = GraphReader(graph)
            redo: Iterable[str] = self.order["room"] + self.order["pose"]  # every node new to the cache
            for node_id in self.entries.keys() - set(redo) if len(changed) == len(nodes) else ():
                del self.entries[node_id]  # a node kept from another history that is no room or pose now
            if len(changed) < len(nodes):
                walked: set[str] = set()
                for node_id in changed:
                    current: str | None = node_id
                    while current is not None and current not in walked:
                        walked.add(current)
                        current = reader.parent(current)
                redo = walked | {c for n in changed for c in reader.succ.get(n, ()) if nodes[c].type == "pose"}
            entries = self.entries
            for node_id in redo:
                node = nodes.get(node_id)
                if node is None or node.type not in ("room", "pose"):
                    entries.pop(node_id, None)
                elif node.type == "room":
                    entries[node_id] = self._room(reader, node_id)
                else:
                    poses = [n for n in reader.neighbours(node_id) if nodes[n].type == "pose"]
                    entries[node_id] = (self._floor(reader, node_id), f"{dumps_ascii(node_id)}:{dumps_ascii(poses)}")
            self.stored(graph, changed)
            floors: dict[str, tuple[list[str], list[str]]] = {floor: ([], []) for floor in self.order["floor"]}
            for index, node_type in enumerate(("room", "pose")):
                for node_id in self.order[node_type]:
                    floor, text = entries[node_id]
                    floors.setdefault(floor, ([], []))[index].append(text)
            parts = [
                f'{dumps_ascii(floor)}:{{"rooms":{{{",".join(rooms)}}},"poses":{{{",".join(poses)}}}}}'
                for floor, (rooms, poses) in sorted(floors.items())
            ]
            held = graph.held_object()
            if held is not None:
                parts.append(f"{dumps_ascii(_HELD)}:{dumps_ascii([held])}")
            return "{" + ",".join(parts) + "}"

    @staticmethod
    def _floor(reader: GraphReader, node_id: str) -> str:
        return reader.enclosing(node_id, "floor") or _UNPLACED

    def _room(self, reader: GraphReader, room: str) -> tuple[str, str]:
        nodes = reader.nodes
        contents = sorted(n for n in reader.descendants(room) if nodes[n].type in ("asset", "object", "workspace"))
        entry: dict[str, Any] = {"connects_to": reader.neighbours(room), "contains": contents}
        poses = sorted(n for n in reader.succ.get(room, ()) if nodes[n].type == "pose")
        if poses:
            entry["poses"] = poses
        return self._floor(reader, room), f"{dumps_ascii(room)}:{dumps_ascii(entry)}"


def trace_violation(formula: Formula, path: LtlPath) -> str | None:
    """None when the path's trace satisfies `formula` by the LTLf definition; else the internal error to report.

    The search ran on the automaton; this check does not, so a wrong automaton (or a
    search bug) shows up as an error here instead of a plan that breaks the mission.
    """
    if holds(formula, path.trace):
        return None
    return (
        f"internal error: the path found for {formula.prefix()} violates it on the trace {show_trace(path.trace)} "
        f"(path {' > '.join(path.nodes[:8])}{' ...' if len(path.nodes) > 8 else ''}); no plan is returned"
    )


@dataclass(frozen=True)
class LtlOptions:
    """How the LTL planner grounds its propositions in the graph."""

    reach_distance: float = option(
        DEFAULT_REACH_DISTANCE,
        "an object's proposition holds within this distance of it (horizontal), metres",
        minimum=0.05,
        maximum=100.0,
        per_goal=True,
        flag="--reach-distance",
    )


class LtlPlanner(Planner):
    name = "ltl"
    summary = "LTL (Dai et al.): the instruction as a formula, an optimal plan from a product-automaton search"
    Options = LtlOptions
    config: LtlOptions

    @property
    def reach_distance(self) -> float:
        return self.config.reach_distance

    def _run(self, job: PlanJob) -> None:
        graph, instruction, session, result, progress = job.parts()
        try:
            require_tools()
        except AutomatonError as exc:
            result.message = f"the ltl planner cannot run here: {exc}"
            return
        nodes = graph.nodes
        ids = [n for n in sorted_ids(graph) if nodes[n].type in GROUNDABLE]  # sorted: _enum keeps them in one pass
        mapping = session.ask(
            "ground",
            [
                {"role": "system", "content": GROUND_SYSTEM},
                {"role": "user", "content": f"Building: {grounding_catalogue(graph)}\nMission: {instruction}"},
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
        listing = "\n".join(f"- {phrase}: {node} ({graph.nodes[node].type})" for phrase, node in mapping.items())
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
        progress(Progress(PlanStage.PLAN, 1, "", 0, session.tokens_used, f"formula: {formula.prefix()}"))
        plan_path(graph, formula, dfa, self.reach_distance, result)
        if result.success:
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
                raise BadAnswerError(f"'{node}' is not the id of a {', '.join(GROUNDABLE[:-1])} or {GROUNDABLE[-1]}")
            out[item["phrase"]] = node
        return out

    @staticmethod
    def _parse_formula(atoms: set[str], data: dict[str, Any]) -> tuple[Formula, Dfa]:
        text = data.get("formula")
        if not isinstance(text, (str, list)):
            raise BadAnswerError("the answer needs a 'formula' string (prefix or list notation)")
        try:
            formula = parse_formula(text, atoms)
            dfa = build_dfa(formula)
        except FormulaError as exc:
            raise BadAnswerError(f"formula '{text}': {exc}") from None
        except AutomatonError as exc:
            raise BadAnswerError(f"formula '{text}' could not be turned into an automaton: {exc}") from None
        return formula, dfa


def plan_path(
    graph: SceneGraph, formula: Formula, dfa: Dfa, reach_distance: float, result: PlanResult, start: str | None = None
) -> None:
    """The optimal path for `formula` from `start` (default: the agent's location), checked by the LTLf definition
    and the simulator, written into `result`; a mission with no path leaves `result.message` saying why.
    Raises PlanFailedError (internal error) when a check fails."""
    start = start if start is not None else graph.agent_location()
    if start is None or graph.agent_id is None:
        result.message = "the scene graph has no agent location to start from"
        return
    try:
        path = ltl_lib.ProductSearch(graph, dfa, reach_distance=reach_distance).search(start)
    except (ltl_lib.NoSatisfyingPathError, DomainError) as exc:
        result.message = f"{exc} ({formula.prefix()})"
        return
    violation = trace_violation(formula, path)
    if violation is not None:
        raise PlanFailedError(PlanCode.INTERNAL_ERROR, violation)
    result.plan = list(path.steps)
    result.full_plan = list(result.plan)
    moved = graph
    if start != graph.agent_location():
        moved = graph.copy()
        moved.set_attributes(graph.agent_id, {"location": start})
    check = verify_plan(moved, result.full_plan, "sayplan", strict_navigation=True)
    if not check.success:
        raise PlanFailedError(
            PlanCode.INTERNAL_ERROR, f"internal error: the path fails in the simulator: {check.feedback}"
        )
    result.success = result.verified = True
    result.message = (
        f"optimal path for {formula.prefix()}: cost {path.cost:.1f} over {len(path.nodes) - 1} moves "
        f"({path.expansions} A* expansions, {path.elapsed_s * 1000:.1f} ms); the trace satisfies the formula"
    )


def plan_formula(
    graph: SceneGraph,
    formula: Formula | str | list[Any],
    reach_distance: float = DEFAULT_REACH_DISTANCE,
    start: str | None = None,
) -> PlanResult:
    """Plan a given formula (a Formula, or prefix or list notation over node ids) with no LLM: the ltl planner's
    search and checks without its grounding and translation. A formula that does not parse, names no node of the
    graph, or can never be satisfied raises FormulaError (AutomatonError when MONA is missing or fails); a mission
    with no path is a PlanResult that failed, saying why."""
    began = time.perf_counter()
    require_tools()
    ids = [n for n, node in graph.nodes.items() if node.type in GROUNDABLE]
    parsed = formula if isinstance(formula, Formula) else parse_formula(formula)
    for atom in sorted(parsed.atoms() - set(ids)):
        close = close_names(atom, ids, 3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise FormulaError(
            f"'{atom}' is not the id of a {', '.join(GROUNDABLE[:-1])} or {GROUNDABLE[-1]} of the graph{hint}"
        )
    dfa = build_dfa(parsed)
    result = PlanResult(LtlPlanner.name, parsed.prefix(), explored_nodes=sorted(parsed.atoms()))
    try:
        plan_path(graph, parsed, dfa, reach_distance, result, start)
    except PlanFailedError as exc:
        result.message, result.failure = str(exc), exc.code
    if not result.success and result.failure is PlanCode.NONE:
        result.failure = PlanCode.SEARCH_FAILED
    result.elapsed_s = time.perf_counter() - began
    return result


#: The grounding catalogue's fragments, per history of tracked graphs (graph/caches.py).
_CATALOGUE = PerHistory("ltl catalogue", _CatalogueFragments)
