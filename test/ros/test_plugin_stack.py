"""A planner and a robot from another package run a task over DDS, installed through entry points alone.

`sayplan_stack --robot dummy` runs as a subprocess with the test plugin package (test/plugins) on PYTHONPATH:
the stack composes the dummy robot's skill server, the planner node declares the dummy planner's options as
`dummy.<field>` parameters, and an `execute_task` goal naming the planner runs through both. No file of the
stack knows the plugin. The oracle is the simulator's replay of the executed steps on the bundled office.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from plugin_install import env_with, install
from rclpy.action import ActionClient
from stack_paths import BIN, INSTRUCTION, ROOT, TRANSCRIPT, WS_ENV

from sayplan_core.envs import load_env
from sayplan_core.outcomes import TaskCode
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import verify_plan
from sayplan_interfaces.action import ExecuteTask

pytestmark = pytest.mark.ros


@pytest.fixture
def stack(ros: Any, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with run_stack(ros, tmp_path, install(tmp_path), "dummy") as proc:
        yield proc


@contextlib.contextmanager
def run_stack(ros: Any, tmp_path: Path, site: Path, robot: str) -> Iterator[subprocess.Popen[bytes]]:
    if not (BIN / "sayplan_stack").exists():
        pytest.skip(f"{BIN}/sayplan_stack is not built: run scripts/colcon_build.sh")
    params = tmp_path / "params.yaml"
    planner = {"replay_transcript": str(TRANSCRIPT), "dummy": {"destination": "mail_room", "laps": 2}}
    params.write_text(yaml.safe_dump({"planner": {"ros__parameters": planner}}))
    command = [str(WS_ENV), str(BIN / "sayplan_stack"), "--robot", robot, "--ros-args"]
    command += ["--params-file", str(ROOT / "config" / "sayplan.yaml"), "--params-file", str(params)]
    env = {**env_with(site), "ROS_DOMAIN_ID": str(ros.domain_id), "PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "stack.log").open("wb")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log_path = tmp_path / "stack.log"  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def run_task(ros: Any, proc: Any, planner: str, skill_server: str = "dummy_skill_server") -> Any:
    node = ros.node(f"plugin_operator_{planner}")
    client = ActionClient(node, ExecuteTask, "/execute_task")
    log = Path(proc.log_path)
    assert client.wait_for_server(timeout_sec=90.0), log.read_text(errors="replace")
    ros.wait_active(skill_server)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION, planner=planner))
    ros.wait_for(sent.done, timeout=30.0, what="the task's acceptance")
    assert sent.result().accepted, log.read_text(errors="replace")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=120.0, what="the task's result")
    return result.result().result


def test_a_task_runs_through_a_plugin_planner_and_a_plugin_robot(ros: Any, stack: Any) -> None:
    result = run_task(ros, stack, "dummy")
    log = Path(stack.log_path).read_text(errors="replace")
    assert result.success and result.error_code == TaskCode.NONE, f"{result.error_msg}\n{log}"
    executed = [PlanStep(s.action, s.target) for s in result.executed]
    office = load_env("office")
    assert verify_plan(office, executed).success  # the simulator's replay of what the robot did
    # the planner's namespaced option from the params file reached the plugin: two laps to the mail room
    assert [s.target for s in executed if s.action == "goto"].count("mail_room") == 2
    assert "dummy robot says hello" in log  # the plugin robot's own option, read at configure


def test_the_stack_names_a_robot_s_node_as_its_plugin_does(ros: Any, tmp_path: Path) -> None:
    """A plugin's `node_name` is the node's ROS name (launch's `name=`), whatever its class's default: once,
    `sayplan_stack` kept the class's name and the lifecycle manager gave up on the plugin's after 30 s."""
    points = "[sayplan.planners]\ndummy = sayplan_dummy_plugin:DummyPlanner\n"
    site = install(tmp_path, points + "[sayplan.robots]\nrenamed = renamed_robot:RENAMED\n")
    module = "from sayplan_core.plugins import RobotPlugin\nfrom sayplan_dummy_plugin import DUMMY_ROBOT\n"
    module += "RENAMED = RobotPlugin('renamed', 'the dummy robot under another node name', 'renamed_skill_server', "
    module += "'x', 'x', DUMMY_ROBOT.node_class, DUMMY_ROBOT.Options)\n"
    (site / "renamed_robot.py").write_text(module, encoding="utf-8")
    with run_stack(ros, tmp_path, site, "renamed") as proc:
        result = run_task(ros, proc, "dummy", "renamed_skill_server")
        assert result.success, f"{result.error_msg}\n{Path(proc.log_path).read_text(errors='replace')}"


def test_a_planner_the_node_does_not_offer_ends_the_task_with_the_typed_code(ros: Any, stack: Any) -> None:
    result = run_task(ros, stack, "not_installed")
    assert not result.success and result.error_code == TaskCode.PLANNING_FAILED
    assert "unknown planner 'not_installed'" in result.error_msg and "dummy" in result.error_msg, result.error_msg


def test_each_planner_s_options_are_parameters_under_its_id_with_their_declared_ranges(ros: Any) -> None:
    """nav2-style namespacing: `<planner>.<field>`, described and range-checked from the planner's own Options, so
    two planners with a field of the same name keep their own values."""
    from rcl_interfaces.srv import DescribeParameters, SetParameters
    from rclpy.parameter import Parameter

    from sayplan_core.options import table
    from sayplan_core.planners import PLANNERS
    from sayplan_ros.planner_node import PlannerNode

    planner = ros.add(PlannerNode(context=ros.context), bring_up=False)
    client = ros.node("param_peer")
    names = [f"{name}.{s.name}" for name in PLANNERS for s in table(PLANNERS[name].Options)]
    assert {"embodiedrag.retrieval_top_k", "embodiedrag_strict.retrieval_top_k", "ltl.reach_distance"} <= set(names)
    describe = client.create_client(DescribeParameters, "/planner/describe_parameters")
    described = ros.call(describe, DescribeParameters.Request(names=names)).descriptors
    assert [d.name for d in described] == names
    top_k = described[names.index("embodiedrag.retrieval_top_k")]
    assert (top_k.integer_range[0].from_value, top_k.integer_range[0].to_value) == (1, 100) and not top_k.read_only

    setter = client.create_client(SetParameters, "/planner/set_parameters")

    def set_one(name: str, value: Any) -> Any:
        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return ros.call(setter, request).results[0]

    refused = set_one("embodiedrag.retrieval_top_k", 1000)  # the descriptor's range, checked by rclpy
    assert not refused.successful and "embodiedrag.retrieval_top_k out of range" in refused.reason, refused.reason
    unknown = set_one("planner", "not_installed")  # the option's own check: an installed planner
    assert not unknown.successful and "an installed planner" in unknown.reason, unknown.reason
    assert set_one("embodiedrag.retrieval_top_k", 7).successful
    assert planner.get_parameter("embodiedrag.retrieval_top_k").value == 7
    assert planner.get_parameter("embodiedrag_strict.retrieval_top_k").value == 3  # its own, untouched


@pytest.mark.parametrize("cls", ["no_such_module:Node", "sayplan_ros.stack:NoSuchNode", "no_colon"])
def test_a_node_class_that_cannot_be_imported_is_named_in_one_line(cls: str) -> None:
    """A robot plugin's node_class is imported only when the stack starts: the error names it and its node."""
    from sayplan_core.stack_nodes import StackNode
    from sayplan_ros.stack import load_class

    with pytest.raises(ValueError) as raised:
        load_class(StackNode("ghost_skill_server", "ghost", "ghost", cls, None, managed=True))
    text = str(raised.value)
    assert f"ghost_skill_server: its node class {cls} cannot be imported" in text and "\n" not in text, text


def test_a_robot_whose_node_name_is_a_core_node_s_is_refused_in_one_line(ros: Any, tmp_path: Path) -> None:
    """Two nodes named `planner` in one stack would share parameters and lifecycle services."""
    if not (BIN / "sayplan_stack").exists():
        pytest.skip(f"{BIN}/sayplan_stack is not built: run scripts/colcon_build.sh")
    site = install(tmp_path, "[sayplan.robots]\nclash = clash_robot:CLASH\n")
    module = "from sayplan_core.plugins import RobotPlugin\nfrom sayplan_dummy_plugin import DUMMY_ROBOT\n"
    module += "CLASH = RobotPlugin('clash', 'named like the planner', 'planner', 'x', 'x', DUMMY_ROBOT.node_class)\n"
    (site / "clash_robot.py").write_text(module, encoding="utf-8")
    env = {**env_with(site), "ROS_DOMAIN_ID": str(ros.domain_id)}
    command = [str(WS_ENV), str(BIN / "sayplan_stack"), "--robot", "clash"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "sayplan_stack: robot 'clash': its node name 'planner' is a core node's", done.stderr


def test_a_goal_naming_a_planner_id_longer_than_any_is_refused_not_echoed(ros: Any) -> None:
    """Once, a goal whose planner was 300,000 characters long was accepted and the whole text came back in the
    outcome and on plan_results (the NOT_ACTIVE path did not bound it)."""
    from rclpy.parameter import Parameter

    from sayplan_interfaces.action import PlanTask
    from sayplan_ros.planner_node import PlannerNode

    overrides = [Parameter("replay_transcript", value=str(TRANSCRIPT))]
    ros.add(PlannerNode(context=ros.context, parameter_overrides=overrides))
    client = ActionClient(ros.node("long_planner_peer"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(PlanTask.Goal(instruction=INSTRUCTION, planner="x" * 300_000))
    ros.wait_for(sent.done, what="the goal's answer")
    assert not sent.result().accepted
