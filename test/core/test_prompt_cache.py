"""The whole-graph prompt text of a tracked graph is kept per node across versions (graph/text.py, NodeFragments);
a stale fragment would put a wrong graph in a prompt, so after every step of random mutation sequences the cached
text must equal the uncached writer's (graph_records + json.dumps, itself checked against the straightforward
writer in test_graph_text_equiv.py) byte for byte, for every graph sharing the cache: the live graph, tracked
snapshots of earlier versions (older than the cache's last state) and snapshots changed after they were taken.

Every mutator is exercised: add_node, set_parent, remove_node, connect, disconnect, set_states, replace_node,
and updates applied in place (apply_in_place) or refused and rolled back; plus copies, tracked or not.
The abstract planner's workspace dictionary text is checked the same way against workspace_dictionary, and the
ltl planner's grounding catalogue against grounding_hierarchy, and its search domain's navigation part (kept
across versions too) against the domain of an untracked copy, and the navigation components against networkx's; llm_as_planner's schema against answers.plan_schema.

The cases the random sequences cannot reach are built one by one (`check` compares every cached text with the
uncached writer's): the change log's wrap (more than 4x the node count + 1024 entries) with snapshots from both
sides of it; more than 64 nodes arriving or leaving between two versions (the re-sort path), forwards and
backwards; a node removed and re-added with the same id and another type, a node with different children after a
replace, an asset moved between rooms (its nested workspaces' room), the agent moving, a link re-weighed; the log
and the caches staying bounded over thousands of updates and snapshots on one follower; a follower applying
updates (under its lock, as graph_follower does) while planner threads write prompts of the snapshots they were
handed. `check`, `building` and `upsert` are shared with test_snapshots.py."""

from __future__ import annotations

import copy
import gc
import json
import random
import threading
import weakref
from dataclasses import replace

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.graph import text
from sayplan_core.graph.model import PLACEMENTS, GraphError, Node, SceneGraph
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.text import _TextFragments, graph_records, sorted_ids, to_prompt_text
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
            name = data.draw(st.sampled_from([old.name, "renamed", ""]))
            position = data.draw(st.none() | st.just((1.234, 5.0, 0.5)))
            if old.type != "agent":
                attributes = data.draw(st.sampled_from([{}, {"colour": "red"}, {"size": [1, 2]}]))
            else:
                attributes = {"location": data.draw(pick)}
            graph.replace_node(replace(old, name=name, position=position, attributes=attributes))
        elif op in ("update", "bad_update"):
            objects = sorted(graph.type_index("object"))
            supports = sorted(graph.type_index("asset"))
            if objects and supports:
                obj = replace(graph.nodes[data.draw(st.sampled_from(objects))], states=("dirty",))
                upserts = [NodeUpsert(obj, data.draw(st.sampled_from(supports)), "ontop_of")]
                if op == "bad_update":  # applied, then refused by its last item: rolled back whole
                    upserts.append(NodeUpsert(Node(f"orphan{count}", "object"), "nowhere", "ontop_of"))
                agent = graph.agent_id
                if agent is not None:
                    moved = graph.nodes[agent]
                    moved = replace(moved, attributes={**moved.attributes, "location": data.draw(pick)})
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
    """With blocks of one to three records as well, so a record's change patches one block of many."""
    default = _TextFragments.BLOCK
    _TextFragments.BLOCK = data.draw(st.sampled_from([1, 2, 3, default]))  # read when the caches are made
    try:
        mutate_and_compare(data)
    finally:
        _TextFragments.BLOCK = default


def mutate_and_compare(data: st.DataObject) -> None:
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
    assert second.history is first.history is not None and second.change_stamps is not None
    assert to_prompt_text(second) == uncached(second, False) != to_prompt_text(first)
    edited = second.copy()  # untracked: no cache serves it
    assert edited.change_stamps is None
    edited.set_states("fridge", ["open"])
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


# -------------------------------------------------------------------------------- the cases random sequences cannot reach
def check(graph: SceneGraph) -> None:
    """Every cached text of `graph` equals the uncached writer's."""
    for with_positions in (False, True):
        fresh = json.dumps(graph_records(graph, None, with_positions), separators=(",", ":"), ensure_ascii=False)
        assert to_prompt_text(graph, with_positions=with_positions) == fresh
    assert workspace_text(graph) == json.dumps(workspace_dictionary(graph), separators=(",", ":"))
    assert sorted_ids(graph) == sorted(graph.nodes)


def building(rooms: int = 4) -> SceneGraph:
    graph = SceneGraph("building")
    graph.add_node(Node("building", "building"))
    graph.add_node(Node("floor0", "floor"), "building")
    for index in range(rooms):
        graph.add_node(Node(f"room{index}", "room", position=(float(index), 0.0, 0.0)), "floor0")
        graph.add_node(Node(f"desk{index}", "workspace"), f"room{index}")
        graph.add_node(Node(f"cupboard{index}", "asset", states=["closed"]), f"desk{index}")
        graph.add_node(Node(f"cup{index}", "object"), f"desk{index}", "ontop_of")
        if index:
            graph.connect(f"room{index - 1}", f"room{index}")
    graph.add_node(Node("agent", "agent", attributes={"location": "room0"}))
    return graph


def upsert(graph: SceneGraph, node_id: str, **fields: object) -> GraphUpdate:
    return GraphUpdate(upsert=[NodeUpsert(replace(graph.nodes[node_id], **fields))])  # type: ignore[arg-type]


def test_log_wrap_with_snapshots_from_both_sides() -> None:
    live = building()
    snapshots = GraphSnapshots()
    version = 1
    old = snapshots.of(live, version)
    check(old)
    log, _ = live.change_log
    kept = [old]
    limit = 4 * len(live.nodes) + 1024
    for index in range(limit + 50):
        states = ["open"] if index % 2 else ["closed"]
        apply_in_place(live, upsert(live, f"cupboard{index % 4}", states=states))
        version += 1
        if index % 400 == 0 or index in (limit - 2, limit - 1, limit, limit + 1):
            snapshot = snapshots.of(live, version)
            kept.append(snapshot)
            check(snapshot)
            check(kept[0])  # back to the oldest: every cupboard differs
    assert live.change_log[0] is not log, "the log did not wrap: the test misses its point"
    for snapshot in reversed(kept):  # every version again, newest first, across the wrap
        check(snapshot)
    check(snapshots.of(live, version))


def test_many_nodes_arriving_and_leaving_between_versions() -> None:
    live = building()
    snapshots = GraphSnapshots()
    first = snapshots.of(live, 1)
    check(first)
    arrivals = [NodeUpsert(Node(f"obj{index:03}", "object"), f"desk{index % 4}", "ontop_of") for index in range(150)]
    apply_in_place(live, GraphUpdate(upsert=arrivals))
    second = snapshots.of(live, 2)
    check(second)
    check(first)
    apply_in_place(live, GraphUpdate(remove=[f"obj{index:03}" for index in range(0, 150, 2)]))
    third = snapshots.of(live, 3)
    for graph in (third, first, second, third):
        check(graph)


def test_same_id_removed_and_added_with_another_type() -> None:
    live = building()
    snapshots = GraphSnapshots()
    first = snapshots.of(live, 1)
    check(first)
    apply_in_place(live, GraphUpdate(remove=["cup1"]))
    live.add_node(Node("cup1", "asset"), "room1")  # a direct mutator: the same id, another type and place
    second = snapshots.of(live, 2)
    check(second)
    live.remove_node("cup1")
    live.add_node(Node("cup1", "room"), "floor0")
    live.connect("cup1", "room3", 2.0)
    third = snapshots.of(live, 3)
    for graph in (third, first, second, third):
        check(graph)


def test_replace_moves_and_agent() -> None:
    live = building()
    snapshots = GraphSnapshots()
    graphs = [snapshots.of(live, 1)]
    check(graphs[0])
    live.add_node(Node("drawer", "workspace"), "room0")
    live.add_node(Node("box", "asset"), "drawer")  # nested: box reads its room through the drawer
    live.add_node(Node("pen", "object"), "box", "inside_of")
    graphs.append(snapshots.of(live, 2))
    # the drawer moves to another room: the box's room (read through the drawer) changes
    apply_in_place(live, GraphUpdate(upsert=[NodeUpsert(copy.deepcopy(live.nodes["drawer"]), "room3", "in")]))
    graphs.append(snapshots.of(live, 3))
    # replace the box with a node of other fields; its children stay; the agent moves and holds the pen
    box = Node("box", "asset", name="Blue box", states=["open"], attributes={"colour": "blue"})
    agent = replace(live.nodes["agent"], attributes={**live.nodes["agent"].attributes, "location": "room3"})
    pen = copy.deepcopy(live.nodes["pen"])
    apply_in_place(
        live, GraphUpdate(upsert=[NodeUpsert(box), NodeUpsert(agent), NodeUpsert(pen, "agent", "inside_hand")])
    )
    graphs.append(snapshots.of(live, 4))
    # a link re-weighed, then removed
    apply_in_place(live, GraphUpdate(connect=[("room0", "room1", 7.5)]))
    graphs.append(snapshots.of(live, 5))
    apply_in_place(live, GraphUpdate(disconnect=[("room0", "room1")]))
    graphs.append(snapshots.of(live, 6))
    for graph in graphs + graphs[::-1]:
        check(graph)
    assert "box (room3)" in workspace_text(graphs[-1])


def test_memory_bounded_on_a_long_running_follower() -> None:
    live = building(rooms=8)
    snapshots = GraphSnapshots()
    for version in range(1, 6000):
        apply_in_place(live, upsert(live, f"cupboard{version % 8}", states=["open" if version % 3 else "closed"]))
        if version % 7 == 0:
            check(snapshots.of(live, version))
    log, _ = live.change_log
    assert len(log) <= 4 * len(live.nodes) + 1024 + 8
    for kept in (text._TEXT.of(live), text._TEXT_WITH_POSITIONS.of(live)):
        assert len(kept.records) <= len(live.nodes)
        assert len(kept.stamps) == len(live.nodes)


def test_planner_threads_write_while_the_follower_applies_updates() -> None:
    """graph_follower: updates applied and snapshots taken under one lock; planners write outside it."""
    live = building(rooms=6)
    snapshots = GraphSnapshots()
    lock = threading.Lock()
    state = {"version": 1}
    stop = threading.Event()
    failures: list[str] = []

    def latest() -> SceneGraph:
        with lock:
            return snapshots.of(live, state["version"])

    def follower() -> None:
        try:
            for index in range(400):
                with lock:
                    room = f"room{index % 6}"
                    moved = copy.deepcopy(live.nodes[f"cup{(index * 5) % 6}"])
                    agent = live.nodes["agent"]
                    agent = replace(agent, attributes={**agent.attributes, "location": room})
                    update = GraphUpdate(upsert=[NodeUpsert(moved, f"desk{index % 6}", "ontop_of"), NodeUpsert(agent)])
                    if index % 3 == 0:
                        update.upsert.append(
                            NodeUpsert(Node(f"new{index}", "object"), f"desk{(index + 1) % 6}", "ontop_of")
                        )
                    if index % 3 == 2:
                        update.remove.append(f"new{index - 2}")
                    apply_in_place(live, update)
                    state["version"] += 1
        except Exception as exc:  # reported by the main thread
            failures.append(f"follower: {exc!r}")
        finally:
            stop.set()

    def planner() -> None:
        try:
            while not stop.is_set():
                check(latest())
        except AssertionError as exc:
            failures.append(f"planner: stale text {str(exc)[:300]}")
            stop.set()
        except Exception as exc:
            failures.append(f"planner: {exc!r}")
            stop.set()

    threads = [threading.Thread(target=follower)] + [threading.Thread(target=planner) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures
    check(latest())


def test_long_random_history_across_the_wrap_and_bulk_changes() -> None:
    """1,500 random mutator calls (bulk arrivals and departures among them) on a live graph, snapshots kept at
    random, each graph re-checked at random: crosses the log's wrap and the re-sort path many times."""
    rng = random.Random(29)
    live = building(rooms=3)
    live.track_changes()
    graphs = [live]
    wraps = 0
    log = live.change_log[0]
    for count in range(1500):
        ids = sorted(live.nodes)
        op = rng.choice(["states", "move", "bulk_add", "bulk_remove", "replace", "link", "snapshot", "agent"])
        try:
            if op == "states":
                live.set_states(rng.choice(ids), rng.sample(["open", "closed", "on"], rng.randint(0, 2)))
            elif op == "move":
                objects = sorted(live.type_index("object"))
                if objects:
                    live.set_parent(rng.choice(objects), rng.choice(sorted(live.type_index("workspace"))), "ontop_of")
            elif op == "bulk_add" and rng.random() < 0.1:
                for index in range(rng.randint(60, 90)):
                    node_id = f"{rng.choice('abz')}{count}_{index}"
                    live.add_node(
                        Node(node_id, "object"), rng.choice(sorted(live.type_index("workspace"))), "inside_of"
                    )
            elif op == "bulk_remove":
                leaves = [n for n in ids if live.nodes[n].type == "object" and not live.children(n)]
                for node_id in rng.sample(leaves, min(len(leaves), rng.randint(1, 80))):
                    live.remove_node(node_id)
            elif op == "replace":
                node = live.nodes[rng.choice(ids)]
                node = replace(node, name=rng.choice(["", 'Ünï "name"', "other"]))
                if node.type != "agent":
                    node = replace(node, attributes=rng.choice([{}, {"k": [1, 2]}]))
                live.replace_node(node)
            elif op == "link":
                rooms = sorted(live.type_index("room"))
                a, b = rng.sample(rooms, 2)
                if rng.random() < 0.5:
                    live.connect(a, b, rng.choice([None, 1.5, 3.0]))
                elif live.nav.has_edge(a, b):
                    live.disconnect(a, b)
            elif op == "agent":
                live.set_attributes("agent", {"location": rng.choice(ids)})
            elif op == "snapshot":
                graphs.append(live.copy(tracked=True))
                graphs = graphs[:1] + graphs[-12:]  # the live graph and the latest snapshots
        except Exception as exc:  # a refused mutation leaves the graph as it was
            assert type(exc).__name__ == "GraphError", exc
        if live.change_log[0] is not log:
            wraps, log = wraps + 1, live.change_log[0]
        if rng.random() < 0.3:
            check(rng.choice(graphs))
    for graph in graphs:
        check(graph)
    assert wraps >= 2, f"the log wrapped {wraps} times: the test misses its point"


def test_caches_are_kept_by_their_users_per_history_and_go_with_it() -> None:
    """graph/caches.py: the prompt text is kept by graph/text.py per history, shared by a tracked graph and its
    tracked copies; a copy's own change gives it a new history; the caches go with the last graph of theirs."""
    live = building()
    snapshot = GraphSnapshots().of(live, 1)
    check(snapshot)
    assert live.history is not None and snapshot.history is live.history and live.history in text._TEXT._kept
    edited = snapshot.copy(tracked=True)
    edited.set_states("cup0", ["dirty"])
    assert edited.history is not None and edited.history is not live.history
    check(edited)
    gone = weakref.ref(live.history)
    del live, snapshot, edited
    gc.collect()
    assert gone() is None
    with pytest.raises(ValueError, match="tracked"):
        text._TEXT.of(building())
