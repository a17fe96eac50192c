"""The Franka arm's trajectory controller or franka_gripper dies mid-goal (issue 38, fail-safe v2), on
franka_omron_skill_server against the fake servers of test/fakes/ros_robot.py over DDS (the base: a fake Nav2).

The server that dies runs in a process of its own (test/fakes/server_process.py) and is killed with SIGKILL while it
holds the goal, as a crashed controller manager or franka_gripper would be: it never answers that goal, and only
the server watch (sayplan_ros.server_watch: the goal's status publisher gone, once DDS drops the dead participant)
can end the wait before the call's own deadline. Each deadline here is 300 s, far beyond the hang guard, so a skill
that ends SERVER_UNAVAILABLE (305) was ended by the watch (a deadline says TIMEOUT). What the arm or the fingers did
is unknown, so the fault latches: the next skill is refused before anything moves, the operator's `clear_fault` is
refused while the server is missing (its check names it), and succeeds once a server is back, after which the
robot works again. The navigator's death: test_franka_failsafe.py and test_navigator_killed.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
for _package in ("nav2_msgs", "franka_msgs", "control_msgs"):
    pytest.importorskip(
        _package, reason=f"{_package} is not importable: build the test overlay (scripts/build_test_overlay.sh)"
    )

from action_msgs.msg import GoalStatus  # noqa: E402
from fakes.franka_robot import FakeRobot, robot_parameters, send_skill, wait_until  # noqa: E402
from fakes.ros_robot import FakeGripper, FakeNav2, FakeTrajectoryController  # noqa: E402
from fakes.server_process import ServerProcess  # noqa: E402

from sayplan_core.outcomes import SkillCode  # noqa: E402
from sayplan_ros.scene_graph_server import SceneGraphServer  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: SIGKILLs a server: the 4 s DDS lease races the test
#: The arm's and gripper's own deadlines: far beyond the hang guard, so only the server watch ends the goal.
DEADLINE_S = 300.0
HANG_GUARD_S = 120.0
DRIVER_WAIT_S = 60.0
ARM_ACTION = "/fr3_arm_controller/follow_joint_trajectory"
GRASP_ACTION = "/franka_gripper/grasp"


@pytest.fixture
def processes() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for process in started:
        process.stop()


def robot_with_one_server_elsewhere(ros: Any, processes: list[ServerProcess], elsewhere: str) -> ServerProcess:
    """The Franka on a Nav2 base, with `elsewhere` ("arm" or "gripper") in its own process, the rest here."""
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    process = ServerProcess(elsewhere, ros.domain_id)
    processes.append(process)
    ros.add(SceneGraphServer(context=ros.context))
    ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    if elsewhere != "gripper":
        ros.add(FakeGripper(context=ros.context))
    if elsewhere != "arm":
        ros.add(FakeTrajectoryController(context=ros.context))
    overrides = {"drive_timeout_s": DEADLINE_S, "arm_timeout_s": DEADLINE_S, "gripper_timeout_s": DEADLINE_S}
    # how long a goal may wait for its server to appear and to answer: a hang guard (a loaded machine), not 3 s
    overrides["driver_wait_s"] = DRIVER_WAIT_S
    server = ros.add(
        FrankaOmronSkillServer(context=ros.context, parameter_overrides=robot_parameters("nav2", {}, **overrides))
    )
    wait_until(lambda: server._graph.latest()[0] is not None, timeout=60.0, what="the scene graph")
    process.wait_for_clients()  # it knows the skill server's clients: its answers reach them
    return process


def robot(ros: Any) -> FakeRobot:
    """The skill server and the fakes in this process (a fake that is elsewhere is None)."""
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    def one(kind: type) -> Any:
        return next((n for n in ros._nodes if isinstance(n, kind)), None)

    return FakeRobot(one(FrankaOmronSkillServer), one(FakeGripper), one(FakeTrajectoryController), nav2=one(FakeNav2))


def motion(ros: Any) -> tuple[int, ...]:
    """Everything the fakes in this process record as a motion started: legs, arm goals, finger commands."""
    counts = [len(n.goals) for n in ros._nodes if isinstance(n, FakeNav2)]
    counts += [n.started for n in ros._nodes if isinstance(n, FakeTrajectoryController)]
    counts += [n.commands for n in ros._nodes if isinstance(n, FakeGripper)]
    return tuple(counts)


def dies_mid_goal(ros: Any, process: ServerProcess, fake: FakeRobot, skill: str, target: str) -> Any:
    """Send `skill(target)`; the server in `process` holds its goal and is killed with SIGKILL. The outcome, which
    must come before the dead server's goal deadline (a hang guard), latched."""
    process.hold_next()
    out: list[Any] = []
    worker = threading.Thread(
        target=lambda: out.append(send_skill(ros, fake, skill, target, timeout=HANG_GUARD_S)), daemon=True
    )
    worker.start()
    process.expect("holding", HANG_GUARD_S)  # the goal runs in the other process
    killed = time.monotonic()
    process.kill()
    worker.join(HANG_GUARD_S + 10.0)
    took = time.monotonic() - killed
    assert out, "the skill never ended"
    status, outcome = out[0]
    assert status == GoalStatus.STATUS_ABORTED and "is gone" in outcome.error_msg, outcome.error_msg
    assert "latched" in outcome.error_msg, outcome.error_msg
    assert took < DEADLINE_S, took  # a hang guard: the code says whether the watch ended it (a deadline: TIMEOUT)
    return outcome


def latched_and_refused(ros: Any, fake: FakeRobot, code: SkillCode, missing: str) -> None:
    """The fault holds the robot: the next skill moves nothing; the check refuses while `missing` is not served."""
    fault = fake.server.fault_latch.fault
    assert fault is not None and fault.code is code, fault
    before = motion(ros)
    _, outcome = send_skill(ros, fake, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED, outcome.error_msg
    assert motion(ros) == before
    answer = ros.clear_fault(fake.server, timeout=60.0)
    assert not answer.success and f"arm: no action server on {missing}" in answer.message, answer.message
    assert f"{code.label} during" in answer.message, answer.message
    assert fake.server.fault_latch.fault is not None and motion(ros) == before  # the check moved nothing


def test_an_arm_controller_killed_mid_motion_ends_the_skill_server_unavailable_and_latches(
    ros: Any, processes: list[ServerProcess]
) -> None:
    arm = robot_with_one_server_elsewhere(ros, processes, "arm")
    fake = robot(ros)
    outcome = dies_mid_goal(ros, arm, fake, "access", "coffee_machine")
    assert SkillCode(outcome.error_code) is SkillCode.SERVER_UNAVAILABLE, outcome.error_msg
    assert "arm motion" in outcome.error_msg and ARM_ACTION in outcome.error_msg, outcome.error_msg

    latched_and_refused(ros, fake, SkillCode.SERVER_UNAVAILABLE, ARM_ACTION)
    controller = ros.add(FakeTrajectoryController(context=ros.context))  # the controller restarted
    # the operator's check passes once this node sees the new controller (discovery takes its time)
    wait_until(lambda: ros.clear_fault(fake.server, timeout=60.0).success, timeout=HANG_GUARD_S, what="the clear")
    status, outcome = send_skill(ros, fake, "access", "coffee_machine", timeout=HANG_GUARD_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert controller.executed  # the new controller ran it


def gripper_killed_mid_grasp(ros: Any, processes: list[ServerProcess]) -> tuple[FakeRobot, Any]:
    """At the cupboard, opened; a pickup whose grasp franka_gripper holds; franka_gripper killed under it (its
    grasp, move and homing servers, its joint_states and ~/stop all go)."""
    gripper = robot_with_one_server_elsewhere(ros, processes, "gripper")
    fake = robot(ros)
    for step in (("goto", "kitchen"), ("open", "kitchen_cupboard")):
        status, outcome = send_skill(ros, fake, *step, timeout=HANG_GUARD_S)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    outcome = dies_mid_goal(ros, gripper, fake, "pickup", "coffee_mug")
    assert "grasping coffee_mug" in outcome.error_msg and GRASP_ACTION in outcome.error_msg, outcome.error_msg
    return fake, outcome


def test_a_gripper_killed_mid_grasp_ends_the_skill_server_unavailable(ros: Any, processes: list[ServerProcess]) -> None:
    """contracts.md and franka_omron.md's recovery table: a gripper server gone mid-goal ends the skill
    `server_unavailable` (the operator's table keys on it: the process that died, the servers back)."""
    fake, outcome = gripper_killed_mid_grasp(ros, processes)
    assert SkillCode(outcome.error_code) is SkillCode.SERVER_UNAVAILABLE, outcome.error_msg
    fault = fake.server.fault_latch.fault
    assert fault is not None and fault.code is SkillCode.SERVER_UNAVAILABLE, fault


def test_a_gripper_killed_mid_grasp_latches_until_it_is_back_and_checked(
    ros: Any, processes: list[ServerProcess]
) -> None:
    """Whatever code the skill ends with, the gripper's death is a latched fault: nothing
    moves, the check is refused while franka_gripper is missing, and passes once it is back."""
    fake, outcome = gripper_killed_mid_grasp(ros, processes)
    code = SkillCode(outcome.error_code)
    assert code in (SkillCode.SERVER_UNAVAILABLE, SkillCode.ROBOT_FAULT), outcome.error_msg

    latched_and_refused(ros, fake, code, GRASP_ACTION)
    fake.gripper = ros.add(FakeGripper(context=ros.context))  # franka_gripper restarted
    fake.gripper.let_go()  # and an operator checked the fingers: open, nothing held (as the graph says)
    wait_until(lambda: ros.clear_fault(fake.server, timeout=60.0).success, timeout=HANG_GUARD_S, what="the clear")
    status, outcome = send_skill(ros, fake, "pickup", "coffee_mug", timeout=HANG_GUARD_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert fake.gripper.holding
