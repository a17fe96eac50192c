"""The simulated skill server over a long run: skill after skill leaves no timer behind (each skill's one-shot
timer is destroyed: one left over per skill would show after the first), and a finished goal is forgotten after
`result_timeout_s`. How the time per skill changes
over such a run is measured by scripts/bench_skill_time.py, not asserted here: it depends on the machine's load."""

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
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = pytest.mark.ros


def send(ros: Any, client: ActionClient, goal: Any) -> tuple[Any, Any]:
    """Send `goal`, wait until it is accepted; its handle and the future of its result."""
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(goal)
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    assert handle.accepted
    return handle, handle.get_result_async()


def test_skill_after_skill_leaves_no_timer_behind(ros: Any) -> None:
    skills = ros.add(SimSkillServer(context=ros.context, parameter_overrides=[Parameter("skill_delay_s", value=0.004)]))
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    timers_before = len(list(skills.timers))
    for index in range(40):
        _, result = send(
            ros, client, ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8" if index % 2 else "pose7"))
        )
        ros.wait_for(result.done, what=f"skill {index}")
        assert result.result().result.outcome.success
    assert len(list(skills.timers)) == timers_before  # every one-shot timer was destroyed


def test_finished_skill_goals_expire(ros: Any) -> None:
    skills = ros.add(
        SimSkillServer(
            context=ros.context,
            parameter_overrides=[Parameter("skill_delay_s", value=0.0), Parameter("result_timeout_s", value=1.0)],
        )
    )
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    handle, result = send(ros, client, ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
    ros.wait_for(result.done, what="the skill")
    assert result.result().status == GoalStatus.STATUS_SUCCEEDED
    done_at = time.monotonic()
    statuses = []
    while time.monotonic() - done_at < 10.0:  # the server forgets a finished goal after result_timeout_s (1 s)
        again = handle.get_result_async()
        ros.wait_for(again.done, what="the result asked again")
        statuses.append(again.result().status)
        if statuses[-1] == GoalStatus.STATUS_UNKNOWN:
            break
        time.sleep(0.1)
    assert statuses[-1] == GoalStatus.STATUS_UNKNOWN, statuses
    assert set(statuses[:-1]) <= {GoalStatus.STATUS_SUCCEEDED}, statuses  # until then, its result
    assert skills.world.state.location == "pose8"
