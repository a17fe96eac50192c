"""One fake robot action server of fakes.ros_robot (FakeNav2, FakeGripper or FakeTrajectoryController) in a process of
its own, for tests that kill it with SIGKILL mid-goal.

A process killed that way says no goodbye on DDS: its participant is dropped by the others only when its lease runs
out (4 s with config/dds/fastdds_liveness.xml, which the process uses, as every process of the stack should). A
server destroyed inside the test's own process is not the same thing: its endpoints go at once, and destroying an
action server while the test's shared executor is using it can kill that executor's thread (rclpy raises
"Failed to take result: action server pointer is invalid"), which stops every node of the test.

A server in another process can take a goal before it has discovered the client's reply endpoint, and its answer
is then lost (the client waits its `driver_wait_s`, then reports a server that did not answer): `wait_for_clients`
waits until the process sees the skill server's clients before the test sends anything.

As a script: `python server_process.py <nav2|gripper|arm>` prints `up` once its node spins. Each `hold` line on its
stdin makes its next goal run until canceled (it answers `scripted`); it prints `holding` when such a goal starts.
A `clients` line is answered `clients <n>`: the fewest clients it sees on any of its actions' send_goal and
get_result services.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

TEST_DIR = Path(__file__).resolve().parents[1]
KINDS = ("nav2", "gripper", "arm")
#: The actions each fake serves, by their full names.
ACTIONS = {
    "nav2": ("/navigate_to_pose",),
    "gripper": ("/franka_gripper/grasp", "/franka_gripper/move", "/franka_gripper/homing"),
    "arm": ("/fr3_arm_controller/follow_joint_trajectory",),
}


class ServerProcess:
    """The fake server `kind` running in a subprocess on DDS domain `domain_id` (see the module docstring)."""

    def __init__(self, kind: str, domain_id: int, timeout_s: float = 120.0) -> None:
        assert kind in KINDS, kind
        self.kind = kind
        from stack_paths import LIVENESS_PROFILE, PROFILE_VARIABLES  # the test's side only (the child runs this file)

        env = {
            **os.environ,
            "ROS_DOMAIN_ID": str(domain_id),
            **dict.fromkeys(PROFILE_VARIABLES, str(LIVENESS_PROFILE)),
            "ROS_PYTHON_CHECK_FIELDS": "1",
        }
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), kind],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("up", timeout_s)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def expect(self, text: str, timeout_s: float = 120.0) -> str:
        """Until the process prints the line `text`, or one that starts with `text ` (returned), within `timeout_s`
        (a hang guard); other lines are kept in `output`."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no '{text}' from the {self.kind} process in {timeout_s} s: {self.output}"
                ) from None
            if line is None:
                raise AssertionError(f"the {self.kind} process ended before '{text}': {self.output}")
            if line.strip() == text or line.startswith(f"{text} "):
                return line.strip()
            self.output.append(line)

    def _send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\n")
        self.process.stdin.flush()

    def hold_next(self) -> None:
        """Its next goal runs until canceled; returns once that is scripted."""
        self._send("hold")
        self.expect("scripted")

    def wait_for_clients(self, count: int = 1, timeout_s: float = 120.0) -> None:
        """Until the process sees `count` clients on each of its actions (a hang guard of `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._send("clients")
            seen = int(self.expect("clients").split()[1])
            if seen >= count:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the {self.kind} process sees {seen} client(s) after {timeout_s} s")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: nothing of it runs, and it tells nobody."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30.0)


def _serve(kind: str) -> None:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    sys.path.insert(0, str(TEST_DIR))
    from fakes.ros_robot import FakeGripper, FakeNav2, FakeTrajectoryController, GraspTry, Leg

    base: Any = {"nav2": FakeNav2, "gripper": FakeGripper, "arm": FakeTrajectoryController}[kind]
    held: Any = {"nav2": lambda: Leg("hold"), "gripper": lambda: GraspTry(hold=True), "arm": lambda: "hold"}[kind]

    class Reporting(base):  # type: ignore[misc, valid-type]
        def _next(self, default: Any) -> Any:
            item = super()._next(default)  # a goal starts: what it does
            if item == "hold" or getattr(item, "hold", False) is True or getattr(item, "outcome", "") == "hold":
                print("holding", flush=True)
            return item

    rclpy.init()
    node = Reporting(start=(30.0, 0.0)) if kind == "nav2" else Reporting()
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "hold":
                node.script(held())
                print("scripted", flush=True)
            elif line.strip() == "clients":
                services = [f"{action}/_action/{s}" for action in ACTIONS[kind] for s in ("send_goal", "get_result")]
                print(f"clients {min(node.count_clients(name) for name in services)}", flush=True)

    threading.Thread(target=commands, daemon=True).start()
    print("up", flush=True)
    executor.spin()


if __name__ == "__main__":
    _serve(sys.argv[1])
