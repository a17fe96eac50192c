"""Real signals to the installed `sim_skill_server` (navigation_backend nav2) in a subprocess, mid-leg, with a fake
Nav2 in this process holding the leg: the navigator sees the cancel and the process exits 0 after it, without
waiting for the navigator; a second signal during the stop exits at once (130). This also exercises the runner
(sayplan_ros.runner.run_nodes): the executor must still spin while the robot is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "nav2_msgs", reason="nav2_msgs is not importable: build the test overlay (scripts/build_test_overlay.sh)"
)

from fakes.ros_robot import FakeNav2, Leg
from rclpy.action import ActionClient
from test_nav2 import StuckNav2

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_ros.runner import EXIT_SECOND_SIGNAL, EXIT_STOP_UNCONFIRMED

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: real signals; exits bounded in seconds
ROOT = Path(__file__).resolve().parents[2]
EXECUTABLE = ROOT / "install" / "sayplan_ros" / "lib" / "sayplan_ros" / "sim_skill_server"
needs_install = pytest.mark.skipif(not EXECUTABLE.exists(), reason=f"{EXECUTABLE} is not built: run colcon_build.sh")
#: Guards against a hang, not speed targets (a loaded machine must pass): the navigator hears the cancel, and the
#: process ends, long before the navigator's own cancel timeout (30 s below) would; the program's own bound
#: (runner.SHUTDOWN_STOP_S, then runner.TEARDOWN_S) is what ends it, and scripts/bench_stop_time.py measures it.
CANCEL_GUARD_S = 10.0
EXIT_GUARD_S = 20.0


def start_server(ros: Any, *params: str) -> subprocess.Popen[str]:
    args = [str(ROOT / "scripts" / "ws_env.sh"), str(EXECUTABLE), "--ros-args", "-p", "navigation_backend:=nav2"]
    for param in ("skill_delay_s:=0.0", "autostart:=true", *params):  # run alone: no lifecycle manager
        args += ["-p", param]
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros.domain_id)}
    # ws_env.sh execs the program: the signals below reach the node's own process
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def start_leg(ros: Any, proc: subprocess.Popen[str], nav2: Any) -> None:
    """Send goto(pose8) to the process and wait until its leg reaches the navigator."""
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    if not client.wait_for_server(timeout_sec=30.0):
        proc.kill()
        raise AssertionError(f"the sim_skill_server process never served execute_skill:\n{proc.communicate()[0]}")
    ros.wait_active("sim_skill_server")  # serving from configure, refusing until activated (its autostart)
    client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
    ros.wait_for(lambda: bool(nav2.goals), timeout=15.0, what="the leg to reach the navigator")


def ended(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"the process did not exit within {timeout} s:\n{out}") from None
    return proc.returncode, out


@needs_install
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_leg_cancels_the_nav2_goal_then_exits(ros: Any, sig: signal.Signals) -> None:
    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    nav2.script(Leg("hold"))
    proc = start_server(ros)
    start_leg(ros, proc, nav2)
    signaled = time.monotonic()
    proc.send_signal(sig)
    ros.wait_for(lambda: nav2.canceled == 1, timeout=CANCEL_GUARD_S, what="the navigator to see the cancel")
    code, out = ended(proc, EXIT_GUARD_S - (time.monotonic() - signaled))
    assert code == 0, out
    assert "stopping: the running skill is stopped before the node exits" in out, out
    assert "was not confirmed" not in out, out


@needs_install
def test_a_second_signal_during_the_stop_exits_at_once(ros: Any) -> None:
    """The navigator accepts the cancel but never ends the goal, so the stop waits; a second Ctrl-C leaves now (130),
    not after the stop's own bound ran out (which would exit 3)."""
    nav2 = ros.add(StuckNav2(start=(30.0, 0.0), context=ros.context))
    proc = start_server(ros, "nav2_cancel_timeout_s:=30.0")
    try:
        start_leg(ros, proc, nav2)
        proc.send_signal(signal.SIGINT)
        assert nav2.cancel_seen.wait(CANCEL_GUARD_S), "the navigator never saw the cancel"
        proc.send_signal(signal.SIGINT)
        code, out = ended(proc, EXIT_GUARD_S)
        assert code == EXIT_SECOND_SIGNAL, out  # not 3: the stop's own bound did not run out first
        assert "SIGINT again: exiting without waiting for the robot's stop" in out, out
    finally:
        nav2.release.set()


@needs_install
def test_a_stop_nav2_never_confirms_still_ends_the_process(ros: Any) -> None:
    """One SIGTERM, the navigator never ends the goal: the stop gives up at its bound, says the robot's stop was not
    confirmed, and the process is gone within a few seconds all the same."""
    nav2 = ros.add(StuckNav2(start=(30.0, 0.0), context=ros.context))
    proc = start_server(ros, "nav2_cancel_timeout_s:=30.0")
    try:
        start_leg(ros, proc, nav2)
        signaled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert nav2.cancel_seen.wait(CANCEL_GUARD_S), "the navigator never saw the cancel"
        code, out = ended(proc, EXIT_GUARD_S - (time.monotonic() - signaled))
        assert "Nav2 did not confirm the cancel" in out and "stop was not confirmed" in out, out
        assert code == EXIT_STOP_UNCONFIRMED, out  # a supervisor can tell the robot was not seen to stop
    finally:
        nav2.release.set()
