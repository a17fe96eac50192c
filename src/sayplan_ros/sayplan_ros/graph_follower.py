"""Keep a node's copy of the live scene graph in step: full graphs on `scene_graph`, patches on
`scene_graph_updates`, and a `get_scene_graph` fetch when an update went missing.

The bookkeeping (versions, buffering, gaps) is sayplan_core.graph.replica; this class
only connects it to the topics and the service. A version that cannot be taken is
logged at error and kept as `problem()`, so the owner refuses to plan on a stale copy.

Whom it trusts: the topics are open to any peer on the domain, so a full graph or an update is taken from a topic
only while the server node (`scene_graph_server`, in this node's namespace) is its only publisher there; with
another publisher on it, the message is logged and the copy refetched from `get_scene_graph` instead. Each start
of the server has a new epoch: a full graph of another epoch replaces the copy whatever its version (a restarted
server may be at a lower one), and an update of another epoch is not patched in but makes the copy refetch.
While two nodes claim to be the server (two named `scene_graph_server` in the namespace, or another node offering
`get_scene_graph`), neither is trusted: the copy is out of sync (`problem()`, so planners refuse to plan on it and
/diagnostics says why) until one server is left, and then the graph is fetched again from it, since the copy may
have come from the other. Full graphs come from fetches only (one on the topic is a hint to fetch), and a fetched
graph is taken only once the server confirms that it answered a fetch with it (its version and the digest of the
message, sayplan_ros/served_graphs.py): a node that offered get_scene_graph for a moment, answered the fetch and
left before the rival check looked is found out, and the graph fetched again. Every
FETCH_RETRY_S the follower asks the server for its version and epoch alone (`version_only`): a copy from another
start, or ahead of the server, is fetched again. An update whose version the copy already holds, but whose
content differs from the one applied under that version, makes the copy fetch too (a rogue's update got in
first). SROS2 enclaves keep other peers off these topics altogether (docs/concepts/trust.md).

Threads: the copy is patched in place under this class's lock, in time proportional to what each update touches
(sayplan_core.graph.updates). So what `latest`, `graph_at` and `wait_for_version` return is never the live copy
but a snapshot of it (sayplan_core.graph.snapshots): a copy taken the first time a version is asked for and shared
by every later caller of that version, which never changes under a plan or a skill. A copy costs O(graph), once per
version read (about once per goal). `reading()` lends the live copy for a short read under the lock, without one
(the path planner per request, perception per frame); `version()` reads the version alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.replica import GraphReplica
from sayplan_core.graph.snapshots import GraphSnapshots
from sayplan_core.graph.updates import GraphUpdate
from sayplan_interfaces.msg import GraphUpdate as GraphUpdateMsg
from sayplan_interfaces.msg import SceneGraph as SceneGraphMsg
from sayplan_interfaces.srv import GetSceneGraph
from sayplan_ros.clocks import steady_timer
from sayplan_ros.conversions import WIRE_LAYOUT, msg_to_graph, msg_to_update
from sayplan_ros.goals import call_when
from sayplan_ros.guard import guarded
from sayplan_ros.names import absolute_name
from sayplan_ros.qos import GRAPH_UPDATES_QOS, LATCHED_STATE_QOS
from sayplan_ros.rivals import offerers, server_count
from sayplan_ros.served_graphs import graph_digest, message_digest

KEPT_DIGESTS = 256  # update versions whose content is remembered, to tell a second, different one
FETCH_RETRY_S = 2.0  # a get_scene_graph call unanswered this long is sent again (until a graph arrives)
#: a copy behind the server this long on the follower's clock, at the same version, with the server already ahead
#: of it at the first sighting, lost an update: it is fetched (reliable DDS repairs a lost sample within ~3 s)
LOST_UPDATE_S = 5.0
SERVER_NODE = "scene_graph_server"  # the only node whose full graphs and updates a follower takes from a topic


_RIVALS = f"more than one node claims to be {SERVER_NODE}"
_REFETCH = f"fetching the scene graph again from {SERVER_NODE}"


@dataclass(frozen=True, eq=False)
class _Fetched:
    """A fetched graph waiting for the server's confirmation: its version, its digest and the message."""

    version: int
    digest: bytes
    msg: SceneGraphMsg


class GraphFollower:
    """Subscribes for `node`; `latest()` returns the newest graph taken and its version."""

    def __init__(
        self,
        node: Node,
        callback_group: Any = None,
        on_change: Callable[[SceneGraph, GraphUpdate | None], None] | None = None,
    ) -> None:
        """on_change: called with the live copy after each update applied to it, or None for a full graph that
        replaced it (GraphReplica.on_change), under this class's lock: it must be short and call nothing here."""
        self._node = node
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified whenever the copy changes (or a waiter must look)
        self._ready_waiters: list[tuple[int, Callable[[], None]]] = []  # (version, callback) of `when_ready`
        self._replica = GraphReplica(on_change=on_change)
        self._snapshots = GraphSnapshots()  # what readers get: the live copy changes in place
        self._epoch = 0  # of the server start the copy comes from (0: none yet)
        self._fetches = 0
        self._fetching: tuple[Future, float] | None = None  # the get_scene_graph call in flight, and when it was sent
        self._want_full = False  # a full graph is wanted until one is fetched
        self._checking: tuple[Future, float] | None = None  # the version_only call in flight, and when it was sent
        #: (epoch, the copy's version, the server's, when) at the first check that found the server ahead of it
        self._behind: tuple[int, int, int, float] | None = None
        self._unconfirmed: _Fetched | None = None  # a fetched graph the server has not confirmed yet (not taken)
        self._confirming: tuple[Future, float, _Fetched] | None = None  # the confirm call in flight
        self._applied: dict[int, bytes] = {}  # digest of the update applied under each recent version
        steady_timer(node, FETCH_RETRY_S, self._retry_fetch, callback_group)
        self._impostors: set[str] = set()  # publishers already reported (one error line each)
        self._claim = ""  # why the copy cannot be trusted now: two servers claim the name, or it is being refetched
        self._refused = 0  # messages not taken: from another publisher than the server, or another epoch
        self._fetch = node.create_client(GetSceneGraph, "get_scene_graph", callback_group=callback_group)
        node.create_subscription(
            SceneGraphMsg,
            "scene_graph",
            guarded(node, "scene_graph", self._on_graph),
            LATCHED_STATE_QOS,
            callback_group=callback_group,
        )
        node.create_subscription(
            GraphUpdateMsg,
            "scene_graph_updates",
            guarded(node, "scene_graph_updates", self._on_update),
            GRAPH_UPDATES_QOS,
            callback_group=callback_group,
        )

    # ------------------------------------------------------------------ incoming
    def _on_graph(self, msg: SceneGraphMsg) -> None:
        """A full graph on the topic is a hint, never taken: the copy is fetched from get_scene_graph, whose one
        server is checked when it answers. A message cannot be traced to the writer that sent it (rclpy's message
        info has no publisher id), and a rogue that published under the server's name and left at once was
        taken for the server, for good (its version made every real update look old)."""
        self._trusted("scene_graph")  # says who else publishes there, once
        with self._lock:  # a hint of what the copy holds already (a late hint after the first fetch) asks nothing
            held = self._replica.graph is not None and self._epoch == int(msg.epoch)
            held = held and self._replica.version >= int(msg.version) and not self._claim and not self._replica.problem
        if not held:
            self._request_full()

    def _trusted(self, topic: str) -> bool:
        """Only the server node publishes on `topic` (see the module docstring); else log who else does."""
        namespace = self._node.get_namespace()
        publishers = self._node.get_publishers_info_by_topic(absolute_name(self._node, topic))
        others = {
            f"{p.node_namespace.rstrip('/')}/{p.node_name}"
            for p in publishers
            if not (p.node_name == SERVER_NODE and p.node_namespace == namespace)
        }
        servers = sum(1 for p in publishers if p.node_name == SERVER_NODE and p.node_namespace == namespace)
        if servers > 1:
            others.add(f"{servers} nodes named {SERVER_NODE}")
        if not others:
            return True
        with self._lock:
            self._refused += 1
        new = others - self._impostors
        if new:
            self._impostors |= new
            self._node.get_logger().error(
                f"'{topic}' has publishers besides {SERVER_NODE}: {', '.join(sorted(new))}; their messages are not "
                "taken: the scene graph copy is fetched from get_scene_graph instead"
            )
        return False

    def _take_full(self, msg: SceneGraphMsg, where: str) -> None:
        version = int(msg.version)
        epoch = int(msg.epoch)
        try:
            graph = msg_to_graph(msg, require_agent=False)  # the server's rules; planners check the agent
        except Exception as exc:  # untrusted input: anything the loader cannot take (deep JSON included)
            with self._lock:
                self._replica.refuse_full(version, str(exc) or repr(exc))
                problem = self._replica.problem
            self._node.get_logger().error(f"{problem} (from {where})")
            return
        with self._lock:
            if epoch != self._epoch:  # the server (re)started: its graph replaces the copy, whatever the versions
                if self._epoch:
                    self._node.get_logger().warning(
                        f"scene_graph_server restarted (new epoch, version {version}); the copy is replaced"
                    )
                stats = self._replica.stats
                self._replica = GraphReplica(on_change=self._replica.on_change)
                self._replica.stats = stats  # counted over the follower's life, not one start of the server
                self._epoch = epoch
                self._applied.clear()  # another start numbers its updates anew
            fetch = self._replica.take_full(graph, version, owned=True)  # read from the message: the copy's own
            ready = self._changed_locked()
        self._call(ready)
        if fetch:
            self._request_full()

    def _on_update(self, msg: GraphUpdateMsg, again: bool = False) -> None:
        if not again and not self._trusted("scene_graph_updates"):
            self._request_full()
            return
        with self._lock:
            other_epoch = int(msg.epoch) != self._epoch
        if not other_epoch and self._diverges(msg):
            return
        if not other_epoch:
            try:
                update = msg_to_update(msg)
            except Exception as exc:  # untrusted input
                self._node.get_logger().error(f"cannot read scene graph update {msg.version}: {exc!r}")
                self._request_full()
                return
            with self._lock:  # the epoch again, in the lock that takes the update: a new start's graph may have
                other_epoch = int(msg.epoch) != self._epoch  # replaced the copy while the message was read
                if not other_epoch:
                    fetch = self._replica.take_update(update, int(msg.version))
                    problem = self._replica.problem
                    ready = self._changed_locked()
        if other_epoch:  # from another start of the server than the copy's: fetch its graph, do not patch
            with self._lock:
                first = self._epoch == 0
            # unless a fetched graph of that start was confirmed and taken since the message was read: then it is
            # patched in, or found held already, as if it came now (a second fetch raced the first one's take)
            if not self._request_full(unless_epoch=int(msg.epoch)) and not again:
                self._on_update(msg, again=True)
                return
            with self._lock:
                self._refused += 1
            start = "before the first scene graph" if first else "from another start of scene_graph_server"
            self._node.get_logger().warning(f"scene graph update {msg.version} is {start}; fetching its graph")
            return
        self._call(ready)
        if fetch:
            self._node.get_logger().warning(f"{problem}; fetching the full scene graph")
            self._request_full()

    def _diverges(self, msg: GraphUpdateMsg) -> bool:
        """Whether the update's version came before with other content (a rogue's update got in first, or this
        one is the rogue's): then the copy is fetched again. Each version's first content is kept (the last
        KEPT_DIGESTS versions); the server's history replays the same content, which passes."""
        version = int(msg.version)
        digest = message_digest(msg)
        with self._lock:
            seen = self._applied.setdefault(version, digest)
            while len(self._applied) > KEPT_DIGESTS:
                del self._applied[min(self._applied)]
            if seen == digest:
                return False
        self._distrust(f"scene graph update {version} came twice with different content: one is not the server's")
        return True

    def _distrust(self, why: str) -> None:
        """The copy may not be the server's: it is out of sync (planners wait) until a fetched graph replaces
        it, whatever that graph's version (the epoch is forgotten, so the next full graph is taken whole)."""
        with self._lock:
            self._refused += 1
            self._epoch = 0
            self._unconfirmed = None
            self._claim = f"{_REFETCH}: {why}"
            changed = self._changed_locked()
        self._call(changed)
        self._node.get_logger().error(f"{why}; fetching the scene graph again")
        self._request_full()

    def _request_full(self, unless_epoch: int | None = None) -> bool:
        """One get_scene_graph call in flight at a time; its answer is taken like a latched full graph. A call
        that is not answered within FETCH_RETRY_S (a request sent while the server restarted is lost) is given up
        and sent again by the retry timer, until a graph arrives. While a fetched graph waits for the server's
        confirmation nothing is fetched again: once confirmed and taken, the copy asks for more if it still lacks
        something (a gap after its version), and a graph that is not confirmed is fetched again anyway.
        unless_epoch: nothing is asked if the copy is of that server start now (checked in the same lock as the
        rest); returns False then, True otherwise (a fetch sent, in flight or waiting for its confirmation)."""
        with self._lock:
            if unless_epoch is not None and unless_epoch == self._epoch:
                return False
            if self._unconfirmed is not None:
                return True
            self._want_full = True
            if self._fetching is not None and time.monotonic() - self._fetching[1] < FETCH_RETRY_S:
                return True
            stale = self._fetching
            self._fetching = None
        if stale is not None:
            self._fetch.remove_pending_request(stale[0])
        if not self._fetch.service_is_ready():
            self._node.get_logger().error("get_scene_graph is not available; the scene graph copy stays out of sync")
            return True
        future = self._fetch.call_async(GetSceneGraph.Request(layout=WIRE_LAYOUT))  # one payload, built once
        with self._lock:
            self._fetching = (future, time.monotonic())
            self._fetches += 1
        future.add_done_callback(guarded(self._node, "get_scene_graph answer", self._on_fetched))
        return True

    def _retry_fetch(self) -> None:
        self._check_claims()
        with self._lock:
            wanted, unconfirmed = self._want_full, self._unconfirmed is not None
        if wanted:
            self._request_full()
        elif unconfirmed:
            self._confirm()
        else:
            self._check_version()

    def _check_version(self) -> None:
        """Ask the server for its version and epoch alone (no nodes): a copy of another start, or ahead of the
        server, did not come from it, and is fetched again."""
        with self._lock:
            if self._replica.graph is None:
                return
            if self._checking is not None and time.monotonic() - self._checking[1] < FETCH_RETRY_S:
                return
            stale = self._checking  # unanswered (a server that went mid-call): given up, or checks stop for good
            self._checking = None
        if stale is not None:
            self._fetch.remove_pending_request(stale[0])
        if not self._fetch.service_is_ready():
            return
        future = self._fetch.call_async(GetSceneGraph.Request(version_only=True))
        with self._lock:
            self._checking = (future, time.monotonic())
        future.add_done_callback(guarded(self._node, "get_scene_graph version", self._on_version))

    def _on_version(self, future: Future) -> None:
        with self._lock:
            if self._checking is not None and self._checking[0] is future:
                self._checking = None
        answer = future.result()
        if answer is None or not answer.success or not self._sole_service():
            return
        served = int(answer.graph.version)
        with self._lock:
            held, epoch = self._replica.version, self._epoch
            ours = int(answer.graph.epoch) == epoch and served >= held
            lost = False
            if ours and served > held:
                # behind: its updates are on their way, unless the copy is still at this version LOST_UPDATE_S
                # after a check that already found the server past it (an update dropped while a fetched graph
                # waited for its confirmation left a copy behind for good, with no update to come to show a gap)
                first = self._behind
                if first is None or first[:2] != (epoch, held):
                    self._behind = (epoch, held, served, time.monotonic())
                else:
                    lost = time.monotonic() - first[3] >= LOST_UPDATE_S and held < first[2]
            else:
                self._behind = None
            if lost:
                self._behind = None
        if ours:
            if lost:
                self._node.get_logger().warning(
                    f"the scene graph copy stayed at version {held} for {LOST_UPDATE_S:g} s while the server was "
                    f"past it (now at {served}): an update was lost; fetching the full scene graph"
                )
                self._request_full()
            return
        self._distrust(
            f"the scene graph copy (version {held}) is not the server's (version {int(answer.graph.version)}, "
            f"{'the same' if int(answer.graph.epoch) == epoch else 'another'} start)"
        )

    def _check_claims(self) -> None:
        """Every FETCH_RETRY_S: whether more than one node claims to be the server. When the claim is resolved,
        the graph is fetched again from the one server left (the copy may have come from the other one)."""
        claim = self._rival_servers()
        with self._lock:
            before = self._claim
            rivals = before.startswith(_RIVALS)
            if claim:
                self._claim = claim
                changed = self._changed_locked()  # waiters look again: the copy is no longer in sync
            elif rivals:
                self._claim = f"{_REFETCH}: another node claimed to be {SERVER_NODE} while the copy was taken"
                self._epoch = 0  # whatever version the server's graph has, it replaces the copy
                changed = self._changed_locked()
            else:
                changed = []
        self._call(changed)
        if claim and claim != before:
            self._node.get_logger().error(f"{claim}: neither is trusted until one is left")
        elif rivals and not claim:
            self._node.get_logger().warning(f"one {SERVER_NODE} again: fetching its scene graph")
            self._request_full()

    def _rival_servers(self) -> str:
        """'' when at most one node claims to be the server; else who claims it (the problem's text)."""
        namespace = self._node.get_namespace()
        nodes = self._node.get_node_names_and_namespaces()
        named = sum(1 for name, ns in nodes if name == SERVER_NODE and ns == namespace)
        claims = [f"{named} nodes named {SERVER_NODE}"] if named > 1 else []
        server = f"{namespace.rstrip('/')}/{SERVER_NODE}"
        listed = offerers(self._node, "get_scene_graph")
        claims += [f"{name} offers get_scene_graph" for name in listed if name != server]
        hidden = (server_count(self._node, "get_scene_graph") or 0) - len(listed)
        if hidden > 0:  # a process can hide its nodes from the ROS graph, not the endpoints (sayplan_ros/rivals.py)
            claims.append(f"{hidden} server(s) of get_scene_graph that no node lists")
        return f"{_RIVALS}: {'; '.join(claims)}" if claims else ""

    def _on_fetched(self, future: Future) -> None:
        with self._lock:
            if self._fetching is not None and self._fetching[0] is future:
                self._fetching = None
        response = future.result()
        if response is None or not response.success:
            self._node.get_logger().error("get_scene_graph failed; the scene graph copy stays out of sync")
            return
        if not self._sole_service():
            return  # the retry timer asks again; a copy from an impostor is never taken
        with self._lock:  # taken once the server confirms it served it: the node that answered may be another
            self._want_full = False
            self._unconfirmed = _Fetched(int(response.graph.version), graph_digest(response.graph), response.graph)
        self._confirm()

    def _confirm(self) -> None:
        """Ask the server whether it answered a fetch with the graph fetched (its version and digest): the node
        that answered may have left before `_sole_service` looked (docs/concepts/trust.md). One call in flight; one
        unanswered for FETCH_RETRY_S is sent again by the retry timer."""
        with self._lock:
            pending = self._unconfirmed
            if pending is None:
                return
            if self._confirming is not None and time.monotonic() - self._confirming[1] < FETCH_RETRY_S:
                return
            stale = self._confirming
            self._confirming = None
        if stale is not None:
            self._fetch.remove_pending_request(stale[0])
        if not self._fetch.service_is_ready():
            return
        request = GetSceneGraph.Request(
            version_only=True, confirm_version=pending.version, confirm_digest=list(pending.digest)
        )
        future = self._fetch.call_async(request)
        with self._lock:
            self._confirming = (future, time.monotonic(), pending)
        future.add_done_callback(guarded(self._node, "get_scene_graph confirmation", self._on_confirmed))

    def _on_confirmed(self, future: Future) -> None:
        with self._lock:
            asked = None
            if self._confirming is not None and self._confirming[0] is future:
                asked = self._confirming[2]
                self._confirming = None
        answer = future.result()
        if asked is None or answer is None or not answer.success or not self._sole_service():
            return  # the retry timer asks again (or a newer fetch is being confirmed)
        with self._lock:
            if self._unconfirmed is not asked:
                return
            self._unconfirmed = None
        if answer.confirmed and int(answer.graph.epoch) == int(asked.msg.epoch):
            self._take_full(asked.msg, "get_scene_graph")
            with self._lock:  # cleared after the take: the distrusted copy is never in sync in between
                if self._claim.startswith(_REFETCH):
                    self._claim = ""
                changed = self._changed_locked()
            self._call(changed)
            return
        self._distrust(
            f"the scene graph fetched at version {asked.version} is not one {SERVER_NODE} served: another node "
            "answered the fetch"
        )

    def _sole_service(self) -> bool:
        """Only one node, the server, offers get_scene_graph (a peer that made the follower refetch by publishing on
        its topics, or one that took the server's name, must not answer the fetch with a graph of its own)."""
        claim = self._rival_servers()
        if not claim:
            return True
        with self._lock:
            self._refused += 1
            new = claim not in self._impostors
            self._impostors.add(claim)
            self._claim = claim
        if new:
            self._node.get_logger().error(f"{claim}: the get_scene_graph answer is not taken")
        return False

    def server_present(self) -> bool:
        """The server node publishes the scene graph (a planner must not plan on the copy of a server that is gone)."""
        namespace = self._node.get_namespace()
        publishers = self._node.get_publishers_info_by_topic(absolute_name(self._node, "scene_graph"))
        return any(p.node_name == SERVER_NODE and p.node_namespace == namespace for p in publishers)

    # ------------------------------------------------------------------ for the owner
    def _changed_locked(self) -> list[Callable[[], None]]:
        """With the lock held, after the copy changed: wake the blocked waiters and take the `when_ready`
        callbacks whose version the copy now holds (called by `_call` once the lock is released)."""
        self._changed.notify_all()
        ready = [callback for version, callback in self._ready_waiters if self._ready_for(version)]
        self._ready_waiters = [(v, c) for v, c in self._ready_waiters if not self._ready_for(v)]
        return ready

    @staticmethod
    def _call(callbacks: list[Callable[[], None]]) -> None:
        for callback in callbacks:
            callback()

    def when_ready(self, version: int, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` once (from the thread that took the graph) when the copy holds `version` or a newer one
        and is in sync, at once if it does now; returns the function that unregisters it. What a coroutine awaits
        instead of looking at the copy again and again (`sayplan_ros.goals.Wakeup`)."""
        return call_when(
            self._lock, self._ready_waiters, (version, callback), lambda: self._ready_for(version), callback
        )

    def wake_waiters(self) -> None:
        """Make every blocked `wait_for_version` look at its stop condition now (its goal was canceled)."""
        with self._changed:
            self._changed.notify_all()

    def wait_for_version(
        self, version: int, timeout: float, stop: Callable[[], bool] = lambda: False
    ) -> tuple[SceneGraph | None, int]:
        """Block the calling thread (an action's execute callback, on a multi-threaded executor) until the copy
        holds `version` or a newer one and is in sync, `timeout` passed or `stop()` holds; then `latest()`. It
        wakes when the copy changes and on `wake_waiters` (the owner calls it when `stop()` may have changed)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self._ready_for(version) and not stop():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return self._snapshot_locked(), self._replica.version

    def graph_at(self, version: int) -> SceneGraph | None:
        """A snapshot of the copy if it holds `version` or a newer one and knows of no gap, else None."""
        with self._lock:
            return self._snapshot_locked() if self._ready_for(version) else None

    def _snapshot_locked(self) -> SceneGraph | None:
        graph = self._replica.graph
        return None if graph is None else self._snapshots.of(graph, self._replica.version)

    def _ready_for(self, version: int) -> bool:
        replica = self._replica
        return replica.graph is not None and replica.version >= version and not replica.problem and not self._claim

    def latest(self) -> tuple[SceneGraph | None, int]:
        """A snapshot of the copy (it never changes; see the module docstring) and its version."""
        with self._lock:
            return self._snapshot_locked(), self._replica.version

    def version(self) -> int:
        """The copy's version (0 before the first graph), without taking a snapshot."""
        with self._lock:
            return self._replica.version

    @contextmanager
    def reading(self) -> Iterator[SceneGraph | None]:
        """The live copy (None before the first graph), locked against updates until the block ends: for a short
        read that keeps nothing of it. The block must not change the graph, wait on anything nor call this
        follower's other methods (the lock is not re-entrant)."""
        with self._lock:
            yield self._replica.graph

    def epoch(self) -> int:
        """The epoch of the server start the copy comes from (0: no copy yet)."""
        with self._lock:
            return self._epoch

    def problem(self) -> str:
        """Why the copy is out of sync with the server, or '' when it is not (as far as it knows)."""
        with self._lock:
            return self._replica.problem or self._claim

    def stats(self) -> dict[str, int]:
        with self._lock:
            # fetches: get_scene_graph calls sent, whatever asked for them (a gap, an update from an unknown start
            # of the server, an untrusted topic); the replica's own count only knows gaps
            return {**self._replica.stats, "fetches": self._fetches, "refused": self._refused}
