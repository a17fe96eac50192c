"""The whole stack with robot:=franka_omron against the fake robot (ARCL or Nav2 base, franka_gripper, arm
controller): the demo instruction from a replayed transcript, a grasp that closes on nothing, a replan, success."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
for _package in ("nav2_msgs", "franka_msgs", "control_msgs"):
    pytest.importorskip(
        _package, reason=f"{_package} is not importable: build the test overlay (scripts/build_test_overlay.sh)"
    )

from fakes.franka_robot import robot_parameters, start_fakes  # noqa: E402
from fakes.ros_robot import GraspTry  # noqa: E402
from launch_support import needs_launch  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from transcripts import GOAL, GOOD_PLAN, INSTRUCTION, say, write_transcript  # noqa: E402

from sayplan_core.outcomes import SkillCode, Status  # noqa: E402
from sayplan_core.sim import check_goals  # noqa: E402
from sayplan_interfaces.action import ExecuteTask  # noqa: E402
from sayplan_ros.stack import create_nodes  # noqa: E402

pytestmark = pytest.mark.ros
REST_OF_PLAN = GOOD_PLAN[2:]  # from access(kitchen_cupboard): the replan after the failed grasp


@pytest.fixture
def arcl_servers() -> Iterator[list[Any]]:
    servers: list[Any] = []
    yield servers
    for server in servers:
        server.close()


@pytest.mark.parametrize("backend", ["arcl", "nav2"])
def test_demo_instruction_with_a_failed_grasp_and_a_replan(
    ros: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arcl_servers: list[Any], backend: str
) -> None:
    fakes = start_fakes(ros, backend)
    if "arcl" in fakes:
        arcl_servers.append(fakes["arcl"])
        monkeypatch.setenv("SAYPLAN_ARCL_PASSWORD", fakes["arcl"].password)
    # the cupboard's handle is held (20 mm); the first grasp of the mug closes on nothing
    fakes["gripper"].script(GraspTry(object_width=0.02), GraspTry(object_width=None))
    transcript = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("expand", "nikos_office"),
        say("plan", plan=GOOD_PLAN),
        say("plan", plan=REST_OF_PLAN),
    )
    nodes = create_nodes(
        ros.context,
        "franka_omron",
        {
            "planner": [Parameter("replay_transcript", value=str(transcript))],
            "franka_omron_skill_server": robot_parameters(backend, fakes),
        },
    )
    for node in nodes:
        ros.add(node)
    graph_server = next(n for n in nodes if n.get_name() == "scene_graph_server")
    feedback: list[Any] = []
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION), feedback_callback=feedback.append)
    ros.wait_for(sent.done, what="goal acceptance")
    result_future = sent.result().get_result_async()
    ros.wait_for(result_future.done, timeout=90.0, what="execute_task result")
    result = result_future.result().result
    failed = [f.feedback.event for f in feedback if f.feedback.event.status == Status.FAILED]
    assert result.success and result.replans == 1, [(e.step.action, e.step.target, e.message) for e in failed]
    assert [(e.step.action, SkillCode(e.error_code)) for e in failed] == [("pickup", SkillCode.GRASP_FAILED)]
    # the robot's graph meets the goal: the mug is on Niko's desk, and the agent ended in his office
    assert check_goals(graph_server.graph, [GOAL]).success
    assert graph_server.graph.agent_location() == "nikos_office"
    # the fake robot did it: two grasps (the first on nothing), the mug released at the desk's place pose
    gripper, arm = fakes["gripper"], fakes["arm"]
    # the cupboard's handle; the mug in the cupboard (nothing held), again after the replan; the mug at the machine
    assert [g[0] for g in gripper.grasps] == [0.02, 0.065, 0.065, 0.065]
    assert gripper.homed == 1 and gripper.width == 0.08
    desk_place = (0.0, 0.15, 0.0, -1.7, 0.0, 1.85, 0.785)
    assert desk_place in [positions for _, positions in arm.executed]
    gotos = [s.target for s in result.executed if s.action == "goto"]
    if backend == "arcl":
        drives = fakes["arcl"].drives()
        assert "goto Kitchen" in drives and "doTask gotoPoint 40000 5000 0" in drives  # nikos_office: its pose
        assert fakes["arcl"].location[:2] == (40750.0, 5000.0)  # parked in front of Niko's desk
    else:
        goals = fakes["nav2"].goals
        assert [(round(x, 2), round(y, 2)) for _f, x, y, _yaw, _t in goals][-2:] == [(40.0, 5.0), (40.75, 5.0)]
        assert len(goals) >= len(gotos)


@needs_launch
def test_the_driver_launch_file_starts_what_is_installed() -> None:
    """Neither franka_ros2 nor Nav2 is installed here: each driver is skipped with a log line, none is invented."""
    import runpy

    from launch import LaunchContext
    from launch.actions import LogInfo

    module = runpy.run_path(
        str(Path(__file__).resolve().parents[2] / "src/sayplan_franka_omron/launch/drivers.launch.py")
    )
    description = module["generate_launch_description"]()
    assert {"robot_ip", "navigation_backend", "nav2_map"} <= {getattr(e, "name", "") for e in description.entities}
    for backend, expected in (
        ("arcl", ["franka_fr3_moveit_config"]),
        ("nav2", ["franka_fr3_moveit_config", "nav2_bringup"]),
    ):
        context = LaunchContext()
        for name, (default, _) in module["ARGUMENTS"].items():
            context.launch_configurations[name] = default
        context.launch_configurations["navigation_backend"] = backend
        actions = module["_drivers"](context)
        assert all(isinstance(a, LogInfo) for a in actions)
        said = ["".join(part.perform(context) for part in a.msg) for a in actions]
        assert [s.split(": ")[1].split(" is not")[0] for s in said] == expected
    context.launch_configurations["navigation_backend"] = "teleport"
    with pytest.raises(RuntimeError, match="navigation_backend:=teleport"):
        module["_drivers"](context)
