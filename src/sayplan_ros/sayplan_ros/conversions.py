"""Translation between sayplan_interfaces messages and sayplan_core objects (nothing else)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import Point

from sayplan_core.graph.model import GraphError, Node, SceneGraph
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import PlanStep as PlanStepMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.msg import SceneGraphEdge, SceneGraphNode


def node_to_msg(graph: SceneGraph, node_id: str) -> SceneGraphNode:
    node = graph.nodes[node_id]
    msg = SceneGraphNode()
    msg.id = node.id
    msg.type = node.type
    msg.name = node.name
    msg.parent = graph.parent(node_id) or ""
    msg.relation = graph.relation(node_id) or ""
    msg.states = list(node.states)
    msg.affordances = list(node.affordances)
    msg.attributes = [KeyValue(key=k, value=json.dumps(v)) for k, v in node.attributes.items()]
    if node.position is not None:
        msg.has_position = True
        msg.position = Point(x=float(node.position[0]), y=float(node.position[1]), z=float(node.position[2]))
    return msg


def graph_to_msg(graph: SceneGraph, version: int, node_ids: Iterable[str] | None = None) -> SceneGraphMsg:
    msg = SceneGraphMsg()
    msg.version = int(version)
    msg.name = graph.name
    ids = list(graph.nodes) if node_ids is None else list(node_ids)
    msg.nodes = [node_to_msg(graph, n) for n in ids]
    keep = set(ids)
    edges = []
    for a, b, data in graph.nav.edges(data=True):
        if a in keep and b in keep:
            edges.append(
                SceneGraphEdge(source=a, target=b, relation="connected_to", weight=float(data.get("weight", 0.0)))
            )
    msg.edges = edges
    return msg


def msg_to_node(msg: SceneGraphNode) -> tuple[Node, str | None, str]:
    attributes = {}
    for kv in msg.attributes:
        try:
            attributes[kv.key] = json.loads(kv.value)
        except json.JSONDecodeError:
            raise GraphError(
                f"node '{msg.id}': attribute '{kv.key}' is not JSON-encoded ({kv.value!r})", msg.id
            ) from None
    position = (msg.position.x, msg.position.y, msg.position.z) if msg.has_position else None
    node = Node(
        id=msg.id,
        type=msg.type,
        name=msg.name,
        states=list(msg.states),
        affordances=list(msg.affordances),
        attributes=attributes,
        position=position,
    )
    return node, (msg.parent or None), (msg.relation or "in")


def msg_to_graph(msg: SceneGraphMsg) -> SceneGraph:
    """Rebuild a graph from a message through the validating native loader."""
    from sayplan_core.graph.native_format import graph_from_dict, graph_to_dict

    scratch = SceneGraph(msg.name)
    edges = []
    for node_msg in msg.nodes:
        node, parent, relation = msg_to_node(node_msg)
        scratch.add_node(node)
        if parent:
            edges.append({"source": node.id, "relation": relation, "target": parent})
    for edge in msg.edges:
        item = {"source": edge.source, "relation": "connected_to", "target": edge.target}
        if edge.weight > 0:
            item["weight"] = edge.weight
        edges.append(item)
    data = graph_to_dict(scratch)
    data["edges"] = edges
    return graph_from_dict(data, source="SceneGraph message")


def msg_to_update(msg: GraphUpdateMsg) -> GraphUpdate:
    upserts = []
    for node_msg in msg.upsert:
        node, parent, relation = msg_to_node(node_msg)
        upserts.append(NodeUpsert(node, parent, relation))
    return GraphUpdate(
        upsert=upserts,
        remove=list(msg.remove),
        connect=[(e.source, e.target, e.weight if e.weight > 0 else None) for e in msg.connect],
        disconnect=[(e.source, e.target) for e in msg.disconnect],
        source=msg.source,
    )


def steps_from_msgs(msgs: Iterable[PlanStepMsg]) -> list[PlanStep]:
    return [PlanStep(m.action.strip(), m.target.strip()) for m in msgs]


def steps_to_msgs(steps: Iterable[PlanStep]) -> list[PlanStepMsg]:
    return [PlanStepMsg(action=s.action, target=s.target) for s in steps]
