"""robot:=spot end to end: the whole stack (`create_nodes(context, "spot", ...)`) over DDS with the fake Spot
in the test process and the planner answering from a replayed transcript, on the demo instruction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt (make test does)"
)

from action_msgs.msg import GoalStatus
from fakes.spot import FakeSpot
from fakes.spot.harness import login, spot_parameters, stand_up, stop_node
from fakes.spot.office import DESK_PLACE, office_site, office_world
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOAL, GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import SkillCode, Stage, Status, TaskCode
from sayplan_core.sim import check_goals
from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.msg import PlanReport
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.stack import create_nodes

pytestmark = pytest.mark.ros

#: The demo task in Spot's words: no coffee machine (Spot has no turn_on), the mug straight to Niko's desk.
SPOT_PLAN = [
    ("goto", "kitchen"), ("open", "kitchen_cupboard"), ("access", "kitchen_cupboard"), ("pickup", "coffee_mug"),
    ("goto", "nikos_office"), ("access", "nikos_desk"), ("release", "coffee_mug"), ("done", ""),
]  # fmt: skip
#: After the grasp slips: the cupboard is open and the robot is in the kitchen.
REST_OF_PLAN = SPOT_PLAN[2:]


def test_the_demo_instruction_on_spot_with_a_failed_grasp_and_a_replan(
    ros: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=GOOD_PLAN),  # needs turn_on, which the spot action set lacks: refused, asked again
        say("plan", plan=SPOT_PLAN),
        say("plan", plan=REST_OF_PLAN),  # after the injected grasp failure
    )
    with FakeSpot.running(tmp_path, office_world()) as spot:
        login(monkeypatch, spot)
        spot.world.grasp_failures["coffee_mug"] = 1
        nodes = create_nodes(
            ros.context,
            "spot",
            {
                "planner": [Parameter("replay_transcript", value=str(transcript))],
                "spot_skill_server": spot_parameters(spot, office_site(tmp_path / "site.yaml")),
            },
        )
        for node in nodes:
            ros.add(node)
        graph = nodes[0]
        skills = next(n for n in nodes if n.get_name() == "spot_skill_server")
        try:
            stood = stand_up(ros, skills)  # activation takes the lease; standing is the operator's step
            assert stood.success, stood.message
            describe = ros.call(
                ros.node("probe").create_client(DescribeSkills, "describe_skills"), DescribeSkills.Request()
            )
            assert describe.robot == "spot" and describe.default_action_set == "spot"
            reports: list[Any] = []
            ros.node("listener").create_subscription(PlanReport, "plan_results", reports.append, EVENTS_QOS)
            client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
            assert client.wait_for_server(timeout_sec=10.0)
            feedback: list[Any] = []
            future = client.send_goal_async(
                ExecuteTask.Goal(instruction=INSTRUCTION), feedback_callback=lambda f: feedback.append(f.feedback)
            )
            ros.wait_for(future.done, what="goal acceptance")
            result_future = future.result().get_result_async()
            ros.wait_for(result_future.done, timeout=90.0, what="execute_task result")
            wrapped = result_future.result()
            result = wrapped.result
            assert wrapped.status == GoalStatus.STATUS_SUCCEEDED, result.error_msg
            assert result.success and result.error_code == TaskCode.NONE and result.replans == 1
            events = [f.event for f in feedback]
            failed = [(e.step.action, SkillCode(e.error_code)) for e in events if e.status == Status.FAILED]
            assert failed == [("pickup", SkillCode.GRASP_FAILED)]
            assert Stage.REPLANNING in [e.stage for e in events]
            # the first answer needed turn_on: refused in Spot's action set before the robot moved, and asked again
            ros.wait_for(lambda: len(reports) >= 2, what="plan reports")
            first = reports[0].outcome
            assert first.action_set == "spot" and first.verified
            assert [(s.action, s.target) for s in first.plan] == SPOT_PLAN
            assert len(first.llm_calls) == 4  # two searches, the turn_on plan (refused), the Spot plan
            assert not any(step.action == "turn_on" for report in reports for step in report.outcome.full_plan)
            # what the robot did, as the fake saw it
            world = spot.world
            assert world.handles["kitchen_cupboard"].opened
            assert [p[0] for p in world.placements] == ["coffee_mug"]
            assert world.placements[0][1] == pytest.approx(DESK_PLACE, abs=1e-6)
            assert len(spot.calls("ManipulationApi")) == 3  # the handle, the slipped grasp, the grasp
            assert check_goals(graph.graph, [GOAL]).success  # the live scene graph agrees
            assert graph.graph.agent_location() == "nikos_office"
        finally:
            stop_node(ros, skills)  # sit, power off and return the lease while the fake still answers
    assert not spot.world.motors_on and spot.world.lease_owner == ""
