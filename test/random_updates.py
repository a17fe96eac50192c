"""Random scene-graph updates on the office, valid and not, and graph equality for tests (hypothesis strategies)."""

from __future__ import annotations

from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.graph.model import Node, SceneGraph
from sayplan_core.graph.native_format import graph_to_dict
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert

OFFICE = load_env("office")
OBJECTS = sorted(n.id for n in OFFICE.nodes.values() if n.type == "object" and not OFFICE.children(n.id))
ASSETS = sorted(n.id for n in OFFICE.nodes.values() if n.type == "asset")


def exact(graph: SceneGraph) -> dict[str, object]:
    """The graph as data, positions unrounded (equality of two graphs, as the journal must keep them)."""
    return graph_to_dict(graph, exact=True)


@st.composite
def updates(draw: st.DrawFn) -> GraphUpdate:
    """Valid and invalid updates: new mugs with odd positions and attributes, moves, removals, bad parents."""
    kind = draw(st.sampled_from(["add", "move", "remove", "bad_parent", "remove_agent", "state"]))
    if kind == "add":
        name = f"mug_{draw(st.integers(0, 5))}"
        position = draw(st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 3))
        attributes = draw(
            st.dictionaries(
                st.sampled_from(["colour", "n"]), st.one_of(st.text(max_size=5), st.integers(-(2**63), 2**64 - 1))
            )
        )
        node = Node(name, "object", attributes=attributes, position=position)
        return GraphUpdate([NodeUpsert(node, draw(st.sampled_from(ASSETS)), "ontop_of")], source="test")
    if kind == "move":
        node_id = draw(st.sampled_from(OBJECTS))
        return GraphUpdate(
            [NodeUpsert(OFFICE.nodes[node_id], draw(st.sampled_from(ASSETS)), "ontop_of")], source="test"
        )
    if kind == "remove":
        return GraphUpdate(remove=[draw(st.sampled_from([*OBJECTS, "mug_0", "mug_1"]))], source="test")
    if kind == "bad_parent":
        return GraphUpdate([NodeUpsert(Node("mug_9", "object"), "no_such_asset", "ontop_of")], source="test")
    if kind == "remove_agent":
        return GraphUpdate(remove=[str(OFFICE.agent_id)], source="test")
    node_id = draw(st.sampled_from(OBJECTS))
    node = OFFICE.nodes[node_id]
    changed = Node(node.id, node.type, node.name, [*node.states, "dirty"], node.affordances, node.attributes,
                   node.position)  # fmt: skip
    return GraphUpdate([NodeUpsert(changed, OFFICE.parent(node_id), OFFICE.relation(node_id))], source="test")
