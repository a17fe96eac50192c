"""/diagnostics over DDS: what a subscriber (as the diagnostics aggregator or rqt_robot_monitor) hears from each node.

The publisher follows diagnostic_updater's conventions (absolute `/diagnostics`, `<node>: <check>` names, depth 1
reliable); a slow check never holds the publishing timer; the planner reports an unreachable LLM with the probe's
words; the skill server its fault latch; the Franka base a lost ARCL link; the scene graph server its version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from sayplan_core.diagnostics import Level, Status
from sayplan_ros.diagnostics import BackgroundProbe, DiagnosticsPublisher, msg_to_status

pytestmark = pytest.mark.ros


class Monitor:
    """A /diagnostics subscriber (depth 10, reliable, as the aggregator's) keeping every status heard, by name."""

    def __init__(self, ros: Any, name: str = "monitor") -> None:
        self._lock = threading.Lock()
        self.heard: dict[str, list[Status]] = {}
        self.arrays: list[DiagnosticArray] = []
        node = ros.node(name)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_array, QoSProfile(depth=10))

    def _on_array(self, array: DiagnosticArray) -> None:
        with self._lock:
            self.arrays.append(array)
            for msg in array.status:
                self.heard.setdefault(msg.name, []).append(msg_to_status(msg))

    def last(self, name: str) -> Status | None:
        with self._lock:
            statuses = self.heard.get(name)
            return statuses[-1] if statuses else None

    def wait(self, ros: Any, name: str, check: Callable[[Status], bool], what: str, timeout: float = 15.0) -> Status:
        """The first status named `name` heard from now on for which `check` holds."""
        with self._lock:
            start = len(self.heard.get(name, []))

        def found() -> Status | None:
            with self._lock:
                return next((s for s in self.heard.get(name, [])[start:] if check(s)), None)

        try:
            ros.wait_for(lambda: found() is not None, timeout=timeout, what=what)
        except AssertionError:
            raise AssertionError(f"{what}: last heard on '{name}': {self.last(name)}") from None
        status = found()
        assert status is not None
        return status


@pytest.fixture
def monitor(ros: Any) -> Iterator[Monitor]:
    yield Monitor(ros)


# ----------------------------------------------------------------------------- the publisher itself
def test_statuses_follow_diagnostic_updater_conventions(ros: Any, monitor: Monitor) -> None:
    node = ros.node("checked")  # in no namespace: the topic is absolute anyway
    namespaced = ros.add(rclpy.create_node("checked", namespace="/robot2", context=ros.context))
    statuses = [
        Status("link", Level.OK, "up", {"address": "10.0.0.2:7171"}),
        Status("latch", Level.ERROR, "fault latched", {"code": "estopped"}, "arm-7"),
    ]
    DiagnosticsPublisher(node, lambda: statuses, hardware_id="base-1")
    DiagnosticsPublisher(namespaced, lambda: statuses[:1], use_fqn=True)
    link = monitor.wait(ros, "checked: link", lambda s: True, "the node's link status")
    assert link == Status("checked: link", Level.OK, "up", {"address": "10.0.0.2:7171"}, "base-1")
    latch = monitor.wait(ros, "checked: latch", lambda s: True, "the node's latch status")
    assert latch.level is Level.ERROR and latch.hardware_id == "arm-7"  # its own id is kept
    monitor.wait(ros, "robot2/checked: link", lambda s: True, "the namespaced node's status, by its full name")
    # the wire levels are diagnostic_msgs' bytes
    wire = {s.name: s.level for array in list(monitor.arrays) for s in array.status}
    assert wire["checked: latch"] == DiagnosticStatus.ERROR and wire["checked: link"] == DiagnosticStatus.OK
    publishers = node.get_publishers_info_by_topic("/diagnostics")  # DDS discovery carries no depth
    assert len(publishers) == 2
    assert all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in publishers)
    assert all(p.qos_profile.durability == DurabilityPolicy.VOLATILE for p in publishers)


def test_a_check_that_raises_is_an_error_status_and_the_node_lives(ros: Any, monitor: Monitor) -> None:
    node = ros.node("buggy")
    calls = [0]

    def statuses() -> list[Status]:
        calls[0] += 1
        if calls[0] % 2:
            raise KeyError("no such robot")
        return [Status("link", Level.OK, "up")]

    DiagnosticsPublisher(node, statuses, period_s=0.2)
    failed = monitor.wait(ros, "buggy: diagnostics", lambda s: True, "the failed check")
    assert failed.level is Level.ERROR and "no such robot" in failed.message
    monitor.wait(ros, "buggy: link", lambda s: s.level is Level.OK, "the next, working check")


def test_a_slow_probe_never_holds_the_publisher(ros: Any, monitor: Monitor) -> None:
    """A probe that takes 3 s (an LLM server that does not answer) runs on its own thread: the node keeps
    publishing at its period, STALE 'not probed yet' until the probe ends, then the probe's result with its age."""
    node = ros.node("prober")
    release = threading.Event()

    def probe() -> str:
        release.wait(3.0)
        return "answered"

    background = BackgroundProbe("slow", probe, 60.0, lambda exc: f"failed: {exc}")

    def statuses() -> list[Status]:
        result, age = background.latest()
        if result is None or age is None:
            return [Status("probe", Level.STALE, "not probed yet")]
        return [Status("probe", Level.OK, f"{result} {age:.1f} s ago")]

    try:
        DiagnosticsPublisher(node, statuses, period_s=0.2)
        started = time.monotonic()
        monitor.wait(ros, "prober: probe", lambda s: s.level is Level.STALE, "a status while the probe runs")
        ros.wait_for(lambda: len(monitor.heard.get("prober: probe", [])) >= 3, what="three arrays during the probe")
        assert time.monotonic() - started < 3.0, "the publisher waited for the probe"
        release.set()
        done = monitor.wait(ros, "prober: probe", lambda s: s.level is Level.OK, "the probe's result")
        assert done.message.startswith("answered")
    finally:
        release.set()
        background.stop()


def test_a_probe_that_raises_keeps_probing(ros: Any) -> None:
    runs = [0]

    def probe() -> str:
        runs[0] += 1
        if runs[0] == 1:
            raise ConnectionResetError("reset by peer")
        return "ok"

    background = BackgroundProbe("flaky", probe, 0.05, lambda exc: f"failed: {exc}")
    try:
        ros.wait_for(lambda: background.latest()[0] == "ok", what="the probe after the one that raised")
        assert runs[0] >= 2
    finally:
        background.stop()
