"""The parameters a user's params file gives the stack (issue 39, hostile input v3, items 6, 7 and 9): every file is
read as written and checked against what the nodes declare before any node starts (sayplan_core.params_files).

Found by a hostile review of `sayplan_stack` run with the shipped files and a user's file last, as docs/howto/run.md
says it is applied:
- a string for a double in the user's file was dropped without a word (rcl keeps the first file's type): the stack
  came up with the shipped 0.2;
- names given in a node's section that another node declares (`executor: {max_replans: 0}`) passed unread, and
  names like no real one (`temp`, `api_key`) were only warned about;
- a 2 MB value came back whole in three log lines; 20,000 unknown names were listed 20 with no "and N more", and
  comparing each with every parameter of the stack held the planner's start for longer than 15 s.
The same file through the launch file (`params_file:=`) is refused by the same check.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: SIGINT to the stack, its exit bounded in seconds
ROOT = Path(__file__).resolve().parents[2]
STACK = shutil.which("sayplan_stack")
needs_stack = pytest.mark.skipif(STACK is None, reason="sayplan_stack is not on PATH: run through `make test`")
SHIPPED = [
    "--params-file",
    str(ROOT / "config" / "sayplan.yaml"),
    "--params-file",
    str(ROOT / "config/robots/sim.yaml"),
]
#: An LLM the planner's activation accepts on any machine (a stack whose LLM does not answer does not come up).
REPLAY = f"planner:replay_transcript:={ROOT / 'src' / 'sayplan_ros' / 'transcripts' / 'demo_office_lh05.json'}"
#: Hang guard only: a refused start ends long before it; a stack that comes up instead never ends by itself.
HANG_S = 180.0


def run_stack(ros: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """`sayplan_stack --ros-args <args>` on the test's domain, until it exits (SIGINT at the hang guard: a stack
    that came up is stopped, and the test sees its exit code 0)."""
    assert STACK is not None
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    proc = subprocess.Popen(
        [STACK, "--ros-args", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one `sayplan_stack:` line a refused start ends with (the test fails if the stack came up)."""
    assert done.returncode == 2, f"exit {done.returncode}, not refused:\n{done.stderr[-3000:]}"
    lines = [line for line in done.stderr.splitlines() if line.startswith("sayplan_stack: ")]
    assert len(lines) == 1 and done.stderr.strip().endswith(lines[0]), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return lines[0]


def params_file(tmp_path: Path, text: str, name: str = "user.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


WRONG_TYPE = 'sim_skill_server:\n  ros__parameters:\n    skill_delay_s: "fast"\n'
WRONG_NODE = "executor:\n  ros__parameters:\n    max_replans: 0\n    skill_delay_s: 5.0\n"
LIKE_NONE = (
    "planner:\n  ros__parameters:\n    temp: 0.5\n    enviroment: home\n    api_key: sk-1\n    planner_type: x\n"
)


@needs_stack
def test_a_wrong_type_in_the_users_file_after_the_shipped_ones_is_refused(ros: Any, tmp_path: Path) -> None:
    """Item 6: rcl kept the shipped file's double and dropped the user's string; the stack came up with 0.2."""
    user = params_file(tmp_path, WRONG_TYPE, "wrongtype.yaml")
    line = refusal(run_stack(ros, *SHIPPED, "--params-file", str(user), "-p", REPLAY))
    for part in (str(user), "sim_skill_server", "skill_delay_s", "given a string ('fast')", "declared a double"):
        assert part in line, (part, line)


@needs_stack
def test_parameters_given_to_the_wrong_node_are_refused_naming_the_node_that_has_them(ros: Any, tmp_path: Path) -> None:
    """Item 7: the executor has neither; the planner and the skill server do, so nothing was said at all."""
    user = params_file(tmp_path, WRONG_NODE)
    done = run_stack(ros, *SHIPPED, "--params-file", str(user), "-p", REPLAY)
    line = refusal(done)
    assert str(user) in line and "executor has no parameter max_replans (planner declares max_replans" in line, line
    assert "executor has no parameter skill_delay_s (sim_skill_server declares skill_delay_s" in done.stderr
    assert "and 1 more" in line, line  # each problem on its own line, the last line says how many


@needs_stack
def test_names_like_no_parameter_in_a_nodes_section_are_refused(ros: Any, tmp_path: Path) -> None:
    """Item 7: `temp`, `enviroment`, `api_key`, `planner_type` under planner were only warned about; each is refused
    now, with the planner's closest name when there is one."""
    user = params_file(tmp_path, LIKE_NONE)
    done = run_stack(ros, *SHIPPED, "--params-file", str(user), "-p", REPLAY)
    refusal(done)
    for name in ("temp", "enviroment", "planner_type"):
        assert f"planner has no parameter {name}" in done.stderr, (name, done.stderr[-3000:])
    assert "planner has no parameter api_key (did you mean api_key_env?)" in done.stderr


@needs_stack
def test_twenty_thousand_unknown_names_in_a_nodes_section_are_counted(ros: Any, tmp_path: Path) -> None:
    """Item 9: 20 named, the others counted ("and N more"); the check does not look for a closest name for each."""
    names = "".join(f"    unknown_{i}: 1\n" for i in range(20_000))
    user = params_file(tmp_path, f"planner:\n  ros__parameters:\n{names}")
    done = run_stack(ros, *SHIPPED, "--params-file", str(user), "-p", REPLAY)
    line = refusal(done)
    assert "(and 19999 more, each on its own line above)" in line, line
    assert "and 19980 more problem(s)" in done.stderr
    logged = [row for row in done.stderr.splitlines() if row.startswith("[ERROR]")]
    assert sum("planner has no parameter unknown_" in row for row in logged) == 20, logged


@needs_stack
def test_twenty_thousand_names_in_a_site_section_are_warned_about_with_a_count(ros: Any, tmp_path: Path) -> None:
    """Item 9: a `/**` section's names may be another program's: the stack comes up (the planner configures and
    activates) and says how many it ignores beyond the 20 it names."""
    names = "".join(f"    site_{i}: 1\n" for i in range(20_000))
    user = params_file(tmp_path, f"/**:\n  ros__parameters:\n{names}")
    assert STACK is not None
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    args = [STACK, "--ros-args", *SHIPPED, "--params-file", str(user), "-p", REPLAY]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ros.wait_active("planner", timeout=HANG_S)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-3000:]
    assert "no node of the stack reads, ignored: site_0, site_1, " in out and " and 19980 more" in out, out[-3000:]


@needs_stack
def test_a_huge_value_is_echoed_bounded(ros: Any, tmp_path: Path) -> None:
    """Item 9: a 2 MB model name in a params file was printed whole in three lines (the planner's, the manager's,
    the program's last); the file is over the params-file limit now, and a 100 kB one on the command line (the
    longest one argument may be) is echoed bounded where the LLM refuses it."""
    user = params_file(tmp_path, f'planner:\n  ros__parameters:\n    model: "{"A" * 2_000_000}"\n')
    line = refusal(run_stack(ros, *SHIPPED, "--params-file", str(user), "-p", REPLAY))
    assert f"cannot read params file {user}: over the 1 MB limit" in line, line[:500]
    done = run_stack(ros, *SHIPPED, "-p", "planner:llm:=local", "-p", f"planner:model:={'A' * 100_000}")
    refusal(done)
    longest = max(len(row) for row in (done.stdout + done.stderr).splitlines())
    assert longest < 5_000, f"a line of {longest} characters"
    assert "AAAA... (100000 characters)" in done.stderr, done.stderr[-2000:]


def launch_parameters(params: Path) -> dict[str, Any]:
    from test_launch import load_launch_module

    values = {"robot": "sim", "planner": "sayplan", "llm": "ollama", "env": "office", "params_file": str(params),
              "use_sim_time": "false"}  # fmt: skip
    parameters: dict[str, Any] = load_launch_module()["stack_parameters"](values, str(ROOT / "config"))
    return parameters


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (WRONG_TYPE, ["sim_skill_server's parameter skill_delay_s is given a string ('fast'), declared a double"]),
        (WRONG_NODE, ["executor has no parameter max_replans (planner declares", "sim_skill_server declares"]),
        (LIKE_NONE, ["planner has no parameter temp", "planner has no parameter planner_type"]),
    ],
    ids=["wrong-type", "wrong-node", "like-none"],
)
def test_the_launch_file_refuses_the_same_params_files(tmp_path: Path, text: str, parts: list[str]) -> None:
    """`ros2 launch sayplan_ros sayplan.launch.py params_file:=...` composes each node's parameters from the same
    files: refused before any node starts, naming the file."""
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (the test overlay brings it)")
    user = params_file(tmp_path, text)
    with pytest.raises(RuntimeError) as refused:
        launch_parameters(user)
    for part in [str(user), *parts]:
        assert part in str(refused.value), (part, str(refused.value))
    good = params_file(tmp_path, "sim_skill_server:\n  ros__parameters:\n    skill_delay_s: 0.5\n", "good.yaml")
    assert launch_parameters(good)["sim_skill_server"]["skill_delay_s"] == 0.5


def test_a_params_file_over_the_limit_is_refused_before_rcl_reads_it(ros: Any, tmp_path: Path) -> None:
    """Found by a second hostile review: the 1 MB limit was checked after rcl had parsed the command line, which
    reads every params file whole (a 100 MB file: 301 MB of memory, 3.8 s, then the refusal). Now the files' sizes
    are checked first, so the refusal costs what a small bad file does; a node name rcl itself refuses (`plan*`)
    ends in one line, not a traceback."""
    user = params_file(tmp_path, f'planner:\n  ros__parameters:\n    model: "{"A" * 3_000_000}"\n')
    done = run_stack(ros, *SHIPPED, "--params-file", str(user))
    line = refusal(done)
    assert f"cannot read params file {user}: over the 1 MB limit" in line, line[:500]
    assert "parameters given" in line, line[:500]  # said by the size check, not by rcl's parse
    glob = params_file(tmp_path, 'plan*:\n  ros__parameters:\n    temperature: "hot"\n', name="glob.yaml")
    line = refusal(run_stack(ros, *SHIPPED, "--params-file", str(glob)))
    assert line.startswith("sayplan_stack: refused the ROS arguments given") and "glob.yaml" in line, line
