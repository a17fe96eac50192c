"""/diagnostics over DDS: what a subscriber (as the diagnostics aggregator or rqt_robot_monitor) hears from each node.

The publisher follows diagnostic_updater's conventions (absolute `/diagnostics`, `<node>: <check>` names, depth 1
reliable); a slow check never holds the publishing timer; the planner reports an unreachable LLM with the probe's
words; the skill server its fault latch; the Franka base a lost ARCL link; the scene graph server its version.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from test_fault_latch import skill
from transcripts import GOOD_PLAN, say, write_transcript

from sayplan_core.diagnostics import Level, Status
from sayplan_core.envs import load_env
from sayplan_core.llm.selection import LlmConfig, LlmProbe, probe_llm
from sayplan_core.outcomes import SkillCode
from sayplan_interfaces.msg import GraphUpdate
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.conversions import node_to_msg
from sayplan_ros.diagnostics import BackgroundProbe, DiagnosticsPublisher, LlmWatch, msg_to_status
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer

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


@pytest.mark.serial  # alone: bounds the publisher in seconds
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


# ----------------------------------------------------------------------------- the stack's nodes
def closed_port() -> int:
    """A local TCP port nobody listens on (bound, then closed: connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_planner_reports_an_unreachable_llm_with_the_probes_words(ros: Any, monitor: Monitor) -> None:
    port = closed_port()
    params = [Parameter("llm", value="ollama"), Parameter("base_url", value=f"http://127.0.0.1:{port}")]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params), bring_up=False)
    waiting = monitor.wait(ros, "planner: lifecycle", lambda s: True, "the unconfigured planner's status")
    assert waiting.level is Level.WARN and waiting.values["state"] == "unconfigured"
    assert monitor.last("planner: LLM backend") is None  # nothing to probe before configure
    planner.trigger_configure()
    before = monitor.wait(ros, "planner: LLM backend", lambda s: True, "the configured planner's LLM status")
    assert before.level is Level.STALE and before.message == "not probed yet"  # the first probe is activate's
    expected = probe_llm(LlmConfig(backend="ollama", base_url=f"http://127.0.0.1:{port}"), 5.0)  # the oracle
    assert not expected.ok
    planner.trigger_activate()  # refused: no LLM answers
    refused = monitor.wait(ros, "planner: lifecycle", lambda s: s.level is Level.ERROR, "the refused activation")
    assert refused.values["state"] == "inactive" and "cannot activate" in refused.message, refused
    status = monitor.wait(ros, "planner: LLM backend", lambda s: s.level is not Level.STALE, "the LLM probe")
    assert status.level is Level.ERROR, status
    assert expected.detail in status.message and f"127.0.0.1:{port}" in status.message
    assert status.values["backend"] == "ollama" and status.values["reachable"] == "false"


def test_planner_reports_the_replay_backend_ok(ros: Any, monitor: Monitor, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.json", say("plan", plan=GOOD_PLAN))
    ros.add(
        PlannerNode(context=ros.context, parameter_overrides=[Parameter("replay_transcript", value=str(transcript))])
    )
    status = monitor.wait(ros, "planner: LLM backend", lambda s: s.level is not Level.STALE, "the LLM probe")
    assert status.level is Level.OK and status.values["backend"] == "replay", status
    assert str(transcript) in status.message


def test_the_fault_latch_is_an_error_until_clear_fault(ros: Any, monitor: Monitor) -> None:
    params = [Parameter("failures", value="goto:pose8:estopped"), Parameter("skill_delay_s", value=0.0)]
    sim = ros.add(SimSkillServer(context=ros.context, parameter_overrides=params))
    monitor.wait(ros, "sim_skill_server: fault latch", lambda s: s.level is Level.OK, "no fault latched")
    _status, outcome = skill(ros, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.ESTOPPED, outcome.error_msg
    latched = monitor.wait(ros, "sim_skill_server: fault latch", lambda s: s.level is Level.ERROR, "the latch")
    assert latched.values["code"] == "estopped" and latched.values["step"] == "goto(pose8)"
    assert sim.clear_fault_service in latched.values["clear with"]
    assert ros.clear_fault(sim).success
    monitor.wait(ros, "sim_skill_server: fault latch", lambda s: s.level is Level.OK, "the latch cleared")


def test_a_lost_arcl_link_is_an_error(ros: Any, monitor: Monitor, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.franka_robot import FakeRobot, robot_parameters, send_skill, start_fakes

    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    ros.add(SceneGraphServer(context=ros.context))
    fakes = start_fakes(ros, "arcl")
    arcl = fakes["arcl"]
    try:
        monkeypatch.setenv("SAYPLAN_ARCL_PASSWORD", arcl.password)
        server = FrankaOmronSkillServer(context=ros.context, parameter_overrides=robot_parameters("arcl", fakes))
        robot = FakeRobot(ros.add(server), fakes["gripper"], fakes["arm"], arcl)
        name = "franka_omron_skill_server: base link"
        ros.wait_for(lambda: server._graph.latest()[0] is not None, what="the scene graph")
        _status, outcome = send_skill(ros, robot, "goto", "pose8")  # connects to the base
        assert outcome.error_code == 0, outcome.error_msg
        up = monitor.wait(ros, name, lambda s: s.level is Level.OK, "the link up")
        assert f"127.0.0.1:{arcl.port}" in up.message and up.values["last line"] != "never"
        arcl.drop_connections()  # the base rebooted, or the network went away
        lost = monitor.wait(ros, name, lambda s: s.level is Level.ERROR, "the link lost")
        assert "lost" in lost.message and "closed the connection" in lost.message, lost
    finally:
        arcl.close()


def test_the_graph_version_follows_updates(ros: Any, monitor: Monitor) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    name = "scene_graph_server: scene graph"
    first = monitor.wait(ros, name, lambda s: True, "the graph status")
    version = int(first.values["version"])
    assert version == server.version and first.values["epoch"] == str(server.epoch)
    client = ros.node("writer").create_client(ApplyGraphUpdate, "apply_graph_update")
    office = load_env("office")
    orange = node_to_msg(office.nodes["orange"], "fridge", "inside_of")  # moved into the fridge
    answer = ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(source="test", upsert=[orange])))
    assert answer.success, answer.message
    after = monitor.wait(ros, name, lambda s: int(s.values["version"]) > version, "the next version")
    assert int(after.values["version"]) == answer.version == version + 1
    assert after.values["nodes"] == first.values["nodes"] == str(len(office))


def test_spot_reports_its_session_lease_and_a_lost_link(
    ros: Any, monitor: Monitor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt")
    from fakes.spot import FakeSpot
    from fakes.spot.harness import login, spot_skill_server
    from fakes.spot.office import office, office_world

    with FakeSpot.running(tmp_path, office_world(office())) as spot:
        login(monkeypatch, spot)
        with spot_skill_server(ros, spot, tmp_path):
            prefix = "spot_skill_server: "
            link = monitor.wait(ros, prefix + "robot link", lambda s: s.level is Level.OK, "the session")
            assert link.values["time sync"] == "established" and link.values["host"] == "127.0.0.1"
            monitor.wait(ros, prefix + "lease", lambda s: s.level is Level.OK, "the lease held")
            motors = monitor.wait(ros, prefix + "motors", lambda s: True, "the motors")
            assert motors.message == "on" and motors.level is Level.OK
            spot.failing["RetainLease"] = lambda _request: True  # the robot stops answering the keep-alive
            lost = monitor.wait(ros, prefix + "robot link", lambda s: s.level is Level.ERROR, "the link lost")
            assert "lease check-ins do not reach Spot" in lost.message, lost
            del spot.failing["RetainLease"]
            monitor.wait(ros, prefix + "robot link", lambda s: s.level is Level.OK, "the link back")
            spot.world.steal_lease("tablet-operator")  # the operator takes control on the tablet
            taken = monitor.wait(ros, prefix + "lease", lambda s: s.level is Level.ERROR, "the lease lost")
            assert taken.values["held"] == "false", taken


def test_the_executor_names_the_servers_it_cannot_see(ros: Any, monitor: Monitor, tmp_path: Path) -> None:
    from sayplan_ros.executor_node import ExecutorNode

    ros.add(ExecutorNode(context=ros.context))
    name = "executor: executor"
    alone = monitor.wait(ros, name, lambda s: True, "the executor's status")
    assert alone.level is Level.WARN and alone.values["task"] == "idle"
    assert alone.values["missing servers"] == "apply_graph_update, describe_skills, execute_skill, plan_task"
    ros.add(SceneGraphServer(context=ros.context))
    ros.add(SimSkillServer(context=ros.context))
    fewer = monitor.wait(ros, name, lambda s: s.values["missing servers"] == "plan_task", "the servers found")
    assert fewer.level is Level.WARN and "no server for plan_task" in fewer.message
    transcript = write_transcript(tmp_path / "t.json", say("plan", plan=GOOD_PLAN))
    ros.add(
        PlannerNode(context=ros.context, parameter_overrides=[Parameter("replay_transcript", value=str(transcript))])
    )
    every = monitor.wait(ros, name, lambda s: s.level is Level.OK, "every server found")
    assert every.values["missing servers"] == "none"


def test_the_llm_watch_probes_on_its_own_after_the_first_period() -> None:
    """After activation's probe, the watch probes again every period on its own thread: an LLM that goes away
    while the planner runs is reported without a goal."""
    port = closed_port()
    watch = LlmWatch(LlmConfig(backend="ollama", base_url=f"http://127.0.0.1:{port}"), period_s=0.2)
    try:
        watch.record(LlmProbe(True, "ollama", "answered at activation"))
        assert watch.status().level is Level.OK
        deadline = time.monotonic() + 10.0
        while watch.status().level is Level.OK and time.monotonic() < deadline:
            time.sleep(0.05)
        status = watch.status()
        assert status.level is Level.ERROR and f"127.0.0.1:{port}" in status.message, status
    finally:
        watch.stop()


# ----------------------------------------------------------------------------- every node publishes
def test_the_path_planner_reports_its_graph_copy_and_answers(ros: Any, monitor: Monitor) -> None:
    """Found as a new user: path_planner published nothing on /diagnostics."""
    from sayplan_interfaces.srv import PlanPath
    from sayplan_ros.path_planner_node import PathPlannerNode

    paths = ros.add(PathPlannerNode(context=ros.context))
    waiting = monitor.wait(ros, "path_planner: scene graph copy", lambda s: True, "the path planner's status")
    assert waiting.level is Level.WARN and waiting.values["version"] == "0"
    ros.add(SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value="office")]))
    ros.wait_for(lambda: paths.version > 0, what="the path planner's first graph")
    client = ros.node("asker").create_client(PlanPath, "plan_path")
    assert ros.call(client, PlanPath.Request(start="kitchen", goal="cafeteria")).success
    assert not ros.call(client, PlanPath.Request(start="kitchen", goal="atlantis")).success
    status = monitor.wait(ros, "path_planner: scene graph copy", lambda s: s.values["refused"] == "1", "the count")
    assert status.level is Level.OK and status.values["answered"] == "1", status


def test_perception_reports_its_fusion_and_its_graph_copy(ros: Any, monitor: Monitor) -> None:
    """Found by a hostile review: perception published nothing on /diagnostics, although every node of the stack
    is said to. Before any frame: nothing fused, its graph copy WARN until the server's graph arrives, then OK."""
    from sayplan_ros.perception_node import PerceptionNode

    ros.add(PerceptionNode(context=ros.context))
    fusion = monitor.wait(ros, "perception: perception", lambda s: True, "perception's status")
    assert fusion.level is Level.OK and fusion.values["frames fused"] == "0", fusion
    assert fusion.values["updates waiting"] == "0", fusion
    waiting = monitor.wait(ros, "perception: scene graph copy", lambda s: True, "perception's graph copy")
    assert waiting.level is Level.WARN and waiting.values["version"] == "0", waiting
    ros.add(SceneGraphServer(context=ros.context, parameter_overrides=[Parameter("env", value="office")]))
    copy = monitor.wait(ros, "perception: scene graph copy", lambda s: s.values["version"] != "0", "the graph")
    assert copy.level is Level.OK, copy


@pytest.mark.serial  # alone: the monitor's discovery races the stack's 3 s and 1 s waits
def test_a_stack_whose_llm_is_dead_says_why_on_diagnostics_before_it_exits(ros: Any, monitor: Monitor) -> None:
    """Found as a new user: a dead LLM at start-up showed no ERROR on /diagnostics before the stack exited 2
    (only stderr said why); the lifecycle manager published nothing at all."""
    import os
    import shutil
    import subprocess

    stack = shutil.which("sayplan_stack")
    if stack is None:
        pytest.skip("sayplan_stack is not on PATH: run through `make test`")
    dead = f"http://127.0.0.1:{closed_port()}"
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    args = [stack, "--ros-args", "-p", "planner:llm:=ollama", "-p", f"planner:base_url:={dead}"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    name = "lifecycle_manager: managed nodes"

    def errors() -> list[Status]:  # heard while the stack ran: it acknowledged delivery before exiting
        return [s for s in list(monitor.heard.get(name, [])) if s.level is Level.ERROR]

    # a hang guard: the message was acknowledged before the stack exited, this process may just be slow to read it
    ros.wait_for(lambda: bool(errors()), timeout=30.0, what=f"an ERROR on '{name}' (last: {monitor.last(name)})")
    heard = errors()
    assert "planner" in heard[-1].message and dead.removeprefix("http://") in heard[-1].message, heard[-1]
