"""`/diagnostics` from a node: its statuses (sayplan_core.diagnostics) as diagnostic_msgs/DiagnosticArray, about 1 Hz.

Follows diagnostic_updater's conventions (github.com/ros/diagnostics, diagnostic_updater), so the diagnostics
aggregator and rqt_robot_monitor read it as any ROS driver's: the absolute topic `/diagnostics` (a namespaced
node still reports there), a publisher of depth 1, reliable and volatile, each status named `<node name>: <check>`,
the header stamped with the node's clock, one array per period. The period runs on the steady clock
(sayplan_ros.clocks), in its own callback group; the node's callable must only read state it holds.

A slow check (the planner's LLM probe: seconds against an unreachable server) never runs in that callback:
`BackgroundProbe` runs it on its own thread every `period_s`, and the status reports the last result with its age
(STALE once it is older than a bound).

A managed node (sayplan_ros.lifecycle) publishes in every lifecycle state, its `lifecycle` status first: a node that
refused to configure or activate says why there.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from lifecycle_msgs.msg import State
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node

from sayplan_core.diagnostics import Level, Status, lifecycle_status, llm_status
from sayplan_core.llm.selection import LlmConfig, LlmProbe, probe_llm
from sayplan_ros.clocks import steady_timer
from sayplan_ros.lifecycle import ManagedNode
from sayplan_ros.qos import DIAGNOSTICS_QOS

#: The topic diagnostic_updater publishes on (absolute: the aggregator listens there).
DIAGNOSTICS_TOPIC = "/diagnostics"
#: diagnostic_updater's default period, seconds.
DIAGNOSTICS_PERIOD_S = 1.0
#: how often `publish_now` looks whether a subscriber was matched while it may wait for one, seconds
MATCH_POLL_S = 0.05
#: How often the planner probes its LLM, and the longest one probe may take, seconds.
LLM_PROBE_PERIOD_S = 60.0
LLM_PROBE_TIMEOUT_S = 5.0

T = TypeVar("T")


def status_to_msg(status: Status, prefix: str = "") -> DiagnosticStatus:
    """One status on the wire; `prefix` (the node's name) goes before its name as `prefix: name`."""
    return DiagnosticStatus(
        level=bytes([int(status.level)]),
        name=f"{prefix}: {status.name}" if prefix else status.name,
        message=status.message,
        hardware_id=status.hardware_id,
        values=[KeyValue(key=k, value=v) for k, v in status.values.items()],
    )


def msg_to_status(msg: DiagnosticStatus, prefix: str = "") -> Status:
    """Back from the wire (tests, tools); `prefix: ` is taken off the name when given. An unknown level is STALE."""
    raw = msg.level if isinstance(msg.level, int) else int.from_bytes(bytes(msg.level), "little")
    name = msg.name.removeprefix(f"{prefix}: ") if prefix else msg.name
    level = Level(raw) if raw in {int(known) for known in Level} else Level.STALE
    return Status(name, level, msg.message, {kv.key: kv.value for kv in msg.values}, msg.hardware_id)


_STATE_LABELS = {
    State.PRIMARY_STATE_UNCONFIGURED: "unconfigured",
    State.PRIMARY_STATE_INACTIVE: "inactive",
    State.PRIMARY_STATE_ACTIVE: "active",
    State.PRIMARY_STATE_FINALIZED: "finalized",
}


def lifecycle_of(node: ManagedNode) -> Status:
    """A managed node's lifecycle state, and why its last transition failed."""
    state = node.lifecycle_state()
    return lifecycle_status(_STATE_LABELS.get(state, "transitioning"), node.transition_error)


class DiagnosticsPublisher:
    """Publishes `statuses()` on /diagnostics every `period_s` (steady clock). A callable that raises is reported as
    one ERROR status (the node keeps running, and the array says why its checks are missing)."""

    def __init__(
        self,
        node: Node,
        statuses: Callable[[], Sequence[Status]],
        period_s: float = DIAGNOSTICS_PERIOD_S,
        hardware_id: str = "",
        use_fqn: bool = False,
    ) -> None:
        self._node = node
        self._statuses = statuses
        self.hardware_id = hardware_id
        # diagnostic_updater's `use_fqn`: the node's full name (namespace too) instead of its bare name
        self.prefix = node.get_fully_qualified_name().lstrip("/") if use_fqn else node.get_name()
        self._publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, DIAGNOSTICS_QOS)
        self._timer = steady_timer(node, period_s, self.publish, MutuallyExclusiveCallbackGroup())

    def collect(self) -> list[Status]:
        try:
            found = [lifecycle_of(self._node)] if isinstance(self._node, ManagedNode) else []
            found += self._statuses()
        except Exception as exc:  # a bug in a check must not silence the node's diagnostics, nor kill it
            self._node.get_logger().error(f"diagnostics failed: {exc!r}\n{traceback.format_exc()}")
            found = [Status("diagnostics", Level.ERROR, f"the node's checks failed: {exc!r}")]
        return found

    def publish(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = self._node.get_clock().now().to_msg()
        for status in self.collect():
            if not status.hardware_id and self.hardware_id:
                status = Status(status.name, status.level, status.message, status.values, self.hardware_id)
            array.status.append(status_to_msg(status, self.prefix))
        self._publisher.publish(array)

    def publish_now(self, acked_within_s: float, matched_within_s: float = 0.0) -> bool:
        """Publish at once and wait up to `acked_within_s` for every subscriber to have it: for a status the node
        sends just before its program ends (a start-up that failed). From a plain thread, never a callback: with
        `matched_within_s`, it first waits that long for a subscriber to be matched at all (a stack that fails
        within its first seconds may end before discovery matched a monitor, which then heard nothing; nobody
        listening costs that wait). True when all acknowledged."""
        deadline = time.monotonic() + matched_within_s
        while self._publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(MATCH_POLL_S)
        self.publish()
        return bool(self._publisher.wait_for_all_acked(Duration(seconds=acked_within_s)))

    def destroy(self) -> None:
        self._node.destroy_timer(self._timer)
        self._node.destroy_publisher(self._publisher)


class BackgroundProbe(Generic[T]):
    """Runs a slow check (`probe()`, blocking, bounded by its own timeout) on its own daemon thread every `period_s`
    (the first after `first_after_s`) and keeps the last result with the steady time it ended; a result found
    elsewhere can be `record`ed. `latest()` never waits."""

    def __init__(
        self,
        name: str,
        probe: Callable[[], T],
        period_s: float,
        failed: Callable[[Exception], T],
        first_after_s: float = 0.0,
    ) -> None:
        self._probe = probe
        self._failed = failed  # what a probe that raised found (a bug in it must not end the probing)
        self._period = period_s
        self._first_after = first_after_s
        self._lock = threading.Lock()
        self._result: T | None = None
        self._at: float | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"probe {name}", daemon=True)
        self._thread.start()

    def latest(self) -> tuple[T | None, float | None]:
        """The last result and its age, seconds (None, None before the first probe ended)."""
        with self._lock:
            result, at = self._result, self._at
        return result, None if at is None else time.monotonic() - at

    def record(self, result: T) -> None:
        """A result found elsewhere (the same check made by someone else), as if probed now."""
        with self._lock:
            self._result, self._at = result, time.monotonic()

    def _run(self) -> None:
        if self._first_after > 0:
            self._wake.wait(self._first_after)
            self._wake.clear()
        while not self._stop.is_set():
            try:
                result = self._probe()
            except Exception as exc:
                result = self._failed(exc)
            self.record(result)
            self._wake.wait(self._period)  # a plain thread of its own, never an executor callback
            self._wake.clear()

    def stop(self, timeout_s: float = 1.0) -> None:
        """Stop probing; a probe under way is not waited for beyond `timeout_s` (the thread is a daemon)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)


class LlmWatch:
    """The planner's LLM reachability: `probe_llm` (no tokens spent) on its own thread every LLM_PROBE_PERIOD_S,
    reported as the `LLM backend` status; STALE when the last probe is older than two periods and a timeout.

    The first probe is the planner's own at activation (`record`ed here), so an LLM server sees one probe when the
    planner comes up, not two at once; the watch's own start one period after configure (or `first_after_s`)."""

    def __init__(self, config: LlmConfig, period_s: float = LLM_PROBE_PERIOD_S, first_after_s: float = -1.0) -> None:
        self._stale_after = 2 * period_s + LLM_PROBE_TIMEOUT_S
        self._probe = BackgroundProbe(
            "llm",
            lambda: probe_llm(config, LLM_PROBE_TIMEOUT_S),
            period_s,
            lambda exc: LlmProbe(False, config.backend, f"the probe failed: {exc!r}"),
            period_s if first_after_s < 0 else first_after_s,
        )

    def record(self, probe: LlmProbe) -> None:
        self._probe.record(probe)

    @staticmethod
    def statuses(watch: LlmWatch | None) -> list[Status]:
        """[its status], or none without a watch (an unconfigured planner: its lifecycle status says so)."""
        return [] if watch is None else [watch.status()]

    def status(self) -> Status:
        probe, age = self._probe.latest()
        return llm_status(probe, age, self._stale_after)

    def stop(self) -> None:
        self._probe.stop()
