"""How long `ros2 launch sayplan_ros sayplan.launch.py` takes to end on Ctrl-C, idle and mid-task, node by node.

    scripts/ws_env.sh python scripts/bench_stop_time.py [--reps 5] [--out docs/measured/stop_time.md]

Each rep starts the simulated stack under a real `launch.LaunchService` (ros2launch itself is not installed here)
on its own DDS domain, waits until the lifecycle manager reports every node active, then either waits one second
(idle) or sends the demo task and waits until a skill runs (mid-task), and sends SIGINT to the process group as a
terminal does. Every output line is stamped when it is read, so the table gives when each node's "process has
finished cleanly" came, and when launch itself exited. The shutdown tests check that every node ends and stops its
robot without launch's escalation; how fast that happens depends on the machine, so the figure is measured here.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from measured_doc import header  # noqa: E402

TRANSCRIPT = ROOT / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"
INSTRUCTION = "Make Niko a coffee and place the mug on his desk."
#: launch's line for a node that exited 0, e.g. "[INFO] [executor-4]: process has finished cleanly [pid 123]"
FINISHED = re.compile(r"\[([\w.]+)-\d+\]: process has (finished cleanly|died)")
#: the lifecycle manager's line once every managed node is active
ACTIVE = re.compile(r"\[lifecycle_manager\]: active: ")
#: when the signal comes: during start-up (so many seconds after the launch), idle, or while a skill runs
STATES = ("start-up 2s", "start-up 4s", "start-up 8s", "idle", "mid-task")
DOMAIN = 77  # away from the tests' domains (--domain)


@dataclass
class Rep:
    state: str
    exit_s: float = 0.0
    code: int | None = None
    nodes: dict[str, float] = field(default_factory=dict)
    escalated: bool = False
    cut_short: int = 0  # nodes whose teardown overran runner.TEARDOWN_S


class Launch:
    """One `ros2 launch` of the simulated stack whose output lines are stamped as they are read."""

    def __init__(self, folder: Path, domain: int) -> None:
        params = folder / "params.yaml"
        params.write_text(
            yaml.safe_dump(
                {
                    "planner": {"ros__parameters": {"replay_transcript": str(TRANSCRIPT)}},
                    "sim_skill_server": {"ros__parameters": {"skill_delay_s": 60.0}},
                }
            )
        )
        script = ROOT / "scripts" / "ros2_launch.py"
        command = [
            str(ROOT / "scripts" / "ws_env.sh"),
            "python",
            str(script),
            str(ROOT / "launch" / "sayplan.launch.py"),
        ]
        command += ["robot:=sim", f"params_file:={params}", "log_level:=info"]
        env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True
        )
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(pattern.search(line) for _, line in list(self.lines)):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        tail = "\n".join(line for _, line in self.lines[-30:])
        raise RuntimeError(f"no line matching {pattern.pattern!r} within {timeout:.0f} s:\n{tail}")

    def interrupt(self) -> Rep:
        """SIGINT to the group, as a terminal's Ctrl-C; then what launch said of each node, and when."""
        sent = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            code: int | None = self.proc.wait(timeout=60.0)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = None
        ended = time.monotonic()
        self.reader.join(timeout=5.0)
        rep = Rep(state="", exit_s=ended - sent, code=code)
        for stamp, line in self.lines:
            if stamp >= sent and (match := FINISHED.search(line)):
                rep.nodes[match.group(1)] = stamp - sent
            rep.escalated = rep.escalated or (stamp >= sent and "escalating to" in line)
            rep.cut_short += "teardown took over" in line
        return rep


def send_task(domain: int) -> object:
    """The demo task, sent from this process; returns once a skill is running (its RUNNING event came)."""
    import rclpy
    from rclpy.action import ActionClient

    from sayplan_interfaces.action import ExecuteTask
    from sayplan_interfaces.msg import ExecutionEvent
    from sayplan_ros.qos import EVENTS_QOS

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("stop_time_operator", context=context)
    running = threading.Event()

    def on_event(event: ExecutionEvent) -> None:
        if event.stage == ExecutionEvent.STAGE_EXECUTING and event.status == ExecutionEvent.STATUS_RUNNING:
            running.set()

    node.create_subscription(ExecutionEvent, "/execution_events", on_event, EVENTS_QOS)
    client = ActionClient(node, ExecuteTask, "/execute_task")
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    if not client.wait_for_server(timeout_sec=60.0):
        raise RuntimeError("execute_task never appeared")
    client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION))
    deadline = time.monotonic() + 120.0
    while not running.is_set() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    if not running.is_set():
        raise RuntimeError("no skill ran within 120 s of the task")
    return (context, node, executor)  # kept alive until the launch ended


def run(reps: int, states: list[str], domain: int) -> list[Rep]:
    results: list[Rep] = []
    for index in range(reps):
        for state in states:
            with tempfile.TemporaryDirectory(prefix="stop_time_") as folder:
                launch = Launch(Path(folder), domain)
                keep: object = None
                try:
                    if state.startswith("start-up"):
                        time.sleep(float(state.split()[1].rstrip("s")))
                    else:
                        launch.wait_for(ACTIVE, timeout=120.0)
                    if state == "idle":
                        time.sleep(1.0)
                    elif state == "mid-task":
                        keep = send_task(domain)
                    rep = launch.interrupt()
                finally:
                    if launch.proc.poll() is None:
                        os.killpg(launch.proc.pid, signal.SIGKILL)
                    _close(keep)
            rep.state = state
            slowest = max(rep.nodes.items(), key=lambda item: item[1], default=("-", 0.0))
            print(
                f"[{index + 1}/{reps}] {state}: launch exit {rep.code} after {rep.exit_s:.2f} s, slowest node "
                f"{slowest[0]} {slowest[1]:.2f} s{', ESCALATED' if rep.escalated else ''}, "
                f"{rep.cut_short} teardown(s) cut (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            results.append(rep)
    return results


def _close(keep: object) -> None:
    if isinstance(keep, tuple):
        context, node, executor = keep
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()


def write(results: list[Rep], out: Path) -> None:
    lines = [header("Stop time: `ros2 launch` on Ctrl-C").rstrip("\n") + "\n"]
    lines.append("Medians (max), seconds from SIGINT to the group.\n")
    lines.append("| state | reps | launch exited | escalations | teardowns cut short | exit codes |")
    lines.append("| --- | --- | --- | --- | --- | --- |")
    states = sorted({r.state for r in results}, key=STATES.index)
    for state in states:
        rows = [r for r in results if r.state == state]
        times = [r.exit_s for r in rows]
        codes = sorted({str(r.code) for r in rows})
        escalated = sum(r.escalated for r in rows)
        cut = sum(r.cut_short for r in rows)
        lines.append(f"| {state} | {len(rows)} | {_figure(times)} | {escalated} | {cut} | {', '.join(codes)} |")
    nodes = sorted({n for r in results for n in r.nodes})
    lines.append('\nEach node\'s "process has finished cleanly", seconds after the signal, median (max):\n')
    lines.append("| node | " + " | ".join(states) + " |")
    lines.append("| --- |" + " --- |" * len(states))
    for name in nodes:
        cells = [_figure([r.nodes[name] for r in results if r.state == s and name in r.nodes]) for s in states]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def _figure(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({max(values):.2f})" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5, help="launches per state (default 5)")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    parser.add_argument(
        "--states", default=",".join(STATES), help=f"comma-separated, of: {', '.join(STATES)} (default: all)"
    )
    parser.add_argument("--domain", type=int, default=DOMAIN, help=f"ROS_DOMAIN_ID of the launches (default {DOMAIN})")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    states = [s.strip() for s in args.states.split(",") if s.strip()]
    if not states or (unknown := [s for s in states if s not in STATES]):
        parser.error(
            f"--states: unknown {', '.join(unknown) if states else '(none given)'}; known: {', '.join(STATES)}"
        )
    if not 0 <= args.domain <= 232:
        parser.error("--domain must be 0-232")
    # a terminal's Ctrl-C: the launches must not inherit SIGINT ignored (as from `nohup ... &`), or one signalled
    # while it still imports would go on starting the stack (the handler is reset to the default across exec)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    results = run(args.reps, states, args.domain)
    if args.out is not None:
        write(results, args.out)


if __name__ == "__main__":
    main()
