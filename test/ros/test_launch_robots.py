"""`ros2 launch` (a real launch.LaunchService, see test_shutdown.launch_command) of the real robots' stacks against
the protocol fakes, and launches whose node fails: issue 25.

- robot:=franka_omron with the fake ARCL base, franka_gripper and arm controller (test/fakes), robot:=spot with the
  fake Spot (test/fakes/spot), each configured through `params_file:=` as a user would: the launch starts, the stack
  serves (`describe_skills` answers for the robot, `execute_task` is there), and Ctrl-C ends every node cleanly
  (exit 0, no escalation, nothing left).
- A node that cannot start (a bad parameter; robot:=franka_omron with nothing to connect to) takes the launch down
  with one line naming it and its error, and leaves no process and no node on the domain for a relaunch to find;
  rviz:=true without rviz2 is refused before any node starts.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from launch_support import needs_launch
from rclpy.action import ActionClient
from test_shutdown import (
    HANG_GUARD_S,
    TRANSCRIPT,
    EntryPoint,
    check_no_escalation,
    check_nothing_left,
    descendants,
    end_all,
    launch_command,
    needs_install,
    start,
)

from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.stack import stack_specs

pytestmark = [
    pytest.mark.ros,
    pytest.mark.serial,
    needs_launch,
    needs_install,
]  # alone: Ctrl-C to whole stacks, exits bounded
#: A start-up that fails ends the launch within this (imports and DDS set-up on a loaded machine included).
FAILED_LAUNCH_S = 90.0
#: The planner activates only with an LLM it can reach: the bundled transcript stands in for one.
REPLAYED_LLM = {"planner": {"replay_transcript": str(TRANSCRIPT)}}
STACK_NODES = {"scene_graph_server", "path_planner", "planner", "executor"}


@pytest.fixture
def launches() -> Iterator[list[EntryPoint]]:
    started: list[EntryPoint] = []
    yield started
    end_all(started)


def needs_franka_package() -> None:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix("sayplan_franka_omron")
    except PackageNotFoundError:
        pytest.fail("sayplan_franka_omron is not in the ament index after colcon build: ros2 launch cannot find it "
                    "(test/core/test_packaging.py says why)")  # fmt: skip


def params_file(folder: Path, sections: dict[str, dict[str, Any]]) -> str:
    path = folder / "site_params.yaml"
    path.write_text(yaml.safe_dump({node: {"ros__parameters": values} for node, values in sections.items()}))
    return str(path)


def wait_serving(ros: Any, entry: EntryPoint, robot: str) -> None:
    """describe_skills answers for `robot` and execute_task is there: the launched stack serves."""
    node = ros.node("launch_user")
    describe = node.create_client(DescribeSkills, "describe_skills")
    if not describe.wait_for_service(timeout_sec=90.0):
        raise AssertionError(f"describe_skills never appeared:\n{entry.output()}")
    answer = ros.call(describe, DescribeSkills.Request(), timeout=30.0)
    assert answer.robot == robot, (answer.robot, entry.output())
    assert ActionClient(node, ExecuteTask, "execute_task").wait_for_server(timeout_sec=60.0), entry.output()


def ctrl_c_ends_it_cleanly(entry: EntryPoint, nodes: int) -> None:
    import signal

    sent = entry.signal(signal.SIGINT)
    code = entry.wait(HANG_GUARD_S - (time.monotonic() - sent))
    assert code == 0, entry.output()
    check_nothing_left(entry, sent, "SIGINT")
    check_no_escalation(entry, nodes)
    assert "Traceback" not in entry.output(), entry.output()


def check_failed_launch(ros: Any, entry: EntryPoint, node: str, cause: str) -> None:
    """The launch ended (exit 1) with one line naming `node` and `cause`; no process, no node of it is left."""
    deadline = time.monotonic() + FAILED_LAUNCH_S
    while entry.proc.poll() is None and time.monotonic() < deadline:
        entry.seen |= descendants(entry.proc.pid)  # every node it started, for the check below
        time.sleep(0.1)
    code = entry.wait(0.1)
    assert code == 1, entry.output()
    lines = [line for line in entry.output().splitlines() if "exited with code" in line]
    # the failing node exits, or the lifecycle manager does, naming it
    assert len(lines) == 1 and node in lines[0] and cause in lines[0], entry.output()
    check_nothing_left(entry, time.monotonic(), "the failed launch")
    graph = ros.node("graph_watcher")
    ros.wait_for(
        lambda: not (STACK_NODES & set(graph.get_node_names())),
        timeout=10.0,
        what=f"the failed launch's nodes to leave the DDS graph ({graph.get_node_names()})",
    )


# ---------------------------------------------------------------------------------------------- the real robots
def test_franka_omron_with_the_fake_arcl_base_launches_serves_and_stops_on_ctrl_c(
    ros: Any, tmp_path: Path, launches: list[EntryPoint]
) -> None:
    needs_franka_package()
    for package in ("franka_msgs", "control_msgs"):
        pytest.importorskip(package, reason=f"{package} is not importable: build the test overlay")
    from fakes.franka_robot import robot_parameters, start_fakes

    fakes = start_fakes(ros, "arcl")
    try:
        values = {p.name: p.value for p in robot_parameters("arcl", fakes, driver_wait_s=20.0, graph_wait_s=20.0)}
        command = launch_command(
            tmp_path, robot="franka_omron", log_level="warn",
            params_file=params_file(tmp_path, {"franka_omron_skill_server": values, **REPLAYED_LLM}),
        )  # fmt: skip
        entry = start(command, ros.domain_id, tmp_path, "launch", SAYPLAN_ARCL_PASSWORD=fakes["arcl"].password)
        launches.append(entry)
        wait_serving(ros, entry, "franka_omron")
        ctrl_c_ends_it_cleanly(entry, nodes=len(stack_specs("franka_omron")))
        assert not fakes["arcl"].moving()
    finally:
        fakes["arcl"].close()


def test_spot_with_the_fake_spot_launches_serves_and_stops_on_ctrl_c(
    ros: Any, tmp_path: Path, launches: list[EntryPoint]
) -> None:
    pytest.importorskip("bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt")
    from fakes.spot import FakeSpot
    from fakes.spot.harness import wait_until
    from fakes.spot.office import office_site, office_world

    with FakeSpot.running(tmp_path, office_world()) as spot:
        values = {
            "hostname": "127.0.0.1",
            "port": spot.port,
            "ca_cert_file": str(spot.ca_path),
            "site_file": str(office_site(tmp_path / "site.yaml")),
            "connect_timeout_s": 30.0,
        }
        command = launch_command(
            tmp_path,
            robot="spot",
            log_level="warn",
            params_file=params_file(tmp_path, {"spot_skill_server": values, **REPLAYED_LLM}),
        )
        world = spot.world
        env = {"BOSDYN_CLIENT_USERNAME": world.username, "BOSDYN_CLIENT_PASSWORD": world.password}
        entry = start(command, ros.domain_id, tmp_path, "launch", **env)
        launches.append(entry)
        wait_serving(ros, entry, "spot")
        wait_until(lambda: world.lease_owner != "", timeout=30.0, what="the launched node to take the lease")
        ctrl_c_ends_it_cleanly(entry, nodes=len(stack_specs("spot")))
        assert world.lease_owner == "" and not world.motors_on, entry.output()  # sat, powered off, lease returned


# ---------------------------------------------------------------------------------------------- failed launches
def test_a_node_with_a_bad_parameter_takes_the_launch_down_in_one_line(
    ros: Any, tmp_path: Path, launches: list[EntryPoint]
) -> None:
    command = launch_command(tmp_path, robot="sim", params_file=params_file(tmp_path, {"planner": {"max_calls": 0}}))
    entry = start(command, ros.domain_id, tmp_path, "launch")
    launches.append(entry)
    check_failed_launch(ros, entry, "planner", "max_calls")


def test_franka_omron_with_nothing_to_connect_to_takes_the_launch_down_in_one_line(
    ros: Any, tmp_path: Path, launches: list[EntryPoint]
) -> None:
    needs_franka_package()
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    values = {"navigation_backend": "arcl", "arcl_host": "127.0.0.1", "arcl_port": port, "arcl_timeout_s": 2.0}
    sections = {"franka_omron_skill_server": values, **REPLAYED_LLM}
    command = launch_command(tmp_path, robot="franka_omron", params_file=params_file(tmp_path, sections))
    entry = start(command, ros.domain_id, tmp_path, "launch", SAYPLAN_ARCL_PASSWORD="nobody")
    launches.append(entry)
    check_failed_launch(ros, entry, "franka_omron_skill_server", "")


def test_rviz_without_rviz2_is_refused_before_any_node_starts(
    ros: Any, tmp_path: Path, launches: list[EntryPoint]
) -> None:
    if shutil.which("rviz2"):
        pytest.skip("rviz2 is installed here: the launch would start it")
    entry = start(launch_command(tmp_path, robot="sim", rviz="true"), ros.domain_id, tmp_path, "launch")
    launches.append(entry)
    code = entry.wait(FAILED_LAUNCH_S)
    assert code == 1, entry.output()
    errors = [line for line in entry.output().splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "rviz:=true but rviz2 is not installed" in errors[0], entry.output()
    assert "process started" not in entry.output(), entry.output()
