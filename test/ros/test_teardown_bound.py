"""A program run by sayplan_ros.runner ends after a signal even when its teardown hangs: a node whose destruction
never returns (or a callback that never ends) cannot keep the process alive past the robots' stop, where a
supervisor would have to SIGKILL it. The exit code and a failed start's reason are kept, and a line says why the
teardown was cut short. Real signals, real rclpy nodes, in a subprocess; the only bound checked is a guard
against a hang, never the machine's speed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from sayplan_ros.runner import EXIT_CONFIG

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: bounds teardowns in seconds
ROOT = Path(__file__).resolve().parents[2]
#: a hang guard only: the program's own bound is the runner's stop and teardown budgets (a few seconds)
GUARD_S = 60.0
PROGRAM = textwrap.dedent(
    """
    import sys, threading
    from rclpy.node import Node
    from sayplan_ros.runner import run_nodes

    hang = threading.Event()  # never set

    class Hanging(Node):
        exit_reason = ""

        def __init__(self):
            super().__init__("hanging_teardown")
            self.ready = self.create_timer(0.05, self.spinning)  # the runner spins: its signal handlers are set

        def spinning(self):
            self.ready.cancel()
            print("ready", flush=True)
            if sys.argv[1] == "callback":
                hang.wait()  # a callback that never returns
            if sys.argv[1] == "failed_start":
                self.exit_reason = "the robot's arm did not answer"

        def destroy_node(self):
            if sys.argv[1] in ("destroy", "failed_start"):
                hang.wait()
            super().destroy_node()

    run_nodes("hanging", lambda: [Hanging()])
    """
)


def run(ros: Any, tmp_path: Path, how: str, sig: signal.Signals | None) -> tuple[int, str]:
    script = tmp_path / "hanging.py"
    script.write_text(PROGRAM)
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    proc = subprocess.Popen(
        [sys.executable, str(script), how], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        if sig is not None:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("how", ["destroy", "callback"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_teardown_that_hangs_still_ends_the_program_with_exit_0(
    ros: Any, tmp_path: Path, how: str, sig: signal.Signals
) -> None:
    """A hung callback is waited for at most the teardown's bound (Jazzy's executor does not wait for it at all;
    other distros' executors may), a node that never finishes its destruction is left behind."""
    code, err = run(ros, tmp_path, how, sig)
    assert code == 0, err
    if how == "destroy":
        assert "hanging: teardown took over" in err, err
    assert "Traceback" not in err, err


def test_a_failed_start_whose_teardown_hangs_still_says_why_last_and_exits_2(ros: Any, tmp_path: Path) -> None:
    code, err = run(ros, tmp_path, "failed_start", None)
    assert code == EXIT_CONFIG, err
    lines = err.strip().splitlines()
    assert "teardown took over" in err, err
    assert lines[-1] == "hanging: the robot's arm did not answer", err
