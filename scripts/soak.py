"""Soak: N skills through the whole sim stack, as the executor runs them, to see that nothing grows with the run.

Each skill is an `execute_skill` goal to the simulated robot (a goto back and forth), and its graph update goes to
`apply_graph_update`, so the scene-graph server (journaling to a temporary folder), the planner's and the path
planner's followers and the skill server all handle every one. Prints the median per-skill time of the first and
last 100 skills and their ratio, and the process's RSS, threads and open files before and after.

    scripts/ws_env.sh python scripts/soak.py [--skills 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.parameter import Parameter
from stack_in_process import running_stack

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.demo import bundled_transcript


def process_state() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return {
        "rss_mb": rss_kb / 1024,
        "threads": threading.active_count(),
        "fds": len(os.listdir("/proc/self/fd")),
    }


def wait(future: Any, timeout: float, what: str) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout):
        raise RuntimeError(f"no {what} within {timeout} s")
    return future.result()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000, help="how many skills (at least 200)")
    parser.add_argument(
        "--write", default="", help="also write the figures to this Markdown file (docs/measured/soak.md)"
    )
    parser.add_argument(
        "--domain", type=int, default=0, help="ROS domain (0: one from 1..100 by the process id; tests use 101..232)"
    )
    args = parser.parse_args()
    if args.skills < 200:
        parser.error("--skills must be at least 200 (first and last 100 are compared)")
    context = Context()
    rclpy.init(context=context, domain_id=args.domain or 1 + os.getpid() % 100)
    with tempfile.TemporaryDirectory(prefix="sayplan-soak-") as journal:
        overrides = {
            "scene_graph_server": [Parameter("journal_dir", value=journal)],
            "sim_skill_server": [Parameter("skill_delay_s", value=0.0)],
            # never asked (no task is planned), but the planner activates only with an LLM that answers
            "planner": [Parameter("replay_transcript", value=str(bundled_transcript()))],
        }
        try:
            with running_stack(context, overrides, "soak_operator") as (_, operator):
                skills = ActionClient(operator, ExecuteSkill, "execute_skill")
                updates = operator.create_client(ApplyGraphUpdate, "apply_graph_update")
                if not skills.wait_for_server(timeout_sec=20.0) or not updates.wait_for_service(timeout_sec=20.0):
                    print("soak: the stack did not come up", file=sys.stderr)
                    return 2
                version, durations = 1, []
                before = process_state()
                for index in range(args.skills):
                    if (
                        index == 100
                    ):  # after the warm-up (thread pools filled, caches built): what grows from here leaks
                        before = process_state()
                    started = time.perf_counter()
                    goal = ExecuteSkill.Goal(
                        step=PlanStep(action="goto", target="pose8" if index % 2 == 0 else "pose7")
                    )
                    goal.graph_version = version
                    handle = wait(skills.send_goal_async(goal), 20.0, f"acceptance of skill {index}")
                    outcome = wait(handle.get_result_async(), 20.0, f"result of skill {index}").result.outcome
                    if not outcome.success:
                        print(f"soak: skill {index} failed: {outcome.error_msg}", file=sys.stderr)
                        return 1
                    answer = wait(
                        updates.call_async(ApplyGraphUpdate.Request(update=outcome.graph_update)), 20.0, "update"
                    )
                    if not answer.success:
                        print(f"soak: update {index} refused: {answer.message}", file=sys.stderr)
                        return 1
                    version = int(answer.version)
                    durations.append(time.perf_counter() - started)
                    if (index + 1) % 200 == 0:
                        print(f"soak: {index + 1}/{args.skills} skills", flush=True)
                after = process_state()
        finally:
            context.try_shutdown()
    first, last = statistics.median(durations[:100]) * 1000, statistics.median(durations[-100:]) * 1000
    lines = [
        f"skills: {args.skills}, graph version {version}",
        f"per-skill time, median of the first 100: {first:.1f} ms, last 100: {last:.1f} ms, ratio {last / first:.2f}",
        "from skill 100 to the end: "
        f"RSS {before['rss_mb']:.0f} -> {after['rss_mb']:.0f} MB (+{after['rss_mb'] - before['rss_mb']:.0f} MB), "
        f"threads {before['threads']:.0f} -> {after['threads']:.0f}, "
        f"open files {before['fds']:.0f} -> {after['fds']:.0f}",
    ]
    print("\n".join(lines))
    if args.write:
        when = time.strftime("%Y-%m-%d")
        text = (
            "# Soak\n\nWritten by `scripts/ws_env.sh python scripts/soak.py --write docs/measured/soak.md` on "
            f"{when} ({os.cpu_count()} cores): {args.skills} skills through the whole sim stack, the journal on.\n\n"
            "```text\n" + "\n".join(lines) + "\n```\n"
        )
        Path(args.write).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
