"""Review 28 fixes that need ROS: the lifecycle manager against a lost lifecycle answer, planner parameters.

The lost answer is what rmw_fastrtps does on a loaded machine: a service that got a request before it discovered
the client's response reader waits 100 ms for it, then drops the response (rmw_fastrtps_shared_cpp
src/rmw_response.cpp, `__rmw_send_response`: "client will not receive response", RMW_RET_TIMEOUT; rclpy's
`service_send_response` turns that into a RuntimeWarning). The node here is a real managed node; only its
get_state service's first response is dropped, as that RMW drops it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from lifecycle_msgs.msg import State
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter

from sayplan_core.planners import PLANNERS
from sayplan_ros.lifecycle_manager import LifecycleManager
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = pytest.mark.ros


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
    params = [Parameter("node_names", value=["sim_skill_server"]), Parameter("node_wait_s", value=8.0)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert dropped == [1]  # the loss happened: the node got the request and its answer never left
    assert ok, line
    assert sim.lifecycle_state() == State.PRIMARY_STATE_ACTIVE and boss.exit_reason is None


def test_manager_still_gives_up_on_a_node_that_never_answers(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    dropped = drop_first_responses(sim._service_get_state, 10**6)
    params = [Parameter("node_names", value=["sim_skill_server"]), Parameter("node_wait_s", value=3.0)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert not ok and line.startswith("sim_skill_server: no answer asking it for its state within 3 s"), line
    assert len(dropped) >= 2  # asked more than once
    assert sim.lifecycle_state() == State.PRIMARY_STATE_UNCONFIGURED


# ----------------------------------------------------------------------------- planner parameters
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


def test_manager_sees_a_transition_taken_when_its_answer_is_lost(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    dropped = drop_first_responses(sim._service_change_state, 1)  # the configure's answer
    params = [Parameter("node_names", value=["sim_skill_server"]), Parameter("transition_timeout_s", value=20.0)]
    boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
    assert boss.started.wait(60.0)
    ok, line = boss.startup_result
    assert dropped == [1]
    assert ok, line
    assert sim.lifecycle_state() == State.PRIMARY_STATE_ACTIVE
