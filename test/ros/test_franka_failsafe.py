# ruff: noqa: F811  (make_robot is the fixture imported from test_franka; tests take it by parameter name)
"""Issue 23 on franka_omron_skill_server, at the protocol boundary (fake ARCL base over TCP, fake Nav2,
franka_gripper and trajectory controller over DDS): the latch after a handle that will not let go and how an
operator clears it; the hand read back before and after skills; the ARCL guide's drive messages, the watchdog on a
silent base, and every robot call's own deadline."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
for _package in ("nav2_msgs", "franka_msgs", "control_msgs"):
    pytest.importorskip(
        _package, reason=f"{_package} is not importable: build the test overlay (scripts/build_test_overlay.sh)"
    )

from action_msgs.msg import GoalStatus  # noqa: E402
from fakes.arcl_server import Drive  # noqa: E402
from fakes.franka_robot import FakeRobot, send_skill, wait_until  # noqa: E402
from fakes.ros_robot import GraspTry, Leg  # noqa: E402
from test_franka import MakeRobot, make_robot  # noqa: E402, F401  (the one robot fixture, shared)

from sayplan_core.outcomes import SkillCode  # noqa: E402

pytestmark = [
    pytest.mark.ros,
    pytest.mark.serial,
]  # alone: stops bounded in 3-5 s, 0.5-0.6 s watchdogs, a stray navigator's 1 s sleep raced


def motion(robot: FakeRobot) -> tuple[int, int, int, int]:
    """Everything the fakes record as a motion started: base drives (ARCL or Nav2), arm goals, finger commands."""
    base = len(robot.arcl.drives()) if robot.arcl is not None else len(robot.nav2.goals if robot.nav2 else [])
    return base, robot.arm.started, robot.gripper.commands, len(robot.arm.executed)


def held(robot: FakeRobot) -> str | None:
    graph, _ = robot.server._graph.latest()
    return graph.held_object() if graph is not None else None


def in_background(ros: Any, robot: FakeRobot, skill: str, target: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(send_skill(ros, robot, skill, target, timeout=30.0)))
    worker.start()
    return worker, out


def setup_at_cupboard(ros: Any, robot: FakeRobot) -> None:
    for step in (("goto", "kitchen"), ("access", "kitchen_cupboard")):
        status, outcome = send_skill(ros, robot, *step)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


# ----------------------------------------------------------------------------- defect 2: a stuck handle latches
def test_fingers_stuck_on_the_handle_latch_and_nothing_moves_until_an_operator_clears(
    make_robot: MakeRobot, ros: Any
) -> None:
    robot = make_robot()
    setup_at_cupboard(ros, robot)
    robot.arm.script("succeed", "path_violation")  # the arm reaches the handle; the pull is blocked
    robot.gripper.move_errors.extend(["", "libfranka gripper: command failed: fingers blocked"])  # the release fails
    status, outcome = send_skill(ros, robot, "open", "kitchen_cupboard")
    robot.gripper.stuck = "libfranka gripper: command failed: fingers blocked"  # and stay jammed on the handle
    assert status == GoalStatus.STATUS_ABORTED
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT, outcome.error_msg
    assert "did not let go of 'kitchen_cupboard'" in outcome.error_msg and "latched" in outcome.error_msg
    assert robot.gripper.holding
    before = motion(robot)
    for step in (("goto", "pose8"), ("access", "coffee_machine"), ("pickup", "coffee_mug")):
        status, outcome = send_skill(ros, robot, *step)
        assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED, outcome.error_msg
        assert "did not let go" in outcome.error_msg and "clear_fault" in outcome.error_msg
    assert motion(robot) == before  # nothing drove, no arm goal, no finger command
    answer = ros.clear_fault(robot.server)
    assert not answer.success and "holding something" in answer.message and "hand empty" in answer.message
    assert motion(robot) == before  # the check moved nothing
    robot.gripper.let_go()  # a person frees the fingers
    answer = ros.clear_fault(robot.server)
    assert answer.success, answer.message
    assert "robot_fault during open(kitchen_cupboard)" in answer.message and "Motors enabled" in answer.message
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


def test_clear_fault_with_nothing_latched_says_so(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    answer = ros.clear_fault(robot.server)
    assert answer.success and answer.message == "no fault latched"


# ----------------------------------------------------------------------------- the hand, read back
def test_a_pickup_whose_object_slips_reports_an_empty_hand(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.gripper.script(GraspTry(object_width=0.065, slip=True))
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")
    assert status == GoalStatus.STATUS_ABORTED
    assert SkillCode(outcome.error_code) is SkillCode.GRASP_FAILED, outcome.error_msg
    assert "does not hold 'coffee_mug'" in outcome.error_msg
    assert "coffee_mug" not in {n.id for n in outcome.graph_update.upsert}
    wait_until(lambda: robot.server._graph.latest()[1] == robot.graph_version, what="the copy")
    assert held(robot) is None and not robot.gripper.holding  # graph and gripper agree
    status, outcome = send_skill(ros, robot, "pickup", "coffee_mug")  # not latched: the planner may retry
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    wait_until(lambda: robot.server._graph.latest()[1] == robot.graph_version, what="the copy")
    assert held(robot) == "coffee_mug" and robot.gripper.holding


def test_a_skill_that_needs_an_empty_hand_is_refused_before_anything_moves(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    robot.gripper.width, robot.gripper.holding = 0.03, True  # something the graph does not know of is held
    before = motion(robot)
    for skill, target in (("pickup", "coffee_mug"), ("open", "kitchen_cupboard")):
        status, outcome = send_skill(ros, robot, skill, target)
        assert status == GoalStatus.STATUS_ABORTED
        code = SkillCode(outcome.error_code)
        assert code in (SkillCode.ROBOT_FAULT, SkillCode.FAULT_LATCHED), outcome.error_msg
        assert "refused before the robot moved" in outcome.error_msg
    assert motion(robot) == before


def test_a_hand_that_cannot_be_read_is_a_fault(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot(hand_readback_s=0.3)
    robot.gripper.publishing = False
    time.sleep(0.1)  # let the last published state age past the goal's start
    _status, outcome = send_skill(ros, robot, "access", "coffee_machine")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT, outcome.error_msg
    assert "no gripper state on /franka_gripper/joint_states" in outcome.error_msg


# ----------------------------------------------------------------------------- ARCL: the guide's lines
@pytest.mark.parametrize(
    ("line", "code", "latched"),
    [
        ("Error: Cannot find path", SkillCode.UNREACHABLE, False),
        ("Error: Stalled", SkillCode.ROBOT_FAULT, True),
        ("Error: Robot lost", SkillCode.ROBOT_FAULT, True),
        ("Error: Emergency stop pressed", SkillCode.ESTOPPED, True),
        ("Estop pressed", SkillCode.ESTOPPED, True),
        ("Motors disabled", SkillCode.NOT_POWERED, True),
    ],
)
def test_arcl_messages_end_the_drive_typed(
    make_robot: MakeRobot, ros: Any, line: str, code: SkillCode, latched: bool
) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("say", 0.05, text=line))
    status, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is code, outcome.error_msg
    assert ("latched" in outcome.error_msg) is latched
    if not latched:
        return
    drives = len(robot.arcl.drives())
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and len(robot.arcl.drives()) == drives
    if robot.arcl.motors != "enabled":  # the e-stop or the motors: the check says so and clears nothing
        answer = ros.clear_fault(robot.server)
        assert not answer.success and ("EStop pressed" in answer.message or "Motors disabled" in answer.message)
        robot.arcl.motors = "enabled"  # a person released it and enabled the motors on the base
    answer = ros.clear_fault(robot.server)
    assert answer.success, answer.message
    assert not any(c.casefold() == "enablemotors" for c in robot.arcl.commands)  # never re-powered by SayPlan


def test_an_unrequested_stopped_ends_the_drive_as_a_fault(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("stopped", 0.05))
    _, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "did not ask" in outcome.error_msg


@pytest.mark.serial  # alone: a 0.6 s watchdog races the base
def test_the_watchdog_ends_a_drive_whose_base_went_silent(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot(arcl_status_period_s=0.1, arcl_silence_s=0.6)
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    wait_until(lambda: robot.arcl is not None and "status" in robot.arcl.commands, what="a watchdog status query")
    assert robot.arcl.moving()  # the base answers status: the watchdog lets the drive go on
    robot.arcl.silent = True
    worker.join(20)
    _status, outcome = out[0]
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT, outcome.error_msg
    assert "went silent" in outcome.error_msg and "latched" in outcome.error_msg
    assert robot.arcl.stops and not robot.arcl.moving()  # it was told to stop, and a hung server still stops


def test_a_stop_the_base_does_not_confirm_is_latched(make_robot: MakeRobot, ros: Any) -> None:
    from rclpy.action import ActionClient

    from sayplan_interfaces.action import ExecuteSkill
    from sayplan_interfaces.msg import PlanStep

    robot = make_robot(stop_timeout_s=0.3, arcl_silence_s=30.0)
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    client = ActionClient(ros.node("canceler"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen")))
    ros.wait_for(future.done, what="acceptance")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.silent = True  # it stops when told, but says nothing
    future.result().cancel_goal_async()
    result = future.result().get_result_async()
    ros.wait_for(result.done, timeout=15.0, what="the canceled result")
    assert SkillCode(result.result().result.outcome.error_code) is SkillCode.CANCELED
    assert robot.server.fault_latch.fault is not None
    assert "did not confirm the stop" in robot.server.fault_latch.fault.cause
    robot.arcl.silent = False
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED


# ----------------------------------------------------------------------------- deadlines of their own
def test_a_drive_past_its_deadline_is_stopped_and_ends_timeout(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot(drive_timeout_s=1.0)
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    _status, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=20.0)
    assert SkillCode(outcome.error_code) is SkillCode.TIMEOUT, outcome.error_msg
    assert "longer than 1 s" in outcome.error_msg and robot.arcl.stops and not robot.arcl.moving()


def test_a_nav2_leg_past_its_deadline_is_canceled(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot("nav2", drive_timeout_s=1.0)
    assert robot.nav2 is not None
    robot.nav2.script(Leg("hold"))
    _, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=20.0)
    assert SkillCode(outcome.error_code) is SkillCode.TIMEOUT, outcome.error_msg
    assert robot.nav2.canceled == 1


@pytest.mark.serial  # alone: 0.5 s gripper deadlines
def test_an_arm_motion_and_a_grasp_past_their_deadlines_are_canceled(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot(arm_timeout_s=0.3, gripper_timeout_s=0.5)
    robot.arm.script("succeed", "hold")  # travel, then the approach never ends
    _, outcome = send_skill(ros, robot, "access", "coffee_machine", timeout=20.0)
    assert SkillCode(outcome.error_code) is SkillCode.TIMEOUT, outcome.error_msg
    assert "did not finish within" in outcome.error_msg and robot.arm.canceled == 1
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.gripper.script(GraspTry(hold=True))
    _, outcome = send_skill(ros, robot, "pickup", "coffee_mug", timeout=20.0)
    assert SkillCode(outcome.error_code) is SkillCode.TIMEOUT, outcome.error_msg
    assert "grasping coffee_mug" in outcome.error_msg and robot.gripper.stopped == 1


def test_stop_for_shutdown_stops_the_base_and_the_arm(make_robot: MakeRobot, ros: Any) -> None:
    """What the runner calls on SIGINT/SIGTERM (the signal itself is tested in test_franka_signals.py)."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    assert robot.server.stop_for_shutdown(3.0) is True
    assert not robot.arcl.moving() and len(robot.arcl.stops) == 2  # the cancel's stop, then stop_motion's own
    worker.join(10)
    assert SkillCode(out[0][1].error_code) is SkillCode.CANCELED


def test_a_nav2_fault_latches_and_the_check_asks_for_the_navigator(make_robot: MakeRobot, ros: Any) -> None:
    robot = make_robot("nav2")
    assert robot.nav2 is not None
    robot.nav2.script(Leg("abort", error_code=202))  # ComputePathToPose.TF_ERROR: the robot is at fault
    _, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "latched" in outcome.error_msg
    goals = len(robot.nav2.goals)
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and len(robot.nav2.goals) == goals
    answer = ros.clear_fault(robot.server)
    assert answer.success and "Nav2's navigate_to_pose server is up" in answer.message, answer.message


# ----------------------------------------------------------------------------- issue 23 review (second round)
def test_clear_fault_over_arcl_stops_a_base_that_still_drives_before_it_clears(make_robot: MakeRobot, ros: Any) -> None:
    """Review #1: the link drops mid-drive and cannot be opened again at once (a latched fault; the base drives on).
    The check sends `stop` and sees `Stopped` before it clears; a base whose status says it is under way is not
    cleared."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.accepting = False  # the drive's own attempt to connect again and stop the base fails
    robot.arcl.drop_connections()
    worker.join(20)
    assert SkillCode(out[0][1].error_code) is SkillCode.ROBOT_FAULT and robot.server.fault_latch.fault is not None
    assert "connecting again to send 'stop' failed" in out[0][1].error_msg, out[0][1].error_msg
    assert robot.arcl.moving()  # the fake base drives on without its client
    robot.arcl.accepting = True
    answer = ros.clear_fault(robot.server)
    assert not robot.arcl.moving() and robot.arcl.stops, answer.message  # stopped before anything was cleared
    assert answer.success, answer.message
    robot.arcl.status_text = "Going to Kitchen"  # what a base under way (another client's drive) reports
    robot.server.fault_latch.latch(SkillCode.ROBOT_FAULT, "test")
    answer = ros.clear_fault(robot.server)
    assert not answer.success and "under way" in answer.message, answer.message


def test_shutdown_with_the_arcl_link_down_reconnects_to_stop_the_base(make_robot: MakeRobot, ros: Any) -> None:
    """Review #1: stop_motion with the link lost mid-drive (and not back in time for the drive) connects again and
    sends `stop`."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, _out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.accepting = False
    robot.arcl.drop_connections()
    worker.join(20)
    assert robot.arcl.moving()
    robot.arcl.accepting = True
    assert robot.server.stop_motion(5.0) is True
    assert not robot.arcl.moving() and robot.arcl.stops


def test_nav2_clear_fault_refused_while_a_goal_still_drives_and_the_cancel_is_sent_again(
    make_robot: MakeRobot, ros: Any
) -> None:
    """Review #2: Nav2 never confirms the cancel (a latched fault, the goal drives on): clear_fault does not clear,
    and both the check and stop_motion send the cancel again (a cancel request may be lost)."""
    from rclpy.action import CancelResponse

    robot = make_robot("nav2", drive_timeout_s=1.0, nav2_cancel_timeout_s=0.5)
    assert robot.nav2 is not None
    cancels: list[float] = []

    def refuse(_goal: Any) -> CancelResponse:
        cancels.append(time.monotonic())
        return CancelResponse.REJECT

    robot.nav2._server.register_cancel_callback(refuse)
    robot.nav2.script(Leg("hold"))
    _, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=30.0)
    assert robot.server.fault_latch.fault is not None and robot.nav2.running == 1, outcome.error_msg
    sent = len(cancels)
    answer = ros.clear_fault(robot.server)
    assert not answer.success and "has not ended" in answer.message, answer.message
    wait_until(lambda: len(cancels) > sent, what="the check's cancel")
    sent = len(cancels)
    assert robot.server.stop_motion(1.0) is False
    wait_until(lambda: len(cancels) > sent, what="stop_motion's cancel")
    robot.nav2._server.register_cancel_callback(lambda _goal: CancelResponse.ACCEPT)
    assert robot.server.stop_motion(5.0) is True and robot.nav2.running == 0
    assert ros.clear_fault(robot.server).success


def test_nav2_a_result_from_a_server_that_does_not_know_the_goal_is_not_its_end(
    make_robot: MakeRobot, ros: Any
) -> None:
    """Issue 25: a second NavigateToPose server (a stray navigator in the domain) answers the goal's result request
    with STATUS_UNKNOWN while the real one drives on. That answer ended the goal (`moving` false): the check passed
    and `stop_motion` said stopped with the base still driving. Only a terminal status ends a goal now; the result is
    asked for again with every later cancel, so the real navigator's CANCELED still confirms the stop."""
    import rclpy
    from nav2_msgs.action import NavigateToPose
    from rclpy.action import ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    robot = make_robot("nav2", drive_timeout_s=30.0)
    assert robot.nav2 is not None
    robot.nav2._server.register_cancel_callback(lambda _goal: CancelResponse.REJECT)
    robot.nav2.script(Leg("hold"))

    def refuse_late(_goal: Any) -> GoalResponse:
        time.sleep(1.0)  # the real navigator's acceptance reaches the client first
        return GoalResponse.REJECT

    # in a context of its own, so that it can go away cleanly while the test's executor spins
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros.domain_id)
    stray_node = rclpy.create_node("stray_navigator", context=context)
    ActionServer(
        stray_node,
        NavigateToPose,
        "navigate_to_pose",
        execute_callback=lambda _handle: NavigateToPose.Result(),
        goal_callback=refuse_late,
        callback_group=ReentrantCallbackGroup(),
    )
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(stray_node)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    ros.wait_for(lambda: robot.server.count_services("/navigate_to_pose/_action/get_result") == 2, what="both servers")
    _, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=30.0)
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "status 0" in outcome.error_msg, outcome.error_msg
    assert robot.server.fault_latch.fault is not None and robot.nav2.running == 1
    answer = ros.clear_fault(robot.server)
    assert not answer.success and "has not ended" in answer.message, answer.message
    assert robot.server.stop_motion(1.0) is False and robot.nav2.running == 1
    executor.shutdown(timeout_sec=2.0)  # the stray goes: nothing answers UNKNOWN any more
    spinning.join(5.0)
    context.try_shutdown()
    robot.nav2._server.register_cancel_callback(lambda _goal: CancelResponse.ACCEPT)
    assert robot.server.stop_motion(5.0) is True and robot.nav2.running == 0
    assert ros.clear_fault(robot.server).success


def test_a_fault_under_a_cancel_is_latched_once(make_robot: MakeRobot, ros: Any) -> None:
    """Review #7: the base class latches it; the backend does not latch it again."""
    from rclpy.action import ActionClient

    from sayplan_interfaces.action import ExecuteSkill
    from sayplan_interfaces.msg import PlanStep

    robot = make_robot(stop_timeout_s=0.3, arcl_silence_s=30.0)
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    client = ActionClient(ros.node("canceler"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen")))
    ros.wait_for(future.done, what="acceptance")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.silent = True
    future.result().cancel_goal_async()
    result = future.result().get_result_async()
    ros.wait_for(result.done, timeout=15.0, what="the canceled result")
    assert robot.server.fault_latch.fault is not None and robot.server.fault_latch.later == []


def test_an_arcl_estop_between_skills_latches_and_the_arm_does_not_move(make_robot: MakeRobot, ros: Any) -> None:
    """Review #3: `Estop pressed` broadcast while no drive runs is latched; and with the broadcast missed, an arm
    skill asks queryMotors first and is refused before anything moves."""
    robot = make_robot()
    assert robot.arcl is not None
    setup_at_cupboard(ros, robot)
    robot.arcl.motors = "estop"
    robot.arcl.broadcast("Estop pressed")
    wait_until(lambda: robot.server.fault_latch.fault is not None, what="the latch")
    assert robot.server.fault_latch.fault.code is SkillCode.ESTOPPED
    before = motion(robot)
    _, outcome = send_skill(ros, robot, "open", "kitchen_cupboard")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and motion(robot) == before
    robot.server.fault_latch.clear()  # as if cleared while the e-stop was still pressed, the broadcast missed
    _, outcome = send_skill(ros, robot, "open", "kitchen_cupboard")
    assert SkillCode(outcome.error_code) is SkillCode.ESTOPPED, outcome.error_msg
    assert "before the robot moved" in outcome.error_msg and motion(robot) == before
    robot.arcl.motors = "enabled"


def test_shutdown_mid_arm_motion_and_mid_grasp_stops_them(make_robot: MakeRobot, ros: Any) -> None:
    """Review #6: a shutdown mid-grasp sends franka_gripper's ~/stop although its cancel ended the skill first."""
    robot = make_robot()
    robot.arm.script("succeed", "hold")
    worker, _out = in_background(ros, robot, "access", "coffee_machine")
    wait_until(lambda: robot.arm.started >= 2, what="the approach motion")
    assert robot.server.stop_for_shutdown(3.0) is True and robot.arm.canceled == 1
    worker.join(20)
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        assert send_skill(ros, robot, *step)[0] == GoalStatus.STATUS_SUCCEEDED
    robot.gripper.script(GraspTry(hold=True))
    grasps = len(robot.gripper.grasps)  # the open's grasp of the handle came first
    worker, _out = in_background(ros, robot, "pickup", "coffee_mug")
    wait_until(lambda: len(robot.gripper.grasps) > grasps, what="the grasp")
    assert robot.server.stop_for_shutdown(3.0) is True
    worker.join(20)
    assert robot.gripper.stopped == 1 and robot.gripper.stop_calls >= 1


def test_an_arm_cancel_never_confirmed_is_remembered(make_robot: MakeRobot, ros: Any) -> None:
    """Review #8: the arm's server never confirms a cancel (within arm_cancel_timeout_s): the check fails while the
    goal lives, and shutdown sends its cancel again and waits for it."""
    from rclpy.action import CancelResponse

    robot = make_robot(arm_timeout_s=0.3, arm_cancel_timeout_s=0.5)
    robot.arm._server.register_cancel_callback(lambda _goal: CancelResponse.REJECT)
    robot.arm.script("succeed", "hold")
    _, outcome = send_skill(ros, robot, "access", "coffee_machine", timeout=20.0)
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "confirm the cancel" in outcome.error_msg
    answer = ros.clear_fault(robot.server)
    assert not answer.success and "arm: a goal it was sent has not ended" in answer.message, answer.message
    assert robot.server.stop_motion(1.0) is False
    robot.arm._server.register_cancel_callback(lambda _goal: CancelResponse.ACCEPT)
    assert robot.server.stop_motion(5.0) is True and robot.arm.canceled == 1
    assert ros.clear_fault(robot.server).success


def test_the_hand_is_read_back_after_a_goto(make_robot: MakeRobot, ros: Any) -> None:
    """Review #10: an object that slips out on the way is noticed when the goto ends."""
    robot = make_robot()
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard"), ("pickup", "coffee_mug")):
        status, outcome = send_skill(ros, robot, *step)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert held(robot) == "coffee_mug"
    robot.gripper.width, robot.gripper.holding = 0.0, False  # it slipped out: the fingers closed on nothing
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is not SkillCode.NONE, outcome.error_msg
    wait_until(lambda: held(robot) is None, what="the graph to say the hand is empty")


# ----------------------------------------------------------------------------- issue 38: fail-safe v2
def test_an_estop_latched_twice_is_cleared_by_one_check(make_robot: MakeRobot, ros: Any) -> None:
    """#1: the drive ends `estopped` on the base's `Error: Emergency stop pressed` (p. 251); its `Estop pressed`
    broadcast, read after the skill ended, latches a second fault. Once a person released the e-stop and enabled
    the motors, one clear_fault clears both and names both (the old latch refused every clear while a later fault
    was kept: only killing the process freed the robot)."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("say", 0.05, text="Error: Emergency stop pressed"))
    _, outcome = send_skill(ros, robot, "goto", "kitchen")
    assert SkillCode(outcome.error_code) is SkillCode.ESTOPPED and "latched" in outcome.error_msg, outcome.error_msg
    robot.arcl.broadcast("Estop pressed")  # the base's own broadcast of the same e-stop, after the skill ended
    wait_until(lambda: len(robot.server.fault_latch.later) == 1, what="the broadcast latched beside the first")
    answer = ros.clear_fault(robot.server)  # still pressed: the check refuses
    assert not answer.success and "EStop pressed" in answer.message, answer.message
    robot.arcl.motors = "enabled"  # a person released the e-stop and enabled the motors on the base
    answer = ros.clear_fault(robot.server)
    assert answer.success, answer.message
    assert "estopped during goto(kitchen)" in answer.message, answer.message
    assert "broadcast 'Estop pressed' between skills" in answer.message, answer.message
    assert robot.server.fault_latch.fault is None and robot.server.fault_latch.later == []
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


def test_a_fault_that_comes_while_the_robot_is_checked_keeps_the_latch(make_robot: MakeRobot, ros: Any) -> None:
    """#1, the other half of the rule: the link dropped mid-drive and the base did not take connections for a while
    (the base drove on); the operator's check connects and sends `stop`, and while the base is slow to say
    `Stopped` it broadcasts `Error: Stalled`. That fault came during the check: the clear is refused, naming it;
    the next check clears both faults."""
    robot = make_robot(arcl_timeout_s=30.0)  # the check waits for `Stopped` long enough for this test's steps
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.accepting = False
    robot.arcl.drop_connections()
    worker.join(30)
    assert SkillCode(out[0][1].error_code) is SkillCode.ROBOT_FAULT and "lost the link" in out[0][1].error_msg
    assert robot.arcl.moving()  # nobody could tell it to stop
    robot.arcl.accepting = True
    robot.arcl.stop_answer.clear()  # the base takes its time to say it stands
    stops = len(robot.arcl.stops)
    answers: list[Any] = []
    clearing = threading.Thread(target=lambda: answers.append(ros.clear_fault(robot.server, timeout=60.0)))
    try:
        clearing.start()
        wait_until(lambda: robot.arcl is not None and len(robot.arcl.stops) > stops, 30.0, "the check's stop")
        robot.arcl.broadcast("Error: Stalled")  # during the check
        wait_until(lambda: len(robot.server.fault_latch.later) == 1, what="the fault latched during the check")
    finally:
        robot.arcl.stop_answer.set()
        clearing.join(60)
    answer = answers[0]
    assert not answer.success and "another fault came while the robot was checked" in answer.message, answer.message
    assert "Stalled" in answer.message and not robot.arcl.moving()
    assert robot.server.fault_latch.fault is not None and "lost the link" in robot.server.fault_latch.fault.cause
    answer = ros.clear_fault(robot.server)
    assert answer.success and "lost the link" in answer.message and "Stalled" in answer.message, answer.message
    status, outcome = send_skill(ros, robot, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


@pytest.mark.parametrize("state", ["EStopPressed", "EStop pressed", "Estop pressed, cannot enable motors"])
def test_an_estop_shown_only_by_status_ends_the_drive_estopped(make_robot: MakeRobot, ros: Any, state: str) -> None:
    """#2: the base shows its e-stop only in the `Status:` line of its answer to the watchdog's `status` (p. 240),
    in the guide's spellings (`EStopPressed`: p. 49 and 235), without the broadcast. The drive ends `estopped` at
    the next answer and the fault is latched (it waited for the drive timeout, 100 s, before)."""
    robot = make_robot(arcl_status_period_s=0.2)
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.press_estop(state)  # no broadcast: only `status` and `queryMotors` show it
    worker.join(30)
    assert out, "the drive did not end (it waits for drive_timeout_s)"
    _status, outcome = out[0]
    assert SkillCode(outcome.error_code) is SkillCode.ESTOPPED and "latched" in outcome.error_msg, outcome.error_msg
    assert state in outcome.error_msg
    fault = robot.server.fault_latch.fault
    assert fault is not None and fault.code is SkillCode.ESTOPPED
    wait_until(lambda: robot.arcl is not None and bool(robot.arcl.stops), what="'stop' sent: the goto ends there")
    drives = len(robot.arcl.drives())
    _, outcome = send_skill(ros, robot, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and len(robot.arcl.drives()) == drives
    robot.arcl.motors, robot.arcl.status_text = "enabled", ""  # released and enabled on the base
    answer = ros.clear_fault(robot.server)
    assert answer.success, answer.message


def test_a_link_lost_mid_drive_is_opened_again_and_the_base_stopped(make_robot: MakeRobot, ros: Any) -> None:
    """#3: the TCP link drops mid-drive and the base takes connections again: before the skill ends, the node has
    connected again, sent `stop` and seen `Stopped` (it sent nothing, and the base drove on to its goal)."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("hold"))
    worker, out = in_background(ros, robot, "goto", "kitchen")
    wait_until(lambda: robot.arcl is not None and robot.arcl.moving(), what="the drive")
    robot.arcl.drop_connections()
    worker.join(30)
    _status, outcome = out[0]
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT, outcome.error_msg
    assert "lost the link" in outcome.error_msg and "latched" in outcome.error_msg
    assert "confirmed SayPlan's stop" in outcome.error_msg, outcome.error_msg
    assert robot.arcl.logins == 2 and robot.arcl.stops and not robot.arcl.moving()  # stopped when the skill ended
    answer = ros.clear_fault(robot.server)
    assert answer.success, answer.message


@pytest.mark.parametrize(
    ("line", "code"),
    [("Error: Robot lost", SkillCode.ROBOT_FAULT), ("Error: Cannot find path", SkillCode.UNREACHABLE)],
)
def test_an_error_line_while_the_base_drives_on_stops_it(
    make_robot: MakeRobot, ros: Any, line: str, code: SkillCode
) -> None:
    """#3: an `Error:` line (p. 251) while the base drives on: the node sends `stop` and waits for `Stopped` before
    the skill ends, with the error's own outcome (a robot fault latched; a path not found is for the planner)."""
    robot = make_robot()
    assert robot.arcl is not None
    robot.arcl.script(Drive("say_driving", 0.05, text=line))
    _, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=30.0)
    assert SkillCode(outcome.error_code) is code and line in outcome.error_msg, outcome.error_msg
    assert robot.arcl.stops and not robot.arcl.moving()  # stopped before the skill ended
    assert (robot.server.fault_latch.fault is not None) is code.latches


def test_a_failure_whose_stop_is_not_confirmed_is_latched(make_robot: MakeRobot, ros: Any) -> None:
    """#3: after `Error: Cannot find path` while the base drives on, the base does not confirm the stop within
    `stop_timeout_s`: the base may still be moving, so the skill ends a latched robot fault, and the operator's
    check stops it again before it clears."""
    robot = make_robot(stop_timeout_s=0.5)
    assert robot.arcl is not None
    robot.arcl.script(Drive("say_driving", 0.05, text="Error: Cannot find path"))
    robot.arcl.stop_answer.clear()
    try:
        _, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=30.0)
    finally:
        robot.arcl.stop_answer.set()
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT, outcome.error_msg
    assert "Cannot find path" in outcome.error_msg and "did not confirm the stop" in outcome.error_msg
    assert "latched" in outcome.error_msg
    stops = len(robot.arcl.stops)
    answer = ros.clear_fault(robot.server)
    assert answer.success and len(robot.arcl.stops) > stops, answer.message


# A navigator that dies mid-goal: test/ros/test_navigator_killed.py (a real process killed with SIGKILL). The
# in-process version here (its fake destroyed in the test's own executor) hung about half the time on rclpy's
# handle teardown, never on the code under test.
