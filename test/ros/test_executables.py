"""The installed executables, run as separate processes and reached over DDS."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from sayplan_interfaces.srv import PlanPath

pytestmark = [
    pytest.mark.ros,
    pytest.mark.serial,
]  # alone: a stack's start bounded by a 5 s loop; SIGINT exits bounded in seconds
ROOT = Path(__file__).resolve().parents[2]
STACK = shutil.which("sayplan_stack")
needs_stack = pytest.mark.skipif(STACK is None, reason="sayplan_stack is not on PATH: run through `make test`")
#: An LLM the planner's activation accepts on any machine (a stack whose LLM does not answer does not come up).
REPLAY = f"planner:replay_transcript:={ROOT / 'src' / 'sayplan_ros' / 'transcripts' / 'demo_office_lh05.json'}"


def env_for(ros: Any) -> dict[str, str]:
    return {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}


@needs_stack
def test_stack_process_serves_paths(ros: Any, tmp_path: Path) -> None:
    assert STACK is not None
    site = tmp_path / "site.yaml"  # a site-wide section for other programs (Nav2's frames): warned, not refused
    site.write_text("/**:\n  ros__parameters:\n    map_frame: map\n", encoding="utf-8")
    args = [
        STACK,
        "--ros-args",
        "--params-file",
        str(ROOT / "config" / "sayplan.yaml"),
        "--params-file",
        str(site),
        "-p",
        "path_planner:method:=astar",
        "-p",
        REPLAY,
    ]
    proc = subprocess.Popen(args, env=env_for(ros), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = ros.node("client").create_client(PlanPath, "plan_path")
        answer = None
        for _ in range(50):  # the planner answers "no scene graph yet" until the latched graph arrives
            answer = ros.call(client, PlanPath.Request(start="kitchen", goal="cafeteria"), timeout=20.0)
            if answer.success:
                break
            time.sleep(0.1)
        assert answer is not None and answer.success, answer.message if answer else "no answer"
        assert answer.node_ids == ["kitchen", "pose12", "pose13", "cafeteria"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out
    assert "serving 'office'" in out
    assert "no node of the stack reads, ignored: map_frame" in out


@needs_stack
@pytest.mark.parametrize(
    ("parameter", "cause"),
    [
        (
            "scene_graph_server:env:=atlantis",
            "unknown environment 'atlantis': not a bundled one (office, home) and no such file",
        ),
        ("planner:timeout_s:=-1.0", "timeout_s"),
        ("planner:llm:=replay", "the replay backend needs a transcript path"),
        ("planner:max_calls:=0", "max_calls"),
        ("executor:planner:=nonsense", "planner must be one of"),
        ("sim_skill_server:failures:=pickup:mug:melted", "unknown skill outcome 'melted'"),
    ],
)
def test_stack_process_rejects_bad_parameters_in_one_line(ros: Any, parameter: str, cause: str) -> None:
    assert STACK is not None
    args = [STACK, "--ros-args", "-p", parameter]
    if "replay" not in parameter:  # the planner comes up first: the node with the bad parameter then says why
        args += ["-p", REPLAY]
    done = subprocess.run(args, env=env_for(ros), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("sayplan_stack: ")]
    assert len(errors) == 1 and cause in errors[0], done.stderr  # one line naming the cause (logs aside)
    assert "Traceback" not in done.stderr and done.stderr.strip().endswith(errors[0])


@needs_stack
@pytest.mark.parametrize(
    ("section", "name", "closest"),
    [
        ("planner", "temprature", "temperature"),
        ("/**", "skill_dealy_s", "skill_delay_s"),
        ("executor", "max_execution_replan", "max_execution_replans"),
    ],
)
def test_a_misspelled_parameter_in_a_params_file_stops_the_stack_naming_the_closest(
    ros: Any, tmp_path: Path, section: str, name: str, closest: str
) -> None:
    """Found as a new user: top-level typos were kept by rclpy, read by no one, and the stack came up."""
    assert STACK is not None
    params = tmp_path / "typo.yaml"
    params.write_text(f"{section}:\n  ros__parameters:\n    {name}: 1.0\n", encoding="utf-8")
    args = [STACK, "--ros-args", "--params-file", str(ROOT / "config" / "sayplan.yaml"), "--params-file", str(params)]
    done = subprocess.run([*args, "-p", REPLAY], env=env_for(ros), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("sayplan_stack: ")]
    assert len(errors) == 1 and f"{name} (did you mean {closest}?)" in errors[0], done.stderr


@needs_stack
def test_toggling_use_sim_time_on_every_node_is_refused_and_the_stack_lives(ros: Any) -> None:
    """Found as a hostile peer: use_sim_time set true, false, true on /planner through SetParameters killed the
    whole stack ("cannot use Destroyable because destruction was requested")."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    assert STACK is not None
    args = [STACK, "--ros-args", "--params-file", str(ROOT / "config" / "sayplan.yaml"), "-p", REPLAY]
    proc = subprocess.Popen(args, env=env_for(ros), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = ros.node("operator")
        paths = client.create_client(PlanPath, "plan_path")
        ros.wait_for(lambda: paths.service_is_ready(), timeout=60.0, what="the stack")
        for node in ("planner", "executor", "scene_graph_server", "path_planner", "lifecycle_manager"):
            setter = client.create_client(SetParameters, f"{node}/set_parameters")
            for value in (True, False, True, False):
                flag = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
                request = SetParameters.Request(parameters=[ParameterMsg(name="use_sim_time", value=flag)])
                answer = ros.call(setter, request, timeout=20.0)
                (result,) = answer.results
                if value:  # started false: true is a change, refused; false keeps the value
                    assert not result.successful and "read at start-up only" in result.reason, (node, result)
                else:
                    assert result.successful, (node, result.reason)
        assert proc.poll() is None, "the stack process died"
        answer = ros.call(paths, PlanPath.Request(start="kitchen", goal="cafeteria"), timeout=20.0)
        assert answer.success, answer.message
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "cannot use Destroyable" not in out, out
