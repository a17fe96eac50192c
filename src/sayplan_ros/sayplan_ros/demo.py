"""The main job: the whole stack on the office with the simulated robot, one instruction end to end.

    sayplan_demo [--llm replay|auto|openai|ollama|local] [--failure pickup:coffee_mug:grasp_failed] [--out runs]

Starts every node in one process (the stack of `stack.create_nodes` plus a bag
recorder), sends one `execute_task` goal, prints every event of the closed loop from
`execution_events` in order, and writes a rosbag2 folder and the LLM transcripts of
the run into a run folder of its own. With `--llm replay` (the default) a bundled
transcript stands in for the LLM so the run is the same on every machine. The nodes
live under a namespace of their own (`--namespace`), so two demos on one machine, or
a demo beside a running robot stack, never see each other.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

import rclpy
from ament_index_python.packages import get_package_share_directory
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from sayplan_core.envs.tasks import load_tasks
from sayplan_core.llm.selection import BACKENDS, LlmConfig, resolve_backend_name
from sayplan_core.node_options import FoxgloveBridgeOptions
from sayplan_core.outcomes import SkillCode, Stage, Status
from sayplan_core.sim.goals import check_goals
from sayplan_core.stack_nodes import FOXGLOVE
from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.msg import ExecutionEvent, PlanReport
from sayplan_ros.bag import STORAGES, BagRecorder
from sayplan_ros.lifecycle_manager import LifecycleManager
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.runner import stop_robots
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.stack import create_nodes

#: the Foxglove bridge's default port, which Foxglove and Lichtblick open by default
FOXGLOVE_PORT: int = FoxgloveBridgeOptions().port


def bundled_transcript() -> Path:
    return Path(get_package_share_directory("sayplan_ros")) / "transcripts" / "demo_office_lh05.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sayplan_demo", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--task", default="office-lh-05", help="task id from the bundled SayPlan task set (office)")
    p.add_argument("--llm", default="replay", choices=BACKENDS, help="replay uses the bundled transcript")
    p.add_argument("--model", default="")
    p.add_argument("--base-url", default="")
    p.add_argument("--failure", default="pickup:coffee_mug:grasp_failed", help="injected skill failure(s), '' for none")
    p.add_argument("--skill-delay", type=float, default=0.05, help="simulated seconds per skill")
    p.add_argument("--out", default="runs", help="folder for the run folders (bag and transcripts)")
    p.add_argument("--storage", default="mcap", choices=tuple(STORAGES))
    p.add_argument("--namespace", default="", help="ROS namespace of the demo's nodes (default: one of its own)")
    p.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="seconds before the demo gives up on the task (0: 600, or 3600 with the embedded model on a CPU)",
    )
    p.add_argument(
        "--foxglove",
        type=int,
        nargs="?",
        const=FOXGLOVE_PORT,
        default=None,
        metavar="PORT",
        help=f"also serve the run to Foxglove or Lichtblick on ws://127.0.0.1:PORT (default {FOXGLOVE_PORT}), and the "
        "monitor page to a browser on http://127.0.0.1:PORT+1/ (with 0: any free ports)",
    )
    p.add_argument(
        "--stay",
        action="store_true",
        help="after the run, keep the nodes up (with --foxglove: the final state for viewers) until Ctrl-C; "
        "the exit status is still the run's",
    )
    p.add_argument("--verbose", action="store_true", help="show the nodes' INFO logs")
    return p.parse_args(argv)


def new_run_folder(out: Path) -> Path:
    """A fresh folder under `out`: two demos started in the same second get different ones."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create the output folder {out}: {exc.strerror or exc}") from exc
    stamp = datetime.now().strftime("demo_%Y%m%d_%H%M%S")
    for attempt in range(1000):
        folder = out / (stamp if attempt == 0 else f"{stamp}_{attempt}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise ValueError(f"cannot create a run folder in {out}: {exc.strerror or exc}") from exc
        return folder
    raise ValueError(f"no free run folder name under {out}")


class EventPrinter:
    """Prints execution events in their sequence order, whatever order DDS delivers them in."""

    def __init__(self) -> None:
        self.events: list[ExecutionEvent] = []
        self._pending: dict[tuple[str, int], ExecutionEvent] = {}
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, event: ExecutionEvent) -> None:
        with self._lock:
            task = event.instruction
            self._pending[(task, event.sequence)] = event
            expected = self._next.get(task, 0)
            while (task, expected) in self._pending:
                ready = self._pending.pop((task, expected))
                self.events.append(ready)
                _print_event(ready)
                expected += 1
            self._next[task] = expected

    def gaps(self) -> int:
        with self._lock:
            return len(self._pending)


def _print_event(e: ExecutionEvent) -> None:
    if e.status == Status.RUNNING:
        return
    if e.stage == Stage.EXECUTING:
        step = f"{e.step.action}({e.step.target})"
        status = e.status
        if e.status == Status.FAILED:
            detail = e.message.removeprefix(f"{step} failed: ")
            status = f"failed ({SkillCode(e.error_code).label}): {detail}"
        _say(e.stage, f"{e.step_index + 1}/{e.step_count} {step} {status}")
    else:
        _say(e.stage, e.message)


#: how long the demo waits for its task: with a server or a replay, and with the embedded model on a CPU
TASK_S = 600.0
EMBEDDED_TASK_S = 3600.0


def _say(stage: str, text: str) -> None:
    print(f"[{stage:>10}] {text}", flush=True)


def run(args: argparse.Namespace, context: Context, interrupt: Interrupt) -> int:
    tasks = {t.id: t for t in load_tasks()}
    if args.task not in tasks or tasks[args.task].env != "office":
        raise ValueError(f"--task must be an office task id (e.g. office-lh-05), got '{args.task}'")
    task = tasks[args.task]
    if args.llm == "replay" and args.task != "office-lh-05":
        raise ValueError("the bundled transcript answers office-lh-05 only; use --llm auto for other tasks")
    if args.skill_delay < 0 or args.timeout < 0:
        raise ValueError("--skill-delay and --timeout must be >= 0")
    if args.foxglove is not None and not 0 <= args.foxglove <= 65535:
        raise ValueError(f"--foxglove must be a port, 0..65535 (0: any free one), got {args.foxglove}")
    on_cpu = (
        args.llm != "replay" and resolve_backend_name(LlmConfig(backend=args.llm, base_url=args.base_url))[0] == "local"
    )
    timeout = args.timeout or (EMBEDDED_TASK_S if on_cpu else TASK_S)
    run_dir = new_run_folder(Path(args.out))
    transcripts = run_dir / "llm"
    planner: list[Parameter] = [Parameter("record_transcript", value=str(transcripts))]
    if args.llm == "replay":
        planner.append(Parameter("replay_transcript", value=str(bundled_transcript())))
    else:
        planner += [
            Parameter("llm", value=args.llm),
            Parameter("model", value=args.model),
            Parameter("base_url", value=args.base_url),
        ]
    overrides = {
        "scene_graph_server": [Parameter("env", value="office")],
        # the executor waits for a plan as long as the demo waits for the task (a CPU model plans for minutes)
        "executor": [Parameter("plan_timeout_s", value=float(timeout))],
        "planner": planner,
        "sim_skill_server": [
            Parameter("failures", value=args.failure),
            Parameter("skill_delay_s", value=args.skill_delay),
        ],
    }
    if args.foxglove is not None:
        # the page on the next port (8766 beside 8765), or any free one beside any free one
        page_port = args.foxglove + 1 if 0 < args.foxglove < 65535 else 0
        overrides["foxglove_bridge"] = [Parameter("port", value=args.foxglove), Parameter("page_port", value=page_port)]
    namespace = args.namespace or f"sayplan_demo_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    executor = MultiThreadedExecutor(num_threads=6, context=context)
    nodes: list[Node] = []
    recorder: BagRecorder | None = None
    task_sent = False
    try:
        nodes = create_nodes(context, "sim", overrides, namespace=namespace, foxglove=args.foxglove is not None)
        for node in nodes:
            if node.get_name() == FOXGLOVE.name:
                page = getattr(node, "page", None)
                _say(
                    "foxglove",
                    f"ws://127.0.0.1:{getattr(node, 'port', '?')} (open it in Foxglove or Lichtblick)"
                    + (f", the monitor page: {page.url}" if page is not None else ""),
                )
        recorder = BagRecorder(
            context=context,
            namespace=namespace,
            parameter_overrides=[
                Parameter("output", value=str(run_dir / "bag")),
                Parameter("storage", value=args.storage),
            ],
        )
        nodes.append(recorder)
        operator = rclpy.create_node("demo_operator", namespace=namespace, context=context)
        nodes.append(operator)
        for node in nodes:
            executor.add_node(node)
        spinner = Spinner(executor, interrupt)
        printer = EventPrinter()
        reports: list[PlanReport] = []
        operator.create_subscription(ExecutionEvent, "execution_events", printer, EVENTS_QOS)
        operator.create_subscription(PlanReport, "plan_results", reports.append, EVENTS_QOS)
        graph_server = next(n for n in nodes if isinstance(n, SceneGraphServer))
        wait_for_startup(next(n for n in nodes if isinstance(n, LifecycleManager)), spinner)
        started = time.perf_counter()
        handle = send_task(task.instruction, operator, spinner)
        task_sent = True
        try:
            result = spinner.wait(handle.get_result_async(), "task result", timeout).result
        except SignaledError:
            result = cancel_task(handle, spinner)
        if interrupt.signal is not None and not stop_robots(nodes, ROBOT_STOP_S):
            print("sayplan_demo: the robot's stop was not confirmed", file=sys.stderr)
        spinner.settle(printer, 1.0 if interrupt.signal else 5.0)
        bag = recorder.close()
        goal_met = check_goals(graph_server.graph, task.predicates).success
        calls = sum(len(r.outcome.llm_calls) for r in reports)
        tokens = sum(c.prompt_tokens + c.completion_tokens for r in reports for c in r.outcome.llm_calls)
        if interrupt.signal is not None:
            verdict = f"canceled ({interrupt.signal})"
        else:
            verdict = "success" if result is not None and result.success else "FAILED"
        message = "no result before exiting" if result is None else (result.error_msg or "done")
        goal = "met" if goal_met else "NOT met"
        print(
            f"\nsummary: {verdict} | {message} | goal {goal} | {len(reports)} plan_task goals, "
            f"{calls} LLM calls, {tokens} tokens | {time.perf_counter() - started:.1f} s"
        )
        counts = ", ".join(f"{topic} {n}" for topic, n in recorder.counts.items())
        print(f"bag: {bag} ({counts})")
        print(f"LLM transcripts: {transcripts}")
        print(f"run folder: {run_dir}", flush=True)
        if recorder.error is not None:  # the run is not what the bag says: a disk that filled up, most likely
            print(f"sayplan_demo: the bag is incomplete: recording stopped: {recorder.error}", file=sys.stderr)
            return EXIT_RECORDING_FAILED
        written = len(list(transcripts.glob("plan_task_*.json"))) if transcripts.is_dir() else 0
        if written < len(reports):  # the planner logs each transcript it could not write (a full disk)
            print(
                f"sayplan_demo: the transcripts are incomplete: {written} written for {len(reports)} plan_task goals "
                f"in {transcripts} (see the planner's error line)",
                file=sys.stderr,
            )
            return EXIT_RECORDING_FAILED
        if interrupt.signal is not None:
            return EXIT_INTERRUPTED
        if args.stay:
            print("sayplan_demo: the run is over; the nodes stay up until Ctrl-C", flush=True)
            spinner.stay()
        return 0 if result is not None and result.success and goal_met else 1
    except BaseException as exc:
        if not task_sent:
            account_for_unstarted_run(run_dir, recorder, exc)
        raise
    finally:
        executor.shutdown(timeout_sec=2.0)
        for node in nodes:
            node.destroy_node()


#: The note a run folder keeps when the stack did not start (what the bag holds is only the start-up).
STARTUP_FAILED_NOTE = "startup_failed.txt"


def account_for_unstarted_run(run_dir: Path, recorder: BagRecorder | None, exc: BaseException) -> None:
    """A run that never sent its task leaves no unexplained folder: removed when nothing was recorded, else kept
    with a note saying why the stack did not start (the bag holds what was published until then)."""
    if recorder is not None:
        recorder.close()
    recorded = sum(recorder.counts.values()) if recorder is not None else 0
    if recorded == 0:
        shutil.rmtree(run_dir, ignore_errors=True)
        print(f"sayplan_demo: nothing was recorded before the stack stopped; {run_dir} removed", file=sys.stderr)
        return
    why = " ".join(str(exc).split())[:2000] or type(exc).__name__
    with contextlib.suppress(OSError):
        (run_dir / STARTUP_FAILED_NOTE).write_text(f"the stack did not start: {why}\n", encoding="utf-8")
    print(
        f"sayplan_demo: the stack did not start; {run_dir} keeps the {recorded} start-up messages recorded "
        f"({STARTUP_FAILED_NOTE} says why)",
        file=sys.stderr,
    )


class SignaledError(Exception):
    """SIGINT or SIGTERM came while the demo waited."""


class Interrupt:
    """The first SIGINT/SIGTERM: the demo cancels its task, stops the robot, closes the bag and exits 130; a
    second SIGINT exits at once (130). The handler only records the signal and wakes the waiting main thread."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.wake = threading.Event()
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.signal is not None:  # a second Ctrl-C while the demo stops: leave now, without a traceback
            if signum != signal.SIGINT or self.signal != "SIGINT":
                return  # not a second Ctrl-C (a repeated SIGTERM, say): the stop is bounded anyway
            with contextlib.suppress(OSError):  # stderr may be a closed pipe
                os.write(2, f"sayplan_demo: {name} again: exiting without waiting for the robot's stop\n".encode())
            os._exit(EXIT_INTERRUPTED)
        self.signal = name
        self.wake.set()


class Spinner:
    """Spins the executor in a thread; a dead executor is reported instead of leaving the demo waiting, and a
    signal ends the wait at once."""

    def __init__(self, executor: MultiThreadedExecutor, interrupt: Interrupt) -> None:
        self.failure: BaseException | None = None
        self.interrupt = interrupt
        self._executor = executor
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except BaseException as exc:
            self.failure = exc

    def wait(self, future: Any, what: str, timeout: float, interruptible: bool = True) -> Any:
        wake = self.interrupt.wake
        future.add_done_callback(lambda _f: wake.set())
        deadline = time.monotonic() + timeout
        while not future.done():  # the main thread only; wakes to notice a dead executor
            if interruptible and self.interrupt.signal is not None:
                raise SignaledError(what)
            if self.failure is not None:
                raise RuntimeError(f"the ROS executor stopped while waiting for {what}: {self.failure!r}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} within {timeout:g} s")
            wake.wait(min(0.5, max(0.0, deadline - time.monotonic())))
            wake.clear()
        return future.result()

    def stay(self) -> None:
        """Until a signal (which then ends the demo as if the run had just finished) or a dead executor."""
        while self.interrupt.signal is None and self.failure is None:
            self.interrupt.wake.wait(0.5)
            self.interrupt.wake.clear()

    def settle(self, printer: EventPrinter, timeout: float) -> None:
        """Let the last events and graph versions reach the printer and the recorder."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (printer.gaps() or not _ended(printer)):
            time.sleep(0.05)
        time.sleep(0.2)


#: The longest the demo waits for its lifecycle manager to bring the stack up, seconds.
STARTUP_TIMEOUT_S = 120.0


def wait_for_startup(manager: LifecycleManager, spinner: Spinner) -> None:
    """The stack's managed nodes are active, or the demo ends with the manager's line (the LLM unreachable...)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not manager.started.wait(0.1):  # the main thread only; wakes to notice a dead executor or a signal
        if spinner.interrupt.signal is not None:  # Ctrl-C while a slow LLM probe holds the start-up
            raise SignaledError("the start-up")
        if spinner.failure is not None:
            raise RuntimeError(f"the ROS executor stopped while the stack came up: {spinner.failure!r}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the stack did not come up within {STARTUP_TIMEOUT_S:g} s")
    ok, why = manager.startup_result
    if not ok:
        raise RuntimeError(why)


def _ended(printer: EventPrinter) -> bool:
    return bool(printer.events) and printer.events[-1].stage in (Stage.DONE, Stage.FAILED, Stage.CANCELED)


def send_task(instruction: str, operator: Node, spinner: Spinner) -> Any:
    """Send the task; its goal handle."""
    client = ActionClient(operator, ExecuteTask, "execute_task")
    if not client.wait_for_server(timeout_sec=15.0):
        raise RuntimeError("execute_task did not come up")
    if spinner.interrupt.signal is not None:
        raise SignaledError("the start")
    _say("task", instruction)
    handle = spinner.wait(client.send_goal_async(ExecuteTask.Goal(instruction=instruction)), "goal acceptance", 15.0)
    if not handle.accepted:
        raise RuntimeError("execute_task rejected the goal")
    return handle


def cancel_task(handle: Any, spinner: Spinner) -> Any:
    """Cancel the task as an operator does and wait (bounded) for its CANCELED result; None if none came."""
    _say("task", f"{spinner.interrupt.signal}: canceling the task")
    result = handle.get_result_async()
    handle.cancel_goal_async()
    try:
        return spinner.wait(result, "the canceled task's result", CANCEL_WAIT_S, interruptible=False).result
    except RuntimeError as exc:
        print(f"sayplan_demo: {exc}", file=sys.stderr)
        return None


#: On a signal: how long the canceled task may take to end, then the robot's stop; the demo is gone within 5 s.
CANCEL_WAIT_S = 2.0
ROBOT_STOP_S = 1.5
#: Exit code of a demo ended by SIGINT or SIGTERM (the task canceled, the bag written).
EXIT_INTERRUPTED = 130
#: Exit code of a run whose bag or transcripts could not be written whole (the task's outcome is printed above).
EXIT_RECORDING_FAILED = 4


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    interrupt = Interrupt()
    interrupt.install()  # before rclpy: its own handler would shut the context down under the running nodes
    context = Context()
    ros_args = None if args.verbose else ["--ros-args", "--log-level", "WARN"]
    code = 0
    try:
        rclpy.init(args=ros_args, context=context, signal_handler_options=SignalHandlerOptions.NO)
        code = run(args, context, interrupt)
    except SignaledError:
        code = EXIT_INTERRUPTED
    except Exception as exc:  # one line, whatever went wrong
        print(f"sayplan_demo: {exc}", file=sys.stderr)
        code = 2
    finally:
        context.try_shutdown()
        interrupt.restore()
    if code == EXIT_INTERRUPTED:  # an executor thread may still sit in the LLM probe: the interpreter would join it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
