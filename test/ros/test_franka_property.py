"""Issue 23's property test on franka_omron_skill_server, through the node and the fakes (not a model): random skill
sequences with faults injected at the protocol boundary (a grasp on nothing, an object that slips, fingers jammed
open or shut, an e-stop or a lost base over ARCL, an arm that hits something) and an operator who frees what the
graph cannot name, enables the base and clears the fault. After every skill:
- while a fault is latched, nothing moves: the fake base got no drive, the arm no goal, the fingers no command;
- the graph never claims an object the fingers do not hold, and fingers holding something the graph does not
  name leave a fault latched (the robot stays still until a person looks);
- once the faults stop, the operator's one clear (after freeing the hand and enabling the base) always succeeds,
  and the robot drives again.
Bounded for CI: few short examples, derandomized, no deadline."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
for _package in ("nav2_msgs", "franka_msgs", "control_msgs"):
    pytest.importorskip(
        _package, reason=f"{_package} is not importable: build the test overlay (scripts/build_test_overlay.sh)"
    )

from conftest import RosHarness, claim_domain, release_domain  # noqa: E402
from fakes.arcl_server import Drive  # noqa: E402
from fakes.franka_robot import FakeRobot, robot_parameters, send_skill, start_fakes, wait_until  # noqa: E402
from fakes.ros_robot import GraspTry  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sayplan_core.outcomes import SkillCode  # noqa: E402
from sayplan_ros.scene_graph_server import SceneGraphServer  # noqa: E402

pytestmark = pytest.mark.ros
#: Every sequence starts at the kitchen with the cupboard open (so pickups can succeed); the steps after it are
#: drawn, the hand's skills more often than the drives.
PROLOGUE = [(("goto", "kitchen"), "none"), (("open", "kitchen_cupboard"), "none")]
STEPS = [
    ("goto", "pose8"),
    ("goto", "kitchen"),
    ("access", "coffee_machine"),
    ("open", "kitchen_cupboard"),
    ("close", "kitchen_cupboard"),
    ("pickup", "coffee_mug"),
    ("pickup", "coffee_mug"),
    ("release", "coffee_mug"),
    ("release", "coffee_mug"),
    ("operator", ""),
]
FAULTS = ("none", "none", "grasp_nothing", "slip", "slip", "stuck", "estop", "lost", "arm_blocked")


def inject(robot: FakeRobot, fault: str) -> None:
    """Arm one fault at the protocol boundary; it strikes at the next command of its kind."""
    assert robot.arcl is not None
    if fault == "grasp_nothing":
        robot.gripper.script(GraspTry(object_width=None))
    elif fault == "slip":
        robot.gripper.script(GraspTry(object_width=0.065, slip=True))
    elif fault == "stuck":
        robot.gripper.stuck = "libfranka gripper: command failed: fingers jammed"
    elif fault == "estop":
        robot.arcl.script(Drive("say", 0.02, text="Estop pressed"))
    elif fault == "lost":
        robot.arcl.script(Drive("say", 0.02, text="Error: Robot lost"))
    elif fault == "arm_blocked":
        robot.arm.script("path_violation")


def motion(robot: FakeRobot) -> tuple[int, int, int]:
    assert robot.arcl is not None
    return len(robot.arcl.drives()), robot.arm.started, robot.gripper.commands


def held(robot: FakeRobot) -> str | None:
    wait_until(lambda: robot.server._graph.latest()[1] >= robot.graph_version, what="the server's copy")
    graph, _ = robot.server._graph.latest()
    return graph.held_object() if graph is not None else None


def operator(ros: Any, robot: FakeRobot) -> None:
    """A person frees fingers closed on something the graph cannot name, un-jams them, releases the e-stop and
    enables the base's motors, then calls clear_fault (which may still refuse: that is its answer)."""
    assert robot.arcl is not None
    if robot.gripper.holding and held(robot) is None:
        robot.gripper.let_go()
    robot.gripper.stuck = ""
    robot.arcl.motors = "enabled"
    answer = ros.clear_fault(robot.server)
    if robot.server.fault_latch.fault is None:
        assert answer.success, answer.message


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example starts a robot; the failing one is printed
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.sampled_from(STEPS), st.sampled_from(FAULTS)), min_size=3, max_size=6))
def test_no_motion_while_latched_and_the_graph_follows_the_fingers(
    sequence: list[tuple[tuple[str, str], str]],
) -> None:
    from sayplan_franka_omron.skill_server import FrankaOmronSkillServer

    domain, lock = claim_domain()  # one locked domain per example, as the `ros` fixture does per test
    ros = RosHarness(domain)
    fakes: dict[str, Any] = {}
    try:
        ros.add(SceneGraphServer(context=ros.context))
        fakes = start_fakes(ros, "arcl")
        os.environ["SAYPLAN_ARCL_PASSWORD"] = fakes["arcl"].password
        server = FrankaOmronSkillServer(context=ros.context, parameter_overrides=robot_parameters("arcl", fakes))
        robot = FakeRobot(ros.add(server), fakes["gripper"], fakes["arm"], fakes["arcl"])
        wait_until(lambda: server._graph.latest()[0] is not None, what="the scene graph")
        for (skill, target), fault in [*PROLOGUE, *sequence]:
            inject(robot, fault)
            if skill == "operator":
                operator(ros, robot)
                continue
            latched = server.fault_latch.fault is not None
            before = motion(robot)
            _status, outcome = send_skill(ros, robot, skill, target, timeout=30.0)
            code = SkillCode(outcome.error_code)
            if latched:
                assert code is SkillCode.FAULT_LATCHED, outcome.error_msg
                assert motion(robot) == before, f"{skill}({target}) moved the robot while a fault was latched"
            in_graph = held(robot)
            if in_graph is not None:
                assert robot.gripper.holding, f"after {skill}({target}) the graph says '{in_graph}' is held: {code}"
            if robot.gripper.holding and in_graph is None:
                assert server.fault_latch.fault is not None, f"{skill}({target}): unnamed grip, nothing latched"
        # the faults stop (nothing scripted is left to strike): the operator's one clear brings the robot back,
        # and it drives and closes its hand again
        for fake in (robot.gripper, robot.arm, robot.arcl):
            fake.unscript()
        operator(ros, robot)
        assert server.fault_latch.fault is None, f"one clear after the faults stopped left {server.fault_latch.fault}"
        drives = len(robot.arcl.drives())
        for skill, target in (("goto", "pose8"), ("goto", "kitchen")):  # one of them at least is away from here
            _status, outcome = send_skill(ros, robot, skill, target, timeout=30.0)
            assert SkillCode(outcome.error_code) is SkillCode.NONE, f"{skill}({target}): {outcome.error_msg}"
            assert (held(robot) is not None) == robot.gripper.holding, f"after {skill}({target}) graph and hand differ"
        assert len(robot.arcl.drives()) > drives, "the base did not drive after the clear"
    finally:
        if "arcl" in fakes:
            fakes["arcl"].close()
        ros.close()
        release_domain(lock)
