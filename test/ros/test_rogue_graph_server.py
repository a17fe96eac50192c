"""A rogue peer that calls itself `scene_graph_server` (same name, same namespace, in another process) and serves a
graph of another building at version 10^9 must never become the followers' copy: while two nodes claim the
server's name the followers refuse both (their copy is "out of sync", named on /diagnostics, and the path planner
answers no path), and once the rogue is gone (SIGKILL) they fetch the graph again from the one server left and
follow its updates. Before, the planner and the path planner took the rogue's graph through `get_scene_graph`,
kept it after the rogue left (its version 10^9 made every real update look old), and tasks still succeeded.

The real server, the followers (path_planner, planner's follower) and this test run in one process on the test's
DDS domain; the rogue is a subprocess. Time limits are hang guards: DDS may take its lease time to forget a killed
participant."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from sayplan_core.envs import load_env
from sayplan_interfaces.msg import GraphUpdate
from sayplan_interfaces.srv import ApplyGraphUpdate, PlanPath
from sayplan_ros.conversions import node_to_msg
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros
GUARD_S = 60.0
ROGUE = textwrap.dedent(
    """
    import rclpy
    from rclpy.parameter import Parameter
    from sayplan_ros.scene_graph_server import SceneGraphServer

    rclpy.init()
    rogue = SceneGraphServer(parameter_overrides=[Parameter("env", value="home")])  # another building
    rogue._version = 10**9
    rogue._publish_full()
    print("ready", flush=True)
    rclpy.spin(rogue)
    """
)


def start_rogue(ros: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    proc = subprocess.Popen(
        [sys.executable, "-c", ROGUE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    return proc


def in_step(follower: Any, server: SceneGraphServer) -> bool:
    return follower.problem() == "" and follower.epoch() == server.epoch and follower.version() == server.version


def test_a_rogue_with_the_servers_name_is_refused_and_the_copy_comes_back_from_the_server(ros: Any) -> None:
    server = ros.add(SceneGraphServer(context=ros.context))
    planner = ros.add(PathPlannerNode(context=ros.context))
    follower = planner.follower
    ros.wait_for(lambda: in_step(follower, server), timeout=GUARD_S, what="the follower in step with the server")
    paths = ros.node("operator").create_client(PlanPath, "plan_path")
    rogue = start_rogue(ros)
    try:
        ros.wait_for(lambda: "scene_graph_server" in follower.problem(), timeout=GUARD_S, what="the claim seen")
        problem = follower.problem()
        assert "2 nodes" in problem or "two nodes" in problem, problem
        graph, _ = follower.latest()
        assert graph is not None and "kitchen" in graph.nodes, "the rogue's building was taken"  # office, not home
        assert follower.graph_at(1) is None  # a planner waiting for a version gets nothing while it is ambiguous
        answer = ros.call(paths, PlanPath.Request(start="kitchen", goal="nikos_office"))
        assert not answer.success and "scene_graph_server" in answer.message, answer.message
    finally:
        rogue.kill()
        rogue.wait()
    ros.wait_for(lambda: in_step(follower, server), timeout=GUARD_S, what="the copy fetched again from the server")
    graph, version = follower.latest()
    assert graph is not None and version == server.version and graph.agent_location() == server.graph.agent_location()
    office = load_env("office")
    peeled = node_to_msg(office.nodes["orange"], office.parent("orange"), office.relation("orange"))
    peeled.states = ["peeled"]
    client = ros.node("peer").create_client(ApplyGraphUpdate, "apply_graph_update")
    applied = ros.call(client, ApplyGraphUpdate.Request(update=GraphUpdate(source="peer", upsert=[peeled])))
    assert applied.success, applied.message
    ros.wait_for(lambda: in_step(follower, server), timeout=GUARD_S, what="the server's next update followed")
    graph, _ = follower.latest()
    assert graph is not None and "peeled" in graph.nodes["orange"].states
    answer = ros.call(paths, PlanPath.Request(start="kitchen", goal="nikos_office"))
    assert answer.success, answer.message
