"""The whole stack as real rclpy nodes over DDS: closed loop, replanning, cancel, LLM down, markers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from pytest_httpserver import HTTPServer
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOAL, GOOD_PLAN, INSTRUCTION, say, write_transcript
from visualization_msgs.msg import MarkerArray
from werkzeug import Request, Response

from sayplan_core.outcomes import PlanCode, SkillCode, Stage, Status, TaskCode
from sayplan_core.sim import check_goals
from sayplan_interfaces.action import ExecuteTask, PlanTask
from sayplan_interfaces.srv import GetSceneGraph, GraphView
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.qos import LATCHED_STATE_QOS
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.stack import create_nodes

pytestmark = pytest.mark.ros
REST_OF_PLAN = GOOD_PLAN[2:]


def start_stack(ros: Any, planner: list[Parameter], skills: list[Parameter]) -> dict[str, Any]:
    """The stack as every program assembles it (stack.create_nodes), by role."""
    nodes = {
        n.get_name(): ros.add(n)
        for n in create_nodes(ros.context, "sim", {"planner": planner, "sim_skill_server": skills})
    }
    return {"graph": nodes["scene_graph_server"], "planner": nodes["planner"], "executor": nodes["executor"],
            "skills": nodes["sim_skill_server"]}  # fmt: skip


def send(ros: Any, client: ActionClient, goal: Any, on_feedback: Any = None, timeout: float = 60.0) -> tuple[Any, Any]:
    assert client.wait_for_server(timeout_sec=10.0), f"{client._action_name} not available"
    future = client.send_goal_async(goal, feedback_callback=on_feedback)
    ros.wait_for(future.done, timeout=10.0, what="goal acceptance")
    handle = future.result()
    return handle, handle.get_result_async() if handle.accepted else None


def test_closed_loop_with_an_injected_failure(ros: Any, tmp_path: Path) -> None:
    t = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=GOOD_PLAN),
        say("plan", plan=REST_OF_PLAN),
    )
    nodes = start_stack(
        ros,
        [Parameter("replay_transcript", value=str(t))],
        [Parameter("failures", value="pickup:coffee_mug:grasp_failed"), Parameter("skill_delay_s", value=0.02)],
    )
    markers: list[MarkerArray] = []
    listener = ros.node("viewer")
    listener.create_subscription(MarkerArray, "scene_graph_markers", markers.append, LATCHED_STATE_QOS)
    feedback: list[Any] = []
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    handle, result_future = send(
        ros, client, ExecuteTask.Goal(instruction=INSTRUCTION), lambda f: feedback.append(f.feedback)
    )
    assert handle.accepted
    ros.wait_for(result_future.done, timeout=60.0, what="execute_task result")
    result = result_future.result().result
    assert result.success and result.replans == 1, result.error_msg
    assert result.error_code == TaskCode.NONE
    assert [s.action for s in result.executed][-1] == "done"
    events = [f.event for f in feedback]
    stages = [e.stage for e in events]
    assert stages[0] == Stage.PLANNING and Stage.REPLANNING in stages and stages[-1] == Stage.DONE
    failed = [e for e in events if e.status == Status.FAILED]
    assert [(e.step.action, SkillCode(e.error_code)) for e in failed] == [("pickup", SkillCode.GRASP_FAILED)]
    # the robot's live graph (and the simulated truth) meet the goal
    assert check_goals(nodes["graph"].graph, [GOAL]).success
    assert check_goals(nodes["skills"].world.truth, [GOAL]).success
    assert nodes["graph"].version > 20  # one update per skill
    # markers: one per node per layer, and the plan path was drawn while executing
    ros.wait_for(lambda: bool(markers), what="markers")
    held: dict[tuple[str, int], Any] = {}  # what RViz holds: the whole drawing, then each update's changes
    for m in (m for arr in markers for m in arr.markers):
        if m.action == m.DELETEALL:
            held.clear()
        elif m.action == m.DELETE:
            held.pop((m.ns, m.id), None)
        else:
            held[(m.ns, m.id)] = m
    layers: dict[str, int] = {}
    for m in held.values():
        if m.type in (m.SPHERE, m.CUBE):
            layers[m.ns] = layers.get(m.ns, 0) + 1
    assert layers == {"rooms": 37, "poses": 25, "assets": 86, "objects": 88, "agents": 1}
    assert any(len(m.points) >= 2 for arr in markers for m in arr.markers if m.ns == "plan")


def test_graph_view_service(ros: Any) -> None:
    ros.add(SceneGraphServer(context=ros.context))
    client = ros.node("viewer").create_client(GraphView, "graph_view")
    answer = ros.call(client, GraphView.Request(operation="expand", node_id="kitchen"))
    assert answer.success and answer.expanded == ["kitchen"] and "fridge" in answer.visible_ids
    assert json.loads(answer.text)["links"]
    answer = ros.call(client, GraphView.Request(operation="contract", node_id="kitchen", expanded=["kitchen"]))
    assert answer.success and answer.expanded == [] and "fridge" not in answer.visible_ids
    answer = ros.call(client, GraphView.Request(operation="expand", node_id="fridge"))
    assert not answer.success and "not visible yet" in answer.message


@pytest.mark.serial  # alone: the cancel must land within about 1.2 s of planning
def test_cancel_mid_plan(ros: Any, httpserver: HTTPServer) -> None:
    def slow(_: Request) -> Response:
        time.sleep(0.3)
        body = {
            "id": "1", "object": "chat.completion", "created": 1, "model": "slow",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": say("expand", "kitchen")}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }  # fmt: skip
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    httpserver.expect_request("/v1/models").respond_with_json({"data": []})  # the activation's probe
    ros.add(SceneGraphServer(context=ros.context))
    params = [
        Parameter("llm", value="openai"),
        Parameter("base_url", value=httpserver.url_for("/v1")),
        Parameter("api_key_env", value="SAYPLAN_TEST_NO_KEY"),
    ]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    feedback: list[Any] = []
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    ros.wait_for(lambda: planner.graph_version > 0, what="the planner to receive the graph")
    handle, result_future = send(
        ros, client, PlanTask.Goal(instruction=INSTRUCTION), lambda f: feedback.append(f.feedback)
    )
    ros.wait_for(lambda: len(feedback) >= 1, timeout=20.0, what="first search step")
    handle.cancel_goal_async()
    ros.wait_for(result_future.done, timeout=20.0, what="canceled result")
    assert result_future.result().status == GoalStatus.STATUS_CANCELED
    outcome = result_future.result().result.outcome
    assert outcome.error_code == PlanCode.CANCELED and outcome.error_msg == "canceled"


@pytest.mark.serial  # alone: a cancel inside a 1 s skill
def test_cancel_mid_execution_stops_the_skill(ros: Any, tmp_path: Path) -> None:
    t = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    nodes = start_stack(ros, [Parameter("replay_transcript", value=str(t))], [Parameter("skill_delay_s", value=1.0)])
    feedback: list[Any] = []
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    handle, result_future = send(
        ros, client, ExecuteTask.Goal(instruction=INSTRUCTION), lambda f: feedback.append(f.feedback)
    )
    ros.wait_for(lambda: any(f.event.stage == Stage.EXECUTING for f in feedback), timeout=30.0, what="execution")
    handle.cancel_goal_async()
    ros.wait_for(result_future.done, timeout=20.0, what="canceled result")
    outcome = result_future.result()
    assert outcome.status == GoalStatus.STATUS_CANCELED
    assert outcome.result.error_code == TaskCode.CANCELED and outcome.result.error_msg == "canceled"
    # the running skill was canceled: at most the first goto finished before the cancel reached it
    assert len(outcome.result.executed) <= 1 and nodes["skills"].world.state.location in ("pose7", "pose8")


class _OllamaTags(BaseHTTPRequestHandler):
    """Ollama's GET /api/tags with the default model: enough for the planner's activation probe."""

    def do_GET(self) -> None:
        body = json.dumps({"models": [{"name": "llama3.1:8b"}]}).encode()
        self.send_response(200 if self.path == "/api/tags" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


def test_llm_down_fails_the_goal_and_nodes_stay_up(ros: Any) -> None:
    """The LLM answers when the planner activates, then goes away: the goal fails, the nodes stay up."""
    ros.add(SceneGraphServer(context=ros.context))
    ollama = ThreadingHTTPServer(("127.0.0.1", 0), _OllamaTags)
    serving = threading.Thread(target=ollama.serve_forever, daemon=True)
    serving.start()
    params = [
        Parameter("llm", value="ollama"),
        Parameter("base_url", value=f"http://127.0.0.1:{ollama.server_address[1]}"),
        Parameter("retries", value=1),
        Parameter("timeout_s", value=2.0),
    ]
    try:
        planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    finally:
        ollama.shutdown()
        ollama.server_close()  # nothing listens on the port from now on
        serving.join(timeout=5.0)
    ros.wait_for(lambda: planner.graph_version > 0, what="the planner to receive the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    _, result_future = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(result_future.done, timeout=30.0, what="aborted result")
    outcome = result_future.result()
    assert outcome.status == GoalStatus.STATUS_ABORTED
    assert outcome.result.outcome.error_code == PlanCode.BACKEND_ERROR
    assert outcome.result.outcome.error_msg.startswith("LLM backend kept failing (connection) after 2 attempts")
    graph = ros.node("probe").create_client(GetSceneGraph, "get_scene_graph")
    assert ros.call(graph, GetSceneGraph.Request()).success


def test_busy_planner_rejects_a_second_goal(ros: Any, httpserver: HTTPServer) -> None:
    gate = threading.Event()

    def blocked(_: Request) -> Response:
        gate.wait(10)
        return Response("{}", status=500)

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(blocked)
    httpserver.expect_request("/v1/models").respond_with_json({"data": []})  # the activation's probe
    ros.add(SceneGraphServer(context=ros.context))
    params = [
        Parameter("llm", value="openai"),
        Parameter("base_url", value=httpserver.url_for("/v1")),
        Parameter("retries", value=0),
    ]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    ros.wait_for(lambda: planner.graph_version > 0, what="the planner to receive the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    first, first_result = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION))
    second, _ = send(ros, client, PlanTask.Goal(instruction="another task"))
    assert first.accepted and not second.accepted
    gate.set()
    ros.wait_for(first_result.done, timeout=20.0, what="first goal to end")


def test_goal_without_any_scene_graph_is_aborted_after_the_wait(ros: Any, tmp_path: Path) -> None:
    empty = write_transcript(tmp_path / "empty.json")  # a backend that answers nothing (the probe passes)
    params = [Parameter("replay_transcript", value=str(empty)), Parameter("graph_wait_s", value=0.3)]
    ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    _, result_future = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(result_future.done, timeout=10.0, what="aborted result")
    assert result_future.result().status == GoalStatus.STATUS_ABORTED
    outcome = result_future.result().result.outcome
    assert outcome.error_code == PlanCode.NO_SCENE_GRAPH
    assert outcome.error_msg == "no scene graph received yet on 'scene_graph'"


@pytest.mark.serial  # alone: bounds the wait in seconds
def test_a_plan_waits_for_the_graph_version_its_goal_names(ros: Any, tmp_path: Path) -> None:
    """A replan right after a skill must see that skill's update: the goal names the version it produced, and
    the planner waits for its copy to hold it (here the backend then fails, which shows planning went on)."""
    from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
    from sayplan_interfaces.srv import ApplyGraphUpdate
    from sayplan_ros.conversions import update_to_msg

    server = ros.add(SceneGraphServer(context=ros.context))
    empty = write_transcript(tmp_path / "empty.json")  # a backend that answers nothing (the probe passes)
    params = [Parameter("replay_transcript", value=str(empty)), Parameter("graph_wait_s", value=20.0)]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    ros.wait_for(lambda: planner.graph_version > 0, what="the planner to receive the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    _, result = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION, graph_version=server.version + 1))
    time.sleep(0.5)
    assert not result.done()  # waiting for a version the server has not produced yet
    graph = server.graph
    mug = NodeUpsert(graph.nodes["coffee_mug"], graph.parent("coffee_mug"), graph.relation("coffee_mug"))
    request = ApplyGraphUpdate.Request(update=update_to_msg(GraphUpdate(source="test", upsert=[mug])))
    answer = ros.call(ros.node("writer").create_client(ApplyGraphUpdate, "apply_graph_update"), request)
    assert answer.success, answer.message
    ros.wait_for(result.done, timeout=10.0, what="the result")
    assert result.result().result.outcome.error_code == PlanCode.BACKEND_ERROR

    short = [Parameter("graph_wait_s", value=0.3)]
    planner.set_parameters(short)
    _, result = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION, graph_version=server.version + 3))
    ros.wait_for(result.done, timeout=10.0, what="the result")
    outcome = result.result().result.outcome
    assert outcome.error_code == PlanCode.SCENE_GRAPH_OUT_OF_SYNC
    assert f"at version {server.version}; the goal needs {server.version + 3}" in outcome.error_msg

    planner.set_parameters([Parameter("graph_wait_s", value=60.0)])  # a cancel ends the wait at once
    handle, result = send(ros, client, PlanTask.Goal(instruction=INSTRUCTION, graph_version=server.version + 3))
    time.sleep(0.3)
    began = time.monotonic()
    handle.cancel_goal_async()
    ros.wait_for(result.done, timeout=5.0, what="the canceled result")
    assert time.monotonic() - began < 2.0 and result.result().status == GoalStatus.STATUS_CANCELED


def _lpg(name: str, target: str = "") -> str:
    return json.dumps({"chain_of_thought": "...", "next_move": {"function_name": name, "function_target": target}})


def _rag(name: str, target: str = "") -> str:
    return json.dumps({"thought": "...", "action": {"name": name, "target": target}})


OTHER_PLANNERS: dict[str, tuple[list[str], str]] = {
    # planner: (transcript, the skills' action set)
    "ltl": (
        [
            json.dumps(
                {"mapping": [{"phrase": "mug", "node": "coffee_mug"}, {"phrase": "Niko", "node": "nikos_desk"}]}
            ),
            json.dumps({"formula": "F & coffee_mug F nikos_desk"}),
        ],
        "sayplan",
    ),
    "lookplangraph": (
        [
            _lpg("go_to", "kitchen"),
            _lpg("open", "kitchen_cupboard"),
            _lpg("look_inside", "kitchen_cupboard"),
            _lpg("pick_up", "coffee_mug"),
            _lpg("go_to", "nikos_office"),
            _lpg("put_on", "nikos_desk"),
            _lpg("done"),
        ],
        "lookplangraph",
    ),
    "embodiedrag_strict": (
        [
            json.dumps({"entities": [{"name": n, "attributes": ["states"]} for n in ("coffee mug", "Niko's desk")]}),
            _rag("goto", "kitchen"),
            _rag("access", "kitchen_cupboard"),
            _rag("pickup", "coffee_mug"),  # the cupboard is closed: an observation, then the planner opens it
            _rag("open", "kitchen_cupboard"),
            _rag("pickup", "coffee_mug"),
            _rag("goto", "nikos_office"),
            _rag("access", "nikos_desk"),
            _rag("release", "coffee_mug"),
            _rag("done"),
        ],
        "sayplan",
    ),
}


@pytest.mark.parametrize("planner", sorted(OTHER_PLANNERS))
def test_other_planners_run_through_the_executor(ros: Any, tmp_path: Path, planner: str) -> None:
    answers, action_set = OTHER_PLANNERS[planner]
    t = write_transcript(tmp_path / "t.json", *answers)
    nodes = start_stack(
        ros,
        [Parameter("replay_transcript", value=str(t)), Parameter("planner", value=planner)],
        [Parameter("action_set", value=action_set), Parameter("skill_delay_s", value=0.0)],
    )
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    handle, result_future = send(ros, client, ExecuteTask.Goal(instruction=INSTRUCTION))
    assert handle.accepted
    ros.wait_for(result_future.done, timeout=90.0, what="execute_task result")
    result = result_future.result().result
    assert result.success and result.replans == 0, result.error_msg
    graph = nodes["graph"].graph
    if planner == "ltl":  # a navigation mission: it ends at Niko's office, having passed the kitchen
        assert graph.agent_location() == "nikos_office"
        assert "kitchen" in [s.target for s in result.executed]
    else:
        assert check_goals(graph, [GOAL]).success
        assert check_goals(nodes["skills"].world.truth, [GOAL]).success
