"""A snapshot of one version (`GraphSnapshots.of`) is shared by every reader of that version. Its nodes are the live
graph's own (immutable) nodes, and what readers do with it must work as with a plain graph, without reaching the
caches later versions share.

- Copies are plain and untracked: `copy.copy`, `copy.deepcopy`, pickle and `SceneGraph.copy` of a snapshot, and
  `dataclasses.replace` of a node (the copy-then-edit idiom); a deep copy keeps no stamps.
- A write into a node (assignment, `del`, `node.states.append`, `node.attributes[...] = ...`) raises; a mutator on
  the snapshot itself puts a node of its own in place; later versions' prompts stay right either way.
- The navigation components of a shared snapshot are published only once filled (a second reader thread got
  "no path" for connected places).
- Code that only reads runs on a snapshot: the simulator, `WorldState` (apply_to, refresh) and LookPlanGraph's
  memory graph (commit) leave it as it was.

- A reader's networkx edit of its snapshot's layers (`snapshot.nav.add_edge`) is refused (networkx's freeze): behind
  the stamps it would poison the prompts of later versions and the navigation components shared under the
  navigation-layer stamp. Writing networkx's dicts directly (`snapshot.nav._adj`) or `object.__setattr__` on a node
  goes round both freezes (not tested: deliberate).

The oracles are the uncached writers (`check`, from test_prompt_cache.py) and the straightforward versions of
every cache (`check_all`, from test_graph_caches.py).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys
import threading

import networkx as nx
import pytest
from test_graph_caches import check_all, check_components, oracle_text, start
from test_prompt_cache import building, check, upsert
from world_shapes import accepted_steps

from sayplan_core.envs import load_env
from sayplan_core.graph import native_format
from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.text import to_prompt_text
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert, apply_in_place
from sayplan_core.planners.lookplangraph import memory_graph, truth_reveal_hook
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.simulator import apply_step
from sayplan_core.sim.world_state import WorldState


# ------------------------------------------------------------------------------------------------ copies and writes
def test_deep_copy_or_pickle_of_a_written_snapshot_is_an_untracked_graph() -> None:
    """A snapshot whose prompt was written once held the caches' locks, so copy.deepcopy and pickle
    raised TypeError; and a deep copy must not keep the snapshot's stamps. Fixed in SceneGraph.__getstate__."""
    live = building()
    snapshot = GraphSnapshots().of(live, 1)
    check(snapshot)
    for clone in (copy.deepcopy(snapshot), pickle.loads(pickle.dumps(snapshot))):
        assert clone.change_stamps is None and clone.history is None
        clone.set_states("cupboard0", ["open"])
        check(clone)
        assert '"open"' in to_prompt_text(clone)
    assert '"open"' not in to_prompt_text(snapshot)
    check(snapshot)


def test_navigation_components_of_a_shared_snapshot_from_two_threads() -> None:
    """A snapshot is shared by every reader of its version (skill goals run in parallel on a
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
    with pytest.raises(AttributeError):  # a reader cannot edit its snapshot's nodes in place
        second.nodes["cup2"].states = ("eaten",)
    with pytest.raises(AttributeError):
        second.nodes["cup2"].states.append("eaten")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        second.nodes["cup2"].attributes["eaten"] = True  # type: ignore[index]
    to_prompt_text(second)
    apply_in_place(live, upsert(live, "cup0", states=["clean"]))
    third = snapshots.of(live, 3)
    assert '"eaten"' not in str(live.nodes["cup2"].states)
    check(third)  # with the write let through, version 3's prompt said cup2 is eaten


def test_a_snapshot_shares_the_live_nodes_and_mutators_still_work() -> None:
    """A snapshot's nodes are the live graph's node objects (immutable, so shared); copies (copy, deepcopy,
    pickle, SceneGraph.copy) equal them, and a mutator on the snapshot itself (which then leaves the shared
    caches) puts a node of its own in place."""
    live = building()
    snapshot = GraphSnapshots().of(live, 1)
    node = snapshot.nodes["cup1"]
    assert type(node) is Node and node is live.nodes["cup1"]
    for clone in (
        copy.copy(node),
        copy.deepcopy(node),
        pickle.loads(pickle.dumps(node)),
        snapshot.copy().nodes["cup1"],
    ):
        assert type(clone) is Node and clone == node
    with pytest.raises(AttributeError):
        node.name = "renamed"  # type: ignore[misc]
    snapshot.set_states("cup1", ["dirty"])
    assert snapshot.nodes["cup1"].states == ("dirty",) and type(snapshot.nodes["cup1"]) is Node
    assert live.nodes["cup1"].states == () and node.states == ()
    check(snapshot)
    check(GraphSnapshots().of(live, 2))


# ---------------------------------------------------------------------------------------------------- later versions
def snapshot_of(live: SceneGraph) -> tuple[GraphSnapshots, SceneGraph]:
    snapshots = GraphSnapshots()
    snapshot = snapshots.of(live, 1)
    check_all(snapshot)  # the caches hold this version's records
    return snapshots, snapshot


def later_version(live: SceneGraph, snapshots: GraphSnapshots) -> SceneGraph:
    """A later version changed elsewhere: the box's record is reused from the cache if its stamp is unchanged."""
    apply_in_place(live, GraphUpdate(upsert=[NodeUpsert(Node("fridge", "asset", states=["open"]), "bench")]))
    return snapshots.of(live, 2)


def test_dataclasses_replace_of_a_snapshot_node_is_a_new_node() -> None:
    live = start()
    snapshots, snapshot = snapshot_of(live)
    node = snapshot.nodes["box"]
    clone = dataclasses.replace(node, states=["dirty"], name="crate")
    assert type(clone) is Node and clone.states == ("dirty",) and clone.id == "box" and clone.name == "crate"
    assert node.states == () and node.name == "box"
    check_all(later_version(live, snapshots))


def test_copy_copy_of_a_node_cannot_reach_the_snapshot() -> None:
    live = start()
    snapshots, snapshot = snapshot_of(live)
    clone = copy.copy(snapshot.nodes["box"])
    with pytest.raises(AttributeError):
        clone.states.append("eaten")  # type: ignore[attr-defined]  # was: the snapshot's own list
    with pytest.raises(TypeError):
        clone.attributes["color"] = "red"  # type: ignore[index]
    assert snapshot.nodes["box"].states == () and snapshot.nodes["box"].attributes == {}
    check_all(snapshot)
    check_all(later_version(live, snapshots))


def test_copy_copy_of_a_snapshot_graph_is_a_copy() -> None:
    """copy.copy shared the node table and networkx graphs, untracked: set_states on it put an edited node into
    the snapshot under its old stamp, and later versions' prompts showed it."""
    live = start()
    snapshots, snapshot = snapshot_of(live)
    clone = copy.copy(snapshot)
    assert clone.nodes is not snapshot.nodes and clone.tree is not snapshot.tree and clone.change_stamps is None
    clone.set_states("box", ["broken"])
    clone.connect("lab", "yard")
    clone.set_states("apple", ["rotten"])
    assert snapshot.nodes["box"].states == () and not snapshot.nav.has_edge("lab", "yard")
    check_all(snapshot)
    live.set_states("mug", ["dirty"])  # not the box: its record would come from the cache
    check_all(snapshots.of(live, 3))


def test_an_in_place_list_edit_of_a_snapshot_node_stays_in_its_snapshot() -> None:
    """Was a documented limit (strict xfail): the old guard covered assignments to a snapshot node's fields, not
    in-place edits of its lists, which reached the prompts of later versions. A node's states are a tuple now."""
    live = start()
    snapshots = GraphSnapshots()
    snapshot = snapshots.of(live, 1)
    with pytest.raises(AttributeError):
        snapshot.nodes["box"].states.append("eaten")  # type: ignore[attr-defined]  # the reader's edit
    to_prompt_text(snapshot)  # the box's record, "eaten", is kept under its stamp, which the live node still has
    later = later_version(live, snapshots)
    assert to_prompt_text(later) == oracle_text(later, False)


def test_a_networkx_edit_of_a_snapshot_is_refused_and_its_mutators_still_work() -> None:
    """Was a documented limit (strict xfail): a reader's edit of its snapshot's networkx graphs (behind the
    mutators) reached the kept text and navigation components of later versions. The layers are frozen now."""
    live = start()
    snapshots = GraphSnapshots()
    snapshot = snapshots.of(live, 1)
    for edit in (
        lambda: snapshot.nav.add_edge("lab", "yard"),
        lambda: snapshot.nav.remove_node("lab"),
        lambda: snapshot.tree.add_edge("lab", "mug"),
        lambda: snapshot.tree.clear(),
    ):
        with pytest.raises(nx.NetworkXError, match="Frozen graph can't be modified"):
            edit()
    to_prompt_text(snapshot)
    snapshot.nav_component("lab")
    later = later_version(live, snapshots)
    assert to_prompt_text(later) == oracle_text(later, False)
    check_components(later)
    # a mutator on the snapshot itself still works (it stamps what it changes) and leaves the snapshot closed for
    # the other readers; the live graph stays open
    snapshot.connect("lab", "yard")
    snapshot.set_parent("box", "bench", "ontop_of")
    snapshot.set_states("fridge", ["open"])
    assert snapshot.nav.has_edge("lab", "yard") and not live.nav.has_edge("lab", "yard")
    with pytest.raises(nx.NetworkXError, match="Frozen graph"):
        snapshot.nav.add_edge("hall", "yard")
    live.nav.add_edge("lab", "yard")
    live.nav.remove_edge("lab", "yard")
    check_all(snapshot)


def test_a_write_to_a_snapshots_node_table_is_refused_and_later_versions_stay_right() -> None:
    """Found by a hostile review: assigning, deleting or popping a snapshot's node went round the mutators, and a
    pop crashed the prompt text of this and later versions (KeyError)."""
    live = start()
    snapshots = GraphSnapshots()
    snapshot = snapshots.of(live, 1)
    box = snapshot.nodes["box"]
    for edit in (
        lambda: snapshot.nodes.__setitem__("box", dataclasses.replace(box, states=("eaten",))),
        lambda: snapshot.nodes.pop("box"),
        lambda: snapshot.nodes.__delitem__("box"),
        lambda: snapshot.nodes.update({"box": box}),
        lambda: snapshot.nodes.setdefault("ghost", box),
        lambda: snapshot.nodes.clear(),
        lambda: snapshot.nodes.popitem(),
        lambda: snapshot.nodes.__ior__({"box": box}),  # `nodes |= {...}`: dict's own C code, refused too
    ):
        with pytest.raises(GraphError, match="change it only through its mutators"):
            edit()
    assert snapshot.nodes["box"] is box and len(snapshot.nodes) == len(live.nodes)
    to_prompt_text(snapshot)
    later = later_version(live, snapshots)
    assert to_prompt_text(later) == oracle_text(later, False)
    for private in (copy.deepcopy(snapshot), pickle.loads(pickle.dumps(snapshot))):  # a reader's own: open
        private.nav.add_edge("hall", "yard")
        private.nodes["box"] = dataclasses.replace(box, states=("eaten",))
        assert type(private.nodes) is dict and not nx.is_frozen(private.tree)
        leaf = next(
            n for n in sorted(snapshot.nodes) if snapshot.nodes[n].type == "object" and not snapshot.children(n)
        )
    snapshot.remove_node(leaf)  # the mutator may, and stamps it
    assert leaf not in snapshot.nodes and leaf in live.nodes
    check_all(snapshot)
    snapshot.nav_component("lab")
    later = later_version(live, snapshots)
    assert to_prompt_text(later) == oracle_text(later, False)
    check_components(later)


def test_snapshot_nodes_pickle_copy_compare_like_nodes() -> None:
    live = start()
    _, snapshot = snapshot_of(live)
    for node_id, node in snapshot.nodes.items():
        plain = live.nodes[node_id]
        assert node == plain and plain == node and (node != plain) is False and isinstance(node, Node)
        assert node.__hash__ is None and plain.__hash__ is None
        for clone in (pickle.loads(pickle.dumps(node, protocol)) for protocol in range(pickle.HIGHEST_PROTOCOL + 1)):
            assert type(clone) is Node and clone == node and type(clone.attributes) is type(node.attributes)
        deep = copy.deepcopy(node)
        assert type(deep) is Node and deep == node and deep.attributes is not node.attributes
    whole = pickle.loads(pickle.dumps(snapshot))
    assert {type(n) for n in whole.nodes.values()} == {Node} and whole.change_stamps is None
    with pytest.raises((AttributeError, TypeError)):  # TypeError: Python 3.11's frozen slots dataclass
        snapshot.nodes["box"].__class__ = Node


# --------------------------------------------------------------------------------------------- readers of a snapshot
def office_snapshot() -> tuple[SceneGraph, SceneGraph]:
    live = load_env("office")
    return live, GraphSnapshots().of(live, 1)


def test_dataclasses_replace_of_a_snapshot_node_is_checked() -> None:
    live, shot = office_snapshot()
    node = shot.nodes["apple1"]
    edited = dataclasses.replace(node, name="green apple")
    assert type(edited) is Node and edited.name == "green apple" and edited.id == "apple1"
    assert shot.nodes["apple1"].name == live.nodes["apple1"].name
    with pytest.raises(GraphError, match="unknown type"):  # the constructor's checks still run
        dataclasses.replace(node, type="bogus")


@pytest.mark.parametrize("field", ["id", "name", "states", "position", "attributes"])
def test_deleting_a_snapshot_nodes_field_is_refused(field: str) -> None:
    _, shot = office_snapshot()
    with pytest.raises(AttributeError, match=field):
        delattr(shot.nodes["apple1"], field)
    assert native_format.graph_to_dict(shot)  # every reader still finds every field


def test_a_bare_node_refuses_writes() -> None:
    bare = object.__new__(Node)
    with pytest.raises(AttributeError):
        bare.id = "x"  # type: ignore[misc]


@pytest.mark.parametrize("env", ["office", "home"])
def test_the_simulator_and_worldstate_run_on_a_snapshot(env: str) -> None:
    """Steps the simulator accepts, apply_to, refresh and LookPlanGraph's memory graph (commit) on a snapshot:
    nothing writes into the snapshot's nodes, and the snapshot stays what it copied."""
    live = load_env(env)
    shot = GraphSnapshots().of(live, 1)
    before = native_format.graph_to_dict(shot)
    for action_set, graph in (("sayplan", shot), ("lookplangraph", memory_graph(shot))):
        actions = load_action_set(action_set)
        hook = truth_reveal_hook(shot) if action_set == "lookplangraph" else None
        state = WorldState.from_graph(graph, reveal_hook=hook)
        shown = state.apply_to()
        for _ in range(25):
            accepted = accepted_steps(state, actions)
            if not accepted:
                break
            apply_step(state, accepted[len(accepted) // 2], actions)
            shown = state.refresh(shown)
            if graph is not shot:
                state.commit()
    assert native_format.graph_to_dict(shot) == before
