"""The fault latch every skill server keeps (sayplan_ros.skill_server), on the simulated robot and the whole stack:
a robot fault is latched, every later skill and task is refused before anything moves, and only the operator's
~/clear_fault clears it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import SkillCode, Stage, TaskCode
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.sim_skill_server import SimSkillServer
from sayplan_ros.stack import create_nodes

pytestmark = pytest.mark.ros


def skill(ros: Any, name: str, target: str, timeout: float = 15.0) -> tuple[int, Any]:
    client = ActionClient(ros.node(f"operator_skill_{len(ros._nodes)}"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action=name, target=target)))
    ros.wait_for(sent.done, what="goal acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=timeout, what="execute_skill result")
    return result.result().status, result.result().result.outcome


def task(ros: Any) -> tuple[Any, list[Any]]:
    events: list[Any] = []
    client = ActionClient(ros.node(f"operator_task_{len(ros._nodes)}"), ExecuteTask, "execute_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION), lambda f: events.append(f.feedback.event))
    ros.wait_for(sent.done, what="goal acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=60.0, what="execute_task result")
    return result.result().result, events


def test_a_robot_fault_is_latched_until_the_operator_clears_it(ros: Any, tmp_path: Path) -> None:
    transcript = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    nodes = {
        n.get_name(): ros.add(n)
        for n in create_nodes(
            ros.context,
            "sim",
            {
                "planner": [Parameter("replay_transcript", value=str(transcript))],
                "sim_skill_server": [
                    Parameter("failures", value="pickup:coffee_mug:robot_fault"),
                    Parameter("skill_delay_s", value=0.0),
                ],
            },
        )
    }
    sim: SimSkillServer = nodes["sim_skill_server"]
    first, _ = task(ros)
    assert first.error_code == TaskCode.ROBOT_FAULT, first.error_msg
    assert "robot_fault" in first.error_msg and sim.clear_fault_service in first.error_msg
    where = sim.world.state.location

    # a new task is refused before the planner is asked (the transcript holds no further answer) or the robot moves
    second, events = task(ros)
    assert second.error_code == TaskCode.ROBOT_FAULT and "has a latched fault" in second.error_msg
    assert "pickup(coffee_mug)" in second.error_msg and sim.clear_fault_service in second.error_msg
    assert not [e for e in events if e.stage in (str(Stage.PLANNING), str(Stage.EXECUTING))]
    # a skill sent straight to the robot is refused with the latched cause, and the world does not change
    status, outcome = skill(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED
    assert "robot_fault during pickup(coffee_mug)" in outcome.error_msg
    assert sim.world.state.location == where

    cleared = ros.clear_fault(sim)
    assert cleared.success and "cleared: robot_fault during pickup(coffee_mug)" in cleared.message
    assert "nothing to check" in cleared.message
    again = ros.clear_fault(sim)
    assert again.success and again.message == "no fault latched"
    status, outcome = skill(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert sim.world.state.location == "pose8"


def test_describe_skills_names_the_latched_fault(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context, parameter_overrides=[Parameter("skill_delay_s", value=0.0)]))
    client = ros.node("operator").create_client(DescribeSkills, "describe_skills")
    assert ros.call(client, DescribeSkills.Request()).fault == ""
    sim.fault_latch.latch(
        SkillCode.ESTOPPED, "e-stop pressed (seen by a watchdog)"
    )  # as a backend does outside a skill
    fault = ros.call(client, DescribeSkills.Request()).fault
    assert fault.startswith("estopped at ") and "e-stop pressed" in fault and sim.clear_fault_service in fault


def test_clear_fault_is_refused_while_a_skill_runs(ros: Any) -> None:
    """A fault a backend latches while a skill still runs (an e-stop a watchdog saw) cannot be cleared under it."""
    sim = ros.add(SimSkillServer(context=ros.context, parameter_overrides=[Parameter("skill_delay_s", value=30.0)]))
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
    ros.wait_for(sent.done, what="goal acceptance")
    handle = sent.result()
    sim.fault_latch.latch(SkillCode.ESTOPPED, "e-stop pressed")
    refused = ros.clear_fault(sim)
    assert not refused.success and "a skill is running" in refused.message
    handle.cancel_goal_async()
    result = handle.get_result_async()
    ros.wait_for(result.done, what="the canceled skill's result")
    assert result.result().status == GoalStatus.STATUS_CANCELED
    ros.wait_for(lambda: ros.clear_fault(sim).success, what="the clear once the skill ended")
    assert sim.fault_latch.fault is None and sim.world.state.location == "pose7"
