"""The planner node's parameters over DDS: the default `planner` can only be set to one the node offers (as
`ros2 param set planner planner <other>` would), and a misspelled nested planner option is refused at configure
naming the option meant. The LLM is a local port nobody listens on: configure never calls it. Another DDS peer
cannot redirect the files the planner reads or writes (those parameters are read-only), a bad per-goal value is
refused, and a good one is applied to the next goal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from lifecycle_msgs.msg import State
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PLANNERS
from sayplan_interfaces.action import PlanTask
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros


def planner(ros: Any, **params: Any) -> PlannerNode:
    """A planner whose LLM is a local port nobody listens on: configure never calls it."""
    values = {"llm": "ollama", "base_url": "http://127.0.0.1:9", "timeout_s": 3.0, **params}
    overrides = [Parameter(k, value=v) for k, v in values.items()]
    return ros.add(PlannerNode(context=ros.context, parameter_overrides=overrides), bring_up=False)


def test_the_default_planner_cannot_be_set_to_one_not_offered(ros: Any) -> None:
    assert len(PLANNERS) >= 2, f"two installed planners are needed, found {list(PLANNERS)}"
    offered, other = "sayplan", next(name for name in PLANNERS if name != "sayplan")
    node = planner(ros, planners=offered)
    node.trigger_configure()
    assert node.lifecycle_state() == State.PRIMARY_STATE_INACTIVE, node.transition_error
    client = ros.node("operator").create_client(SetParameters, "/planner/set_parameters")
    request = SetParameters.Request(parameters=[Parameter("planner", value=other).to_parameter_msg()])
    result = ros.call(client, request).results[0]  # what `ros2 param set planner planner <other>` does
    assert not result.successful and f"planner '{other}' is not offered" in result.reason, result.reason
    assert node.get_parameter("planner").value == "sayplan"
    request = SetParameters.Request(parameters=[Parameter("planner", value=offered).to_parameter_msg()])
    assert ros.call(client, request).results[0].successful  # one it offers is still accepted


def test_a_misspelled_nested_planner_option_is_refused_at_configure(ros: Any) -> None:
    node = planner(ros, **{"sayplan.floor_veiw_rooms": 2})
    node.trigger_configure()
    assert node.lifecycle_state() == State.PRIMARY_STATE_UNCONFIGURED
    line = node.transition_error
    assert "sayplan.floor_veiw_rooms (did you mean sayplan.floor_view_rooms?)" in line, line


def set_parameter(ros: Any, node: str, parameter: Parameter) -> Any:
    """Set one parameter of `node` from another DDS peer, as `ros2 param set` does; the SetParameters result."""
    client = ros.node(f"peer_{time.monotonic_ns()}").create_client(SetParameters, f"/{node}/set_parameters")
    return ros.call(client, SetParameters.Request(parameters=[parameter.to_parameter_msg()])).results[0]


def test_a_peer_cannot_redirect_files_and_bad_values_are_refused(ros: Any, tmp_path: Path) -> None:
    four_calls = [say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN), say("plan")]
    t = write_transcript(tmp_path / "t.json", *four_calls)
    ros.add(SceneGraphServer(context=ros.context))
    node = ros.add(
        PlannerNode(
            context=ros.context,
            parameter_overrides=[
                Parameter("replay_transcript", value=str(t)),
                Parameter("record_transcript", value=str(tmp_path / "records")),
            ],
        )
    )
    for name, value in (("record_transcript", "/tmp/overwritten.json"), ("replay_transcript", "/etc/passwd")):
        answer = set_parameter(ros, "planner", Parameter(name, value=value))
        assert not answer.successful and "read-only" in answer.reason.lower().replace(" ", "-"), answer.reason
    answer = set_parameter(ros, "planner", Parameter("max_calls", value=0))
    assert not answer.successful and "max_calls" in answer.reason
    assert node.get_parameter("max_calls").value == 40
    # a good per-goal change is applied to the next goal, not silently ignored
    assert set_parameter(ros, "planner", Parameter("max_calls", value=2)).successful
    ros.wait_for(lambda: node.graph_version > 0, what="the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    accepted = client.send_goal_async(PlanTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(accepted.done, what="goal acceptance")
    assert accepted.result().accepted
    result = accepted.result().get_result_async()
    ros.wait_for(result.done, what="plan result")
    outcome = result.result().result.outcome
    assert (
        outcome.error_code == PlanCode.BUDGET_EXHAUSTED and "call budget exhausted (2 LLM calls)" in outcome.error_msg
    )
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == ["plan_task_001.json"]
    assert not Path("/tmp/overwritten.json").exists()
