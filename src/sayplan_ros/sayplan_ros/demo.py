"""The main job: the whole stack on the office with the simulated robot, one instruction end to end.

    sayplan_demo [--llm replay|auto|openai|ollama|local] [--failure pickup:coffee_mug:grasp_failed] [--out runs]

Starts every node in one process (scene graph server, path planner, planner,
executor, sim skill server) plus a bag recorder, sends one `execute_task` goal,
prints the closed loop as it runs, and writes a rosbag2 folder and the LLM
transcript of the run. With `--llm replay` (the default) a bundled transcript
stands in for the LLM so the run is the same on every machine.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import rclpy
from ament_index_python.packages import get_package_share_directory
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from sayplan_core.envs.tasks import load_tasks
from sayplan_core.graph.model import GraphError
from sayplan_core.llm.selection import BACKENDS
from sayplan_core.sim.goals import check_goals
from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.msg import PlanReport
from sayplan_ros.bag import BagRecorder
from sayplan_ros.executor_node import ExecutorNode
from sayplan_ros.path_planner_node import PathPlannerNode
from sayplan_ros.planner_node import PlannerNode
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer


def bundled_transcript() -> Path:
    return Path(get_package_share_directory("sayplan_ros")) / "transcripts" / "demo_office_lh05.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sayplan_demo", description=__doc__.splitlines()[0])
    p.add_argument("--task", default="office-lh-05", help="task id from the bundled SayPlan task set (office)")
    p.add_argument("--llm", default="replay", choices=BACKENDS, help="replay uses the bundled transcript")
    p.add_argument("--model", default="")
    p.add_argument("--base-url", default="")
    p.add_argument("--failure", default="pickup:coffee_mug:grasp_failed", help="injected skill failure(s), '' for none")
    p.add_argument("--skill-delay", type=float, default=0.05, help="simulated seconds per skill")
    p.add_argument("--out", default="runs", help="folder for the run's bag and transcript")
    p.add_argument("--storage", default="mcap", choices=("mcap", "sqlite3"))
    p.add_argument("--verbose", action="store_true", help="show the nodes' INFO logs")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    tasks = {t.id: t for t in load_tasks()}
    if args.task not in tasks or tasks[args.task].env != "office":
        raise ValueError(f"--task must be an office task id (e.g. office-lh-05), got '{args.task}'")
    task = tasks[args.task]
    if args.llm == "replay" and args.task != "office-lh-05":
        raise ValueError("the bundled transcript answers office-lh-05 only; use --llm auto for other tasks")
    run_dir = Path(args.out) / datetime.now().strftime("demo_%Y%m%d_%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=False)
    transcript = run_dir / "llm_transcript.json"
    planner_params = [Parameter("record_transcript", value=str(transcript))]
    if args.llm == "replay":
        planner_params.append(Parameter("replay_transcript", value=str(bundled_transcript())))
    else:
        planner_params += [
            Parameter("llm", value=args.llm),
            Parameter("model", value=args.model),
            Parameter("base_url", value=args.base_url),
        ]
    skill_params = [Parameter("failures", value=args.failure), Parameter("skill_delay_s", value=args.skill_delay)]

    nodes: list[Node] = []
    executor = MultiThreadedExecutor(num_threads=6)
    try:
        nodes = [
            SceneGraphServer(parameter_overrides=[Parameter("env", value="office")]),
            PathPlannerNode(),
            PlannerNode(parameter_overrides=planner_params),
            ExecutorNode(),
            SimSkillServer(parameter_overrides=skill_params),
            BagRecorder(
                parameter_overrides=[
                    Parameter("output", value=str(run_dir / "bag")),
                    Parameter("storage", value=args.storage),
                ]
            ),
        ]
        client_node = rclpy.create_node("demo_operator")
        nodes.append(client_node)
        for node in nodes:
            executor.add_node(node)
        failure: list[BaseException] = []

        def spin() -> None:
            try:
                executor.spin()
            except BaseException as exc:  # surface it: a dead executor would leave the demo waiting forever
                if rclpy.ok():
                    failure.append(exc)

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        _SPIN_FAILURES[:] = []
        _SPIN_FAILURES.append(failure)
        reports: list[PlanReport] = []
        client_node.create_subscription(PlanReport, "plan_results", reports.append, EVENTS_QOS)
        return _execute(task.instruction, client_node, nodes, reports, run_dir, transcript, task)
    finally:
        executor.shutdown(timeout_sec=2.0)
        for node in nodes:
            node.destroy_node()


_SPIN_FAILURES: list[list[BaseException]] = []


def _wait_done(future: Any, what: str) -> Any:
    while not future.done():
        for failures in _SPIN_FAILURES:
            if failures:
                raise RuntimeError(f"the ROS executor stopped while waiting for {what}: {failures[0]!r}")
        time.sleep(0.05)
    return future.result()


def _say(stage: str, text: str) -> None:
    print(f"[{stage:>10}] {text}", flush=True)


def _execute(
    instruction: str,
    client_node: Node,
    nodes: list[Node],
    reports: list[PlanReport],
    run_dir: Path,
    transcript: Path,
    task: Any,
) -> int:
    started = time.perf_counter()
    client = ActionClient(client_node, ExecuteTask, "execute_task")
    if not client.wait_for_server(timeout_sec=15.0):
        raise RuntimeError("execute_task did not come up")
    time.sleep(0.5)  # let the planner and path planner receive the latched graph
    _say("task", instruction)
    last: dict[str, Any] = {}

    def feedback(msg: Any) -> None:
        f = msg.feedback
        key = (f.stage, f.step_index, f.status)
        if last.get("key") == key or f.status == "running":
            return
        last["key"] = key
        step = f"{f.step.action}({f.step.target})" if f.step.action else ""
        where = f"{f.step_index + 1}/{f.step_count} {step}" if f.stage == "executing" else ""
        _say(f.stage, f"{where} {f.status}".strip())

    goal_future = client.send_goal_async(ExecuteTask.Goal(instruction=instruction), feedback_callback=feedback)
    handle = _wait_done(goal_future, "the goal to be accepted")
    if not handle.accepted:
        raise RuntimeError("execute_task rejected the goal")
    result = _wait_done(handle.get_result_async(), "the task result").result
    time.sleep(0.3)  # last reports and graph versions reach the recorder
    graph_server: SceneGraphServer = nodes[0]  # type: ignore[assignment]
    recorder: BagRecorder = nodes[5]  # type: ignore[assignment]
    bag = recorder.close()
    for report in reports:
        verdict = "verified" if report.success else f"not verified: {report.message}"
        explored = ", ".join(report.explored_nodes) or "-"
        _say(
            "plan",
            f"{report.planner}: explored [{explored}], {report.replanning_rounds} replanning round(s), {verdict}",
        )
        for feedback_text in report.feedback_history:
            _say("verify", feedback_text)
    goal_met = check_goals(graph_server.graph, task.predicates).success
    calls = sum(len(r.llm_calls) for r in reports)
    tokens = sum(c.prompt_tokens + c.completion_tokens for r in reports for c in r.llm_calls)
    verdict, goal = ("success" if result.success else "FAILED"), ("met" if goal_met else "NOT met")
    print(
        f"\nsummary: {verdict} | {result.message} | goal {goal} | {len(reports)} plan_task goals, "
        f"{calls} LLM calls, {tokens} tokens | {time.perf_counter() - started:.1f} s"
    )
    counts = ", ".join(f"{topic} {n}" for topic, n in recorder.counts.items())
    print(f"bag: {bag} ({counts})")
    print(f"LLM transcript: {transcript}")
    print(f"run folder: {run_dir}")
    return 0 if result.success and goal_met else 1


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    rclpy.init(args=None if args.verbose else ["--ros-args", "--log-level", "WARN"])
    code = 0
    try:
        code = run(args)
    except KeyboardInterrupt:
        code = 130
    except (GraphError, ValueError, RuntimeError, FileExistsError) as exc:
        print(f"sayplan_demo: {exc}", file=sys.stderr)
        code = 2
    finally:
        if rclpy.ok():
            rclpy.shutdown()
    sys.exit(code)
