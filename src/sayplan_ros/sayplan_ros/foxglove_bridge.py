"""foxglove_bridge: the live scene graph, the robot, the plan and /diagnostics for Foxglove or Lichtblick.

Serves the Foxglove WebSocket protocol (subprotocol `foxglove.sdk.v1`, foxglove-sdk's server) on `host`:`port`,
127.0.0.1:8765 by default, with these channels:

- `/scene_graph` (foxglove.SceneUpdate, protobuf): one entity per graph node (sayplan_core.viz.scene). A viewer
  that subscribes gets the whole scene (a deletion of all, then every entity), then only the entities each graph
  update changed and the ids it removed. A full graph (the first, or one fetched after a gap) is sent whole.
- `/plan` (JSON, sayplan.Plan): the executor's active plan, each step with its last status, the stage and the
  replans, sent again on every plan and every event; a viewer that subscribes gets the current one.
- `/plan_events` (JSON, sayplan.ExecutionEvent): every event of `execution_events`; a viewer that subscribes gets
  the last EVENT_HISTORY first.
- `/diagnostics` (JSON, sayplan.Diagnostics): every status of `/diagnostics`; `/fault_latch` (JSON,
  sayplan.FaultLatch): whether a skill server holds a fault, sent when that changes.
- `/robot_pose` (foxglove.PoseInFrame) and `/robot_path` (foxglove.PosesInFrame, protobuf): the agent where the
  scene draws it, and the route the path planner finds from there through the goto targets the plan has ahead
  (sayplan_core.viz.robot), sent when they change; an empty path when nothing is ahead.
- `/planner_steps` (JSON, sayplan.PlannerStep) and `/llm_calls` (JSON, sayplan.LlmCall): for each plan_task goal,
  every step the planner reported (what the search expanded or contracted, the simulator's verdict on a plan) and
  every LLM call (stage, prompt and completion tokens, latency, outcome), numbered by goal (sayplan_core.viz.planning),
  sent when the planner publishes the goal's report on `plan_results`; a viewer that subscribes gets the last
  HISTORY of each first. The live one-line account of each step is on `/plan_events`.

It follows the graph as every follower does (sayplan_ros.graph_follower: it takes the server's topics and
`get_scene_graph`, nothing new to trust), subscribes to the executor's and the planner's topics as any recorder
does, and only reads: nothing a viewer sends reaches the stack (no client
publishing, parameters or services are offered). What a viewer costs the stack: each message is encoded once and
put, without waiting, on each viewer's own queue (`client_backlog` messages, foxglove-sdk's `message_backlog_size`);
a viewer that falls further behind loses its oldest messages, so a slow or stalled browser never slows a callback.
Such a viewer's scene may then miss a change until it subscribes again (a reconnect does). What joining costs:
a subscription waiting for the current state is noted once, one dropped before it is served is not served, at most
MAX_PENDING_JOINS wait (more are refused and counted), and the current scene is built once for all of them.

For people without Foxglove, the node also serves the monitor page (sayplan_core.viz.monitor_page) over HTTP on
`host`:`page_port` (8766 by default; -1: none): a plain browser page that connects to this server as any viewer
does and shows the plan, the events, the latch, the diagnostics and the graph drawn from above.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from typing import Any

import foxglove
from diagnostic_msgs.msg import DiagnosticArray
from foxglove.channels import PoseInFrameChannel, PosesInFrameChannel, SceneUpdateChannel
from foxglove.messages import (
    Color,
    CubePrimitive,
    KeyValuePair,
    LinePrimitive,
    LinePrimitiveLineType,
    Point3,
    Pose,
    PoseInFrame,
    PosesInFrame,
    Quaternion,
    SceneEntity,
    SceneEntityDeletion,
    SceneEntityDeletionType,
    SceneUpdate,
    SpherePrimitive,
    TextPrimitive,
    Vector3,
)
from foxglove.websocket import ChannelView, Client, ServerListener
from rclpy.node import Node

from sayplan_core.diagnostics import Level, Status, follower_status
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.node_options import FoxgloveBridgeOptions
from sayplan_core.outcomes import Stage
from sayplan_core.viz.markers import RGBA, Vec3
from sayplan_core.viz.monitor_page import PageServer
from sayplan_core.viz.planning import LLM_CALL_SCHEMA, PLANNER_STEP_SCHEMA, PlanningLog
from sayplan_core.viz.robot import RouteTracker
from sayplan_core.viz.scene import Entity, SceneChanges, SceneEntities
from sayplan_interfaces.msg import ExecutionEvent, Plan, PlanReport
from sayplan_ros.diagnostics import DIAGNOSTICS_TOPIC, DiagnosticsPublisher, msg_to_status
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.guard import guarded
from sayplan_ros.parameters import declare_options
from sayplan_ros.qos import DIAGNOSTICS_QOS, EVENTS_QOS, LATCHED_STATE_QOS
from sayplan_ros.runner import run_nodes

SCENE_TOPIC, PLAN_TOPIC, EVENTS_TOPIC = "/scene_graph", "/plan", "/plan_events"
DIAGNOSTICS_CHANNEL, LATCH_TOPIC = "/diagnostics", "/fault_latch"
ROBOT_POSE_TOPIC, ROBOT_PATH_TOPIC = "/robot_pose", "/robot_path"
PLANNER_STEPS_TOPIC, LLM_CALLS_TOPIC = "/planner_steps", "/llm_calls"
#: the stages after which nothing of the plan is ahead of the robot
_ENDED = (Stage.DONE, Stage.FAILED, Stage.CANCELED)
#: events a viewer that subscribes to `/plan_events` gets first
EVENT_HISTORY = 200
FAULT_LATCH_CHECK = "fault latch"  # the status every skill server reports (sayplan_core.diagnostics)
#: subscriptions waiting for the current state at most; more (a viewer subscribing in a loop) are not served
MAX_PENDING_JOINS = 256


def _schema(title: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": properties}


_STRING, _INT = {"type": "string"}, {"type": "integer"}
STEP_SCHEMA = _schema("sayplan.PlanStep", {"index": _INT, "action": _STRING, "target": _STRING, "status": _STRING})
PLAN_SCHEMA = _schema(
    "sayplan.Plan",
    {
        "instruction": _STRING,
        "action_set": _STRING,
        "current_step": _INT,
        "stage": _STRING,
        "replans": _INT,
        "steps": {"type": "array", "items": STEP_SCHEMA},
    },
)
EVENT_SCHEMA = _schema(
    "sayplan.ExecutionEvent",
    {
        "sequence": _INT,
        "instruction": _STRING,
        "stage": _STRING,
        "status": _STRING,
        "step_index": _INT,
        "step_count": _INT,
        "action": _STRING,
        "target": _STRING,
        "error_code": _INT,
        "message": _STRING,
        "replans": _INT,
    },
)
DIAGNOSTICS_SCHEMA = _schema(
    "sayplan.Diagnostics",
    {
        "statuses": {
            "type": "array",
            "items": _schema(
                "sayplan.DiagnosticStatus",
                {
                    "name": _STRING,
                    "level": _STRING,
                    "message": _STRING,
                    "hardware_id": _STRING,
                    "values": {"type": "object"},
                },
            ),
        }
    },
)
LATCH_SCHEMA = _schema(
    "sayplan.FaultLatch",
    {"latched": {"type": "boolean"}, "faults": {"type": "object", "additionalProperties": _STRING}},
)


# ----------------------------------------------------------------------------- entities on the wire
def _color(rgba: RGBA) -> Color:
    return Color(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])


def _pose(position: Vec3) -> Pose:
    return Pose(position=Vector3(x=position[0], y=position[1], z=position[2]), orientation=Quaternion(w=1.0))


def entity_msg(entity: Entity, frame_id: str) -> SceneEntity:
    """One entity as foxglove.SceneEntity (no lifetime: it stays until it is deleted or replaced)."""
    cubes, spheres = [], []
    for shape in entity.shapes:
        size = Vector3(x=shape.size, y=shape.size, z=shape.size)
        if shape.kind == "cube":
            cubes.append(CubePrimitive(pose=_pose(shape.position), size=size, color=_color(shape.color)))
        else:
            spheres.append(SpherePrimitive(pose=_pose(shape.position), size=size, color=_color(shape.color)))
    return SceneEntity(
        frame_id=frame_id,
        id=entity.id,
        metadata=[KeyValuePair(key=k, value=v) for k, v in entity.metadata],
        cubes=cubes,
        spheres=spheres,
        lines=[
            LinePrimitive(
                type=LinePrimitiveLineType.LineList,
                pose=_pose((0.0, 0.0, 0.0)),
                thickness=line.thickness,
                points=[Point3(x=p[0], y=p[1], z=p[2]) for p in line.points],
                color=_color(line.color),
            )
            for line in entity.lines
        ],
        texts=[
            TextPrimitive(
                pose=_pose(label.position),
                billboard=True,
                font_size=label.size,
                color=_color(label.color),
                text=label.text,
            )
            for label in entity.labels
        ],
    )


def scene_update_msg(changes: SceneChanges, frame_id: str) -> SceneUpdate:
    """Deletions first (all of them for a full scene), then the entities: the order Foxglove applies them in."""
    deletions = [SceneEntityDeletion(type=SceneEntityDeletionType.All)] if changes.clear else []
    deletions += [SceneEntityDeletion(type=SceneEntityDeletionType.MatchingId, id=i) for i in changes.deletions]
    return SceneUpdate(deletions=deletions, entities=[entity_msg(e, frame_id) for e in changes.entities])


def pose_msg(position: Vec3, frame_id: str) -> PoseInFrame:
    return PoseInFrame(frame_id=frame_id, pose=_pose(position))


def path_msg(points: tuple[Vec3, ...], frame_id: str) -> PosesInFrame:
    return PosesInFrame(frame_id=frame_id, poses=[_pose(p) for p in points])


def event_json(event: ExecutionEvent) -> dict[str, Any]:
    return {
        "sequence": int(event.sequence),
        "instruction": event.instruction,
        "stage": event.stage,
        "status": event.status,
        "step_index": int(event.step_index),
        "step_count": int(event.step_count),
        "action": event.step.action,
        "target": event.step.target,
        "error_code": int(event.error_code),
        "message": event.message,
        "replans": int(event.replans),
    }


def report_rows(log: PlanningLog, report: PlanReport) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One plan_task goal's report as the rows of `/planner_steps` and `/llm_calls`."""
    outcome = report.outcome
    steps = [
        {
            "stage": p.stage,
            "node": p.node,
            "step": p.step,
            "replanning_round": p.replanning_round,
            "tokens_used": p.tokens_used,
            "message": p.message,
        }
        for p in outcome.progress
    ]
    calls = [
        {
            "stage": c.stage,
            "model": c.model,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "latency_s": c.latency_s,
            "outcome": c.outcome,
        }
        for c in outcome.llm_calls
    ]
    return log.add(report.instruction, outcome.planner, outcome.success, steps, calls)


def _encode(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


class _Listener(ServerListener):
    """A viewer subscribed to a channel: queue it for the current state (sent from the executor, never here)."""

    def __init__(self, bridge: FoxgloveBridge) -> None:
        self._bridge = bridge

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self._bridge.viewer_joined(client.id, channel.topic)

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self._bridge.viewer_left(client.id, channel.topic)


class FoxgloveBridge(Node):
    def __init__(self, node_name: str = "foxglove_bridge", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.options = declare_options(self, FoxgloveBridgeOptions)
        self._lock = threading.Lock()  # the scene, the plan state and the channels' order of messages
        self._scene = SceneEntities()
        self._plan: dict[str, Any] = {}
        self._events: deque[dict[str, Any]] = deque(maxlen=EVENT_HISTORY)
        self._statuses: dict[str, dict[str, Any]] = {}
        self._faults: dict[str, str] = {}
        self._planning = PlanningLog()
        #: (viewer, topic) waiting for the current state, once each, in order; at most MAX_PENDING_JOINS
        self._joined: dict[tuple[int, str], None] = {}
        self._route = RouteTracker()
        self._step = -1  # the plan's step now (-1: nothing ahead)
        self._sent = {"scene_updates": 0, "entities": 0, "joins_refused": 0}
        self._fox = foxglove.Context()  # this node's channels only (two bridges in one process stay apart)
        self._channels: dict[str, foxglove.Channel] = {
            topic: foxglove.Channel(topic, schema=schema, message_encoding="json", context=self._fox)
            for topic, schema in (
                (PLAN_TOPIC, PLAN_SCHEMA),
                (EVENTS_TOPIC, EVENT_SCHEMA),
                (DIAGNOSTICS_CHANNEL, DIAGNOSTICS_SCHEMA),
                (LATCH_TOPIC, LATCH_SCHEMA),
                (PLANNER_STEPS_TOPIC, PLANNER_STEP_SCHEMA),
                (LLM_CALLS_TOPIC, LLM_CALL_SCHEMA),
            )
        }
        self._scene_channel = SceneUpdateChannel(SCENE_TOPIC, context=self._fox)
        self._pose_channel = PoseInFrameChannel(ROBOT_POSE_TOPIC, context=self._fox)
        self._path_channel = PosesInFrameChannel(ROBOT_PATH_TOPIC, context=self._fox)
        self._wake = self.create_guard_condition(guarded(self, "foxglove viewer", self._send_current))
        self.server = foxglove.start_server(
            name=f"sayplan {self.get_namespace().rstrip('/')}/{self.get_name()}".strip(),
            host=self.options.host,
            port=self.options.port,
            server_listener=_Listener(self),
            context=self._fox,
            message_backlog_size=self.options.client_backlog,
        )
        self.port = self.server.port
        self.get_logger().info(f"Foxglove WebSocket server on ws://{self.options.host}:{self.port}")
        self.page: PageServer | None = None
        if self.options.page_port >= 0:
            try:
                self.page = PageServer(self.options.host, self.options.page_port, self.port)
            except BaseException:
                self.server.stop()  # a page port in use: the node fails to start, leaving no server behind
                raise
            self.get_logger().info(f"monitor page on {self.page.url}")
        self.follower = GraphFollower(self, on_change=self._on_graph)
        self.create_subscription(Plan, "active_plan", guarded(self, "active_plan", self._on_plan), LATCHED_STATE_QOS)
        self.create_subscription(
            ExecutionEvent, "execution_events", guarded(self, "execution_events", self._on_event), EVENTS_QOS
        )
        self.create_subscription(PlanReport, "plan_results", guarded(self, "plan_results", self._on_report), EVENTS_QOS)
        self.create_subscription(
            DiagnosticArray, DIAGNOSTICS_TOPIC, guarded(self, "diagnostics", self._on_diagnostics), DIAGNOSTICS_QOS
        )
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)

    # ------------------------------------------------------------------ the scene graph
    def _on_graph(self, graph: SceneGraph, update: GraphUpdate | None) -> None:
        """The follower's copy changed (under its lock): send what changed to every viewer, without waiting."""
        with self._lock:
            changes = self._scene.redraw(graph) if update is None else self._scene.update(graph, update)
            if changes:
                self._scene_channel.log(scene_update_msg(changes, self.options.frame_id))
                self._sent["scene_updates"] += 1
                self._sent["entities"] += len(changes.entities)
            self._follow_robot(graph, whole=update is None)

    # ------------------------------------------------------------------ the robot's pose and route
    def _follow_robot(self, graph: SceneGraph | None, whole: bool = False) -> None:
        """Under both locks (the follower's, then this node's): send the pose and the route if they changed."""
        if graph is None:
            return
        before = self._route.route
        steps = [(s["action"], s["target"]) for s in self._plan.get("steps", [])]
        after = self._route.refresh(graph, steps, self._step, self._scene.anchor, whole)
        if after.pose is not None and after.pose != before.pose:
            self._pose_channel.log(pose_msg(after.pose, self.options.frame_id))
        if after.points != before.points:
            self._path_channel.log(path_msg(after.points, self.options.frame_id))

    # ------------------------------------------------------------------ the plan and its progress
    def _on_plan(self, msg: Plan) -> None:
        steps = [(s.action, s.target) for s in msg.steps]
        with self.follower.reading() as graph, self._lock:  # the follower's lock first, as in _on_graph
            same = [(s["action"], s["target"]) for s in self._plan.get("steps", [])] == steps
            statuses = [s["status"] for s in self._plan["steps"]] if same else [""] * len(steps)
            self._plan = {
                "instruction": msg.instruction,
                "action_set": msg.action_set,
                "current_step": int(msg.current_step),
                "stage": self._plan.get("stage", ""),
                "replans": self._plan.get("replans", 0),
                "steps": [
                    {"index": i, "action": a, "target": t, "status": statuses[i]} for i, (a, t) in enumerate(steps)
                ],
            }
            self._channels[PLAN_TOPIC].log(_encode(self._plan))
            self._step = int(msg.current_step)
            self._follow_robot(graph)

    def _on_event(self, msg: ExecutionEvent) -> None:
        event = event_json(msg)
        with self.follower.reading() as graph, self._lock:
            self._events.append(event)
            self._channels[EVENTS_TOPIC].log(_encode(event))
            if not self._plan:
                return
            self._plan["stage"], self._plan["replans"] = event["stage"], event["replans"]
            steps = self._plan["steps"]
            index = event["step_index"]
            if msg.stage == Stage.EXECUTING and index < len(steps):
                step = steps[index]
                if (step["action"], step["target"]) == (event["action"], event["target"]):
                    step["status"] = event["status"]
            self._channels[PLAN_TOPIC].log(_encode(self._plan))
            if msg.stage == Stage.EXECUTING:
                self._step = index
            elif msg.stage in _ENDED:
                self._step = -1
            self._follow_robot(graph)

    # ------------------------------------------------------------------ the planner's steps and LLM calls
    def _on_report(self, msg: PlanReport) -> None:
        with self._lock:
            steps, calls = report_rows(self._planning, msg)
            for row in steps:
                self._channels[PLANNER_STEPS_TOPIC].log(_encode(row))
            for row in calls:
                self._channels[LLM_CALLS_TOPIC].log(_encode(row))

    # ------------------------------------------------------------------ diagnostics and the fault latch
    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        statuses = [msg_to_status(s) for s in msg.status]
        with self._lock:
            for status in statuses:
                self._statuses[status.name] = _status_json(status)
            self._channels[DIAGNOSTICS_CHANNEL].log(_encode({"statuses": [_status_json(s) for s in statuses]}))
            faults = dict(self._faults)
            for status in statuses:
                node, _, check = status.name.rpartition(": ")
                if check == FAULT_LATCH_CHECK:
                    if status.values.get("latched") == "true":
                        faults[node] = status.message
                    else:
                        faults.pop(node, None)
            if faults != self._faults:
                self._faults = faults
                self._channels[LATCH_TOPIC].log(_encode(self._latch()))

    def _latch(self) -> dict[str, Any]:
        return {"latched": bool(self._faults), "faults": dict(self._faults)}

    # ------------------------------------------------------------------ viewers that join
    def viewer_joined(self, client: int, topic: str) -> None:
        """From foxglove-sdk's thread: note the viewer and wake the executor, which sends it the current state.

        A subscription already waiting is noted once; beyond MAX_PENDING_JOINS waiting, one is refused (counted
        in /diagnostics), so a viewer that subscribes in a loop costs the executor a bounded amount of work."""
        with self._lock:
            key = (client, topic)
            if key in self._joined:
                return
            if len(self._joined) >= MAX_PENDING_JOINS:
                self._sent["joins_refused"] += 1
                return
            self._joined[key] = None
        self._wake.trigger()

    def viewer_left(self, client: int, topic: str) -> None:
        """From foxglove-sdk's thread: a subscription dropped before it was served is not served."""
        with self._lock:
            self._joined.pop((client, topic), None)

    def _send_current(self) -> None:
        with self._lock:
            joined, self._joined = list(self._joined), {}
            scene: SceneUpdate | None = None  # the current scene, built once for every viewer of this batch
            for client, topic in joined:
                if topic == SCENE_TOPIC:
                    if scene is None:
                        scene = scene_update_msg(self._scene.current(), self.options.frame_id)
                    self._scene_channel.log(scene, sink_id=client)
                elif topic == PLAN_TOPIC and self._plan:
                    self._channels[topic].log(_encode(self._plan), sink_id=client)
                elif topic == EVENTS_TOPIC:
                    for event in self._events:
                        self._channels[topic].log(_encode(event), sink_id=client)
                elif topic in (PLANNER_STEPS_TOPIC, LLM_CALLS_TOPIC):
                    rows = self._planning.steps if topic == PLANNER_STEPS_TOPIC else self._planning.calls
                    for row in rows:
                        self._channels[topic].log(_encode(row), sink_id=client)
                elif topic == DIAGNOSTICS_CHANNEL and self._statuses:
                    statuses = {"statuses": list(self._statuses.values())}
                    self._channels[topic].log(_encode(statuses), sink_id=client)
                elif topic == LATCH_TOPIC:
                    self._channels[topic].log(_encode(self._latch()), sink_id=client)
                elif topic == ROBOT_POSE_TOPIC and self._route.route.pose is not None:
                    self._pose_channel.log(pose_msg(self._route.route.pose, self.options.frame_id), sink_id=client)
                elif topic == ROBOT_PATH_TOPIC:
                    self._path_channel.log(path_msg(self._route.route.points, self.options.frame_id), sink_id=client)

    def _diagnostics(self) -> list[Status]:
        with self._lock:
            sent = dict(self._sent)
        values = {"url": f"ws://{self.options.host}:{self.port}", **{k: str(v) for k, v in sent.items()}}
        problems = []
        ws_problem = listening(self.options.host, self.port)
        if ws_problem:
            problems.append(f"the WebSocket server on port {self.port} does not answer ({ws_problem})")
        if self.page is not None:
            values["page"] = self.page.url
            if not self.page.serving():
                problems.append(f"the monitor page server on port {self.page.port} stopped")
        if problems:
            server = Status("foxglove server", Level.ERROR, "; ".join(problems), values)
        else:
            server = Status("foxglove server", Level.OK, f"serving on ws://{self.options.host}:{self.port}", values)
        return [follower_status(self.follower.version(), self.follower.problem(), 0, 0), server]

    def destroy_node(self) -> None:
        self.server.stop()
        if self.page is not None:
            self.page.stop()
        super().destroy_node()


def listening(host: str, port: int, timeout_s: float = 1.0) -> str:
    """Whether a TCP connection to `host`:`port` (this machine's loopback for a wildcard host) is accepted: "" if
    so, else why not (a server that stopped listening, or a process out of file handles)."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    try:
        with socket.create_connection((target, port), timeout=timeout_s):
            return ""
    except OSError as error:
        return str(error) or type(error).__name__


def _status_json(status: Status) -> dict[str, Any]:
    return {
        "name": status.name,
        "level": status.level.name,
        "message": status.message,
        "hardware_id": status.hardware_id,
        "values": dict(status.values),
    }


def main(args: list[str] | None = None) -> None:
    run_nodes("foxglove_bridge", lambda: [FoxgloveBridge()], args)
