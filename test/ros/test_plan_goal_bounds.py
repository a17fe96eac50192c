"""A planning goal is bounded. An instruction over the size limit is refused. Against an LLM server that
misbehaves the goal ends on time: by its LLM deadline when the server trickles its response headers, and within a
second of a cancel while the call is blocked there, also on a keep-alive connection an earlier goal opened. A cancel
accepted during the last LLM call ends the goal CANCELED even when that call then returns a plan that verifies."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from llm_fake_servers import HeaderTrickler, KeepAliveServer, completion
from pytest_httpserver import HTTPServer
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOOD_PLAN, INSTRUCTION, lite_plan
from werkzeug import Request, Response

from sayplan_core.envs import load_env
from sayplan_core.nav import PathPlanner
from sayplan_core.outcomes import PlanCode
from sayplan_core.sim import parse_plan
from sayplan_interfaces.action import PlanTask
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: bounds goals in seconds


class _Models(BaseHTTPRequestHandler):
    """An OpenAI-compatible server's GET /v1/models, for the planner's activation probe."""

    def do_GET(self) -> None:
        body = json.dumps({"data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


def start_planner(ros: Any, timeout_s: float) -> int:
    """A planner activated against a server that answers its probe, on a port the test's misbehaving fake LLM then
    takes over (its first connection is then the planner's first goal); returns the port."""
    ros.add(SceneGraphServer(context=ros.context))
    models = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    serving = threading.Thread(target=models.serve_forever, daemon=True)
    serving.start()
    port = int(models.server_address[1])
    params = [
        Parameter("llm", value="openai"),
        Parameter("base_url", value=f"http://127.0.0.1:{port}/v1"),
        Parameter("api_key_env", value="SAYPLAN_TEST_NO_KEY"),
        Parameter("planner", value="llm_as_planner"),
        Parameter("timeout_s", value=timeout_s),
        Parameter("retries", value=2),
    ]
    try:
        planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    finally:
        models.shutdown()
        models.server_close()
        serving.join(timeout=5.0)
    ros.wait_for(lambda: planner.graph_version > 0, what="the graph")
    return port


def send_goal(ros: Any) -> tuple[Any, Any]:
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(PlanTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    assert handle.accepted
    return handle, handle.get_result_async()


def test_a_goal_against_trickled_headers_ends_by_its_llm_deadline(ros: Any) -> None:
    port = start_planner(ros, 2.0)
    trickler = HeaderTrickler(port=port)
    try:
        started = time.monotonic()
        _, result = send_goal(ros)
        ros.wait_for(result.done, timeout=60.0, what="the result")
        elapsed = time.monotonic() - started
    finally:
        trickler.close()
    outcome = result.result().result.outcome
    assert outcome.error_code == PlanCode.BACKEND_ERROR, outcome.error_msg
    assert elapsed < 2.0 + 1.5, f"the goal took {elapsed:.1f} s at timeout_s 2 with 2 retries"


def test_cancel_ends_a_goal_blocked_on_trickled_headers_within_a_second(ros: Any) -> None:
    port = start_planner(ros, 60.0)
    trickler = HeaderTrickler(max_s=60.0, port=port)
    try:
        handle, result = send_goal(ros)
        ros.wait_for(lambda: trickler.connections > 0, what="the LLM request")
        time.sleep(1.0)  # the headers are trickling
        asked = time.monotonic()
        handle.cancel_goal_async()
        ros.wait_for(result.done, timeout=30.0, what="the result")
        took = time.monotonic() - asked
    finally:
        trickler.close()
    assert result.result().status == GoalStatus.STATUS_CANCELED
    assert took < 1.0, f"the cancel took {took:.1f} s"


def test_cancel_ends_a_later_goal_on_a_keep_alive_connection_an_earlier_goal_opened(ros: Any) -> None:
    answer = completion('{"plan": "not a plan"}')  # a bad answer: the first goal ends after its retries
    port = start_planner(ros, 60.0)
    server = KeepAliveServer(json.dumps(answer).encode(), hold_s=20.0, port=port)
    try:
        _, first = send_goal(ros)
        ros.wait_for(first.done, timeout=30.0, what="the first result")
        server.stall.set()  # from now on the server holds every request
        handle, result = send_goal(ros)
        ros.wait_for(lambda: server.stalled > 0, what="the second goal's LLM request")
        time.sleep(0.5)
        asked = time.monotonic()
        handle.cancel_goal_async()
        ros.wait_for(result.done, timeout=30.0, what="the result")
        took = time.monotonic() - asked
    finally:
        server.close()
    seen = f"connections {server.connections}, requests {server.requests}, status {result.result().status}"
    assert server.connections == 1, f"the second goal did not reuse the first goal's connection ({seen})"
    assert result.result().status == GoalStatus.STATUS_CANCELED, seen
    assert took < 1.0, f"the cancel took {took:.1f} s ({seen})"


def test_a_cancel_accepted_during_the_last_llm_call_ends_canceled(ros: Any, httpserver: HTTPServer) -> None:
    """The planner's one call returns a plan that verifies, but the cancel came first: CANCELED, not SUCCEEDED."""
    full = PathPlanner(load_env("office")).expand_plan(parse_plan(" > ".join(f"{a}({t})" for a, t in GOOD_PLAN)))
    answer = lite_plan([(s.action, s.target) for s in full])
    asked, release = threading.Event(), threading.Event()

    def held(_: Request) -> Response:
        asked.set()
        release.wait(20)
        body = {
            "id": "1", "object": "chat.completion", "created": 1, "model": "held",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }  # fmt: skip
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(held)
    httpserver.expect_request("/v1/models").respond_with_json({"data": []})  # the activation's probe
    ros.add(SceneGraphServer(context=ros.context))
    params = [
        Parameter("llm", value="openai"),
        Parameter("base_url", value=httpserver.url_for("/v1")),
        Parameter("api_key_env", value="SAYPLAN_TEST_NO_KEY"),
        Parameter("planner", value="llm_as_planner"),
    ]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    ros.wait_for(lambda: planner.graph_version > 0, what="the graph")
    handle, result = send_goal(ros)
    assert asked.wait(20)
    cancel = handle.cancel_goal_async()
    ros.wait_for(cancel.done, what="cancel accepted")
    release.set()
    ros.wait_for(result.done, what="the result")
    assert result.result().status == GoalStatus.STATUS_CANCELED
    assert result.result().result.outcome.error_code == PlanCode.CANCELED


def test_an_oversized_instruction_is_refused(ros: Any) -> None:
    start_planner(ros, 2.0)
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(PlanTask.Goal(instruction="x" * 20_000))
    ros.wait_for(future.done, what="goal answer")
    assert not future.result().accepted
