"""The launch file: run for real with launch_testing where ROS 2 launch is available (a ROS install, or the test
overlay built from ../shared/ros-launch), checked against the one composer, and its configs against the nodes."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from launch_support import needs_launch
from ros_domains import claim_domain, release_domain

ROOT = Path(__file__).resolve().parents[2]

CONFIG_FILES = sorted((ROOT / "config").rglob("*.yaml"))


def stack_node_names() -> set[str]:
    from sayplan_ros.stack import ROBOTS, stack_specs

    return {spec.name for robot in ROBOTS for spec in stack_specs(robot)}


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_is_keyed_by_node_name(path: Path) -> None:
    config = yaml.safe_load(path.read_text())
    assert set(config) <= stack_node_names(), f"{path}: unknown node(s) {set(config) - stack_node_names()}"
    for node, body in config.items():
        assert set(body) == {"ros__parameters"}, node


def test_every_planner_and_robot_has_a_config() -> None:
    from sayplan_core.planners import PLANNERS
    from sayplan_ros.stack import ROBOTS

    assert {p.stem for p in (ROOT / "config" / "planners").glob("*.yaml")} == set(PLANNERS)
    assert {p.stem for p in (ROOT / "config" / "robots").glob("*.yaml")} == set(ROBOTS)


def test_package_xml_declares_what_the_launch_file_runs() -> None:
    root = ET.parse(ROOT / "src" / "sayplan_ros" / "package.xml").getroot()
    exec_depends = {e.text for e in root.iter("exec_depend")}
    assert {"launch", "launch_ros", "rviz2", "ament_index_python", "sayplan_interfaces", "sayplan_core"} <= exec_depends


def load_launch_module() -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "launch" / "sayplan.launch.py"))


@needs_launch
def test_launch_arguments_users_expect() -> None:
    description = load_launch_module()["generate_launch_description"]()
    names = {getattr(e, "name", None) for e in description.entities}
    expected = {"robot", "planner", "llm", "env", "rviz", "params_file", "namespace", "use_sim_time", "log_level"}
    assert expected <= names


@needs_launch
@pytest.mark.parametrize("robot", ["sim", "spot", "franka_omron"])
def test_the_launch_file_starts_exactly_the_composed_stack(robot: str, tmp_path: Path) -> None:
    """The launch file and stack.create_nodes start the same nodes, under the same names, with the files' values."""
    from launch import LaunchContext

    from sayplan_ros.stack import stack_specs

    params = tmp_path / "site.yaml"
    params.write_text(yaml.safe_dump({"planner": {"ros__parameters": {"max_calls": 7}}}))
    context = LaunchContext()
    context.launch_configurations.update(
        {"robot": robot, "planner": "ltl", "llm": "ollama", "env": "home", "params_file": str(params),
         "namespace": "robot1", "use_sim_time": "true", "log_level": "warn", "rviz": "false"}
    )  # fmt: skip
    from launch_ros.actions import Node

    nodes = [n for n in load_launch_module()["_nodes"](context) if isinstance(n, Node)]
    specs = stack_specs(robot)
    assert [(n.node_package, n.node_executable) for n in nodes] == [(s.package, s.executable) for s in specs]
    values = dict(context.launch_configurations)
    parameters = load_launch_module()["stack_parameters"](values, str(ROOT / "config"))
    assert list(parameters) == [s.name for s in specs]
    assert parameters["planner"]["max_calls"] == 7  # the user's params_file wins over config/sayplan.yaml
    assert parameters["planner"]["llm"] == "ollama" and parameters["scene_graph_server"]["env"] == "home"
    assert all(p["use_sim_time"] is True for p in parameters.values())


@needs_launch
@pytest.mark.parametrize(
    ("users", "gets"),
    [
        ({}, True),
        ({"RMW_IMPLEMENTATION": ""}, True),  # empty: the default RMW, Fast DDS
        ({"RMW_IMPLEMENTATION": "rmw_fastrtps_dynamic_cpp"}, True),
        ({"FASTDDS_DEFAULT_PROFILES_FILE": "/etc/site_dds.xml"}, False),
        ({"FASTRTPS_DEFAULT_PROFILES_FILE": "/etc/site_dds.xml"}, False),
        ({"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}, False),
    ],
)
def test_every_node_gets_the_liveness_profile_unless_the_user_chose_dds_settings(
    users: dict[str, str], gets: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node killed with SIGKILL is noticed in 4 s only if every process runs with config/dds/fastdds_liveness.xml:
    the launch file gives it to each node, installed, unless the user names a profiles file or another RMW."""
    from launch import LaunchContext
    from launch_ros.actions import Node

    for name in ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE", "RMW_IMPLEMENTATION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in users.items():
        monkeypatch.setenv(name, value)
    context = LaunchContext()
    context.launch_configurations.update(
        {"robot": "sim", "planner": "sayplan", "llm": "ollama", "env": "office", "params_file": "",
         "namespace": "", "use_sim_time": "false", "log_level": "info", "rviz": "false"}
    )  # fmt: skip
    nodes = [n for n in load_launch_module()["_nodes"](context) if isinstance(n, Node)]
    assert nodes
    for node in nodes:
        env = {
            "".join(s.perform(context) for s in key): "".join(s.perform(context) for s in value)
            for key, value in node.additional_env or []
        }
        if not gets:
            assert env == {}, (node.node_executable, env)
            continue
        assert set(env) == {"FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE"}
        (profile,) = set(env.values())
        assert Path(profile).read_bytes() == (ROOT / "config" / "dds" / "fastdds_liveness.xml").read_bytes()


@needs_launch
def test_the_launch_file_runs_the_stack_for_real() -> None:
    """launch_testing starts sayplan.launch.py robot:=sim as processes and runs execute_task to success over DDS."""
    domain, lock = claim_domain()  # as every ROS test does: no other run shares the domain
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    try:
        done = _launch_test(env)
    finally:
        release_domain(lock)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert "test_execute_task_runs_to_success" in done.stdout + done.stderr


def _launch_test(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "launch_testing.launch_test", str(ROOT / "test" / "launch" / "sayplan_sim_launch.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
