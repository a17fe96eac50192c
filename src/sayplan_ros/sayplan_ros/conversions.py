"""Translation between sayplan_interfaces messages and sayplan_core objects (nothing else)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

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


def update_to_msg(update: GraphUpdate) -> GraphUpdateMsg:
    msg = GraphUpdateMsg(source=update.source)
    upserts = []
    for item in update.upsert:
        scratch = SceneGraph()
        scratch.add_node(item.node)
        node_msg = node_to_msg(scratch, item.node.id)
        node_msg.parent = item.parent or ""
        node_msg.relation = item.relation if item.parent else ""
        upserts.append(node_msg)
    msg.upsert = upserts
    msg.remove = list(update.remove)
    msg.connect = [
        SceneGraphEdge(source=a, target=b, relation="connected_to", weight=w or 0.0) for a, b, w in update.connect
    ]
    msg.disconnect = [SceneGraphEdge(source=a, target=b, relation="connected_to") for a, b in update.disconnect]
    return msg


def steps_from_msgs(msgs: Iterable[PlanStepMsg]) -> list[PlanStep]:
    return [PlanStep(m.action.strip(), m.target.strip()) for m in msgs]


def steps_to_msgs(steps: Iterable[PlanStep]) -> list[PlanStepMsg]:
    return [PlanStepMsg(action=s.action, target=s.target) for s in steps]


_MARKER_KINDS = {
    "sphere": Marker.SPHERE,
    "cube": Marker.CUBE,
    "text": Marker.TEXT_VIEW_FACING,
    "line_list": Marker.LINE_LIST,
    "line_strip": Marker.LINE_STRIP,
}


def markers_to_msg(graph: SceneGraph, plan_nodes: list[str], frame_id: str, stamp: Time) -> MarkerArray:
    from sayplan_core.viz.markers import graph_markers

    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id = frame_id
    markers = [clear]
    for spec in graph_markers(graph, plan_nodes):
        m = Marker(ns=spec.ns, id=spec.id, type=_MARKER_KINDS[spec.kind], action=Marker.ADD, text=spec.text)
        m.header.frame_id, m.header.stamp = frame_id, stamp
        m.pose.position = Point(x=spec.position[0], y=spec.position[1], z=spec.position[2])
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = spec.scale
        m.color = ColorRGBA(r=spec.color[0], g=spec.color[1], b=spec.color[2], a=spec.color[3])
        m.points = [Point(x=p[0], y=p[1], z=p[2]) for p in spec.points]
        markers.append(m)
    return MarkerArray(markers=markers)
