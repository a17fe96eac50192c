"""franka_omron_skill_server against fake robot servers over DDS and a fake ARCL base over TCP: every skill's
success and failure paths with typed codes, cancel mid-drive and mid-grasp, refusals before anything moves."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
for _package in ("nav2_msgs", "franka_msgs", "control_msgs"):
    pytest.importorskip(
        _package, reason=f"{_package} is not importable: build the test overlay (scripts/build_test_overlay.sh)"
    )

from action_msgs.msg import GoalStatus  # noqa: E402
from fakes.arcl_server import Drive  # noqa: E402
from fakes.franka_robot import (  # noqa: E402
    MOTIONS,
    SITE,
    FakeRobot,
    apply_update,
    robot_parameters,
    send_skill,
    start_fakes,
    wait_until,
)
from fakes.ros_robot import GraspTry, Leg  # noqa: E402

from sayplan_core.envs import load_env  # noqa: E402
from sayplan_core.outcomes import SkillCode  # noqa: E402
from sayplan_interfaces.srv import DescribeSkills  # noqa: E402
from sayplan_ros.scene_graph_server import SceneGraphServer  # noqa: E402

pytestmark = pytest.mark.ros
OFFICE = load_env("office")
MakeRobot = Callable[..., FakeRobot]


@pytest.fixture
def make_robot(ros: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeRobot]:
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    started: list[FakeRobot] = []
    ros.add(SceneGraphServer(context=ros.context))

    def make(backend: str = "arcl", prepare: Callable[[Any], None] | None = None, **params: Any) -> FakeRobot:
        """`prepare(fake ARCL server)` runs before the node is configured (configure logs in to the base)."""
        fakes = start_fakes(ros, backend)
        if "arcl" in fakes:
            monkeypatch.setenv("SAYPLAN_ARCL_PASSWORD", fakes["arcl"].password)
            if prepare is not None:
                prepare(fakes["arcl"])
        server = FrankaOmronSkillServer(
            context=ros.context, parameter_overrides=robot_parameters(backend, fakes, **params)
        )
        robot = FakeRobot(ros.add(server), fakes["gripper"], fakes["arm"], fakes.get("arcl"), fakes.get("nav2"))
        started.append(robot)
        wait_until(lambda: server._graph.latest()[0] is not None, what="the scene graph")
        return robot

    yield make
    for robot in started:
        if robot.arcl is not None:
            robot.arcl.close()


def nearest_node(x: float, y: float) -> str:
    """Brute force over the office's rooms and poses (site-file poses first): the node nearest to (x, y)."""
    site = yaml.safe_load(SITE.read_text())["nodes"]
    best = []
    for node in OFFICE.iter_nodes("room", "pose"):
        px, py = site[node.id]["pose"][:2] if "pose" in site.get(node.id, {}) else node.position[:2]
        best.append(((px - x) ** 2 + (py - y) ** 2, node.id))
    return min(best)[1]


def agent_location(outcome: Any) -> str | None:
    for node in outcome.graph_update.upsert:
        if node.type == "agent":
            for item in node.attributes:
                if item.key == "location":
                    return str(json.loads(item.value))
    return None


# ----------------------------------------------------------------------------- base over ARCL
def test_goto_drives_to_the_bound_goal_or_the_node_point(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert agent_location(outcome) == "pose8"
    assert robot.arcl is not None
    # pose8 has no site entry: its graph position (35 m, 0 m) as an ARCL point; the arm first went to travel
    assert robot.arcl.drives() == ["doTask gotoPoint 35000 0 0"]
    assert robot.arm.executed[0][1] == (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert robot.arcl.drives()[-1] == "goto Kitchen" and robot.arcl.location == (55000.0, -5000.0, 0.0)
    assert any("going to kitchen" in f.status for f in robot.feedback)
    assert len(robot.arm.executed) == 1  # the arm was already in its travel pose


def test_login_asks_the_goal_list_and_the_password_stays_out_of_the_log(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    status, _ = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED
    assert robot.arcl is not None and robot.arcl.logins == 1
    assert robot.arcl.commands[0] == "getGoals"
    assert robot.arcl.password not in " ".join(robot.arcl.commands)


@pytest.mark.parametrize(
    ("drive", "code", "words"),
    [
        ("fail", SkillCode.UNREACHABLE, "Failed going to goal Kitchen"),
        ("interrupt", SkillCode.ROBOT_FAULT, "interrupted"),
        ("estop", SkillCode.ESTOPPED, "emergency stop"),
    ],
)
def test_failed_drives_are_typed_and_report_where_the_base_is(
    make_robot: MakeRobot, ros: Any, drive: str, code: SkillCode, words: str
) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive(drive))
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_ABORTED
    assert SkillCode(outcome.error_code) is code and words in outcome.error_msg, outcome.error_msg
    # the base stopped partway; the result puts the agent at the room or pose node nearest to where it stands
    assert "status" in robot.arcl.commands
    x, y, _ = robot.arcl.location
    assert agent_location(outcome) == nearest_node(x / 1000.0, y / 1000.0)


def test_failed_point_drive_is_unreachable(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("fail"))
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.UNREACHABLE
    assert "Failed doing task gotoPoint 35000 0 0" in outcome.error_msg


def test_a_goal_the_base_map_lacks_is_refused_before_driving(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot(prepare=lambda arcl: arcl.goals.pop("Kitchen"))
    assert robot.arcl is not None
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_ABORTED
    assert SkillCode(outcome.error_code) is SkillCode.INVALID_TARGET
    assert "no goal 'Kitchen'" in outcome.error_msg and robot.arcl.drives() == []


def test_wrong_password_stops_the_configure_with_one_line(make_robot: MakeRobot) -> None:
    """Configure logs in to the base: a wrong password stops the start-up there, and never shows the password."""

    def wrong(arcl: Any) -> None:
        arcl.password = "something else"  # the node is given the old one through the environment

    with pytest.raises(RuntimeError, match="password") as refused:
        make_robot(prepare=wrong)
    assert os.environ["SAYPLAN_ARCL_PASSWORD"] not in str(refused.value)


def test_a_lost_link_then_a_changed_password_is_a_robot_fault(make_robot: MakeRobot, ros: Any) -> None:
    """Logged in at configure; the link drops and the base's password changes: the next drive's login fails as
    a robot fault, and never shows the password."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.password = "something else"
    robot.arcl.drop_connections()
    wait_until(lambda: not robot.server.base._link.ready, what="the node to see the link drop")
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT
    assert "password" in outcome.error_msg and os.environ["SAYPLAN_ARCL_PASSWORD"] not in outcome.error_msg


def test_a_base_that_sends_no_arcl_stops_the_configure(make_robot: MakeRobot) -> None:
    def babble(arcl: Any) -> None:
        arcl.banner = "x" * 5000

    with pytest.raises(RuntimeError, match="longer than 4096 bytes"):  # configure logs in: refused there
        make_robot(prepare=babble)


def test_a_base_that_stops_speaking_arcl_is_refused(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.banner = "x" * 5000
    robot.arcl.drop_connections()  # once up, a base that stops speaking ARCL is a robot fault, then latched
    wait_until(lambda: not robot.server.base._link.ready, what="the node to see the link drop")
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "longer than 4096 bytes" in outcome.error_msg
    robot.arcl.banner = ""
    robot.arcl.goals.update({f"Goal{i}": (0.0, 0.0, 0.0) for i in range(10_001)})
    _, outcome = send_skill(ros, robot, "goto", "pose8")  # latched: refused before the link is even tried
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and "longer than 4096 bytes" in outcome.error_msg
    answer = ros.clear_fault(robot.server)  # the operator's check connects, and the goal list is refused
    assert not answer.success and "more than 10000 goals" in answer.message, answer.message
    assert robot.arcl.drives() == []


def test_no_base_at_the_address_stops_the_configure(make_robot: MakeRobot) -> None:
    with pytest.raises(RuntimeError, match=r"cannot connect to the base.s ARCL server at 127\.0\.0\.1:1"):
        make_robot(arcl_port=1)


def test_a_lost_link_mid_drive_is_a_fault_and_the_next_drive_reconnects(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    client_result: list[Any] = []
    import threading

    worker = threading.Thread(target=lambda: client_result.append(send_skill(ros, robot, "goto", "kitchen")))
    worker.start()
    wait_until(lambda: robot.arcl is not None and robot.arcl.drives() == ["goto Kitchen"], what="the drive")
    robot.arcl.drop_connections()
    worker.join(15)
    status, outcome = client_result[0]
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT
    assert "lost the link" in outcome.error_msg and "latched" in outcome.error_msg
    # the base may still be driving: nothing moves until an operator's check (which reconnects) clears the fault
    _, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and robot.arcl.drives() == ["goto Kitchen"]
    answer = ros.clear_fault(robot.server)
    assert answer.success and "Motors enabled" in answer.message, answer.message
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert robot.arcl.logins == 2


def test_cancel_mid_drive_sends_stop(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    status, outcome = cancel_after(ros, robot, "goto", "kitchen", lambda: robot.arcl.drives() == ["goto Kitchen"])
    assert status == GoalStatus.STATUS_CANCELED and SkillCode(outcome.error_code) is SkillCode.CANCELED
    assert "stop" in robot.arcl.commands


def cancel_after(ros: Any, robot: FakeRobot, skill: str, target: str, started: Callable[[], bool]) -> tuple[int, Any]:
    from rclpy.action import ActionClient

    from sayplan_interfaces.action import ExecuteSkill
    from sayplan_interfaces.msg import PlanStep

    client = ActionClient(ros.node("canceler"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action=skill, target=target)))
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    ros.wait_for(started, what="the skill to start moving the robot")
    handle.cancel_goal_async()
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=15.0, what="the canceled result")
    return result.result().status, result.result().result.outcome


# ----------------------------------------------------------------------------- arm and gripper
def test_access_pickup_and_release_run_the_taught_motions(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    for skill, target in (("goto", "kitchen"), ("open", "kitchen_cupboard"), ("access", "coffee_machine")):
        status, outcome = send_skill(ros, robot, skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert robot.arcl.drives()[-1] == "goto CoffeeMachine"
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")
    # the mug is in the cupboard: the base moves there, the arm goes to the cupboard's pre-grasp, the mug is grasped
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert robot.arcl.drives()[-1] == "goto KitchenCupboard"
    assert robot.gripper.homed == 1
    width, _speed, force, inner, outer = robot.gripper.grasps[-1]
    assert (width, force) == (0.065, 30.0) and inner == outer == 0.01
    nodes = {n.id: n for n in outcome.graph_update.upsert}
    assert nodes["coffee_mug"].relation == "inside_hand"
    status, outcome = send_skill(ros, robot, "access", "coffee_machine")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    status, outcome = send_skill(ros, robot, "release", "coffee_mug")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert robot.gripper.moves[-1][0] == 0.08  # fingers opened to let go
    nodes = {n.id: n for n in outcome.graph_update.upsert}
    assert (nodes["coffee_mug"].parent, nodes["coffee_mug"].relation) == ("coffee_machine", "ontop_of")
    # the arm replayed exactly the taught waypoints: the last motion ended at the coffee machine's approach pose
    assert robot.arm.executed[-1][1] == (-0.2, -0.3, 0.0, -2.0, 0.0, 1.7, 0.785)


def test_a_grasp_that_closes_on_nothing_is_grasp_failed(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.gripper.script(GraspTry(object_width=None))
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")
    assert status == GoalStatus.STATUS_ABORTED
    assert SkillCode(outcome.error_code) is SkillCode.GRASP_FAILED, outcome.error_msg
    assert "closed without holding it" in outcome.error_msg
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")  # the next try holds the mug
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


def test_a_gripper_exception_is_a_robot_fault(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    robot.gripper.script(GraspTry(exception="libfranka gripper: command failed: gripper not homed"))
    _, outcome = send_skill(ros, robot, "pickup", "coffee_mug")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "not homed" in outcome.error_msg


def test_cancel_mid_grasp_stops_the_fingers(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    robot.gripper.script(GraspTry(hold=True))
    status, outcome = cancel_after(ros, robot, "pickup", "coffee_mug", lambda: bool(robot.gripper.grasps))
    assert status == GoalStatus.STATUS_CANCELED and SkillCode(outcome.error_code) is SkillCode.CANCELED
    wait_until(lambda: robot.gripper.stopped == 1, what="the gripper to stop")


def test_an_arm_that_leaves_its_path_is_blocked(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    robot.arm.script("succeed", "path_violation")  # travel, then the approach hits something
    status, outcome = send_skill(ros, robot, "access", "coffee_machine")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.BLOCKED
    assert "PATH_TOLERANCE_VIOLATED" in outcome.error_msg


def test_a_controller_with_other_joints_rejects_and_that_is_a_fault(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    robot.arm.joints = tuple(f"panda_joint{i}" for i in range(1, 8))
    _status, outcome = send_skill(ros, robot, "access", "coffee_machine")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "rejected" in outcome.error_msg
    assert robot.arm.rejected == 1


def test_a_step_waits_for_the_graph_version_it_follows(make_robot: MakeRobot, ros: Any) -> None:
    """The executor applied goto's update but this server's copy has not heard of it yet: judged on the copy, open
    found the agent elsewhere and reported no change (the cupboard stayed closed in the graph; found by review)."""
    from sayplan_interfaces.action import ExecuteSkill
    from sayplan_interfaces.msg import PlanStep

    robot = make_robot()
    status, went = send_skill(ros, robot, "goto", "kitchen", apply=False)
    assert status == GoalStatus.STATUS_SUCCEEDED, went.error_msg
    server = next(n for n in ros._nodes if isinstance(n, SceneGraphServer))
    goal = ExecuteSkill.Goal(step=PlanStep(action="open", target="kitchen_cupboard"), graph_version=server.version + 1)
    future = robot.client.send_goal_async(goal)
    ros.wait_for(future.done, what="acceptance")
    result = future.result().get_result_async()
    wait_until(lambda: robot.server._graph.latest()[1] == server.version, what="the copy")
    assert not result.done() and robot.gripper.grasps == []  # waiting; the arm has not moved
    assert apply_update(ros, robot, went.graph_update) == goal.graph_version
    ros.wait_for(result.done, timeout=15.0, what="open result")
    outcome = result.result().result.outcome
    assert outcome.success, outcome.error_msg
    assert "open" in {n.id: list(n.states) for n in outcome.graph_update.upsert}["kitchen_cupboard"]


@pytest.mark.serial  # alone: bounds the wait in seconds
def test_a_cancel_ends_the_wait_for_a_graph_version_at_once(make_robot: MakeRobot, ros: Any) -> None:
    """A step waiting for a version its copy does not hold yet is woken by the goal's stop (not by a deadline or a
    look every few milliseconds): the cancel ends it CANCELED long before graph_wait_s, and nothing moved."""
    from rclpy.action import ActionClient

    from sayplan_interfaces.action import ExecuteSkill
    from sayplan_interfaces.msg import PlanStep

    robot = make_robot(graph_wait_s=60.0)
    server = next(n for n in ros._nodes if isinstance(n, SceneGraphServer))
    robot.client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert robot.client.wait_for_server(timeout_sec=10.0)
    goal = ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen"), graph_version=server.version + 5)
    future = robot.client.send_goal_async(goal)
    ros.wait_for(future.done, what="acceptance")
    handle = future.result()
    result = handle.get_result_async()
    time.sleep(0.5)  # well into the wait: the copy is at the server's version, the step follows a later one
    assert not result.done()
    started = time.monotonic()
    ros.wait_for(handle.cancel_goal_async().done, what="cancel response")
    ros.wait_for(result.done, timeout=5.0, what="the canceled step's result")  # graph_wait_s is 60 s
    waited = time.monotonic() - started
    wrapped = result.result()
    assert wrapped.status == GoalStatus.STATUS_CANCELED, wrapped.result.outcome.error_msg
    assert wrapped.result.outcome.error_code == SkillCode.CANCELED
    assert "waiting for the scene graph" in wrapped.result.outcome.error_msg
    assert waited < 5.0
    assert robot.arm.executed == [] and robot.arcl is not None and robot.arcl.drives() == []  # nothing moved


def test_open_close_and_switches_use_their_motions(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    for skill, target in (("goto", "kitchen"), ("open", "kitchen_cupboard"), ("close", "kitchen_cupboard"), ("turn_on", "coffee_machine"), ("turn_off", "coffee_machine")):  # fmt: skip
        status, outcome = send_skill(ros, robot, skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    # open grasps the handle with its taught width; the other three only move the arm
    assert [g[0] for g in robot.gripper.grasps] == [0.02]
    states = {n.id: list(n.states) for n in outcome.graph_update.upsert}
    assert "off" in states["coffee_machine"]


@pytest.mark.parametrize(
    ("skill", "target", "fault", "code", "words"),
    [
        ("release", "coffee_mug", "move", SkillCode.ROBOT_FAULT, "opening the gripper to 80 mm failed: libfranka"),
        ("open", "kitchen_cupboard", "grasp", SkillCode.GRASP_FAILED, "grasping kitchen_cupboard"),
        ("close", "kitchen_cupboard", "arm", SkillCode.BLOCKED, "handle_close at kitchen_cupboard"),
        ("turn_on", "coffee_machine", "arm", SkillCode.BLOCKED, "turn_on at coffee_machine"),
    ],
)
def test_manipulation_failures_are_typed(
    make_robot: MakeRobot, ros: Any, skill: str, target: str, fault: str, code: SkillCode, words: str
) -> None:
    robot = make_robot()
    for step in (("goto", "kitchen"), ("access", "coffee_machine")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    if fault == "move":
        robot.gripper.fail_next_move = "libfranka gripper: command failed: finger blocked"
    elif fault == "grasp":
        robot.gripper.script(GraspTry(object_width=None))
    else:  # the drive to the asset (if any) and its approach run; the skill's own motion hits something
        robot.arm.script(*(["succeed"] * (2 if target != "coffee_machine" else 0)), "path_violation")
    status, outcome = send_skill(ros, robot, skill, target)
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is code, outcome.error_msg
    assert words in outcome.error_msg


def test_a_handle_motion_that_fails_lets_go_of_the_handle(make_robot: MakeRobot, ros: Any) -> None:
    """The door is grasped, then the pull hits something: the fingers must open before the skill ends, or the next
    goto would drive off with the cupboard's handle in them."""
    robot = make_robot()
    for step in (("goto", "kitchen"), ("access", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.arm.script("succeed", "path_violation")  # the arm reaches the handle; pulling it open is blocked
    moves_before = len(robot.gripper.moves)
    status, outcome = send_skill(ros, robot, "open", "kitchen_cupboard")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.BLOCKED, outcome.error_msg
    assert "handle_open" in outcome.error_msg
    assert [g[0] for g in robot.gripper.grasps] == [0.02]
    # opened before reaching for the handle, and again after the failed pull
    assert [width for width, _ in robot.gripper.moves[moves_before:]] == [0.08, 0.08]


def test_a_gripper_that_will_not_let_go_of_the_handle_is_a_robot_fault(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    for step in (("goto", "kitchen"), ("access", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.arm.script("succeed", "path_violation")  # the pull is blocked
    robot.gripper.move_errors.extend(["", "libfranka gripper: command failed: finger blocked"])  # the release fails
    status, outcome = send_skill(ros, robot, "open", "kitchen_cupboard")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT
    assert "did not let go of 'kitchen_cupboard'" in outcome.error_msg and "finger blocked" in outcome.error_msg
    assert "handle_open" in outcome.error_msg and len(robot.gripper.moves) == 2


def test_cancel_while_grasping_the_handle_lets_go(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    for step in (("goto", "kitchen"), ("access", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.gripper.script(GraspTry(hold=True))
    moves_before = len(robot.gripper.moves)
    status, outcome = cancel_after(ros, robot, "open", "kitchen_cupboard", lambda: bool(robot.gripper.grasps))
    assert status == GoalStatus.STATUS_CANCELED and SkillCode(outcome.error_code) is SkillCode.CANCELED
    assert robot.gripper.stopped == 1
    # opened before reaching for the handle, and again after the canceled grasp, though the skill was canceled
    assert [width for width, _ in robot.gripper.moves[moves_before:]] == [0.08, 0.08]


def test_a_pickup_whose_retreat_fails_reports_the_object_in_the_hand(make_robot: MakeRobot, ros: Any) -> None:
    """The mug is grasped, then the arm's retreat hits something: the robot holds the mug (opening the fingers with
    the arm stopped mid-motion would drop it somewhere unknown), so the update must put it in the hand."""
    robot = make_robot()
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.arm.script("succeed", "path_violation")  # pre_grasp reached; the retreat to approach is blocked
    moves_before = len(robot.gripper.moves)
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.BLOCKED, outcome.error_msg
    assert "approach at kitchen_cupboard" in outcome.error_msg
    nodes = {n.id: n for n in outcome.graph_update.upsert}
    assert "coffee_mug" in nodes and nodes["coffee_mug"].relation == "inside_hand"
    assert len(robot.gripper.moves) == moves_before + 1  # only the opening before the grasp: the mug was kept
    assert robot.server._graph.latest()[0].held_object() == "coffee_mug"


def test_refusals_come_before_anything_moves(make_robot: MakeRobot, ros: Any, tmp_path: Path) -> None:
    # only the kitchen was taught, and no switch: turn_on is not offered at all
    taught = yaml.safe_load(MOTIONS.read_text())
    del taught["nodes"]["nikos_desk"]
    for motions_of in taught["nodes"].values():
        motions_of.pop("turn_on", None)
        motions_of.pop("turn_off", None)
    motions = tmp_path / "motions.yaml"
    motions.write_text(yaml.safe_dump(taught))
    robot = make_robot(motions_file=str(motions))
    describe = ros.call(ros.node("probe").create_client(DescribeSkills, "describe_skills"), DescribeSkills.Request())
    offered = next(s.skills for s in describe.action_sets if s.name == "sayplan")
    assert "turn_on" not in offered and "pickup" in offered
    _, outcome = send_skill(ros, robot, "turn_on", "coffee_machine")
    assert SkillCode(outcome.error_code) is SkillCode.UNKNOWN_SKILL
    _, outcome = send_skill(ros, robot, "access", "nikos_desk")  # nothing taught at the desk
    assert SkillCode(outcome.error_code) is SkillCode.INVALID_TARGET and "'nikos_desk'" in outcome.error_msg
    _, outcome = send_skill(ros, robot, "access", "fridge")  # the fridge has no base pose in the site file
    assert SkillCode(outcome.error_code) is SkillCode.INVALID_TARGET
    assert robot.arcl is not None and robot.arcl.drives() == [] and robot.arm.executed == []


# ----------------------------------------------------------------------------- base through Nav2
def test_nav2_base_drives_to_the_site_pose(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot("nav2")
    assert robot.nav2 is not None
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    frame, x, y, yaw, tree = robot.nav2.goals[-1]
    assert (frame, x, y, tree) == ("map", 55.0, -5.0, "") and abs(yaw) < 1e-9
    assert any("m left" in f.status for f in robot.feedback)


@pytest.mark.parametrize(
    ("error_code", "code"),
    [(208, SkillCode.UNREACHABLE), (105, SkillCode.BLOCKED), (202, SkillCode.ROBOT_FAULT), (0, SkillCode.ROBOT_FAULT)],
)
def test_nav2_failures_are_typed(make_robot: MakeRobot, ros: Any, error_code: int, code: SkillCode) -> None:
    robot = make_robot("nav2")
    assert robot.nav2 is not None
    robot.nav2.script(Leg("abort", error_code=error_code))
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is code, outcome.error_msg
    # the leg stopped halfway: the agent is put at the node nearest to Nav2's last feedback pose
    x, y, _ = robot.nav2.pose
    assert agent_location(outcome) == nearest_node(x, y)


def test_nav2_cancel_mid_navigation(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot("nav2")
    assert robot.nav2 is not None
    robot.nav2.script(Leg("hold"))
    status, outcome = cancel_after(ros, robot, "goto", "kitchen", lambda: bool(robot.nav2 and robot.nav2.goals))
    assert status == GoalStatus.STATUS_CANCELED and SkillCode(outcome.error_code) is SkillCode.CANCELED
    assert robot.nav2.canceled == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"arcl_host": ""}, "arcl_host must name the Omron base"),
        ({"arcl_password_env": "SAYPLAN_TEST_UNSET_PASSWORD"}, "environment variable SAYPLAN_TEST_UNSET_PASSWORD"),
        ({"motions_file": "/nonexistent/motions.yaml"}, "cannot read motion file /nonexistent/motions.yaml"),
        ({"site_file": "/nonexistent/site.yaml"}, "cannot read site file /nonexistent/site.yaml"),
        ({"navigation_backend": "teleport"}, "navigation_backend must be one of arcl, nav2"),
    ],
)
def test_bad_settings_stop_the_node_with_one_clear_error(
    ros: Any, monkeypatch: pytest.MonkeyPatch, params: dict[str, Any], message: str
) -> None:
    from rclpy.parameter import Parameter

    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    monkeypatch.setenv("SAYPLAN_ARCL_PASSWORD", "pw")
    values = {"arcl_host": "127.0.0.1", **params}
    node = FrankaOmronSkillServer(
        context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()]
    )
    with pytest.raises(ValueError, match=message):
        ros.add(node)  # configure checks the settings and refuses
    assert not node.configured
