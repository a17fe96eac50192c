"""The whole fake Franka-on-Omron robot for tests: an ARCL base (or a Nav2 base), a franka_gripper and an arm
trajectory controller, plus the example site and motion files of the office."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rclpy.action import ActionClient
from rclpy.parameter import Parameter

from fakes.arcl_server import FakeArclServer
from fakes.ros_robot import FakeGripper, FakeNav2, FakeTrajectoryController
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import ApplyGraphUpdate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "src" / "sayplan_franka_omron" / "examples"
SITE = EXAMPLES / "office_site.yaml"
MOTIONS = EXAMPLES / "office_motions.yaml"
#: The ARCL goals of the fake base's map, where the office site file puts them (mm, mm, degrees).
OFFICE_GOALS = {
    "Kitchen": (55000.0, -5000.0, 0.0),
    "KitchenCupboard": (54470.0, -4350.0, 90.0),
    "CoffeeMachine": (53540.0, -5400.0, 90.0),
}
#: Where the office's agent starts (pose7), in the fake base's millimetres.
START_MM = (30000.0, 0.0, 0.0)


@dataclass
class FakeRobot:
    server: Any
    gripper: FakeGripper
    arm: FakeTrajectoryController
    arcl: FakeArclServer | None = None
    nav2: FakeNav2 | None = None
    client: Any = None
    graph_client: Any = None
    feedback: list[Any] = field(default_factory=list)
    graph_version: int = 0  # the newest version an applied update produced: the next goal follows it


def start_fakes(ros: Any, backend: str, arcl_password: str = "omron-test") -> dict[str, Any]:
    fakes: dict[str, Any] = {
        "gripper": ros.add(FakeGripper(context=ros.context)),
        "arm": ros.add(FakeTrajectoryController(context=ros.context)),
    }
    if backend == "arcl":
        arcl = FakeArclServer(arcl_password, OFFICE_GOALS, START_MM)
        arcl.start()
        fakes["arcl"] = arcl
    else:
        fakes["nav2"] = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    return fakes


def robot_parameters(backend: str, fakes: dict[str, Any], **overrides: Any) -> list[Parameter]:
    values: dict[str, Any] = {
        "navigation_backend": backend,
        "site_file": str(SITE),
        "motions_file": str(MOTIONS),
        "driver_wait_s": 3.0,
        "arcl_timeout_s": 3.0,
    }
    if "arcl" in fakes:
        values.update(arcl_host="127.0.0.1", arcl_port=fakes["arcl"].port)
    values.update(overrides)
    return [Parameter(k, value=v) for k, v in values.items()]


def send_skill(
    ros: Any, robot: FakeRobot, skill: str, target: str = "", timeout: float = 15.0, apply: bool = True
) -> tuple[int, Any]:
    """Run one execute_skill goal and apply its graph update, as the executor does (the goal names the version the
    last update produced; the server's copy may not hold it yet); returns (status, SkillOutcome)."""
    if robot.client is None:
        robot.client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert robot.client.wait_for_server(timeout_sec=10.0), "execute_skill not available"
    robot.feedback.clear()
    future = robot.client.send_goal_async(
        ExecuteSkill.Goal(step=PlanStep(action=skill, target=target), graph_version=robot.graph_version),
        feedback_callback=lambda f: robot.feedback.append(f.feedback),
    )
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    assert handle.accepted
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=timeout, what=f"{skill}({target}) result")
    wrapped = result.result()
    outcome = wrapped.result.outcome
    if apply and (outcome.graph_update.upsert or outcome.graph_update.remove):
        apply_update(ros, robot, outcome.graph_update)
    return wrapped.status, outcome


def apply_update(ros: Any, robot: FakeRobot, update: Any) -> int:
    """Apply a skill's update as the executor does; the version it produced is what the next goal follows."""
    if robot.graph_client is None:
        robot.graph_client = ros.node("graph_writer").create_client(ApplyGraphUpdate, "apply_graph_update")
    answer = ros.call(robot.graph_client, ApplyGraphUpdate.Request(update=update))
    assert answer.success, answer.message
    robot.graph_version = int(answer.version)
    return robot.graph_version


def wait_until(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)
