"""A new verb is one YAML entry: an action set that extends a bundled one with `grab` (role pick) runs on the
simulated robot, on Spot (the fake at the bosdyn protocol boundary) and on the Franka/Omron (fake ARCL, arm and
gripper servers), each robot choosing its program by the action's role, not its name. A verb whose role a robot
has no program for stops that robot's configure, naming the verb."""

# ruff: noqa: F811  (make_robot is the fixture imported from test_franka; tests take it by parameter name)
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt (make test does)"
)

from action_msgs.msg import GoalStatus
from fakes.franka_robot import send_skill
from fakes.spot import FakeSpot
from fakes.spot.harness import login, run_skill, spot_skill_server
from fakes.spot.office import office, office_world
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from test_franka import MakeRobot, make_robot  # noqa: F401  (the one robot fixture, shared)

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.srv import DescribeSkills

pytestmark = pytest.mark.ros

#: The one entry a user writes: what the verb is called, what it does (its role) and what the simulator checks.
GRAB = {
    "role": "pick",
    "targets": ["object"],
    "affordance": ["pickup", "pick_up"],
    "description": "Take an object from the accessed asset into the hand.",
    "preconditions": ["not_held", "hand_empty", "in_agent_room", "under_accessed", "container_open"],
    "effects": ["grasp"],
}


def action_set(folder: Path, base: str, **actions: Any) -> str:
    path = folder / f"{base}_with_grab.yaml"
    path.write_text(yaml.safe_dump({"name": f"{base}_with_grab", "extends": base, "actions": actions}))
    return str(path)


def in_hand(outcome: Any, item: str) -> bool:
    return any(n.id == item and n.relation == "inside_hand" for n in outcome.graph_update.upsert)


UP_TO_THE_CUPBOARD = (("goto", "kitchen"), ("open", "kitchen_cupboard"), ("access", "kitchen_cupboard"))


def test_the_simulated_robot_runs_a_new_verb_by_its_role(ros: Any, tmp_path: Path) -> None:
    from sayplan_ros.sim_skill_server import SimSkillServer

    params = {"action_set": action_set(tmp_path, "sayplan", grab=GRAB), "skill_delay_s": 0.0}
    sim = ros.add(
        SimSkillServer(context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    )
    node = ros.node("operator")
    skills = ActionClient(node, ExecuteSkill, "execute_skill")
    catalog = ros.call(node.create_client(DescribeSkills, "describe_skills"), DescribeSkills.Request())
    offered = {info.name: list(info.skills) for info in catalog.action_sets}
    assert "grab" in offered["sayplan_with_grab"], offered
    for skill, target in UP_TO_THE_CUPBOARD:
        status, outcome = run_skill(ros, skills, skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    status, outcome = run_skill(ros, skills, "grab", "coffee_mug")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert in_hand(outcome, "coffee_mug") and sim.world.state.holding == "coffee_mug"


@pytest.fixture
def spot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSpot]:
    with FakeSpot.running(tmp_path, office_world(office())) as fake:
        login(monkeypatch, fake)
        yield fake


def test_spot_runs_a_new_verb_by_its_role(ros: Any, spot: FakeSpot, tmp_path: Path) -> None:
    with spot_skill_server(ros, spot, tmp_path, action_set=action_set(tmp_path, "spot", grab=GRAB)):
        skills = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
        for skill, target in UP_TO_THE_CUPBOARD:
            status, outcome = run_skill(ros, skills, skill, target)
            assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        status, outcome = run_skill(ros, skills, "grab", "coffee_mug")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert len(spot.calls("ManipulationApi")) == 2  # the cupboard's handle, then the mug: a grasp, as pickup does
    assert spot.world.holding == "coffee_mug" and in_hand(outcome, "coffee_mug")


def test_spot_refuses_at_configure_a_verb_whose_role_it_has_no_program_for(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:

    press = {
        "role": "switch_on",
        "targets": ["asset"],
        "affordance": "turn_on",
        "preconditions": ["in_agent_room"],
        "effects": [{"set_state": "on"}],
    }
    chosen = action_set(tmp_path, "spot", press=press)
    with spot_skill_server(ros, spot, tmp_path, bring_up=False, action_set=chosen) as server:
        with pytest.raises(ValueError, match=r"no program for press \(switch_on\) of the action set") as refused:
            server.bring_up()
        assert not server.configured
    assert server.transition_error.endswith(str(refused.value))
    assert spot.calls("RobotCommand") == []  # refused before the session: nothing was sent to the robot


def test_the_franka_omron_runs_a_new_verb_by_its_role(make_robot: MakeRobot, ros: Any, tmp_path: Path) -> None:
    robot = make_robot(action_set=action_set(tmp_path, "sayplan", grab=GRAB))
    for skill, target in UP_TO_THE_CUPBOARD:
        status, outcome = send_skill(ros, robot, skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    grasps = len(robot.gripper.grasps)
    status, outcome = send_skill(ros, robot, "grab", "coffee_mug")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert len(robot.gripper.grasps) == grasps + 1 and in_hand(outcome, "coffee_mug")


def test_the_franka_omron_refuses_at_configure_a_verb_whose_role_it_has_no_program_for(
    ros: Any, tmp_path: Path
) -> None:
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    look = {"role": "look", "targets": ["asset"], "affordance": None, "effects": [{"reveal": "ontop_of"}]}
    params = {"navigation_backend": "nav2", "action_set": action_set(tmp_path, "sayplan", look_on=look)}
    server = FrankaOmronSkillServer(
        context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]
    )
    ros.add(server, bring_up=False)
    with pytest.raises(ValueError, match=r"no program for look_on \(look\) of the action set"):
        server.bring_up()
    assert not server.configured
