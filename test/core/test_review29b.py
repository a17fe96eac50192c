"""Hostile review of the whole-graph prompt cache (graph/text.py NodeFragments, SceneGraph change stamps, tracked
snapshots): the cases the random property test (test_prompt_cache.py, 25 steps on a dozen nodes) cannot reach.

Each check compares the cached writers with the uncached ones (graph_records + json.dumps, workspace_dictionary,
sorted(graph.nodes)), which test_graph_text_equiv.py checks against the straightforward writer: a difference is a
stale prompt, the LLM seeing a graph that is not the graph.

- the change log's wrap (more than 4x the node count + 1024 entries) with snapshots from both sides of it;
- more than 64 nodes arriving or leaving between two versions (the re-sort path), forwards and backwards;
- a node removed and re-added with the same id and another type, a node with different children after a
  replace, an asset moved between rooms (its nested workspaces' room), the agent moving, a link re-weighed;
- memory: the log and the caches stay bounded over thousands of updates and snapshots on one follower;
- threads: a follower applying updates (under its lock, as graph_follower does) while planner threads write
  prompts of the snapshots they were handed.

Found and fixed here: a written snapshot could not be deep-copied or pickled (the caches' locks), and a deep copy
would have kept stamps its in-place edits make stale (SceneGraph.__getstate__ now drops tracking); a snapshot read
from two threads could answer "no path" for connected places (SceneGraph.nav_component published its table half
filled); a reader writing into its snapshot's node would have poisoned the shared cache for later versions
(snapshot nodes now refuse writes, SnapshotNode).
"""

from __future__ import annotations

import copy
import json
import pickle
import random
import sys
import threading

import pytest

from sayplan_core.graph.model import GraphError, Node, SceneGraph, SnapshotNode
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.text import graph_records, sorted_ids, to_prompt_text
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.planners.abstract import workspace_dictionary, workspace_text


def check(graph: SceneGraph) -> None:
    """Every cached text of `graph` equals the uncached writer's."""
    for with_positions in (False, True):
        fresh = json.dumps(graph_records(graph, None, with_positions), separators=(",", ":"), ensure_ascii=False)
        assert to_prompt_text(graph, with_positions=with_positions) == fresh
    assert workspace_text(graph) == json.dumps(workspace_dictionary(graph), separators=(",", ":"))
    assert sorted_ids(graph) == sorted(graph.nodes)


def building(rooms: int = 4) -> SceneGraph:
    graph = SceneGraph("review")
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
    node = copy.deepcopy(graph.nodes[node_id])
    for key, value in fields.items():
        setattr(node, key, value)
    return GraphUpdate(upsert=[NodeUpsert(node)])


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
    agent = copy.deepcopy(live.nodes["agent"])
    agent.attributes["location"] = "room3"
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
    derived = live.derived
    assert set(derived) <= {"text:False", "text:True", "workspaces", "ids"}
    for key in ("text:False", "text:True"):
        assert len(derived[key].records) <= len(live.nodes)
        assert len(derived[key].stamps) == len(live.nodes)


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
                    agent = copy.deepcopy(live.nodes["agent"])
                    agent.attributes["location"] = room
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
                node = copy.deepcopy(live.nodes[rng.choice(ids)])
                node.name = rng.choice(["", 'Ünï "name"', "other"]) or node.id.replace("_", " ")
                if node.type != "agent":
                    node.attributes = rng.choice([{}, {"k": [1, 2]}])
                live.replace_node(node)
            elif op == "link":
                rooms = sorted(live.type_index("room"))
                a, b = rng.sample(rooms, 2)
                if rng.random() < 0.5:
                    live.connect(a, b, rng.choice([None, 1.5, 3.0]))
                elif live.nav.has_edge(a, b):
                    live.disconnect(a, b)
            elif op == "agent":
                agent = copy.deepcopy(live.nodes["agent"])
                agent.attributes["location"] = rng.choice(ids)
                live.replace_node(agent)
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


def test_deep_copy_or_pickle_of_a_written_snapshot_is_an_untracked_graph() -> None:
    """Found in review: a snapshot whose prompt was written held the caches' locks, so copy.deepcopy and pickle
    raised TypeError; and a deep copy (the copy-then-edit idiom) must not keep stamps it would then make stale.
    Fixed in SceneGraph.__getstate__."""
    live = building()
    snapshot = GraphSnapshots().of(live, 1)
    check(snapshot)
    for clone in (copy.deepcopy(snapshot), pickle.loads(pickle.dumps(snapshot))):
        assert clone.change_stamps is None and not clone.derived
        clone.nodes["cupboard0"].states = ["open"]  # edited in place, as copy-then-edit code does
        check(clone)
        assert '"open"' in to_prompt_text(clone)
    assert '"open"' not in to_prompt_text(snapshot)
    check(snapshot)


def test_navigation_components_of_a_shared_snapshot_from_two_threads() -> None:
    """Found in review: a snapshot is shared by every reader of its version (skill goals run in parallel on a
    reentrant group); SceneGraph.nav_component published its table before filling it, so a second thread got -1
    ("no path") for connected places. Fixed: the table is published once filled."""
    graph = SceneGraph("chain")
    graph.add_node(Node("floor0", "floor"))
    size = 20000
    for index in range(size):
        graph.add_node(Node(f"p{index:05}", "pose"), "floor0")
        if index:
            graph.connect(f"p{index - 1:05}", f"p{index:05}")
    answers: list[int] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, so the second reader meets the table being filled
    try:
        for _ in range(5):
            snapshot = GraphSnapshots().of(graph, 1)  # no table: the live graph never computed one
            first = threading.Thread(target=lambda s=snapshot: answers.append(s.nav_component("p00000")))
            second = threading.Thread(
                target=lambda s=snapshot: answers.extend(s.nav_component(f"p{size - 1:05}") for _ in range(500))
            )
            first.start()
            second.start()
            first.join(60)
            second.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert len(answers) == 5 * 501
    assert answers.count(-1) == 0, f"{answers.count(-1)} answers said a connected place cannot be reached"


def test_a_reader_writing_into_its_snapshot_does_not_change_later_prompts() -> None:
    live = building()
    snapshots = GraphSnapshots()
    check(snapshots.of(live, 1))
    apply_in_place(live, upsert(live, "cup2", states=["dirty"]))
    second = snapshots.of(live, 2)
    with pytest.raises(GraphError, match="snapshot"):  # the broken contract: a reader edits its snapshot in place
        second.nodes["cup2"].states = ["eaten"]
    to_prompt_text(second)
    apply_in_place(live, upsert(live, "cup0", states=["clean"]))
    third = snapshots.of(live, 3)
    assert '"eaten"' not in str(live.nodes["cup2"].states)
    check(third)  # with the write let through, version 3's prompt said cup2 is eaten


def test_a_snapshot_node_copies_into_a_plain_node_and_mutators_still_work() -> None:
    """Snapshot nodes refuse writes (SnapshotNode); what readers do with them otherwise works as with a Node:
    copies (copy, deepcopy, pickle, SceneGraph.copy) are plain editable nodes, they equal the nodes they copy, and
    a mutator on the snapshot itself (which then leaves the shared caches) changes a node of its own."""
    live = building()
    snapshot = GraphSnapshots().of(live, 1)
    node = snapshot.nodes["cup1"]
    assert isinstance(node, SnapshotNode) and node == live.nodes["cup1"] and live.nodes["cup1"] == node
    assert repr(node) == repr(live.nodes["cup1"])
    for clone in (
        copy.copy(node),
        copy.deepcopy(node),
        pickle.loads(pickle.dumps(node)),
        snapshot.copy().nodes["cup1"],
    ):
        assert type(clone) is Node and clone == node
        clone.states = ["edited"]
        assert node.states == [] and live.nodes["cup1"].states == []
    with pytest.raises(GraphError):
        node.name = "renamed"
    snapshot.set_states("cup1", ["dirty"])
    assert snapshot.nodes["cup1"].states == ["dirty"] and type(snapshot.nodes["cup1"]) is Node
    assert live.nodes["cup1"].states == [] and node.states == []
    check(snapshot)
    check(GraphSnapshots().of(live, 2))
