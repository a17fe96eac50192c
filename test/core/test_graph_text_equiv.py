"""The prompt writers read a graph in one pass (graph/text.py's GraphReader) for speed on 10k-node buildings; their
text must stay byte for byte what the straightforward writers produce, since prompts are in replayed transcripts.

The oracles below are those straightforward writers, written here against SceneGraph's own queries (parent,
relation, room_of, neighbours, descendants, enclosing), node by node. The graphs are random: any placement the
hierarchy rules allow (PLACEMENTS), random navigation edges, names that do or do not follow the id, states,
affordances, attributes, positions, zero, one or two agents with or without a location and a held object, and
node lists given in any order with repeats and unknown ids."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.graph.model import NODE_TYPES, PLACEMENTS, Node, SceneGraph
from sayplan_core.graph.text import _Writer, graph_records, node_record, to_prompt_text
from sayplan_core.planners.abstract import WORKSPACE_TYPES, workspace_dictionary
from sayplan_core.planners.ltl import grounding_catalogue

_TYPE_ORDER = {t: i for i, t in enumerate(NODE_TYPES)}


# ----------------------------------------------------------------------------- the straightforward writers
def oracle_record(graph: SceneGraph, node_id: str, with_positions: bool) -> dict[str, Any]:
    node = graph.nodes[node_id]
    rec: dict[str, Any] = {"id": node.id}
    if node.name and node.name != node.id.replace("_", " "):
        rec["name"] = node.name
    parent = graph.parent(node_id)
    if node.type in ("asset", "workspace"):
        room = graph.room_of(node_id)
        if room:
            rec["room"] = room
        if parent and graph.nodes[parent].type == "workspace":
            rec["workspace"] = parent
    elif node.type == "object" and parent is not None:
        relation = graph.relation(node_id)
        rec["state"] = "inside_hand" if relation == "inside_hand" else f"{relation}({parent})"
    elif node.type in ("room", "pose") and parent and graph.nodes[parent].type == "floor":
        rec["floor"] = parent
    elif node.type == "agent":
        if graph.agent_location():
            rec["location"] = graph.agent_location()
        if graph.held_object():
            rec["holding"] = graph.held_object()
    if node.states:
        rec["states"] = list(node.states)
    if node.affordances:
        rec["affordances"] = list(node.affordances)
    attrs = {k: v for k, v in node.attributes.items() if not (node.type == "agent" and k == "location")}
    if attrs:
        rec["attributes"] = attrs
    if with_positions and node.position is not None:
        rec["position"] = [round(v, 2) for v in node.position]
    return rec


def oracle_records(graph: SceneGraph, node_ids: list[str] | None, with_positions: bool) -> dict[str, Any]:
    ids = list(graph.nodes) if node_ids is None else [n for n in node_ids if n in graph.nodes]
    visible = set(ids)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for node_id in sorted(ids, key=lambda n: (_TYPE_ORDER[graph.nodes[n].type], n)):
        grouped.setdefault(graph.nodes[node_id].type, []).append(oracle_record(graph, node_id, with_positions))
    links: list[str] = []
    for node_id in sorted(visible):
        node = graph.nodes[node_id]
        if node.type in ("room", "pose"):
            links += [f"{node_id}<->{o}" for o in graph.neighbours(node_id) if o in visible and node_id < o]
        parent = graph.parent(node_id)
        if parent in visible and node.type in ("room", "asset", "workspace"):
            links.append(f"{parent}<->{node_id}")
    agent = graph.agent_id
    if agent in visible and graph.agent_location() in visible:
        links.append(f"{graph.agent_location()}<->{agent}")
    return {"nodes": grouped, "links": links}


def oracle_workspaces(graph: SceneGraph) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for asset in sorted(graph.ids_of_type(*WORKSPACE_TYPES)):
        objects = [c for c in graph.descendants(asset) if graph.nodes[c].type == "object"]
        out[f"{asset} ({graph.room_of(asset) or '?'})"] = sorted(objects)
    return out


def oracle_catalogue(graph: SceneGraph) -> str:
    floors: dict[str, dict[str, Any]] = {}

    def entry(node_id: str) -> dict[str, Any]:
        return floors.setdefault(graph.enclosing(node_id, "floor") or "(no floor)", {"rooms": {}, "poses": {}})

    for room in graph.ids_of_type("room"):
        contents = sorted(n for n in graph.descendants(room) if graph.nodes[n].type in ("asset", "object", "workspace"))
        entry(room)["rooms"][room] = {"connects_to": graph.neighbours(room), "contains": contents}
    for pose in graph.ids_of_type("pose"):
        inside = graph.room_of(pose)
        if inside is not None:
            entry(pose)["rooms"].setdefault(inside, {}).setdefault("poses", []).append(pose)
        entry(pose)["poses"][pose] = [n for n in graph.neighbours(pose) if graph.nodes[n].type == "pose"]
    for floor in graph.ids_of_type("floor"):
        floors.setdefault(floor, {"rooms": {}, "poses": {}})
    catalogue: dict[str, Any] = dict(sorted(floors.items()))
    if graph.held_object() is not None:
        catalogue["in the robot's hand"] = [graph.held_object()]
    return json.dumps(catalogue, separators=(",", ":"))


# ----------------------------------------------------------------------------- random graphs
PARENTS: dict[str, list[tuple[str, str]]] = {}
for _child, _parent, _relation in sorted(PLACEMENTS):
    PARENTS.setdefault(_child, []).append((_parent, _relation))
WORDS = st.sampled_from(["a", "b_c", "x1", "é", "z", "b"])


@st.composite
def graphs(draw: st.DrawFn) -> SceneGraph:
    graph = SceneGraph("random")
    for i in range(draw(st.integers(0, 40))):
        node_type = draw(st.sampled_from(NODE_TYPES))
        node_id = f"{draw(WORDS)}_{i}"
        name = draw(st.sampled_from(["", node_id.replace("_", " "), f"name {i}", f'Café "{i}"']))
        node = Node(
            node_id,
            node_type,
            name=name,
            states=draw(st.lists(st.sampled_from(["open", "closed", "on"]), max_size=2)),
            affordances=draw(st.lists(st.sampled_from(["open", "pickup"]), max_size=2)),
            attributes=draw(
                st.dictionaries(st.sampled_from(["colour", "location", "n"]), st.integers(0, 3), max_size=2)
            ),
            position=draw(st.none() | st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 3)),
        )
        places = [(p, r) for p, r in PARENTS.get(node_type, []) if graph.count(p)]  # nodes drawn before this one
        parent, relation = None, "in"
        if places and draw(st.booleans()):
            parent_type, relation = draw(st.sampled_from(places))
            parent = draw(st.sampled_from(graph.ids_of_type(parent_type)))
            if parent_type == "agent" and graph.children(parent):
                parent = None  # an agent holds one object
        graph.add_node(node, parent, relation)
    nav = graph.ids_of_type("room", "pose")
    if len(nav) > 1:
        for a, b in draw(st.lists(st.tuples(st.sampled_from(nav), st.sampled_from(nav)), max_size=30)):
            if a != b:
                graph.connect(a, b)
    for agent in graph.ids_of_type("agent"):
        if nav and draw(st.booleans()):
            graph.set_attributes(agent, {"location": draw(st.sampled_from(nav))})
    return graph


def node_lists(graph: SceneGraph) -> st.SearchStrategy[list[str] | None]:
    ids = [*sorted(graph.nodes), "unknown", ""]
    return st.none() | st.lists(st.sampled_from(ids), max_size=60)


@given(st.data(), st.booleans())
def test_graph_text_is_the_straightforward_writers_text(data: st.DataObject, with_positions: bool) -> None:
    graph = data.draw(graphs())
    node_ids = data.draw(node_lists(graph))
    expected = oracle_records(graph, node_ids, with_positions)
    assert graph_records(graph, node_ids, with_positions) == expected
    text = json.dumps(expected, separators=(",", ":"), ensure_ascii=False)
    assert to_prompt_text(graph, None if node_ids is None else iter(node_ids), with_positions) == text
    writer = _Writer(graph, with_positions)
    for node_id in graph.nodes:
        record = oracle_record(graph, node_id, with_positions)
        assert node_record(graph, node_id, with_positions) == record
        for ascii_only in (False, True):  # the record written as text directly (the cached writers' path)
            encoded = json.dumps(record, separators=(",", ":"), ensure_ascii=ascii_only)
            assert writer.record_text(node_id, ascii_only) == encoded


@given(graphs())
def test_planner_views_are_the_straightforward_writers_text(graph: SceneGraph) -> None:
    assert json.dumps(workspace_dictionary(graph)) == json.dumps(oracle_workspaces(graph))
    assert grounding_catalogue(graph) == oracle_catalogue(graph)
