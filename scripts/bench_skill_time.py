"""Time per skill of the simulated skill server over a long run: the median of the first and of the last skills,
and their ratio, with the skill server's timer count before and after.

    scripts/ws_env.sh python scripts/bench_skill_time.py [--skills 300] [--window 50] [--delay 0.004]
        [--result-timeout S] [--write docs/measured/skill_time.md]

The skill server runs alone in this process (no scene-graph server, no planner), with an operator node sending one
`execute_skill` goal at a time (a goto back and forth between two poses) and waiting for its result, as the
executor does. A skill's time is from sending its goal to having its result. The target (per-skill time does not
grow with the run: the last window's median under 3x the first's plus 10 ms) is printed, met or missed, and never
asserted by a test: the figures move with the machine's load. scripts/soak.py measures the same over the whole stack.

What grows is bounded by `result_timeout_s`: the action server keeps each finished goal that long for its client, and
a goal's cost grows with the goals kept (its status list holds every one). So the time per skill rises over the first
`result_timeout_s` seconds of a run and then stays flat; `--result-timeout 0.5` shows it flat from the start, and a
long one (3600) shows it growing with every skill.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import measured_doc
import rclpy
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from soak import wait

from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_ros.sim_skill_server import SimSkillServer

GROWTH_LIMIT = 3.0  # the last window's median under this times the first's ...
GROWTH_SLACK_S = 0.01  # ... plus this


def measure(
    context: Context, skills: int, delay_s: float, result_timeout_s: float | None = None
) -> tuple[list[float], int, int]:
    """Seconds per skill, and the skill server's timer count before and after the run."""
    executor = MultiThreadedExecutor(num_threads=4, context=context)
    overrides = [Parameter("skill_delay_s", value=delay_s)]
    if result_timeout_s is not None:
        overrides.append(Parameter("result_timeout_s", value=result_timeout_s))
    server = SimSkillServer(context=context, parameter_overrides=overrides)
    operator = rclpy.create_node("bench_skill_time_operator", context=context)
    for node in (server, operator):
        executor.add_node(node)
    client = ActionClient(operator, ExecuteSkill, "execute_skill")
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        server.bring_up()
        if not client.wait_for_server(timeout_sec=20.0):
            raise RuntimeError("the skill server did not come up")
        timers_before = len(list(server.timers))
        durations: list[float] = []
        for index in range(skills):
            started = time.perf_counter()
            goal = ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8" if index % 2 else "pose7"))
            handle = wait(client.send_goal_async(goal), 20.0, f"acceptance of skill {index}")
            if not handle.accepted:
                raise RuntimeError(f"skill {index} was not accepted")
            outcome = wait(handle.get_result_async(), 20.0, f"result of skill {index}").result.outcome
            if not outcome.success:
                raise RuntimeError(f"skill {index} failed: {outcome.error_msg}")
            durations.append(time.perf_counter() - started)
        return durations, timers_before, len(list(server.timers))
    finally:
        client.destroy()
        executor.shutdown(timeout_sec=2.0)
        spinner.join(timeout=5.0)
        for node in (server, operator):
            node.destroy_node()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=300, help="how many skills")
    parser.add_argument("--window", type=int, default=50, help="skills in the first and in the last window")
    parser.add_argument("--delay", type=float, default=0.004, help="the skill server's skill_delay_s")
    parser.add_argument(
        "--result-timeout", type=float, help="the skill server's result_timeout_s (default: the node's own)"
    )
    parser.add_argument("--write", type=Path, help="also write the figures to this Markdown file (docs/measured/)")
    parser.add_argument(
        "--domain", type=int, default=0, help="ROS domain (0: one from 1..100 by the process id; tests use 101..232)"
    )
    args = parser.parse_args(argv)
    if args.window < 1 or args.skills < 2 * args.window:
        parser.error("--skills must be at least twice --window (the first and last windows are compared)")
    context = Context()
    rclpy.init(context=context, domain_id=args.domain or 1 + os.getpid() % 100)
    try:
        durations, timers_before, timers_after = measure(context, args.skills, args.delay, args.result_timeout)
    except RuntimeError as exc:
        print(f"bench_skill_time: {exc}", file=sys.stderr)
        return 1
    finally:
        context.try_shutdown()
    first = statistics.median(durations[: args.window])
    last = statistics.median(durations[-args.window :])
    met = last < GROWTH_LIMIT * first + GROWTH_SLACK_S
    kept = "its default" if args.result_timeout is None else f"{args.result_timeout:g}"
    text = "\n".join(
        [
            f"skills: {args.skills} (skill_delay_s {args.delay:g}, result_timeout_s {kept}), "
            "the sim skill server alone",
            f"per-skill time, median of the first {args.window}: {first * 1000:.1f} ms, "
            f"last {args.window}: {last * 1000:.1f} ms, ratio {last / first:.2f}",
            f"target (last < {GROWTH_LIMIT:g}x first + {GROWTH_SLACK_S * 1000:.0f} ms): {'met' if met else 'missed'}",
            f"skill server timers: {timers_before} before, {timers_after} after",
        ]
    )
    measured_doc.publish(args.write, "Time per skill over a long run", "```text\n" + text + "\n```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
