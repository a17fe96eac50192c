"""The planner node's parameters over DDS: the default `planner` can only be set to one the node offers (as
`ros2 param set planner planner <other>` would), and a misspelled nested planner option is refused at configure
naming the option meant. The LLM is a local port nobody listens on: configure never calls it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from lifecycle_msgs.msg import State
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter

from sayplan_core.planners import PLANNERS
from sayplan_ros.planner_node import PlannerNode

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
