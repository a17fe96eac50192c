"""A Nav2 navigator killed with SIGKILL in another process while it holds a goto's leg (issue 38, fail-safe v2).

test_franka_failsafe.py destroys the navigator in the test's own process, which says goodbye on DDS: its endpoints
go at once. A process killed with SIGKILL says nothing: its participant is dropped only when its DDS lease runs out
(4 s with the stack's config/dds/fastdds_liveness.xml, which the navigator's process uses here, as every process of
the stack should). Here the navigator is test/fakes/ros_robot.py's FakeNav2 in a subprocess of its own, holding
the leg; it is killed mid-leg, and the skill server (the simulated robot with `navigation_backend: nav2`, and the
Franka on a Nav2 base) must end the goto SERVER_UNAVAILABLE and latch it, long before the leg's own 300 s deadline
(a deadline would end it TIMEOUT); the next goto is refused FAULT_LATCHED; `clear_fault` is
refused while no navigator is there, and passes once a new navigator process is up, after which the goto drives.
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
from fakes.ros_robot import FakeGripper, FakeTrajectoryController  # noqa: E402
from fakes.server_process import ServerProcess  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from sayplan_core.outcomes import SkillCode  # noqa: E402
from sayplan_ros.scene_graph_server import SceneGraphServer  # noqa: E402
from sayplan_ros.sim_skill_server import SimSkillServer  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: SIGKILLs the navigator: the 4 s DDS lease races the test
#: The leg's own deadline: far beyond the hang guard, so a goto that ends before it was ended by the server watch.
LEG_DEADLINE_S = 300.0
HANG_GUARD_S = 120.0
#: How long a goal waits for the navigator to appear and to answer: a hang guard (a loaded machine), not 5 s.
DRIVER_WAIT_S = 60.0


@pytest.fixture
def navigators(ros: Any) -> Iterator[Any]:
    """Start a FakeNav2 in a process of its own (test/fakes/server_process.py), as often as asked."""
    started: list[ServerProcess] = []

    def start() -> ServerProcess:
        navigator = ServerProcess("nav2", ros.domain_id)
        started.append(navigator)
        return navigator

    yield start
    for navigator in started:
        navigator.stop()


def sim_robot(ros: Any) -> FakeRobot:
    """The simulated robot driving its gotos through Nav2 (no fake in this process: the navigator is elsewhere)."""
    ros.add(SceneGraphServer(context=ros.context))
    values: dict[str, Any] = {
        "navigation_backend": "nav2",
        "skill_delay_s": 0.0,
        "nav2_leg_timeout_s": LEG_DEADLINE_S,
        "driver_wait_s": DRIVER_WAIT_S,
    }
    server = SimSkillServer(context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    ros.add(server)
    return FakeRobot(server, gripper=None, arm=None)  # type: ignore[arg-type]


def franka_robot(ros: Any) -> FakeRobot:
    """franka_omron_skill_server on a Nav2 base, its gripper and arm faked here, its navigator elsewhere."""
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    ros.add(SceneGraphServer(context=ros.context))
    gripper = ros.add(FakeGripper(context=ros.context))
    arm = ros.add(FakeTrajectoryController(context=ros.context))
    params = robot_parameters(
        "nav2", {}, drive_timeout_s=LEG_DEADLINE_S, nav2_leg_timeout_s=LEG_DEADLINE_S, driver_wait_s=DRIVER_WAIT_S
    )
    server = ros.add(FrankaOmronSkillServer(context=ros.context, parameter_overrides=params))
    wait_until(lambda: server._graph.latest()[0] is not None, timeout=60.0, what="the scene graph")
    return FakeRobot(server, gripper, arm)


@pytest.mark.parametrize("make", [sim_robot, franka_robot], ids=["sim_skill_server", "franka_omron_skill_server"])
def test_a_navigator_killed_mid_leg_in_another_process_ends_the_goto_server_unavailable_and_latches(
    ros: Any, navigators: Any, make: Any
) -> None:
    robot = make(ros)
    navigator = navigators()
    navigator.wait_for_clients()  # it knows the skill server's client: its answers reach it
    navigator.hold_next()
    out: list[Any] = []
    worker = threading.Thread(
        target=lambda: out.append(send_skill(ros, robot, "goto", "kitchen", timeout=HANG_GUARD_S)), daemon=True
    )
    worker.start()
    navigator.expect("holding", HANG_GUARD_S)  # the leg runs in the other process
    killed = time.monotonic()
    navigator.kill()  # no goodbye on DDS: only its lease running out tells the others
    worker.join(HANG_GUARD_S + 10.0)
    took = time.monotonic() - killed
    assert out, "the goto never ended"
    status, outcome = out[0]
    assert SkillCode(outcome.error_code) is SkillCode.SERVER_UNAVAILABLE, outcome.error_msg
    assert status == GoalStatus.STATUS_ABORTED, outcome.error_msg
    assert "Nav2 NavigateToPose server that had the goal is gone" in outcome.error_msg, outcome.error_msg
    assert "latched" in outcome.error_msg, outcome.error_msg
    assert took < LEG_DEADLINE_S, took  # a hang guard: the code above says the watch ended it, not the deadline
    fault = robot.server.fault_latch.fault
    assert fault is not None and fault.code is SkillCode.SERVER_UNAVAILABLE, fault

    _, outcome = send_skill(ros, robot, "goto", "nikos_office")  # latched: no goal goes to any navigator
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED, outcome.error_msg
    # the sim's check waits driver_wait_s for a navigator to appear: the operator asks for a short wait
    assert robot.server.set_parameters([Parameter("driver_wait_s", value=0.5)])[0].successful
    refused = ros.clear_fault(robot.server, timeout=60.0)
    assert not refused.success and "server_unavailable during goto(kitchen)" in refused.message, refused.message
    assert robot.server.fault_latch.fault is not None

    navigators().wait_for_clients()  # a navigator is back (a new process)
    assert robot.server.set_parameters([Parameter("driver_wait_s", value=DRIVER_WAIT_S)])[0].successful
    wait_until(lambda: ros.clear_fault(robot.server, timeout=60.0).success, timeout=120.0, what="clear_fault")
    status, outcome = send_skill(ros, robot, "goto", "kitchen", timeout=HANG_GUARD_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
