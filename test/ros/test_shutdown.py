"""Issue 25: every entry point ends cleanly on a real SIGINT or SIGTERM sent mid-task.

`sayplan_stack`, `sayplan_demo` and a real `launch.LaunchService` running launch/sayplan.launch.py (as
`ros2 launch` does) run as subprocesses in their own process group on the test's DDS domain, with the simulated
robot's skills slowed so that one is running when the signal comes. Checked against what an outside observer sees:
the exit code (0 or 130), every process the entry point started gone (its process group and
every descendant seen before the signal), the task's goal ended CANCELED and the skill's goal CANCELED (their action
status topics, as any ROS tool sees them), no traceback on stderr, and the demo's bag readable by rosbags with the
events up to the signal. SIGINT goes to the whole process group, as a terminal's Ctrl-C does; SIGTERM to the entry
point's process alone, as `kill` or `docker stop` do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

import contextlib

from action_msgs.msg import GoalStatus, GoalStatusArray
from launch_support import needs_launch
from rclpy.action import ActionClient
from rclpy.qos import qos_profile_action_status_default
from stack_paths import BIN, INSTRUCTION, ROOT, TRANSCRIPT, WS_ENV

from sayplan_core.outcomes import Stage, TaskCode
from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.msg import ExecutionEvent
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.stack import stack_specs

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: real signals to whole stacks; exits bounded in seconds
#: A guard against a hang, not a speed target: each program bounds its own stop (runner.SHUTDOWN_STOP_S for the
#: robots, runner.TEARDOWN_S for the rest), and how fast that is on this machine is measured by
#: scripts/bench_stop_time.py (docs/measured/stop_time.md), not asserted by a test a loaded machine could fail.
HANG_GUARD_S = 30.0
#: The demo must not wait for its LLM probe (10 s) after Ctrl-C: it ends well before the probe would have.
PROBE_CONTRAST_S = 5.0
#: A simulated skill this long is still running whenever the signal comes.
SKILL_S = 60.0
SIGNALS = [signal.SIGINT, signal.SIGTERM]
needs_install = pytest.mark.skipif(
    not (BIN / "sayplan_stack").exists(), reason=f"{BIN}/sayplan_stack is not built: run scripts/colcon_build.sh"
)


# ---------------------------------------------------------------------------------------------- processes
def _stat(pid: int) -> tuple[int, int, str, int] | None:
    """(ppid, process group, state, start time) of a live process, from /proc (None once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0], int(fields[19])


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def descendants(root: int) -> set[tuple[int, int]]:
    """Every live process under `root` (children, grandchildren...), as (pid, start time) pairs."""
    children: dict[int, list[tuple[int, int]]] = {}
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is not None and stat[2] != "Z":
            children.setdefault(stat[0], []).append((pid, stat[3]))
    found: set[tuple[int, int]] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child[0])
    return found


def left_behind(group: int, seen: set[tuple[int, int]]) -> list[str]:
    """The processes of `group`, or seen under the entry point before the signal, still alive (zombies excepted)."""
    alive = []
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is None or stat[2] == "Z":
            continue
        if stat[1] == group or (pid, stat[3]) in seen:
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            alive.append(f"{pid}: {command}")
    return alive


@dataclass
class EntryPoint:
    """One entry point started in its own session (process group), output in files (no pipe can fill up)."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    seen: set[tuple[int, int]] = field(default_factory=set)

    def output(self) -> str:
        return f"--- stdout\n{self.out.read_text()[-8000:]}\n--- stderr\n{self.err.read_text()[-8000:]}"

    def stderr(self) -> str:
        return self.err.read_text()

    def signal(self, sig: signal.Signals) -> float:
        """SIGINT to the group (a terminal's Ctrl-C), SIGTERM to the process (kill, docker stop); returns when."""
        self.seen = descendants(self.proc.pid) | {(self.proc.pid, (_stat(self.proc.pid) or (0, 0, "", 0))[3])}
        sent = time.monotonic()
        if sig == signal.SIGINT:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        return sent

    def wait(self, within: float) -> int:
        try:
            return self.proc.wait(timeout=max(0.1, within))
        except subprocess.TimeoutExpired:
            code = f"did not exit within {within:.1f} s"
        self.kill()
        raise AssertionError(f"{code}:\n{self.output()}")

    def kill(self) -> None:
        """Whatever is left of the group goes (the test failed already, or is being torn down)."""
        for pid, _ in self.seen | descendants(self.proc.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def start(command: list[str], domain: int, folder: Path, name: str, **env_extra: str) -> EntryPoint:
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONUNBUFFERED": "1", **env_extra}
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
    return EntryPoint(proc, out, err)


def end_all(started: list[EntryPoint]) -> None:
    """Whatever a test left running goes (it failed already)."""
    for entry in started:
        if entry.proc.poll() is None or left_behind(entry.proc.pid, entry.seen):
            entry.kill()


@pytest.fixture
def entry_points() -> Iterator[list[EntryPoint]]:
    started: list[EntryPoint] = []
    yield started
    end_all(started)


# ---------------------------------------------------------------------------------------------- the operator
class Operator:
    """The test's view over DDS: the task's events, every goal status of execute_task and execute_skill."""

    def __init__(self, ros: Any, namespace: str = "") -> None:
        self.ros = ros
        self.node = ros.node("shutdown_operator")
        prefix = f"/{namespace}" if namespace else ""
        self.events: list[ExecutionEvent] = []
        self.status: dict[str, dict[bytes, int]] = {"execute_task": {}, "execute_skill": {}}
        self.events_topic = f"{prefix}/execution_events"
        self.node.create_subscription(ExecutionEvent, self.events_topic, self.events.append, EVENTS_QOS)
        for action in self.status:
            self.node.create_subscription(
                GoalStatusArray,
                f"{prefix}/{action}/_action/status",
                lambda msg, action=action: self._statuses(action, msg),
                qos_profile_action_status_default,
            )
        self.client = ActionClient(self.node, ExecuteTask, f"{prefix}/execute_task")
        self.result: Any = None

    def _statuses(self, action: str, msg: GoalStatusArray) -> None:
        for status in msg.status_list:
            self.status[action][bytes(status.goal_info.goal_id.uuid)] = int(status.status)

    def send_task(self, entry: EntryPoint) -> None:
        if not self.client.wait_for_server(timeout_sec=60.0):
            raise AssertionError(f"execute_task never appeared:\n{entry.output()}")
        future = self.client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION))
        self.ros.wait_for(future.done, timeout=30.0, what="the task's acceptance")
        assert future.result().accepted, entry.output()
        self.result = future.result().get_result_async()

    def wait_mid_skill(self, entry: EntryPoint) -> None:
        """Until a skill runs: its execute_skill goal is EXECUTING (the status is latched: seen however late this
        node joined) and the events' publisher is discovered. Not its RUNNING event: events are not latched, and
        one published before discovery was over is never seen (the wait for the next one took a whole 60 s
        skill, on a loaded machine every time)."""

        def skill_running() -> bool:
            executing = GoalStatus.STATUS_EXECUTING in self.status["execute_skill"].values()
            return executing and self.node.count_publishers(self.events_topic) > 0

        try:
            self.ros.wait_for(skill_running, timeout=90.0, what="a skill to run")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{entry.output()}") from None

    def check_every_goal_canceled(
        self, entry: EntryPoint, skill_ends: tuple[int, ...] = (GoalStatus.STATUS_CANCELED,)
    ) -> None:
        """The task ended CANCELED (its result and its status) and the skill it was running ended in `skill_ends`
        (CANCELED: the executor's cancel reached it first; in separate processes the skill server's own stop may
        end it first, which aborts it)."""
        try:
            self.ros.wait_for(self.result.done, timeout=5.0, what="the task's result")
        except AssertionError as exc:
            seen = [(e.sequence, e.stage, e.status, e.message[:80]) for e in self.events[-4:]]
            raise AssertionError(f"{exc}; last events {seen}; goals {self.status}\n{entry.output()}") from None
        wrapped = self.result.result()
        assert wrapped.status == GoalStatus.STATUS_CANCELED, (wrapped.status, wrapped.result, entry.output())
        assert wrapped.result.error_code == TaskCode.CANCELED, entry.output()
        self.ros.wait_for(
            lambda: all(s in skill_ends for s in self.status["execute_skill"].values()),
            timeout=5.0,
            what=f"every execute_skill goal to end in {skill_ends} ({self.status['execute_skill']})",
        )
        self.ros.wait_for(lambda: bool(self.events) and self.events[-1].stage == Stage.CANCELED, 5.0, "the event")
        assert self.events[-1].error_code == TaskCode.CANCELED


def check_clean_end(entry: EntryPoint, sent: float, sig: signal.Signals, codes: tuple[int, ...]) -> None:
    code = entry.wait(HANG_GUARD_S - (time.monotonic() - sent))
    exited = time.monotonic() - sent
    assert code in codes, f"exit {code} after {sig.name}:\n{entry.output()}"
    check_nothing_left(entry, sent, sig.name)
    print(f"{entry.out.stem}: exit {code} {exited:.2f} s after {sig.name}, every process gone after "
          f"{time.monotonic() - sent:.2f} s")  # fmt: skip
    assert "Traceback" not in entry.stderr(), entry.output()
    assert "was not confirmed" not in entry.output(), entry.output()  # the sim robot always confirms its stop


def check_nothing_left(entry: EntryPoint, since: float, what: str) -> None:
    """Every process of the entry point's group, and every one seen under it, is gone within the bound."""
    left = left_behind(entry.proc.pid, entry.seen)
    while left and time.monotonic() - since < HANG_GUARD_S:
        time.sleep(0.05)
        left = left_behind(entry.proc.pid, entry.seen)
    took = time.monotonic() - since
    assert not left, f"left running {took:.1f} s after {what}: {left}\n{entry.output()}"


def stack_params(folder: Path) -> Path:
    path = folder / "params.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "planner": {"ros__parameters": {"replay_transcript": str(TRANSCRIPT)}},
                "sim_skill_server": {"ros__parameters": {"skill_delay_s": SKILL_S}},
            }
        )
    )
    return path


# ---------------------------------------------------------------------------------------------- sayplan_stack
@needs_install
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_the_stack_ends_on_a_signal_mid_task(
    ros: Any, tmp_path: Path, entry_points: list[EntryPoint], sig: signal.Signals
) -> None:
    command = [str(WS_ENV), str(BIN / "sayplan_stack"), "--ros-args", "--params-file", str(ROOT / "config" / "sayplan.yaml"), "--params-file", str(stack_params(tmp_path))]  # fmt: skip
    entry = start(command, ros.domain_id, tmp_path, "stack")
    entry_points.append(entry)
    operator = Operator(ros)
    operator.send_task(entry)
    operator.wait_mid_skill(entry)
    sent = entry.signal(sig)
    check_clean_end(entry, sent, sig, (0, 130))
    operator.check_every_goal_canceled(entry)


# ---------------------------------------------------------------------------------------------- sayplan_demo
def demo(ros: Any, tmp_path: Path, entry_points: list[EntryPoint]) -> tuple[EntryPoint, Operator]:
    namespace = f"shutdown_demo_{os.getpid()}"
    command = [str(WS_ENV), str(BIN / "sayplan_demo"), "--out", str(tmp_path / "runs"), "--skill-delay", str(SKILL_S), "--namespace", namespace]  # fmt: skip
    entry = start(command, ros.domain_id, tmp_path, "demo")
    entry_points.append(entry)
    operator = Operator(ros, namespace)
    operator.wait_mid_skill(entry)
    return entry, operator


@needs_install
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_the_demo_ends_on_a_signal_mid_task_and_its_bag_is_readable(
    ros: Any, tmp_path: Path, entry_points: list[EntryPoint], sig: signal.Signals
) -> None:
    from sayplan_ros.bag import read_messages

    entry, operator = demo(ros, tmp_path, entry_points)
    before = len(operator.events)
    sent = entry.signal(sig)
    check_clean_end(entry, sent, sig, (130,))
    assert operator.events[-1].stage == Stage.CANCELED, entry.output()
    assert "summary: canceled" in entry.out.read_text(), entry.output()
    (run,) = list((tmp_path / "runs").iterdir())
    recorded = [m for topic, _, m in read_messages(run / "bag") if topic.endswith("/execution_events")]
    # the bag holds the task's events from the first on, none missing, every one the operator saw before the
    # signal among them, and the task's CANCELED end
    assert [m.sequence for m in recorded] == list(range(len(recorded))), [m.sequence for m in recorded]
    assert {(e.sequence, e.stage) for e in operator.events[:before]} <= {(m.sequence, m.stage) for m in recorded}
    assert recorded[-1].stage == Stage.CANCELED and recorded[-1].error_code == TaskCode.CANCELED


@needs_install
def test_a_second_ctrl_c_exits_130_without_a_traceback(
    ros: Any, tmp_path: Path, entry_points: list[EntryPoint]
) -> None:
    entry, _ = demo(ros, tmp_path, entry_points)
    sent = entry.signal(signal.SIGINT)
    time.sleep(0.05)
    os.killpg(entry.proc.pid, signal.SIGINT)
    code = entry.wait(HANG_GUARD_S - (time.monotonic() - sent))
    assert code == 130, entry.output()
    assert "Traceback" not in entry.stderr() and "Exception ignored" not in entry.stderr(), entry.output()
    assert not left_behind(entry.proc.pid, entry.seen)


@needs_install
def test_the_demo_ends_on_ctrl_c_without_waiting_for_its_llm_probe(
    ros: Any, tmp_path: Path, entry_points: list[EntryPoint]
) -> None:
    """A server that accepts and never answers holds the planner's activation probe (up to 10 s): Ctrl-C then
    must still end the demo within 5 s, 130, without a traceback (it waited for the probe: 8 s, exit 2)."""
    import socket

    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    command = [str(WS_ENV), str(BIN / "sayplan_demo"), "--out", str(tmp_path / "runs"), "--llm", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--namespace", f"shutdown_probe_{os.getpid()}"]  # fmt: skip
    entry = start(command, ros.domain_id, tmp_path, "demo_probe")
    entry_points.append(entry)
    try:
        silent.settimeout(60.0)
        held, _ = silent.accept()  # the probe's connection: it now waits for an answer that never comes
        sent = entry.signal(signal.SIGINT)
        code = entry.wait(PROBE_CONTRAST_S - (time.monotonic() - sent))
        held.close()
    finally:
        silent.close()
    assert code == 130, entry.output()
    assert "Traceback" not in entry.stderr() and "never retrieved" not in entry.stderr(), entry.output()
    check_nothing_left(entry, sent, "SIGINT")


# ---------------------------------------------------------------------------------------------- ros2 launch


def launch_command(tmp_path: Path, **arguments: str) -> list[str]:
    """A real LaunchService running sayplan.launch.py with `arguments`, as `ros2 launch sayplan_ros
    sayplan.launch.py name:=value...` does (ros2launch itself is not installed here: scripts/ros2_launch.py)."""
    pairs = [f"{k}:={v}" for k, v in arguments.items()]
    return [
        str(WS_ENV),
        "python",
        str(ROOT / "scripts" / "ros2_launch.py"),
        str(ROOT / "launch" / "sayplan.launch.py"),
        *pairs,
    ]


def check_no_escalation(entry: EntryPoint, nodes: int) -> None:
    """launch's own words: no node needed SIGTERM or SIGKILL, and every node finished cleanly (exit 0)."""
    text = entry.out.read_text() + entry.stderr()
    assert "escalating to" not in text, entry.output()
    clean = [line for line in text.splitlines() if "process has finished cleanly" in line]
    assert len(clean) == nodes, entry.output()


@needs_launch
@needs_install
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_ros2_launch_ends_on_a_signal_mid_task_without_escalation(
    ros: Any, tmp_path: Path, entry_points: list[EntryPoint], sig: signal.Signals
) -> None:
    """SIGINT to the group (Ctrl-C): launch waits for every node, which stops and exits 0 long before launch's
    escalation. SIGTERM to `ros2 launch` alone: launch itself dies at once (upstream behaviour: it has no SIGTERM
    handler, exit -15), and the kernel sends each node SIGTERM (`setpriv --pdeathsig`, see the launch file), so
    every node still cancels its goal, stops the robot and exits within the bound: no orphans."""
    command = launch_command(tmp_path, robot="sim", params_file=str(stack_params(tmp_path)), log_level="warn")
    entry = start(command, ros.domain_id, tmp_path, "launch")
    entry_points.append(entry)
    operator = Operator(ros)
    operator.send_task(entry)
    operator.wait_mid_skill(entry)
    sent = entry.signal(sig)
    check_clean_end(entry, sent, sig, (0,) if sig == signal.SIGINT else (-signal.SIGTERM,))
    if sig == signal.SIGINT:
        check_no_escalation(entry, nodes=len(stack_specs("sim")))
    operator.check_every_goal_canceled(entry, (GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_ABORTED))
