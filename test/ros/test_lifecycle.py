"""Managed nodes and the lifecycle manager, driven over DDS as `ros2 lifecycle set` and Nav2's manager drive them.

Every transition goes through the node's lifecycle_msgs services (`change_state`, `get_state`) from a separate
client node; the robot is the simulated one (its world says whether anything moved), the unreachable LLM a real
local port with nothing listening on it.

The manager asks again when a lifecycle answer is lost, as rmw_fastrtps loses it on a loaded machine: a service
that got a request before it discovered the client's response reader waits 100 ms for it, then drops the response
(rmw_fastrtps_shared_cpp src/rmw_response.cpp, `__rmw_send_response`: "client will not receive response",
RMW_RET_TIMEOUT; rclpy's `service_send_response` turns that into a RuntimeWarning). The node there is a real
managed node; only its get_state or change_state service's first response is dropped, as that RMW drops it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import PlanCode, SkillCode, TaskCode
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask, PlanTask
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import DescribeSkills, ManageLifecycleNodes
from sayplan_ros.lifecycle_manager import LifecycleManager
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer
from sayplan_ros.stack import create_nodes

pytestmark = pytest.mark.ros

#: a failed start-up here has no monitor to tell: no 3 s wait for one to be matched
QUIET_FAILURE = Parameter("monitor_wait_s", value=0.0)

LABELS = {
    State.PRIMARY_STATE_UNCONFIGURED: "unconfigured",
    State.PRIMARY_STATE_INACTIVE: "inactive",
    State.PRIMARY_STATE_ACTIVE: "active",
    State.PRIMARY_STATE_FINALIZED: "finalized",
}


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A local TCP port bound but not listening: a connection to it is refused at once."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    try:
        yield int(holder.getsockname()[1])
    finally:
        holder.close()


class Lifecycle:
    """An operator's `ros2 lifecycle` for one node: change_state and get_state over DDS from its own node."""

    def __init__(self, ros: Any, name: str) -> None:
        self.ros = ros
        client = ros.node(f"lifecycle_client_{name}")
        self.change = client.create_client(ChangeState, f"/{name}/change_state")
        self.get = client.create_client(GetState, f"/{name}/get_state")
        self.error = client.create_client(Trigger, f"/{name}/transition_error")

    def set(self, transition: int) -> bool:
        request = ChangeState.Request()
        request.transition.id = transition
        return bool(self.ros.call(self.change, request, timeout=30.0).success)

    def state(self) -> str:
        answer = self.ros.call(self.get, GetState.Request())
        return LABELS.get(answer.current_state.id, answer.current_state.label)

    def why(self) -> str:
        return str(self.ros.call(self.error, Trigger.Request()).message)


def sim_server(ros: Any, **params: Any) -> SimSkillServer:
    overrides = [Parameter(k, value=v) for k, v in {"skill_delay_s": 0.0, **params}.items()]
    return ros.add(SimSkillServer(context=ros.context, parameter_overrides=overrides), bring_up=False)


def run_skill(ros: Any, client: ActionClient, skill: str, target: str, timeout: float = 15.0) -> Any:
    sent = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action=skill, target=target)))
    ros.wait_for(sent.done, what="goal acceptance")
    handle = sent.result()
    assert handle.accepted
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=timeout, what=f"{skill}({target})")
    return result.result().result.outcome


def test_skill_server_transitions_over_dds(ros: Any) -> None:
    sim = sim_server(ros)
    life = Lifecycle(ros, "sim_skill_server")
    assert life.state() == "unconfigured"
    operator = ros.node("operator")
    describe = operator.create_client(DescribeSkills, "describe_skills")
    assert not describe.wait_for_service(timeout_sec=0.5)  # nothing is served before configure

    assert life.set(Transition.TRANSITION_CONFIGURE) and life.state() == "inactive"
    assert ros.call(describe, DescribeSkills.Request()).robot == "sim"
    skills = ActionClient(operator, ExecuteSkill, "execute_skill")
    assert skills.wait_for_server(timeout_sec=10.0)
    refused = run_skill(ros, skills, "goto", "kitchen")
    assert SkillCode(refused.error_code) is SkillCode.NOT_ACTIVE, refused.error_msg
    assert "not active" in refused.error_msg and sim.world.state.location != "kitchen"  # nothing moved

    assert life.set(Transition.TRANSITION_ACTIVATE) and life.state() == "active"
    done = run_skill(ros, skills, "goto", "kitchen")
    assert done.success, done.error_msg
    assert sim.world.state.location == "kitchen"

    assert life.set(Transition.TRANSITION_DEACTIVATE) and life.state() == "inactive"
    again = run_skill(ros, skills, "goto", "nikos_office")
    assert SkillCode(again.error_code) is SkillCode.NOT_ACTIVE and sim.world.state.location == "kitchen"

    assert life.set(Transition.TRANSITION_CLEANUP) and life.state() == "unconfigured"
    assert not sim.configured and sim._server is None and sim._describe is None  # nothing served is left
    ros.wait_for(lambda: not describe.service_is_ready(), what="describe_skills to go away")
    # a transition the state does not allow is refused, and the node lives on
    assert not life.set(Transition.TRANSITION_ACTIVATE)
    assert life.state() == "unconfigured"
    assert life.set(Transition.TRANSITION_CONFIGURE) and life.set(Transition.TRANSITION_ACTIVATE)
    assert life.state() == "active"


@pytest.mark.serial  # alone: bounds the stop in seconds
def test_deactivate_mid_skill_stops_the_robot_and_the_skill_ends_paused(ros: Any) -> None:
    sim = sim_server(ros, skill_delay_s=20.0)
    life = Lifecycle(ros, "sim_skill_server")
    assert life.set(Transition.TRANSITION_CONFIGURE) and life.set(Transition.TRANSITION_ACTIVATE)
    operator = ros.node("operator")
    skills = ActionClient(operator, ExecuteSkill, "execute_skill")
    assert skills.wait_for_server(timeout_sec=10.0)
    feedback: list[Any] = []
    sent = skills.send_goal_async(
        ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen")), feedback_callback=feedback.append
    )
    ros.wait_for(sent.done, what="goal acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(lambda: bool(feedback), what="the skill to run")
    started = time.monotonic()
    assert life.set(Transition.TRANSITION_DEACTIVATE)
    ros.wait_for(result.done, timeout=5.0, what="the skill to end")
    outcome = result.result().result.outcome
    assert time.monotonic() - started < 5.0  # not the 20 s the skill would take
    # a pause, not a cancel (issue 38 item 9): nobody canceled the goal
    assert SkillCode(outcome.error_code) is SkillCode.PAUSED and "was paused" in outcome.error_msg, outcome.error_msg
    assert sim.world.state.location != "kitchen"  # the simulated robot never got there
    assert life.state() == "inactive"


def test_fault_latch_survives_deactivate_and_activate(ros: Any) -> None:
    sim = sim_server(ros, failures="goto:kitchen:robot_fault")
    life = Lifecycle(ros, "sim_skill_server")
    assert life.set(Transition.TRANSITION_CONFIGURE) and life.set(Transition.TRANSITION_ACTIVATE)
    skills = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert skills.wait_for_server(timeout_sec=10.0)
    assert SkillCode(run_skill(ros, skills, "goto", "kitchen").error_code) is SkillCode.ROBOT_FAULT
    assert life.set(Transition.TRANSITION_DEACTIVATE) and life.set(Transition.TRANSITION_ACTIVATE)
    after = run_skill(ros, skills, "goto", "nikos_office")
    assert SkillCode(after.error_code) is SkillCode.FAULT_LATCHED, after.error_msg
    assert sim.fault_latch.fault is not None
    assert ros.clear_fault(sim).success  # only the operator's clear clears it


def planner_with_dead_llm(ros: Any, port: int) -> PlannerNode:
    params = {"llm": "ollama", "base_url": f"http://127.0.0.1:{port}", "timeout_s": 3.0}
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    return ros.add(PlannerNode(context=ros.context, parameter_overrides=overrides), bring_up=False)


def test_planner_refuses_to_activate_without_a_reachable_llm(ros: Any, dead_port: int) -> None:
    planner_with_dead_llm(ros, dead_port)
    life = Lifecycle(ros, "planner")
    assert life.set(Transition.TRANSITION_CONFIGURE) and life.state() == "inactive"
    assert not life.set(Transition.TRANSITION_ACTIVATE)
    assert life.state() == "inactive"
    why = life.why()
    assert why.startswith("planner: cannot activate: ") and str(dead_port) in why, why
    assert "\n" not in why  # one line
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(PlanTask.Goal(instruction="make coffee"))
    ros.wait_for(sent.done, what="goal acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, what="the refusal")
    outcome = result.result().result.outcome
    assert PlanCode(outcome.error_code) is PlanCode.NOT_ACTIVE, outcome.error_msg


def manager(ros: Any, names: list[str], autostart: bool = True) -> LifecycleManager:
    params = [Parameter("node_names", value=names), QUIET_FAILURE, Parameter("autostart", value=autostart)]
    params.append(Parameter("node_wait_s", value=10.0))
    return ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))


def test_manager_autostart_and_commands(ros: Any) -> None:
    sim_server(ros)
    life = Lifecycle(ros, "sim_skill_server")
    boss = manager(ros, ["sim_skill_server"])
    assert boss.started.wait(30.0)
    assert boss.startup_result[0], boss.startup_result[1]
    assert life.state() == "active" and boss.exit_reason is None
    client = ros.node("operator")
    manage = client.create_client(ManageLifecycleNodes, "/lifecycle_manager/manage_nodes")
    is_active = client.create_client(Trigger, "/lifecycle_manager/is_active")
    assert ros.call(is_active, Trigger.Request()).success
    for command, state in (
        (ManageLifecycleNodes.Request.PAUSE, "inactive"),
        (ManageLifecycleNodes.Request.RESUME, "active"),
        (ManageLifecycleNodes.Request.RESET, "unconfigured"),
        (ManageLifecycleNodes.Request.STARTUP, "active"),
        (ManageLifecycleNodes.Request.SHUTDOWN, "finalized"),
    ):
        answer = ros.call(manage, ManageLifecycleNodes.Request(command=command), timeout=30.0)
        assert answer.success, answer.message
        assert life.state() == state, (command, answer.message)
        assert ros.call(is_active, Trigger.Request()).success == (state == "active")


def test_manager_takes_the_stack_down_when_a_node_fails_to_activate(ros: Any, dead_port: int) -> None:
    sim = sim_server(ros)
    planner_with_dead_llm(ros, dead_port)
    boss = manager(ros, ["sim_skill_server", "planner"])
    assert boss.started.wait(60.0)
    ok, line = boss.startup_result
    assert not ok
    assert line.startswith("planner failed to activate: ") and str(dead_port) in line and "\n" not in line, line
    assert "cannot activate" not in line  # the node's reason, said once
    assert boss.exit_reason == line  # the program ends with this line (sayplan_ros.runner)
    # what the manager brought up is taken back down: nothing serves, nothing is held
    assert Lifecycle(ros, "sim_skill_server").state() == "unconfigured" and not sim.configured
    assert Lifecycle(ros, "planner").state() == "unconfigured"


def test_manager_names_a_node_that_is_not_there(ros: Any) -> None:
    params = [Parameter("node_names", value=["nobody"]), QUIET_FAILURE, Parameter("node_wait_s", value=0.5)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(20.0)
    ok, line = boss.startup_result
    assert not ok and line.startswith("nobody: not there"), line


def send_task(ros: Any, client: ActionClient, events: list[Any]) -> Any:
    sent = client.send_goal_async(
        ExecuteTask.Goal(instruction=INSTRUCTION), feedback_callback=lambda msg: events.append(msg.feedback.event)
    )
    ros.wait_for(sent.done, what="execute_task acceptance")
    assert sent.result().accepted
    return sent.result().get_result_async()


def test_a_pause_mid_task_ends_it_paused_and_a_task_sent_while_paused_is_refused_at_once(
    ros: Any, tmp_path: Path
) -> None:
    """Issue 38 item 9: the whole sim stack, brought up by its lifecycle manager; a PAUSE through
    ~/manage_nodes while the first skill runs ended the task ABORTED with CANCELED, "canceled" (as if an operator
    had canceled it); a task sent while paused was accepted, then failed at the planner. Now the first ends PAUSED
    saying so, and the second ends NOT_ACTIVE naming the skill server's state, before any planning."""
    transcript = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    overrides = {
        "planner": [Parameter("replay_transcript", value=str(transcript))],
        "sim_skill_server": [Parameter("skill_delay_s", value=100.0)],  # the first skill runs until the pause
    }
    nodes = create_nodes(ros.context, "sim", overrides)
    for node in nodes:
        ros.add(node, bring_up=False)  # the lifecycle manager brings them up, as in a launch
    boss = next(node for node in nodes if isinstance(node, LifecycleManager))
    assert boss.started.wait(120.0) and boss.startup_result[0], boss.startup_result
    sim = next(node for node in nodes if isinstance(node, SimSkillServer))
    start = sim.world.state.location
    operator = ros.node("operator")
    tasks = ActionClient(operator, ExecuteTask, "execute_task")
    assert tasks.wait_for_server(timeout_sec=30.0)
    events: list[Any] = []
    result = send_task(ros, tasks, events)
    ros.wait_for(
        lambda: any(e.stage == "executing" and e.status == "running" for e in events),
        timeout=120.0,
        what="the first skill to run",
    )
    manage = operator.create_client(ManageLifecycleNodes, "/lifecycle_manager/manage_nodes")
    answer = ros.call(manage, ManageLifecycleNodes.Request(command=ManageLifecycleNodes.Request.PAUSE), timeout=120.0)
    assert answer.success, answer.message
    ros.wait_for(result.done, timeout=60.0, what="the paused task's result")
    wrapped = result.result()
    message = wrapped.result.error_msg
    assert wrapped.status == GoalStatus.STATUS_ABORTED, message
    assert TaskCode(wrapped.result.error_code) is TaskCode.PAUSED, message
    assert "paused" in message and "canceled" not in message, message
    assert events[-1].stage == "failed" and events[-1].error_code == TaskCode.PAUSED, events[-1]
    assert sim.world.state.location == start  # the skill was stopped: the simulated robot never arrived
    assert Lifecycle(ros, "sim_skill_server").state() == "inactive" and Lifecycle(ros, "planner").state() == "inactive"

    refused_events: list[Any] = []
    started = time.monotonic()
    refused = send_task(ros, tasks, refused_events)
    ros.wait_for(refused.done, timeout=60.0, what="the refusal")
    wrapped = refused.result()
    message = wrapped.result.error_msg
    assert time.monotonic() - started < 30.0  # at once: no LLM, no robot (generous for a loaded machine)
    assert wrapped.status == GoalStatus.STATUS_ABORTED, message
    assert TaskCode(wrapped.result.error_code) is TaskCode.NOT_ACTIVE, message
    assert "sim_skill_server is not active" in message and "inactive: paused" in message and "RESUME" in message
    assert not any(e.stage in ("planning", "replanning") for e in refused_events)  # the planner was never asked
    assert sim.world.state.location == start


class _HeldLlm(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that answers the activation probe (GET /v1/models) and holds every chat request
    until the test ends (the planner's LLM call is under way when the stack is paused)."""

    called = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        body = json.dumps({"data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        type(self).called.set()
        type(self).release.wait(120.0)  # a server thread, not a node's callback

    def log_message(self, *_args: Any) -> None:
        pass


def test_a_pause_mid_plan_ends_the_plan_paused(ros: Any) -> None:
    """Issue 38 item 9, the planner's side: a PAUSE through ~/manage_nodes while the LLM call runs ends the call and
    the plan_task goal PAUSED, saying the planner was paused (not an LLM error, not a cancel)."""
    _HeldLlm.called.clear()
    _HeldLlm.release.clear()
    llm = ThreadingHTTPServer(("127.0.0.1", 0), _HeldLlm)
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    try:
        ros.add(SceneGraphServer(context=ros.context))
        params = [
            Parameter("llm", value="openai"),
            Parameter("base_url", value=f"http://127.0.0.1:{llm.server_address[1]}/v1"),
            Parameter("api_key_env", value="SAYPLAN_TEST_NO_KEY"),
            Parameter("planner", value="llm_as_planner"),
            Parameter("timeout_s", value=100.0),
        ]
        planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params), bring_up=False)
        boss = manager(ros, ["planner"])
        assert boss.started.wait(120.0) and boss.startup_result[0], boss.startup_result
        ros.wait_for(lambda: planner.graph_version > 0, timeout=60.0, what="the graph")
        operator = ros.node("operator")
        plans = ActionClient(operator, PlanTask, "plan_task")
        assert plans.wait_for_server(timeout_sec=30.0)
        sent = plans.send_goal_async(PlanTask.Goal(instruction=INSTRUCTION))
        ros.wait_for(sent.done, what="plan_task acceptance")
        result = sent.result().get_result_async()
        ros.wait_for(_HeldLlm.called.is_set, timeout=60.0, what="the LLM call")
        manage = operator.create_client(ManageLifecycleNodes, "/lifecycle_manager/manage_nodes")
        pause = ManageLifecycleNodes.Request(command=ManageLifecycleNodes.Request.PAUSE)
        answer = ros.call(manage, pause, timeout=120.0)
        assert answer.success, answer.message
        ros.wait_for(result.done, timeout=60.0, what="the paused plan's result")
        wrapped = result.result()
        outcome = wrapped.result.outcome
        assert wrapped.status == GoalStatus.STATUS_ABORTED, outcome.error_msg
        assert PlanCode(outcome.error_code) is PlanCode.PAUSED, outcome.error_msg
        assert "planner was paused" in outcome.error_msg and "RESUME" in outcome.error_msg, outcome.error_msg
    finally:
        _HeldLlm.release.set()
        llm.shutdown()
        llm.server_close()


def drop_first_responses(service: Any, count: int) -> list[int]:
    """Make `service` (an rclpy Service) drop its first `count` responses, as the RMW does (module docstring)."""
    dropped: list[int] = []
    send = service.send_response

    def maybe_send(response: Any, header: Any) -> None:
        if len(dropped) < count:
            dropped.append(1)
            return
        send(response, header)

    service.send_response = maybe_send
    return dropped


def test_manager_asks_again_when_a_get_state_answer_is_lost(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    dropped = drop_first_responses(sim._service_get_state, 1)
    params = [Parameter("node_names", value=["sim_skill_server"]), QUIET_FAILURE, Parameter("node_wait_s", value=8.0)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert dropped == [1]  # the loss happened: the node got the request and its answer never left
    assert ok, line
    assert sim.lifecycle_state() == State.PRIMARY_STATE_ACTIVE and boss.exit_reason is None


@pytest.mark.serial  # alone: a resend must land within a 3 s wait
def test_manager_still_gives_up_on_a_node_that_never_answers(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    dropped = drop_first_responses(sim._service_get_state, 10**6)
    params = [Parameter("node_names", value=["sim_skill_server"]), QUIET_FAILURE, Parameter("node_wait_s", value=3.0)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert not ok and line.startswith("sim_skill_server: no answer asking it for its state within 3 s"), line
    assert len(dropped) >= 2  # asked more than once
    assert sim.lifecycle_state() == State.PRIMARY_STATE_UNCONFIGURED


def test_manager_sees_a_transition_taken_when_its_answer_is_lost(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    dropped = drop_first_responses(sim._service_change_state, 1)  # the configure's answer
    params = [
        Parameter("node_names", value=["sim_skill_server"]),
        QUIET_FAILURE,
        Parameter("transition_timeout_s", value=20.0),
    ]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(60.0)
    ok, line = boss.startup_result
    assert dropped == [1]
    assert ok, line
    assert sim.lifecycle_state() == State.PRIMARY_STATE_ACTIVE
