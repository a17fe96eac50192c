"""Translation between sayplan_interfaces messages and sayplan_core objects: one hop each way, nothing else.

Graphs arriving as messages go through the native loader (its dict form, or the file text of a payload graph),
so a message gets exactly the validation a file gets.
"""

from __future__ import annotations

import array
import json
import math
from collections.abc import Iterable
from typing import Any

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from sayplan_core.execution.closed_loop import StepReport
from sayplan_core.execution.skills import SkillResult
from sayplan_core.graph import columns, limits, native_format
from sayplan_core.graph.model import NAV_RELATION, GraphError, Node, SceneGraph
from sayplan_core.graph.native_format import FORMAT_NAME, FORMAT_VERSION, graph_from_dict
from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
from sayplan_core.llm.session import CallStats
from sayplan_core.outcomes import PlanCode, SkillCode
from sayplan_core.planners.base import PlanResult, Progress
from sayplan_core.sim.plan import PlanStep
from sayplan_core.viz.markers import MarkerCache, MarkerChanges
from sayplan_interfaces.msg import ExecutionEvent, LlmCallStats, PlanOutcome, PlanProgress, SceneGraphEdge
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import PlanStep as PlanStepMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.msg import SceneGraphNode as SceneGraphNodeMsg
from sayplan_interfaces.msg import SkillOutcome as SkillOutcomeMsg


# ----------------------------------------------------------------------------- scene graphs
def node_to_msg(node: Node, parent: str | None = None, relation: str | None = None) -> SceneGraphNodeMsg:
    msg = SceneGraphNodeMsg()
    msg.id, msg.type, msg.name = node.id, node.type, node.name
    msg.parent = parent or ""
    msg.relation = (relation or "") if parent else ""
    msg.states = list(node.states)
    msg.affordances = list(node.affordances)
    msg.attributes = [KeyValue(key=k, value=json.dumps(v)) for k, v in node.attributes.items()]
    if node.position is not None:
        msg.has_position = True
        msg.position = Point(x=float(node.position[0]), y=float(node.position[1]), z=float(node.position[2]))
    return msg


#: the layouts a whole graph travels in as one payload (SceneGraph.layout, GetSceneGraph.layout); "" is the
#: nodes-and-edges form
PAYLOAD_LAYOUTS = (columns.LAYOUT,)
#: what a graph follower asks for: read by the columns loader, the graph is built once
WIRE_LAYOUT = columns.LAYOUT


def check_layout(layout: str, where: str) -> None:
    """A layout a message names: "" or one of PAYLOAD_LAYOUTS, else a one-line GraphError."""
    if layout and layout not in PAYLOAD_LAYOUTS:
        raise GraphError(
            f"{where}: layout {layout!r:.40} is not one this build reads ('' for nodes and edges, or "
            f"{', '.join(PAYLOAD_LAYOUTS)})"
        )


def graph_to_msg(graph: SceneGraph, version: int, layout: str = "") -> SceneGraphMsg:
    """layout "": the graph as node and edge messages; one of PAYLOAD_LAYOUTS: as the native file's text."""
    msg = SceneGraphMsg(version=int(version), name=graph.name)
    if layout:
        check_layout(layout, "graph_to_msg")
        msg.layout = layout
        msg.payload = array.array("B", native_format.dumps(graph, layout=layout, exact=True).encode("utf-8"))
        return msg
    msg.nodes = [
        node_to_msg(node, graph.parent(node_id), graph.relation(node_id)) for node_id, node in graph.nodes.items()
    ]
    msg.edges = [
        SceneGraphEdge(source=a, target=b, relation=NAV_RELATION, weight=float(data.get("weight", 0.0)))
        for a, b, data in graph.nav.edges(data=True)
    ]
    return msg


def _node_dict(msg: SceneGraphNodeMsg) -> dict[str, Any]:
    """Sizes and nesting are checked on the raw strings, before any attribute is parsed."""
    node_id = msg.id[: limits.MAX_ID_CHARS]
    try:
        limits.check_chars(msg.id, limits.MAX_ID_CHARS, "node id")
        limits.check_count(len(msg.attributes), limits.MAX_ATTRIBUTES, f"node '{node_id}': attributes")
        for kv in msg.attributes:
            limits.check_chars(kv.key, limits.MAX_ID_CHARS, f"node '{node_id}': an attribute name")
            limits.check_json_text(kv.value, f"node '{node_id}': attribute '{kv.key}'", limits.MAX_ATTRIBUTE_CHARS)
    except limits.InputLimitError as exc:
        raise GraphError(str(exc), node_id) from None
    attributes = {}
    for kv in msg.attributes:
        try:
            attributes[kv.key] = json.loads(kv.value)
        except json.JSONDecodeError:
            raise GraphError(
                f"node '{msg.id}': attribute '{kv.key}' is not JSON-encoded ({kv.value!r:.200})", msg.id
            ) from None
    item: dict[str, Any] = {
        "id": msg.id,
        "type": msg.type,
        "name": msg.name,
        "states": list(msg.states),
        "affordances": list(msg.affordances),
        "attributes": attributes,
    }
    if msg.has_position:
        item["position"] = [msg.position.x, msg.position.y, msg.position.z]
    return item


def msg_to_node(msg: SceneGraphNodeMsg) -> tuple[Node, str | None, str]:
    from sayplan_core.graph.native_format import node_from_dict

    if len(msg.parent) > limits.MAX_ID_CHARS or len(msg.relation) > limits.MAX_ID_CHARS:
        raise GraphError(f"node '{msg.id[:80]}': parent or relation over {limits.MAX_ID_CHARS} characters")
    node = node_from_dict(_node_dict(msg))
    return node, (msg.parent or None), (msg.relation or "in")


def msg_to_graph(msg: SceneGraphMsg, require_agent: bool = True) -> SceneGraph:
    """Build a graph from a message through the validating native loader (as a file would be)."""
    if msg.layout or len(msg.payload):
        return _payload_to_graph(msg, require_agent)
    edges: list[dict[str, Any]] = [
        {"source": n.id, "relation": n.relation or "in", "target": n.parent} for n in msg.nodes if n.parent
    ]
    try:
        limits.check_count(len(msg.nodes), limits.MAX_GRAPH_NODES, "SceneGraph message: nodes")
        limits.check_count(len(msg.edges), limits.MAX_GRAPH_EDGES, "SceneGraph message: edges")
    except limits.InputLimitError as exc:
        raise GraphError(str(exc)) from None
    for edge in msg.edges:
        item: dict[str, Any] = {"source": edge.source, "relation": NAV_RELATION, "target": edge.target}
        weight = _weight(edge)
        if weight is not None:
            item["weight"] = weight
        edges.append(item)
    data = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": msg.name,
        "nodes": [_node_dict(n) for n in msg.nodes],
        "edges": edges,
    }
    return graph_from_dict(data, source="SceneGraph message", require_agent=require_agent)


def _payload_to_graph(msg: SceneGraphMsg, require_agent: bool) -> SceneGraph:
    where = "SceneGraph message"
    check_layout(msg.layout, where)
    if not msg.layout:
        raise GraphError(f"{where}: a payload needs its layout ({', '.join(PAYLOAD_LAYOUTS)})")
    if len(msg.nodes) or len(msg.edges):
        raise GraphError(
            f"{where}: a graph in a payload leaves nodes and edges empty (got {len(msg.nodes)} nodes and "
            f"{len(msg.edges)} edges as well)"
        )
    size = len(msg.payload)
    if size > native_format.MAX_FILE_BYTES:
        raise GraphError(f"{where}: payload of {size:,} bytes (at most {native_format.MAX_FILE_BYTES:,})")
    graph = native_format.loads(
        bytes(msg.payload), source=f"{where} payload", require_agent=require_agent, layout=msg.layout
    )
    return graph


def _weight(edge: SceneGraphEdge) -> float | None:
    """0 means "derive from the positions"; NaN, infinities and negative weights are refused, not derived."""
    weight = float(edge.weight)
    if weight == 0.0:
        return None
    if not math.isfinite(weight) or weight < 0:
        raise GraphError(
            f"navigation edge {edge.source[:80]}<->{edge.target[:80]}: weight must be a finite number >= 0 "
            f"(0: from the positions), got {weight}",
            edge.source[: limits.MAX_ID_CHARS],
        )
    return weight


def msg_to_update(msg: GraphUpdateMsg) -> GraphUpdate:
    total = len(msg.upsert) + len(msg.remove) + len(msg.connect) + len(msg.disconnect)
    if total > limits.MAX_UPDATE_ITEMS:
        raise GraphError(f"update has {total} items, over the limit of {limits.MAX_UPDATE_ITEMS}")
    if len(msg.source) > limits.MAX_ID_CHARS:  # journaled, republished and echoed in the reply
        raise GraphError(f"update source is {len(msg.source)} characters long, over the limit of {limits.MAX_ID_CHARS}")
    if any(len(i) > limits.MAX_ID_CHARS for i in msg.remove):
        raise GraphError(f"update remove lists an id over {limits.MAX_ID_CHARS} characters")
    chars = _update_chars(msg)
    if chars > limits.MAX_UPDATE_CHARS:
        raise GraphError(
            f"update holds over {limits.MAX_UPDATE_CHARS} characters in all (each field within its own limit): "
            f"send it in smaller updates"
        )
    upserts = []
    for node_msg in msg.upsert:
        node, parent, relation = msg_to_node(node_msg)
        upserts.append(NodeUpsert(node, parent, relation))
    return GraphUpdate(
        upsert=upserts,
        remove=list(msg.remove),
        connect=[(e.source, e.target, _weight(e)) for e in msg.connect],
        disconnect=[(e.source, e.target) for e in msg.disconnect],
        source=msg.source,
    )


def _update_chars(msg: GraphUpdateMsg) -> int:
    """The characters of every string of an update, counted until the total passes the limit (the item count is
    bounded before, so this is quick on any message)."""
    total = len(msg.source) + sum(len(i) for i in msg.remove)
    total += sum(len(e.source) + len(e.target) for e in (*msg.connect, *msg.disconnect))
    for node in msg.upsert:
        total += len(node.id) + len(node.type) + len(node.name) + len(node.parent) + len(node.relation)
        total += sum(len(s) for s in node.states) + sum(len(a) for a in node.affordances)
        total += sum(len(kv.key) + len(kv.value) for kv in node.attributes)
        if total > limits.MAX_UPDATE_CHARS:
            break
    return total


def update_to_msg(update: GraphUpdate) -> GraphUpdateMsg:
    msg = GraphUpdateMsg(source=update.source)
    msg.upsert = [node_to_msg(item.node, item.parent, item.relation) for item in update.upsert]
    msg.remove = list(update.remove)
    msg.connect = [
        SceneGraphEdge(source=a, target=b, relation=NAV_RELATION, weight=w or 0.0) for a, b, w in update.connect
    ]
    msg.disconnect = [SceneGraphEdge(source=a, target=b, relation=NAV_RELATION) for a, b in update.disconnect]
    return msg


# ----------------------------------------------------------------------------- plans
def step_from_msg(msg: PlanStepMsg) -> PlanStep:
    """The one conversion of a step from the wire (plans, skill goals, reports, events)."""
    return PlanStep(msg.action.strip(), msg.target.strip())


def step_to_msg(step: PlanStep) -> PlanStepMsg:
    """The one conversion of a step to the wire."""
    return PlanStepMsg(action=step.action, target=step.target)


def steps_from_msgs(msgs: Iterable[PlanStepMsg]) -> list[PlanStep]:
    return [step_from_msg(m) for m in msgs]


def steps_to_msgs(steps: Iterable[PlanStep]) -> list[PlanStepMsg]:
    return [step_to_msg(s) for s in steps]


def call_to_msg(call: CallStats) -> LlmCallStats:
    return LlmCallStats(
        stage=call.stage,
        model=call.model,
        prompt_tokens=call.prompt_tokens,
        completion_tokens=call.completion_tokens,
        latency_s=call.latency_s,
        outcome=call.outcome,
    )


def plan_result_to_msg(result: PlanResult, graph_version: int) -> PlanOutcome:
    return PlanOutcome(
        planner=result.planner,
        action_set=result.action_set,
        success=result.success,
        error_code=int(result.failure),
        error_msg=result.message,
        verified=result.verified,
        plan=steps_to_msgs(result.plan),
        full_plan=steps_to_msgs(result.full_plan),
        replanning_rounds=result.replanning_rounds,
        feedback_history=list(result.feedback_history),
        explored_nodes=list(result.explored_nodes),
        llm_calls=[call_to_msg(c) for c in result.calls],
        progress=[progress_to_msg(p, i) for i, p in enumerate(result.progress)],
        graph_version=int(graph_version),
    )


def plan_failure_to_msg(planner: str, action_set: str, code: PlanCode, message: str) -> PlanOutcome:
    """A plan_task that ended before any planner ran (no graph, no backend, an unknown action set)."""
    return PlanOutcome(planner=planner, action_set=action_set, error_code=int(code), error_msg=message)


def msg_to_plan_result(msg: PlanOutcome, instruction: str) -> PlanResult:
    """The inverse of `plan_result_to_msg` (PlanResult is the one definition of a plan's outcome; the message is
    its wire form). The LLM calls and the progress stay on the message: whoever needs them relays the message."""
    try:
        failure = PlanCode(int(msg.error_code))
    except ValueError:  # a code this side does not know: the plan is not trusted
        return PlanResult(
            msg.planner,
            instruction,
            message=f"unknown plan outcome code {msg.error_code}: {msg.error_msg}",
            failure=PlanCode.INTERNAL_ERROR,
            action_set=msg.action_set,
        )
    return PlanResult(
        planner=msg.planner,
        instruction=instruction,
        success=bool(msg.success),
        message=msg.error_msg,
        plan=steps_from_msgs(msg.plan),
        full_plan=steps_from_msgs(msg.full_plan),
        verified=bool(msg.verified),
        replanning_rounds=int(msg.replanning_rounds),
        feedback_history=list(msg.feedback_history),
        explored_nodes=list(msg.explored_nodes),
        failure=failure,
        action_set=msg.action_set,
    )


def progress_to_msg(progress: Progress, sequence: int) -> PlanProgress:
    return PlanProgress(
        sequence=sequence,
        stage=str(progress.stage),
        node=progress.node,
        step=progress.step,
        replanning_round=progress.replanning_round,
        tokens_used=progress.tokens_used,
        message=progress.message,
    )


def describe_progress(msg: PlanProgress) -> str:
    """One line a person reads: `search kitchen, round 0, 2434 tokens: expanded kitchen`."""
    where = f" {msg.node}" if msg.node else ""
    detail = f": {msg.message}" if msg.message else ""
    return f"{msg.stage}{where}, round {msg.replanning_round}, {msg.tokens_used} tokens{detail}"


# ----------------------------------------------------------------------------- skills and execution
def skill_result_to_msg(result: SkillResult) -> SkillOutcomeMsg:
    return SkillOutcomeMsg(
        success=result.success,
        error_code=int(result.code),
        error_msg=result.message,
        graph_update=update_to_msg(result.update),
    )


def msg_to_skill_result(msg: SkillOutcomeMsg) -> SkillResult:
    """The update is left out: the executor forwards the message's update as it is."""
    try:
        code = SkillCode(int(msg.error_code))
    except ValueError:
        code = SkillCode.INTERNAL_ERROR
        return SkillResult(False, code, f"unknown skill outcome code {msg.error_code}: {msg.error_msg}")
    return SkillResult(bool(msg.success), code, msg.error_msg)


def step_report_to_event(report: StepReport, instruction: str, sequence: int) -> ExecutionEvent:
    step = step_to_msg(report.step) if report.step is not None else PlanStepMsg()
    return ExecutionEvent(
        sequence=sequence,
        instruction=instruction,
        stage=str(report.stage),
        status=str(report.status),
        step_index=report.step_index,
        step_count=report.step_count,
        step=step,
        error_code=int(report.code),
        message=report.message,
        replans=report.replans,
    )


# ----------------------------------------------------------------------------- RViz
_MARKER_KINDS = {
    "sphere": Marker.SPHERE,
    "cube": Marker.CUBE,
    "text": Marker.TEXT_VIEW_FACING,
    "line_list": Marker.LINE_LIST,
    "line_strip": Marker.LINE_STRIP,
}


def markers_to_msg(graph: SceneGraph, plan_nodes: list[str], frame_id: str, stamp: Time) -> MarkerArray:
    """The full drawing of a graph, from scratch."""
    return marker_changes_to_msg(MarkerCache().redraw(graph, plan_nodes), frame_id, stamp)


def marker_changes_to_msg(changes: MarkerChanges, frame_id: str, stamp: Time) -> MarkerArray:
    """A full drawing (DELETEALL first) or a change (ADD what changed, DELETE what went), as RViz reads it."""
    markers = []
    if changes.clear:
        clear = Marker(action=Marker.DELETEALL)
        clear.header.frame_id = frame_id
        markers.append(clear)
    for spec in changes.upsert:
        m = Marker(ns=spec.ns, id=spec.id, type=_MARKER_KINDS[spec.kind], action=Marker.ADD, text=spec.text)
        m.header.frame_id, m.header.stamp = frame_id, stamp
        m.pose.position = Point(x=spec.position[0], y=spec.position[1], z=spec.position[2])
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = spec.scale
        m.color = ColorRGBA(r=spec.color[0], g=spec.color[1], b=spec.color[2], a=spec.color[3])
        m.points = [Point(x=p[0], y=p[1], z=p[2]) for p in spec.points]
        markers.append(m)
    for ns, marker_id in changes.delete:
        gone = Marker(ns=ns, id=marker_id, action=Marker.DELETE)
        gone.header.frame_id, gone.header.stamp = frame_id, stamp
        markers.append(gone)
    return MarkerArray(markers=markers)
