"""The executor notices a planner that died or was restarted under its goal (issue 24 item 3): the task ends with
SERVER_UNAVAILABLE within seconds, not after plan_timeout_s (900 s), and the next task runs once a planner is back.
The planner runs as its own process and is killed with SIGKILL (no goodbye on DDS)."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from stack_paths import process_env
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import TaskCode
from sayplan_interfaces.action import ExecuteTask
from sayplan_ros.executor_node import ExecutorNode
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: SIGKILLs the planner; bounds the notice in seconds
ROOT = Path(__file__).resolve().parents[2]
PLANNER = shutil.which("planner")


@pytest.fixture
def silent_llm() -> Iterator[tuple[socket.socket, int]]:
    """An LLM endpoint that takes the connection and never answers (the planner's call hangs there)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server, server.getsockname()[1]


def start_planner(ros: Any, *params: str) -> subprocess.Popen[str]:
    assert PLANNER is not None
    env = process_env(ros.domain_id)
    env["SAYPLAN_TEST_KEY"] = "sk-test"
    args = [PLANNER, "--ros-args", "-p", "api_key_env:=SAYPLAN_TEST_KEY", "-p", "autostart:=true"]  # alone
    for param in params:
        args += ["-p", param]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def answer_probe(listener: socket.socket) -> None:
    """Answer the planner's activation probe (GET /v1/models) on the otherwise silent endpoint."""
    listener.settimeout(60.0)
    probe, _ = listener.accept()
    with probe:
        probe.settimeout(10.0)
        request = probe.recv(65536)
        assert request.startswith(b"GET ") and b"/models" in request.split(b"\r\n", 1)[0], request[:200]
        body = b'{"data": []}'
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        probe.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)


def send_task(ros: Any, client: ActionClient) -> Any:
    assert client.wait_for_server(timeout_sec=20.0)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(sent.done, what="execute_task acceptance")
    assert sent.result().accepted, "the executor refused the task"
    return sent.result().get_result_async()


@pytest.mark.skipif(PLANNER is None, reason="the planner executable is not on PATH: run through `make test`")
def test_a_planner_killed_mid_plan_ends_the_task_and_the_next_task_runs(
    ros: Any, tmp_path: Path, silent_llm: tuple[socket.socket, int]
) -> None:
    listener, port = silent_llm
    ros.add(SceneGraphServer(context=ros.context))
    ros.add(SimSkillServer(context=ros.context, parameter_overrides=[Parameter("skill_delay_s", value=0.0)]))
    executor = ExecutorNode(context=ros.context, parameter_overrides=[Parameter("plan_timeout_s", value=600.0)])
    ros.add(executor)
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")

    planner = start_planner(ros, "llm:=openai", f"base_url:=http://127.0.0.1:{port}/v1", "timeout_s:=600.0")
    try:
        answer_probe(listener)  # the planner activates only with an LLM that answers
        ros.wait_active("planner")
        result = send_task(ros, client)
        listener.settimeout(60.0)
        held, _ = listener.accept()  # the planner is inside its LLM call: mid-plan
        killed = time.monotonic()
        planner.send_signal(signal.SIGKILL)
        planner.wait(timeout=10)
        ros.wait_for(result.done, timeout=30.0, what="the task to end after the planner died")
        took = time.monotonic() - killed
        held.close()
    finally:
        if planner.poll() is None:
            planner.kill()
        planner.communicate(timeout=10)
    ended = result.result().result
    assert ended.error_code == TaskCode.SERVER_UNAVAILABLE, ended.error_msg
    assert "plan_task server that had the goal is gone" in ended.error_msg
    assert took < 15.0, f"the executor took {took:.1f} s to notice (the profile's lease is 4 s)"

    transcript = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    planner = start_planner(ros, f"replay_transcript:={transcript}")
    try:
        ros.wait_active("planner")  # its plan_task server exists from configure, and refuses until activated
        result = send_task(ros, client)
        ros.wait_for(result.done, timeout=60.0, what="the next task's result")
    finally:
        planner.send_signal(signal.SIGINT)
        out, _ = planner.communicate(timeout=15)
    done = result.result().result
    assert done.success, f"{done.error_msg}\n{out}"
