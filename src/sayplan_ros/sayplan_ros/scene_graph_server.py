"""scene_graph_server: owns the live 3D scene graph and serves it over ROS 2.

Every accepted update bumps the version and is published on `scene_graph_updates`
(reliable, latched with a history) with the version it produced; followers patch
their copy. The full graph is published latched on `scene_graph` at start-up (each start is a new epoch) and,
only if `full_graph_every` is set, every that many updates; a follower that joins late or missed an update fetches
it from `get_scene_graph`, so by default no full graph is broadcast after the first.

RViz markers go on `scene_graph_markers` (reliable, latched with a history: MARKERS_QOS): the whole drawing
(DELETEALL first) whenever a new subscriber matches, and after each update or plan change only
the markers it changed (ADD by the node's stable id, DELETE for what went; sayplan_core.viz.markers.MarkerCache),
so an update costs what it touched here too. RViz keeps markers by (namespace, id), so a viewer that has the
whole drawing and every change since shows the graph; one that joins late gets the whole drawing when it matches
(the latched changes it may get first are cleared by it). While nobody subscribes, nothing is drawn. Services:
`get_scene_graph`, `apply_graph_update` (atomic, validated like a loaded file; a
refused update keeps the graph), `verify_plan` (registered action sets only) and
`graph_view` (collapse / expand / contract).

Crash safety: with `journal_dir` set, every accepted update is journaled and fsynced before it is published
(sayplan_core.graph.journal; one the journal cannot record is taken back out of the graph), and a restart resumes
at the last version. Each start has a new `epoch`, carried by every full graph and update, so followers know to
refetch instead of patching a copy from before.

Threads: the graph is changed in place by each update (sayplan_core.graph.updates.apply_in_place, time
proportional to what it touches) under the node's lock; services that keep the graph past the lock (a fetch, a
view, a verify) read a snapshot taken once per version (sayplan_core.graph.snapshots), never the live graph.

Trust: requests are checked like files are; a message never names a host file;
no request can end the node (errors are answered, and logged).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from typing import Any

from rclpy.node import Node
from rclpy.qos import QoSProfile

try:  # Iron and later (Humble's has no matched event: the subscriber count is watched instead)
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import PublisherEventCallbacks  # type: ignore[no-redef,import-not-found,unused-ignore]
from visualization_msgs.msg import MarkerArray

from sayplan_core.diagnostics import Status, graph_status, journal_status
from sayplan_core.envs import load_env
from sayplan_core.graph import limits
from sayplan_core.graph.journal import GraphJournal, JournalError
from sayplan_core.graph.model import GraphError, SceneGraph
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.updates import apply_in_place
from sayplan_core.graph.views import GraphView as CoreView
from sayplan_core.node_options import SceneGraphServerOptions
from sayplan_core.sim.action_set import ActionSet, ActionSetError, builtin_action_sets, load_action_set
from sayplan_core.sim.simulator import inserted_lines, verify_plan
from sayplan_core.viz.markers import MarkerCache, MarkerChanges, remaining_path
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import Plan
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import ApplyGraphUpdate, GetSceneGraph, GraphView, VerifyPlan
from sayplan_ros.conversions import (
    WIRE_LAYOUT,
    check_layout,
    graph_to_msg,
    marker_changes_to_msg,
    msg_to_update,
    steps_from_msgs,
)
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.guard import guarded, guarded_service
from sayplan_ros.parameters import declare_options
from sayplan_ros.qos import GRAPH_UPDATES_QOS, LATCHED_STATE_QOS, MARKERS_QOS
from sayplan_ros.runner import run_nodes
from sayplan_ros.served_graphs import DIGEST_BYTES, ServedGraphs, graph_digest


class SceneGraphServer(Node):
    """Holds one SceneGraph; every change goes through apply_in_place and bumps the version."""

    def __init__(self, node_name: str = "scene_graph_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        options = declare_options(self, SceneGraphServerOptions)
        env = options.env
        self._frame_id = options.frame_id
        self._full_every = options.full_graph_every
        files = [f.strip() for f in options.action_set_files.split(",") if f.strip()]
        self._action_sets = self._register_action_sets(files)
        self._lock = threading.Lock()  # held while the graph changes; readers past it take a snapshot
        self._served = ServedGraphs()  # digests of the whole graphs fetches were answered with
        self._snapshots = GraphSnapshots()
        allow_no_agent = options.allow_no_agent
        self._graph: SceneGraph = load_env(env, require_agent=not allow_no_agent)
        if self._graph.agent_id is None and not allow_no_agent:
            raise GraphError(
                f"{env}: the graph has no agent node; the robot must be in the graph it plans on "
                "(set allow_no_agent to serve a map without it)"
            )
        self._version = 1
        self._origin = env
        self._journal: GraphJournal | None = None
        journal_dir = options.journal_dir
        resumed = ""
        if journal_dir:
            self._journal = GraphJournal(journal_dir, options.journal_compact_every)
            recovered = self._journal.recover(env, require_agent=not allow_no_agent)
            if recovered is not None:
                self._graph, self._version, replayed = recovered
                resumed = f"; resumed from the journal in {journal_dir} ({replayed} update(s) replayed)"
            self._journal.start(self._graph, self._version, env)
            if recovered is not None and recovered[2]:  # a server that keeps crashing must not grow the journal
                self._journal.snapshot(self._graph, self._version, env)
        #: new at every start: a follower holding a copy from an earlier start refetches instead of patching it
        self.epoch = secrets.randbits(62) + 1
        self._publisher = self.create_publisher(SceneGraphMsg, "scene_graph", LATCHED_STATE_QOS)
        updates_qos = QoSProfile(depth=options.update_history)
        for policy in ("history", "reliability", "durability"):
            setattr(updates_qos, policy, getattr(GRAPH_UPDATES_QOS, policy))
        self._updates = self.create_publisher(GraphUpdateMsg, "scene_graph_updates", updates_qos)
        self._markers = MarkerCache()
        self._wire_payload: tuple[int, Any] | None = None  # (version, its graph as the wire's payload)
        self._drawn = False  # whether the cache holds the live graph's drawing (only while a viewer looks)
        self._plan_nodes: list[str] = []  # the active plan's remaining path, drawn with the graph
        self._marker_pub = self._marker_publisher()
        self.create_subscription(Plan, "active_plan", guarded(self, "active_plan", self._on_plan), LATCHED_STATE_QOS)
        self.create_service(GraphView, "graph_view", guarded_service(self, self._on_view, GraphView.Response))
        self.create_service(
            GetSceneGraph, "get_scene_graph", guarded_service(self, self._on_get, GetSceneGraph.Response)
        )
        self.create_service(
            ApplyGraphUpdate, "apply_graph_update", guarded_service(self, self._on_update, ApplyGraphUpdate.Response)
        )
        self.create_service(VerifyPlan, "verify_plan", guarded_service(self, self._on_verify, VerifyPlan.Response))
        self._journal_problem = ""  # why the last snapshot failed, for /diagnostics
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)
        self._publish_full()
        self.get_logger().info(
            f"serving '{self._graph.name}' ({len(self._graph)} nodes) from {env} as version {self._version}{resumed}; "
            f"action sets: {', '.join(sorted(self._action_sets))}"
        )

    @staticmethod
    def _register_action_sets(files: list[str]) -> dict[str, ActionSet]:
        """The bundled action sets plus the files configured at start-up, by name: all a request may name."""
        sets = {name: load_action_set(name) for name in builtin_action_sets()}
        for path in files:
            if not path.endswith((".yaml", ".yml")):
                raise ValueError(f"action_set_files: '{path}' is not a .yaml file")
            action_set = load_action_set(path)
            sets[action_set.name] = action_set
        return sets

    @property
    def graph(self) -> SceneGraph:
        """A snapshot of the live graph (it never changes; the live one does, in place)."""
        with self._lock:
            return self._snapshot_locked()

    def _snapshot_locked(self) -> SceneGraph:
        return self._snapshots.of(self._graph, self._version)

    @property
    def version(self) -> int:
        return self._version

    # ------------------------------------------------------------------ publishing
    def _full_msg(self) -> SceneGraphMsg:
        """The latched full graph: one payload, as followers fetch it (followers take it as a hint to fetch; a
        viewer or a bag reads it with conversions.msg_to_graph)."""
        msg = self._wire_msg(self._graph, self._version)
        msg.epoch = self.epoch
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        return msg

    def _wire_msg(self, graph: SceneGraph, version: int) -> SceneGraphMsg:
        """The whole graph at `version` as one payload, written once per version: the start-up graph and every
        follower's fetch of it share the text (at 10k nodes, 0.2 s each)."""
        cached = self._wire_payload
        if cached is None or cached[0] != version:
            cached = (version, graph_to_msg(graph, version, WIRE_LAYOUT).payload)
            if self._wire_payload is None or self._wire_payload[0] < version:  # a slow fetch keeps a newer one
                self._wire_payload = cached
        msg = SceneGraphMsg(version=int(version), name=graph.name, layout=WIRE_LAYOUT)
        msg.payload = cached[1]
        return msg

    def _publish_full(self) -> None:
        self._publisher.publish(self._full_msg())
        self._drawn = False
        self._publish_markers(self._markers.current)

    def _publish_markers(self, change: Callable[[], MarkerChanges], viewers: bool = False) -> None:
        """Bring the drawing up to date with `change` and send what changed, while anyone views it. With no
        viewer the drawing is let go, and drawn whole again when one comes: at 10k nodes, drawing the start-up
        graph and building its messages was most of the stack's start, for nobody. viewers: one just matched."""
        if not viewers and self._marker_pub.get_subscription_count() == 0:
            self._drawn = False
            return
        changes = change() if self._drawn else self._markers.redraw(self._graph, self._plan_nodes)
        self._drawn = True
        if changes:
            stamp = self.get_clock().now().to_msg()
            self._marker_pub.publish(marker_changes_to_msg(changes, self._frame_id, stamp))

    def _marker_publisher(self) -> Any:
        """The markers' publisher, which sends the whole drawing again when a new viewer matches."""
        try:
            events = PublisherEventCallbacks(matched=guarded(self, "marker subscriber matched", self._on_marker_match))
        except TypeError:  # Humble: no matched event; a cheap timer watches the subscriber count instead
            self._viewers: set[bytes] = set()
            self.create_timer(1.0, guarded(self, "marker subscribers", self._watch_viewers))
            return self.create_publisher(MarkerArray, "scene_graph_markers", MARKERS_QOS)
        return self.create_publisher(MarkerArray, "scene_graph_markers", MARKERS_QOS, event_callbacks=events)

    def _on_marker_match(self, info: Any) -> None:  # QoSPublisherMatchedInfo
        # total, not current: a viewer that leaves as another comes nets a current change of 0
        if info.total_count_change > 0:  # a new viewer: it has at most the latched last change
            self._redraw_for_viewer()

    def _watch_viewers(self) -> None:
        """Humble: a subscriber endpoint not seen at the last look is a new viewer (a count misses one that
        replaced another between two looks)."""
        topic = self._marker_pub.topic_name
        seen = {bytes(info.endpoint_gid) for info in self.get_subscriptions_info_by_topic(topic)}
        if seen - self._viewers:
            if self._marker_pub.get_subscription_count() < len(seen):
                return  # listed before the publisher matched it: a drawing now would reach nobody; look again
            self._redraw_for_viewer()
        self._viewers = seen

    def _redraw_for_viewer(self) -> None:
        """The whole drawing for a viewer that just matched, whatever the subscriber count says yet (it comes
        from another discovery path than the matched event)."""
        with self._lock:
            self._publish_markers(self._markers.current, viewers=True)

    def _on_plan(self, msg: Plan) -> None:
        """Highlight the remaining navigation of the active plan (only the plan's line is redrawn)."""
        with self._lock:
            steps = [(s.action, s.target) for s in msg.steps]
            try:
                plan_nodes = remaining_path(self._graph, steps, msg.current_step)
            except GraphError as exc:
                self.get_logger().warning(f"cannot draw the active plan: {exc}")
                plan_nodes = []
            self._plan_nodes = plan_nodes
            self._publish_markers(lambda: self._markers.set_plan(self._graph, plan_nodes))

    # ------------------------------------------------------------------ services
    def _on_view(self, request: GraphView.Request, response: GraphView.Response) -> GraphView.Response:
        try:
            limits.check_count(len(request.expanded), limits.MAX_UPDATE_ITEMS, "GraphView.expanded")
        except limits.InputLimitError as exc:
            response.success, response.message = False, str(exc)
            return response
        with self._lock:
            graph = self._snapshot_locked()
        view = CoreView(graph)
        try:
            for node_id in request.expanded:
                view.expand(node_id)
            if request.operation == "collapse":
                view.collapse()
            elif request.operation == "expand":
                view.expand(request.node_id)
            elif request.operation == "contract":
                view.contract(request.node_id)
            else:
                raise GraphError(f"unknown operation '{request.operation}' (collapse, expand or contract)")
        except GraphError as exc:
            response.success, response.message = False, str(exc)
            response.expanded = list(request.expanded)
            return response
        response.success, response.message = True, f"{len(view.visible_ids())} nodes visible"
        response.expanded = list(view.expanded)
        response.visible_ids = sorted(view.visible_ids())
        response.text = view.text()
        return response

    def _on_get(self, request: GetSceneGraph.Request, response: GetSceneGraph.Response) -> GetSceneGraph.Response:
        try:
            limits.check_count(len(request.node_ids), limits.MAX_UPDATE_ITEMS, "GetSceneGraph.node_ids")
            limits.check_ids(request.node_ids, "GetSceneGraph.node_ids")
            limits.check_count(len(request.confirm_digest), DIGEST_BYTES, "GetSceneGraph.confirm_digest bytes")
            check_layout(request.layout, "GetSceneGraph")
        except (limits.InputLimitError, GraphError) as exc:
            response.success, response.message = False, str(exc)
            return response
        with self._lock:
            version = self._version
            if request.version_only:
                response.graph.version, response.graph.epoch = version, self.epoch
                response.success, response.message = True, f"version {version}"
                if request.confirm_digest:
                    digest = bytes(request.confirm_digest)
                    response.confirmed = self._served.confirms(int(request.confirm_version), digest)
                return response
            try:  # a subgraph is a new graph (O(what it holds)); the whole graph is a snapshot
                view = self._graph.subgraph(request.node_ids) if request.node_ids else self._snapshot_locked()
            except GraphError as exc:
                response.success, response.message = False, str(exc)
                return response
        if request.layout == WIRE_LAYOUT and not request.node_ids:
            response.graph = self._wire_msg(view, version)
        else:
            response.graph = graph_to_msg(view, version, request.layout)
        response.graph.epoch = self.epoch
        response.graph.header.frame_id = self._frame_id
        if not request.node_ids:  # a follower confirms a whole graph it fetched (sayplan_ros/served_graphs.py)
            self._served.record(version, graph_digest(response.graph))
        response.success, response.message = True, f"{len(view)} nodes"
        return response

    def _on_update(
        self, request: ApplyGraphUpdate.Request, response: ApplyGraphUpdate.Response
    ) -> ApplyGraphUpdate.Response:
        with self._lock:
            response.version = self._version
            base = request.update.base_version
            if base and base != self._version:
                response.success = False
                response.message = f"stale update: computed against version {base}, graph is at {self._version}"
                return response
            try:
                update = msg_to_update(request.update)
                applied = apply_in_place(self._graph, update)  # refused: the graph is as it was
            except (GraphError, ValueError) as exc:
                return self._refuse(response, exc)
            if self._journal is not None:  # on disk before anyone hears of it
                try:
                    self._journal.append(self._version + 1, update)
                except BaseException as exc:  # not on disk, so not applied: the graph goes back as it was
                    applied.rollback()
                    if not isinstance(exc, (GraphError, ValueError)):  # JournalError is a GraphError
                        raise
                    return self._refuse(response, exc)
            self._version += 1
            self._compact_if_due()
            response.success, response.version = True, self._version
            response.message = f"applied update from {request.update.source or 'unknown'}"
            published = request.update
            published.base_version, published.version, published.epoch = self._version - 1, self._version, self.epoch
            published.header.stamp = self.get_clock().now().to_msg()
            self._updates.publish(published)
            if self._full_every and self._version % self._full_every == 0:
                self._publisher.publish(self._full_msg())
            self._publish_markers(lambda: self._markers.update(self._graph, update))
        return response

    def _refuse(self, response: ApplyGraphUpdate.Response, why: Exception) -> ApplyGraphUpdate.Response:
        response.success, response.message = False, f"update refused: {why}"
        self.get_logger().warning(response.message)
        return response

    def _compact_if_due(self) -> None:
        if self._journal is None or not self._journal.compact_due():
            return
        try:
            self._journal.snapshot(self._graph, self._version, self._origin)
            self._journal_problem = ""
        except JournalError as exc:  # the update is journaled already; the journal only grows until this works
            self._journal_problem = f"{exc}; the journal keeps growing until a snapshot can be written"
            self.get_logger().error(self._journal_problem)

    def _diagnostics(self) -> list[Status]:
        with self._lock:
            version, nodes = self._version, len(self._graph)
        folder = str(self._journal.folder) if self._journal is not None else ""
        return [graph_status(version, self.epoch, nodes, folder), journal_status(folder, self._journal_problem)]

    def destroy_node(self) -> None:
        if self._journal is not None:
            self._journal.close()
        super().destroy_node()

    def _on_verify(self, request: VerifyPlan.Request, response: VerifyPlan.Response) -> VerifyPlan.Response:
        try:
            limits.check_count(len(request.plan), limits.MAX_PLAN_STEPS, "VerifyPlan.plan")
            limits.check_ids([text for step in request.plan for text in (step.action, step.target)], "VerifyPlan.plan")
        except limits.InputLimitError as exc:
            response.success, response.failed_step, response.feedback = False, -1, str(exc)
            return response
        name = request.action_set.strip() or "sayplan"
        action_set = self._action_sets.get(name)
        if action_set is None:
            response.success, response.failed_step = False, -1
            response.feedback = f"unknown action set '{name[:80]}' (registered: {', '.join(sorted(self._action_sets))})"
            return response
        with self._lock:
            graph = self._snapshot_locked()
        steps = steps_from_msgs(request.plan)
        try:
            result = verify_plan(graph, steps, action_set)
        except ActionSetError as exc:
            response.success, response.failed_step, response.feedback = False, -1, str(exc)
            return response
        response.success = result.success
        response.failed_step = -1 if result.failed_step is None else result.failed_step
        response.feedback = result.feedback
        if result.success and result.inserted:  # an auto-inserting set: the caller must see what it added
            response.feedback = f"{result.feedback}; inserted: {'; '.join(inserted_lines(result, steps))}"
        return response


def main(args: list[str] | None = None) -> None:
    run_nodes("scene_graph_server", lambda: [SceneGraphServer()], args)
