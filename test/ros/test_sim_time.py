"""`use_sim_time:=true` with nothing publishing /clock (issue 24 item 5): a skill server's waits run on the steady
clock, so a skill ends in its own time instead of hanging until the executor's timeout, and the node says at
start-up that the clock is missing."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.parameter import Parameter

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_ros.clocks import CLOCK_CHECK_S
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: bounds a wait and a timer in seconds


def test_a_skill_server_with_sim_time_and_no_clock_still_keeps_time(
    ros: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    params = [Parameter("use_sim_time", value=True), Parameter("skill_delay_s", value=0.4)]
    sim = ros.add(SimSkillServer(context=ros.context, parameter_overrides=params))
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    started = time.monotonic()
    sent = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
    ros.wait_for(sent.done, what="goal acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=10.0, what="the skill to end on the steady clock")
    took = time.monotonic() - started
    assert result.result().status == GoalStatus.STATUS_SUCCEEDED and sim.world.state.location == "pose8"
    assert 0.4 <= took < 5.0, took
    ros.wait_for(lambda: time.monotonic() - started > CLOCK_CHECK_S + 0.5, what="the clock check")
    assert "use_sim_time is true but nothing publishes /clock" in capfd.readouterr().err
