"""foxglove_bridge over a real WebSocket: a client speaking the Foxglove protocol as Foxglove and Lichtblick do.

The bridge and scene_graph_server run in-process on the test's own DDS domain; the client (websockets, subprotocol
`foxglove.sdk.v1`) reads the advertised channels, subscribes to all of them and decodes each message with the
schema the channel advertised (protobuf for the scene, JSON for the rest). Timings are printed, never asserted.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip("foxglove", reason="foxglove-sdk is not installed: pip install -r requirements/monitor.txt")

from diagnostic_msgs.msg import DiagnosticArray
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from rclpy.parameter import Parameter
from websockets.sync.client import ClientConnection, connect

from sayplan_core.diagnostics import Level, Status
from sayplan_core.envs import load_env
from sayplan_interfaces.msg import ExecutionEvent, GraphUpdate, Plan, PlanStep
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.conversions import node_to_msg
from sayplan_ros.diagnostics import DIAGNOSTICS_TOPIC, status_to_msg
from sayplan_ros.foxglove_bridge import FoxgloveBridge
from sayplan_ros.qos import DIAGNOSTICS_QOS, EVENTS_QOS, LATCHED_STATE_QOS
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros

SUBPROTOCOL = "foxglove.sdk.v1"
#: hang guards only: a loaded machine must pass, so these are far above what a run takes
WAIT_S = 60.0


class FoxgloveClient:
    """Subscribes to every advertised channel and decodes what arrives with the channel's own schema."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.server_info = self._op("serverInfo")
        self.channels = {c["topic"]: c for c in self._op("advertise")["channels"]}
        self._decoders: dict[int, tuple[str, Any]] = {}
        subscriptions = []
        for number, channel in enumerate(self.channels.values()):
            self._decoders[number] = (channel["topic"], self._decoder(channel))
            subscriptions.append({"id": number, "channelId": channel["id"]})
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))
        self.received: dict[str, list[Any]] = {topic: [] for topic in self.channels}

    def _op(self, op: str) -> dict[str, Any]:
        while True:
            frame = self.ws.recv(timeout=WAIT_S)
            if isinstance(frame, str) and json.loads(frame).get("op") == op:
                return dict(json.loads(frame))

    @staticmethod
    def _decoder(channel: dict[str, Any]) -> Any:
        if channel["encoding"] == "json":
            return json.loads
        assert channel["encoding"] == "protobuf" and channel["schemaEncoding"] == "protobuf"
        files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
        pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            pool.Add(file)
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"])).FromString

    def until(self, topic: str, predicate: Any, what: str) -> Any:
        """Read frames until a message on `topic` satisfies `predicate`; that message."""
        deadline = time.monotonic() + WAIT_S
        for message in self.received[topic]:
            if predicate(message):
                return message
        while time.monotonic() < deadline:
            frame = self.ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            if isinstance(frame, str) or frame[0] != 0x01:  # a JSON op, or a binary op other than message data
                continue
            subscription, _log_time = struct.unpack_from("<IQ", frame, 1)
            name, decode = self._decoders[subscription]
            message = decode(bytes(frame[13:]))
            self.received[name].append(message)
            if name == topic and predicate(message):
                return message
        raise AssertionError(f"no {what} on {topic} within {WAIT_S} s")


def viewer(port: int) -> ClientConnection:
    return connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], open_timeout=WAIT_S)


def test_a_foxglove_client_gets_the_graph_then_only_changes_and_the_plan(ros: Any) -> None:
    started = time.perf_counter()
    server = ros.add(SceneGraphServer(context=ros.context))
    any_ports = [Parameter("port", value=0), Parameter("page_port", value=0)]  # the monitor page's too
    bridge = ros.add(FoxgloveBridge(context=ros.context, parameter_overrides=any_ports))
    ros.wait_for(lambda: bridge.follower.version() > 0, timeout=WAIT_S, what="the bridge's copy of the graph")
    assert bridge.options.host == "127.0.0.1"  # the default binding: this machine only
    with viewer(bridge.port) as ws:
        client = FoxgloveClient(ws)
        assert client.ws.subprotocol == SUBPROTOCOL
        assert client.server_info["capabilities"] == []  # a viewer can publish nothing, call nothing, set nothing
        schemas = {topic: (c["encoding"], c["schemaName"]) for topic, c in client.channels.items()}
        assert schemas == {
            "/scene_graph": ("protobuf", "foxglove.SceneUpdate"),
            "/plan": ("json", "sayplan.Plan"),
            "/plan_events": ("json", "sayplan.ExecutionEvent"),
            "/diagnostics": ("json", "sayplan.Diagnostics"),
            "/fault_latch": ("json", "sayplan.FaultLatch"),
            "/robot_pose": ("protobuf", "foxglove.PoseInFrame"),
            "/robot_path": ("protobuf", "foxglove.PosesInFrame"),
            "/planner_steps": ("json", "sayplan.PlannerStep"),
            "/llm_calls": ("json", "sayplan.LlmCall"),
        }
        first = client.until("/scene_graph", lambda m: len(m.entities) > 0, "the whole scene")
        connected = time.perf_counter()
        assert len(first.entities) == len(server.graph)  # one entity per node
        assert [d.type for d in first.deletions] == [1]  # deletion of all first: the scene is the graph, nothing else
        assert {e.id for e in first.entities} == set(server.graph.nodes)
        orange = next(e for e in first.entities if e.id == "orange")
        assert {kv.key: kv.value for kv in orange.metadata}["parent"] == server.graph.parent("orange")

        graph = load_env("office")
        apply = ros.node("client").create_client(ApplyGraphUpdate, "apply_graph_update")
        moved = node_to_msg(graph.nodes["orange"], "fridge", "inside_of")
        assert ros.call(apply, ApplyGraphUpdate.Request(update=GraphUpdate(upsert=[moved]))).success
        change = client.until("/scene_graph", lambda m: m is not first and len(m.entities) > 0, "the moved orange")
        updated = time.perf_counter()
        assert [e.id for e in change.entities] == ["orange"] and not change.deletions  # the touched entity only
        assert {kv.key: kv.value for kv in change.entities[0].metadata}["parent"] == "fridge"
        assert ros.call(apply, ApplyGraphUpdate.Request(update=GraphUpdate(remove=["apple1"]))).success
        removal = client.until("/scene_graph", lambda m: len(m.deletions) > 0 and m is not first, "apple1's removal")
        assert [(d.type, d.id) for d in removal.deletions] == [(0, "apple1")] and not removal.entities

        # the executor's topics, as it publishes them: the plan (latched), then an event per step
        executor = ros.node("executor_stand_in")
        plan_pub = executor.create_publisher(Plan, "active_plan", LATCHED_STATE_QOS)
        events = executor.create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
        steps = [PlanStep(action="goto", target="kitchen"), PlanStep(action="pickup", target="orange")]
        steps.append(PlanStep(action="done", target=""))
        plan_pub.publish(Plan(instruction="fetch the orange", action_set="sayplan", steps=steps, current_step=0))
        shown = client.until("/plan", lambda m: len(m["steps"]) == 3, "the plan")
        assert [(s["action"], s["target"]) for s in shown["steps"]] == [(s.action, s.target) for s in steps]
        for index, step in enumerate(steps):
            event = ExecutionEvent(sequence=index, instruction="fetch the orange", stage="executing")
            event.status, event.step_index, event.step_count, event.step = "succeeded", index, len(steps), step
            events.publish(event)
        done = client.until("/plan", lambda m: all(s["status"] == "succeeded" for s in m["steps"]), "every step done")
        assert done["stage"] == "executing"
        assert [e["sequence"] for e in client.received["/plan_events"]] == [0, 1, 2]

        # a skill server's fault latch on /diagnostics
        diagnostics = executor.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, DIAGNOSTICS_QOS)
        latched = Status("fault latch", Level.ERROR, "fault latched: robot_fault", {"latched": "true"})
        diagnostics.publish(DiagnosticArray(status=[status_to_msg(latched, "sim_skill_server")]))
        latch = client.until("/fault_latch", lambda m: m["latched"], "the fault latch")
        assert latch["faults"] == {"sim_skill_server": "fault latched: robot_fault"}
        clear = Status("fault latch", Level.OK, "no fault latched", {"latched": "false"})
        diagnostics.publish(DiagnosticArray(status=[status_to_msg(clear, "sim_skill_server")]))
        client.until("/fault_latch", lambda m: not m["latched"], "the latch cleared")

        # a viewer that joins now gets the scene of the graph as it is, and the plan
        with viewer(bridge.port) as late_ws:
            late = FoxgloveClient(late_ws)
            scene = late.until("/scene_graph", lambda m: len(m.entities) > 0, "the whole scene, late")
            assert {e.id for e in scene.entities} == set(server.graph.nodes) and "apple1" not in server.graph
            late.until("/plan", lambda m: len(m["steps"]) == 3, "the plan, late")
    print(
        f"\nfoxglove bridge: {len(first.entities)} entities; first scene {connected - started:.2f} s after start, "
        f"one update {updated - connected:.3f} s end to end (apply_graph_update to the viewer)"
    )


def _xyz(pose: Any) -> tuple[float, float, float]:
    return (pose.position.x, pose.position.y, pose.position.z)


def test_the_robot_pose_and_the_route_ahead_follow_the_plan(ros: Any) -> None:
    """/robot_pose is the agent where /scene_graph draws it; /robot_path runs from there over navigation links
    through the plan's goto targets still ahead, and is empty once the task ends."""
    server = ros.add(SceneGraphServer(context=ros.context))
    any_ports = [Parameter("port", value=0), Parameter("page_port", value=-1)]
    bridge = ros.add(FoxgloveBridge(context=ros.context, parameter_overrides=any_ports))
    ros.wait_for(lambda: bridge.follower.version() > 0, timeout=WAIT_S, what="the bridge's copy of the graph")
    with viewer(bridge.port) as ws:
        client = FoxgloveClient(ws)
        scene = client.until("/scene_graph", lambda m: len(m.entities) > 0, "the whole scene")
        drawn = {e.id: _xyz((e.cubes or e.spheres)[0].pose) for e in scene.entities if e.cubes or e.spheres}
        pose = client.until("/robot_pose", lambda m: True, "the robot's pose")
        assert pose.frame_id == "map" and _xyz(pose.pose) == drawn[server.graph.agent_id]

        executor = ros.node("executor_stand_in")
        plan_pub = executor.create_publisher(Plan, "active_plan", LATCHED_STATE_QOS)
        events = executor.create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
        steps = [PlanStep(action="goto", target="workshop"), PlanStep(action="goto", target="kitchen")]
        plan_pub.publish(Plan(instruction="go", action_set="sayplan", steps=[*steps, PlanStep(action="done")]))
        path = client.until("/robot_path", lambda m: len(m.poses) > 2, "the route ahead")
        points = [_xyz(p) for p in path.poses]
        assert points[0] == drawn[server.graph.agent_location()] and points[0][:2] == _xyz(pose.pose)[:2]
        assert points[-1] == drawn["kitchen"] and drawn["workshop"] in points
        assert set(points) <= set(drawn.values())  # every point is a node of the graph where the scene draws it
        event = ExecutionEvent(sequence=0, instruction="go", stage="done", status="succeeded")
        events.publish(event)
        client.until("/robot_path", lambda m: len(m.poses) == 0, "no route once the task is done")
    print(f"\nroute to the kitchen via the workshop: {len(points)} poses")


def test_launch_arguments_add_the_bridge_with_its_port() -> None:
    """foxglove:=true foxglove_port:=N adds foxglove_bridge to the launched stack (before the lifecycle manager,
    as create_nodes(foxglove=True) does); a port out of range stops the launch before any node starts."""
    from test_launch import ROOT, load_launch_module

    from sayplan_ros.stack import stack_specs

    launch = load_launch_module()
    values = {"robot": "sim", "planner": "sayplan", "llm": "ollama", "env": "office", "params_file": "",
              "use_sim_time": "false", "foxglove": "true", "foxglove_port": "9876"}  # fmt: skip
    parameters = launch["stack_parameters"](values, str(ROOT / "config"))
    assert list(parameters) == [s.name for s in stack_specs("sim", foxglove=True)]
    assert list(parameters)[-2:] == ["foxglove_bridge", "lifecycle_manager"]
    assert parameters["foxglove_bridge"]["port"] == 9876
    assert "foxglove_bridge" not in launch["stack_parameters"]({**values, "foxglove": "false"}, str(ROOT / "config"))
    with pytest.raises(RuntimeError, match="foxglove_port:=70000 is not a port"):
        launch["stack_parameters"]({**values, "foxglove_port": "70000"}, str(ROOT / "config"))


def test_the_launched_bridge_is_optional_and_its_page_port_follows_its_port() -> None:
    """Issue 41 review, finding 4: a bridge that could not start (its port taken) ended the launched stack, and
    foxglove_port did not move the page's port (two stacks collided on 8766). Now the bridge's exit is one line and
    the stack runs on; the page port is foxglove_port + 1 unless foxglove_page_port says otherwise."""
    from test_launch import ROOT, load_launch_module

    pytest.importorskip("launch_ros", reason="launch_ros is not importable")
    from launch import LaunchContext
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events.process import ProcessExited
    from launch_ros.actions import Node

    from sayplan_ros.stack import stack_specs

    launch = load_launch_module()
    values = {"robot": "sim", "planner": "sayplan", "llm": "ollama", "env": "office", "params_file": "",
              "namespace": "", "use_sim_time": "false", "log_level": "info", "rviz": "false",
              "foxglove": "true", "foxglove_port": "9876"}  # fmt: skip

    def page_port(**given: str) -> Any:
        return launch["stack_parameters"]({**values, **given}, str(ROOT / "config"))["foxglove_bridge"]["page_port"]

    assert page_port() == 9877
    assert page_port(foxglove_port="9000") == 9001 and page_port(foxglove_port="0") == 0
    assert page_port(foxglove_page_port="-1") == -1 and page_port(foxglove_page_port="8000") == 8000
    with pytest.raises(RuntimeError, match="foxglove_page_port:=x is not a port"):
        page_port(foxglove_page_port="x")

    context = LaunchContext()
    context.launch_configurations.update(values)
    entities = launch["_nodes"](context)
    nodes = [e for e in entities if isinstance(e, Node)]
    names = [s.name for s in stack_specs("sim", foxglove=True)]
    exits = [
        e.event_handler
        for e in entities
        if isinstance(e, RegisterEventHandler) and isinstance(e.event_handler, OnProcessExit)
    ]

    def exited(name: str, code: int) -> Any:
        node = nodes[names.index(name)]
        event = ProcessExited(action=node, name=f"{name}-1", cmd=[], cwd=None, env=None, pid=1, returncode=code)
        (handler,) = [h for h in exits if h.matches(event)]
        return handler.handle(event, context)

    assert exited("foxglove_bridge", 1) is None  # logged, nothing else: the stack runs on
    assert exited("foxglove_bridge", 0) is None
    assert exited("planner", 1)  # a required node's exit still ends the launch


@pytest.mark.serial  # alone: a viewer must connect while the demo's run still goes
def test_sayplan_demo_with_foxglove_serves_the_run(ros: Any, tmp_path: Any) -> None:
    """`sayplan_demo --foxglove 0` as a process: a viewer that connects while it runs gets the office as one entity
    per node, every step of the plan that ran (with its status), the task's end among the events, and for each
    plan_task goal the planner's steps (the nodes it expanded, as the demo prints them) and its LLM calls (as many,
    with as many tokens, as the demo's summary counts)."""
    import os
    import subprocess
    import sys

    command = ["sayplan_demo", "--foxglove", "0", "--skill-delay", "0.3", "--out", str(tmp_path)]
    started = time.perf_counter()
    own_domain = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}  # the fixture's: no other test's nodes
    demo = subprocess.Popen(command, env=own_domain, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert demo.stdout is not None
        line = demo.stdout.readline()
        match = re.search(r"ws://127\.0\.0\.1:(\d+)", line)
        assert match, line
        with viewer(int(match.group(1))) as ws:
            client = FoxgloveClient(ws)
            scene = client.until("/scene_graph", lambda m: len(m.entities) > 0, "the whole scene")
            assert len(scene.entities) == len(load_env("office"))
            client.until("/plan_events", lambda m: m["stage"] == "done", "the task's end")
            final = client.until(
                "/plan", lambda m: m["steps"] and all(s["status"] == "succeeded" for s in m["steps"]), "the plan done"
            )
            seen = time.perf_counter()
            rest, _ = demo.communicate(timeout=WAIT_S * 5)  # every report is out once the demo has ended
            summary = re.search(r"summary: success .* (\d+) plan_task goals, (\d+) LLM calls, (\d+) tokens", rest)
            assert demo.returncode == 0 and summary, line + rest
            goals, calls, tokens = (int(n) for n in summary.groups())
            client.until("/planner_steps", lambda m: m["goal"] == goals and m["stage"] == "done", "the last goal")
            client.until("/llm_calls", lambda m: len(client.received["/llm_calls"]) >= calls, "every LLM call")
        assert len(final["steps"]) == 15  # the plan after the replan (README: 1/15 ... 15/15)
        steps, llm = client.received["/planner_steps"], client.received["/llm_calls"]
        # the first goal: its steps in order, the nodes it expanded those the demo printed ("search kitchen, ...")
        first = [s for s in steps if s["goal"] == 1]
        assert [s["sequence"] for s in first] == list(range(len(first))) and first[-1]["stage"] == "done"
        printed = re.findall(r"\[  planning\] search (\S+), round", line + rest)
        assert printed and [(s["search"], s["node"]) for s in first if s["stage"] == "search"] == [
            ("expand", node) for node in printed
        ]
        assert first[-1]["goal_success"] and first[0]["instruction"] == first[-1]["instruction"] != ""
        assert sorted({s["goal"] for s in steps}) == list(range(1, goals + 1))
        # every LLM call, with its tokens, latency and outcome
        assert len(llm) == calls and sum(c["prompt_tokens"] + c["completion_tokens"] for c in llm) == tokens
        assert [c["index"] for c in llm if c["goal"] == 1] == list(range(sum(c["goal"] == 1 for c in llm)))
        assert all(c["outcome"] == "ok" and c["latency_s"] >= 0 and c["stage"] for c in llm), llm
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    print(f"\nsayplan_demo --foxglove: the plan's last step seen {seen - started:.1f} s after start", file=sys.stderr)


@pytest.mark.serial  # alone: two demo runs timed against each other
def test_the_monitor_client_bench_runs_both_arms_and_the_drop_check(tmp_path: Any) -> None:
    """scripts/bench_monitor_client.py, one round: both arms run the demo to success, the stalled viewer subscribed
    to every channel, and the drop check shows foxglove-sdk's per-viewer queue dropping, never the newest, without
    closing the viewer. A pipeline check: no timing is asserted (the figures move with the machine's load)."""
    import subprocess
    import sys
    from pathlib import Path

    from ros_domains import claim_domain, release_domain

    out, script = tmp_path / "monitor_client.md", Path(__file__).resolve().parents[2] / "scripts"
    domain, lock = claim_domain()
    try:
        argv = [sys.executable, str(script / "bench_monitor_client.py"), "--rounds", "1", "--write", str(out)]
        done = subprocess.run([*argv, "--domain", str(domain)], capture_output=True, text=True, timeout=600)
    finally:
        release_domain(lock)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# A monitor viewer that never reads, beside none\n\nWritten by `"), text
    rows = {r[0].strip(): r for r in (line.split("|")[1:-1] for line in text.splitlines()) if len(r) == 9}
    assert rows["no client"][2].strip() == rows["stalled client"][2].strip() == "1/1", text
    channels = re.search(r"subscribes to every channel \((\d+)\)", text)
    assert channels and int(channels[1]) > 0, text
    assert re.search(
        r"stalled / none: demo wall time [\d.]+x, task time [\d.]+x; every run's result success: yes", text
    )
    drop = re.search(r"(\d+) messages .* got (\d+) of them; the newest kept: yes; still connected: yes", text)
    assert drop and int(drop[2]) < int(drop[1]), text  # some were dropped, the newest kept, the viewer still there


def test_a_viewer_that_subscribes_in_a_loop_costs_a_bounded_amount(ros: Any, monkeypatch: Any) -> None:
    """Issue 41 review, finding 1: every subscribe was queued (never collapsed, never capped) and the whole scene
    built again for each, even for subscriptions already dropped. Now a subscription waiting is noted once, one
    dropped before it is served is not served, the waiting list is capped, and the scene is built once a batch."""
    from sayplan_ros import foxglove_bridge

    any_ports = [Parameter("port", value=0), Parameter("page_port", value=-1)]
    bridge = FoxgloveBridge(context=ros.context, parameter_overrides=any_ports)  # not spun: the test serves joins
    try:
        for _ in range(1000):
            bridge.viewer_joined(7, "/scene_graph")
            bridge.viewer_joined(7, "/plan_events")
        assert list(bridge._joined) == [(7, "/scene_graph"), (7, "/plan_events")]
        bridge.viewer_left(7, "/plan_events")
        assert list(bridge._joined) == [(7, "/scene_graph")]
        for client in range(10_000):
            bridge.viewer_joined(client, "/plan")
        assert len(bridge._joined) == foxglove_bridge.MAX_PENDING_JOINS
        server = next(s for s in bridge._diagnostics() if s.name == "foxglove server")
        assert int(server.values["joins_refused"]) == 10_000 - foxglove_bridge.MAX_PENDING_JOINS + 1

        built = []
        real = foxglove_bridge.scene_update_msg
        monkeypatch.setattr(foxglove_bridge, "scene_update_msg", lambda *a: built.append(1) or real(*a))
        bridge._joined.clear()
        for client in range(1, 6):
            bridge.viewer_joined(client, "/scene_graph")
        bridge._send_current()
        assert len(built) == 1 and not bridge._joined  # one scene for the five viewers of the batch
    finally:
        bridge.destroy_node()


def test_diagnostics_report_a_server_that_stopped_listening(ros: Any) -> None:
    """Issue 41 review, finding 2: with the WebSocket server dead (file handles used up), /diagnostics still said
    OK. Now the bridge checks that the WebSocket port accepts a connection and that the page server runs."""
    any_ports = [Parameter("port", value=0), Parameter("page_port", value=0)]
    bridge = FoxgloveBridge(context=ros.context, parameter_overrides=any_ports)  # not spun: diagnostics called here

    def server_status() -> Status:
        return next(s for s in bridge._diagnostics() if s.name == "foxglove server")

    try:
        assert server_status().level == Level.OK
        assert bridge.page is not None
        bridge.page.stop()
        status = server_status()
        assert status.level == Level.ERROR and f"monitor page server on port {bridge.page.port}" in status.message
        bridge.server.stop()  # it stops listening soon after, not at once
        deadline = time.monotonic() + WAIT_S
        while "WebSocket server" not in (status := server_status()).message and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status.level == Level.ERROR and f"WebSocket server on port {bridge.port}" in status.message
    finally:
        bridge.destroy_node()
