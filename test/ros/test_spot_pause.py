"""A lifecycle PAUSE (deactivate) of spot_skill_server while a goto walks, against the fake Spot driven by the
unmodified bosdyn-client (issue 38, fail-safe v2).

The sim skill server's pause is tested in test_lifecycle.py; Spot's deactivate has its own path (the robot told
the node is stopping, SkillServer.stop_robot, then sit, power off and the lease returned), so it is checked here on
both ways a goto moves Spot: a GraphNav navigate_to (a node bound to a waypoint) and a body trajectory (a node
without one). The walking goal must end PAUSED (nobody canceled it: a CANCELED would tell the executor an operator
stopped the task), only once the robot stopped (the fake's body still, its walk halted by a stop command), with no
fault latched (a pause is not a fault: the operator's RESUME must be enough to go on). A goal sent while the node is
inactive is refused NOT_ACTIVE before anything is sent to the robot. Resumed (activate, then the operator's
stand_up), the robot walks again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt (make test does)"
)

from action_msgs.msg import GoalStatus
from fakes.spot import FakeSpot
from fakes.spot.harness import login, run_skill, spot_skill_server, stand_up, wait_until
from fakes.spot.office import office, office_site, office_world
from lifecycle_msgs.msg import Transition
from rclpy.action import ActionClient
from test_lifecycle import Lifecycle

from sayplan_core.outcomes import SkillCode
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep

pytestmark = pytest.mark.ros
OFFICE = office()
#: Commands that move the robot's body or arm, as the fake logs them (FakeWorld.motion_log).
MOVES = {"walk", "navigate", "stand", "power_on", "arm_move", "grasp", "gripper", "handle"}


@pytest.fixture
def spot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSpot]:
    with FakeSpot.running(tmp_path, office_world(OFFICE)) as fake:
        login(monkeypatch, fake)
        yield fake


@pytest.mark.parametrize(
    ("target", "how"),
    [("kitchen", "navigate"), ("pose8", "trajectory")],
    ids=["graphnav_navigate", "body_trajectory"],
)
def test_a_pause_mid_walk_stops_spot_ends_the_skill_paused_and_refuses_goals_until_resumed(
    ros: Any, spot: FakeSpot, tmp_path: Path, target: str, how: str
) -> None:
    world = spot.world
    world.speed_mps = 0.1  # minutes to the target: it is still walking whenever the pause comes
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    # stop_timeout_s: how long the robot may take to report it stands still before that is a latched fault; generous,
    # so that a loaded machine is never taken for a robot that walks on
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0, stop_timeout_s=10.0) as server:
        life = Lifecycle(ros, "spot_skill_server")
        assert life.state() == "active"
        skills = ActionClient(ros.node("executor"), ExecuteSkill, "execute_skill")
        assert skills.wait_for_server(timeout_sec=10.0)
        sent = skills.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target=target)))
        ros.wait_for(sent.done, what="goal acceptance")
        handle = sent.result()
        assert handle.accepted
        result = handle.get_result_async()
        wait_until(world.moving, timeout=60.0, what="the robot to walk")
        with world.lock:
            walk = world.motion
        assert walk is not None and walk.kind == how, walk  # the goto moves Spot the way this case is about
        stops = world.stop_count

        assert life.set(Transition.TRANSITION_DEACTIVATE)  # the lifecycle manager's PAUSE, over DDS
        ros.wait_for(result.done, timeout=60.0, what="the walking skill to end")
        wrapped = result.result()
        outcome = wrapped.result.outcome
        # a pause, not a cancel: nobody canceled this goal
        assert SkillCode(outcome.error_code) is SkillCode.PAUSED, outcome.error_msg
        assert wrapped.status == GoalStatus.STATUS_ABORTED, outcome.error_msg
        assert "was paused" in outcome.error_msg and "RESUME" in outcome.error_msg, outcome.error_msg
        # the robot was stopped: its walk halted by a stop command, short of the target, and it stands still
        assert world.stop_count > stops
        with world.lock:
            world.advance()
            assert world.motion is None, "the body still walks (the fake reports a velocity)"
            assert walk.halted == "stop", walk.halted
            halted_at = (world.body.x, world.body.y)
        assert (walk.goal.x, walk.goal.y) != pytest.approx(halted_at, abs=0.01)  # it never got there
        assert server.fault_latch.fault is None and server.fault_latch.later == []  # a pause latches nothing
        assert life.state() == "inactive"
        assert world.lease_owner == "" and not world.motors_on  # deactivate sat, powered off, returned the lease

        # a goal while inactive: refused before anything is sent to the robot
        mark = len(world.motion_log)
        commands, navigations = len(spot.calls("RobotCommand")), len(spot.calls("NavigateTo"))
        status, outcome = run_skill(ros, skills, "goto", "nikos_office")
        assert SkillCode(outcome.error_code) is SkillCode.NOT_ACTIVE, outcome.error_msg
        assert status == GoalStatus.STATUS_ABORTED and "not active" in outcome.error_msg, outcome.error_msg
        assert [kind for _, kind in world.motion_log[mark:]] == []
        assert len(spot.calls("RobotCommand")) == commands and len(spot.calls("NavigateTo")) == navigations
        with world.lock:
            world.advance()
            assert world.motion is None and (world.body.x, world.body.y) == halted_at  # it has not moved since

        # RESUME (activate; the operator stands it up): not latched, so the next goto walks
        assert life.set(Transition.TRANSITION_ACTIVATE) and life.state() == "active"
        assert [kind for _, kind in world.motion_log[mark:] if kind in MOVES] == []  # activation moves nothing
        stood = stand_up(ros, server)
        assert stood.success, stood.message
        world.speed_mps = 60.0
        status, outcome = run_skill(ros, skills, "goto", target, timeout=60.0)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
