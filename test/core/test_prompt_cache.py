"""The whole-graph prompt text of a tracked graph is kept per node across versions (graph/text.py, NodeFragments);
a stale fragment would put a wrong graph in a prompt, so after every step of random mutation sequences the cached
text must equal the uncached writer's (graph_records + json.dumps, itself checked against the straightforward
writer in test_graph_text_equiv.py) byte for byte, for every graph sharing the cache: the live graph, tracked
snapshots of earlier versions (older than the cache's last state) and snapshots changed after they were taken.

Every mutator is exercised: add_node, set_parent, remove_node, connect, disconnect, set_states, replace_node,
and updates applied in place (apply_in_place) or refused and rolled back; plus copies, tracked or not.
The abstract planner's workspace dictionary text is checked the same way against workspace_dictionary, and the
ltl planner's grounding catalogue against grounding_hierarchy, and its search domain's navigation part (kept
across versions too) against the domain of an untracked copy, and the navigation components against networkx's; llm_as_planner's schema against answers.plan_schema."""

from __future__ import annotations

import copy
import json

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.graph.model import PLACEMENTS, GraphError, Node, SceneGraph
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.text import graph_records, sorted_ids, to_prompt_text
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.ltl.domain import SearchDomain
from sayplan_core.planners import answers, llm_as_planner
from sayplan_core.planners.abstract import workspace_dictionary, workspace_text
from sayplan_core.planners.ltl import grounding_catalogue, grounding_hierarchy
from sayplan_core.sim.action_set import load_action_set

ACTIONS = load_action_set("sayplan")
TYPES = ("floor", "room", "pose", "workspace", "asset", "object", "agent")
OPS = ("add", "move", "remove", "connect", "disconnect", "states", "replace", "update", "bad_update", "snapshot")


def uncached(graph: SceneGraph, with_positions: bool) -> str:
    return json.dumps(graph_records(graph, None, with_positions), separators=(",", ":"), ensure_ascii=False)


def navigation(graph: SceneGraph) -> tuple[object, ...]:
    """What an ltl search domain with no atoms holds: its locations, their index and the moves between them."""
    SearchDomain(graph, sorted(graph.type_index("asset")))  # stops added to a domain never reach the kept part
    domain = SearchDomain(graph, ())
    return domain.locations, domain.index, domain.moves


def components(graph: SceneGraph) -> list[int]:
    """SceneGraph.nav_component of every node (kept across versions of a tracked graph while the navigation layer
    stays the same), in node order."""
    return [graph.nav_component(node_id) for node_id in graph.nodes]


def components_reference(graph: SceneGraph) -> list[int]:
    """The components by their definition, computed afresh (a copy would inherit the graph's table)."""
    table = {member: index for index, members in enumerate(nx.connected_components(graph.nav)) for member in members}
    return [table.get(node_id, -1) for node_id in graph.nodes]


def start() -> SceneGraph:
    graph = SceneGraph("cache")
    graph.add_node(Node("building", "building"))
    graph.add_node(Node("floor0", "floor"), "building")
    for room in ("kitchen", "hall"):
        graph.add_node(Node(room, "room", position=(1.0, 2.0, 0.0)), "floor0")
    graph.connect("kitchen", "hall")
    graph.add_node(Node("yard", "room"), "floor0")
    graph.connect("hall", "yard")  # hall's links list hall<->yard: removing the yard must redo them
    graph.add_node(Node("bench", "workspace"), "kitchen")
    graph.add_node(Node("fridge", "asset", states=["closed"], affordances=["open", "close"]), "bench")
    graph.add_node(Node("apple", "object", affordances=["pickup"]), "fridge", "inside_of")
    graph.add_node(Node("agent", "agent", attributes={"location": "hall"}))
    return graph


def placements(graph: SceneGraph, node_type: str) -> list[tuple[str, str]]:
    """(parent, relation) pairs the hierarchy rules allow for a node of this type in this graph."""
    return [
        (parent, relation)
        for child, parent_type, relation in sorted(PLACEMENTS)
        if child == node_type
        for parent in sorted(graph.type_index(parent_type))
    ]


def step(data: st.DataObject, graph: SceneGraph, count: int) -> SceneGraph | None:
    """One random mutation of `graph` (refused ones are fine: the graph stays as it was); a snapshot if taken."""
    op = data.draw(st.sampled_from(OPS))
    ids = sorted(graph.nodes)
    pick = st.sampled_from(ids)
    try:
        if op == "add":
            node_type = data.draw(st.sampled_from(TYPES))
            where = placements(graph, node_type)
            parent, relation = data.draw(st.sampled_from(where)) if where else (None, "in")
            name = data.draw(st.sampled_from(["", "Nice name", 'ümlaut "quoted"']))
            attrs = {"location": data.draw(pick)} if node_type == "agent" else {}
            node = Node(
                data.draw(st.sampled_from([f"n{count}", f"a{count}", f"z{count}"])), node_type, name, [], [], attrs
            )
            graph.add_node(node, parent, relation)
        elif op == "move":
            node_id = data.draw(pick)
            where = placements(graph, graph.nodes[node_id].type)
            if where:
                graph.set_parent(node_id, *data.draw(st.sampled_from(where)))
        elif op == "remove":  # a leaf (removing a node with children is refused)
            graph.remove_node(data.draw(st.sampled_from([n for n in ids if not graph.children(n)])))
        elif op in ("connect", "disconnect"):
            places = sorted(graph.type_index("room") | graph.type_index("pose"))
            if len(places) >= 2:
                a, b = data.draw(st.lists(st.sampled_from(places), min_size=2, max_size=2, unique=True))
                graph.connect(a, b, data.draw(st.none() | st.floats(0, 10))) if op == "connect" else graph.disconnect(
                    a, b
                )
        elif op == "states":
            graph.set_states(
                data.draw(pick), data.draw(st.lists(st.sampled_from(["open", "closed", "on"]), max_size=2))
            )
        elif op == "replace":
            old = graph.nodes[data.draw(pick)]
            new = copy.deepcopy(old)
            new.name = data.draw(st.sampled_from([old.name, "renamed", ""])) or new.id.replace("_", " ")
            new.position = data.draw(st.none() | st.just((1.234, 5.0, 0.5)))
            if new.type != "agent":
                new.attributes = data.draw(st.sampled_from([{}, {"colour": "red"}, {"size": [1, 2]}]))
            else:
                new.attributes = {"location": data.draw(pick)}
            graph.replace_node(new)
        elif op in ("update", "bad_update"):
            objects = sorted(graph.type_index("object"))
            supports = sorted(graph.type_index("asset"))
            if objects and supports:
                obj = copy.deepcopy(graph.nodes[data.draw(st.sampled_from(objects))])
                obj.states = ["dirty"]
                upserts = [NodeUpsert(obj, data.draw(st.sampled_from(supports)), "ontop_of")]
                if op == "bad_update":  # applied, then refused by its last item: rolled back whole
                    upserts.append(NodeUpsert(Node(f"orphan{count}", "object"), "nowhere", "ontop_of"))
                agent = graph.agent_id
                if agent is not None:
                    moved = copy.deepcopy(graph.nodes[agent])
                    moved.attributes["location"] = data.draw(pick)
                    upserts.append(NodeUpsert(moved))
                apply_in_place(graph, GraphUpdate(upsert=upserts, remove=data.draw(st.lists(pick, max_size=1))))
        elif op == "snapshot":
            return graph.copy(tracked=True)
    except GraphError:
        pass
    return None


@settings(max_examples=120, deadline=None, derandomize=True)
@given(st.data())
def test_cached_text_is_the_fresh_text_after_any_mutations(data: st.DataObject) -> None:
    live = start()
    live.track_changes()
    graphs = [live]  # every graph sharing the live graph's caches, the older snapshots included
    for count in range(data.draw(st.integers(1, 25))):
        target = data.draw(st.sampled_from(graphs)) if data.draw(st.integers(0, 4)) == 0 else live
        snapshot = step(data, target, count)
        if snapshot is not None:
            graphs.append(snapshot)
        for graph in data.draw(st.permutations(graphs)):
            with_positions = data.draw(st.booleans())
            assert to_prompt_text(graph, with_positions=with_positions) == uncached(graph, with_positions)
            assert workspace_text(graph) == json.dumps(workspace_dictionary(graph), separators=(",", ":"))
            assert grounding_catalogue(graph) == json.dumps(grounding_hierarchy(graph), separators=(",", ":"))
            assert navigation(graph) == navigation(graph.copy())
            assert components(graph) == components_reference(graph)
            assert sorted_ids(graph) == sorted(graph.nodes)
            schema = llm_as_planner.plan_schema(graph, ACTIONS, sorted_ids(graph))  # its enums kept too
            assert json.dumps(schema) == json.dumps(answers.plan_schema(ACTIONS, sorted(graph.nodes)))


def test_snapshots_of_a_follower_share_the_cache_and_untracked_copies_do_not() -> None:
    live = start()
    snapshots = GraphSnapshots()
    first = snapshots.of(live, 1)
    assert to_prompt_text(first) == uncached(first, False)
    apple = copy.deepcopy(live.nodes["apple"])
    apply_in_place(live, GraphUpdate(upsert=[NodeUpsert(apple, "bench", "ontop_of")]))
    second = snapshots.of(live, 2)
    assert second.derived is first.derived and second.change_stamps is not None
    assert to_prompt_text(second) == uncached(second, False) != to_prompt_text(first)
    edited = second.copy()  # untracked: edited in place by copy-then-edit code, so no cache may serve it
    assert edited.change_stamps is None
    edited.nodes["fridge"].states = ["open"]
    assert '"open"' in to_prompt_text(edited).split('"fridge"', 1)[1].split("}", 1)[0]


def test_a_pose_is_listed_under_the_new_floor_of_its_room() -> None:
    """The ltl catalogue reads a pose's floor through the room it hangs under: moving the room moves the pose,
    which keeps its stamp (a case the random sequences rarely build)."""
    live = start()
    live.add_node(Node("floor1", "floor"), "building")
    live.add_node(Node("door", "pose"), "kitchen")
    snapshots = GraphSnapshots()
    first = snapshots.of(live, 1)
    assert grounding_catalogue(first) == json.dumps(grounding_hierarchy(first), separators=(",", ":"))
    live.set_parent("kitchen", "floor1")
    second = snapshots.of(live, 2)
    assert '"floor1":{"rooms":{"kitchen"' in grounding_catalogue(second)
    assert grounding_catalogue(second) == json.dumps(grounding_hierarchy(second), separators=(",", ":"))
