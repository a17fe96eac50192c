"""sayplan_replay: re-run a recorded run through the current stack and say where it now differs.

    sayplan_replay RUN_FOLDER [--failure SPEC] [--out FOLDER] [--timeout S]

RUN_FOLDER is what `sayplan_demo` writes: `bag/` (the start scene graph, the instruction, plans, skill results,
events and graph updates) and `llm/plan_task_*.json` (the LLM transcripts). The replay starts the stack in this
process (simulated robot) on the recorded start graph, with the replay LLM answering from the recorded
transcripts and the recorded injected skill failures (or `--failure`), sends the recorded instruction, records a
new run folder, and compares plans, skill outcomes, events and the final graph (sayplan_core.execution.run_diff).

Exit codes, for CI: 0 the run did the same, 1 it differs (the first difference is printed), 2 it could not be
replayed (no such run, an unreadable, oversized or hostile bag, a run that was canceled or stopped before its task
ended, the stack did not come up, no result in time; `--timeout` covers opening and reading the bag too). Topics of
the bag the replay does not read are named on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import rclpy
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from sayplan_core import files
from sayplan_core.execution.run_diff import (
    RunSummary,
    diff_runs,
    event_line,
    injected_failures,
    merge_transcripts,
    outcome_line,
    plan_line,
    report,
)
from sayplan_core.graph import graph_to_dict, save
from sayplan_core.graph.updates import apply_in_place
from sayplan_core.llm.replay import MAX_TRANSCRIPT_BYTES
from sayplan_core.outcomes import SkillCode, Stage, Status
from sayplan_interfaces.msg import ExecutionEvent
from sayplan_ros.bag import RECORDED_TOPICS, BagRecorder, read_messages
from sayplan_ros.conversions import msg_to_graph, msg_to_update
from sayplan_ros.demo import Interrupt, Spinner, send_task, wait_for_startup
from sayplan_ros.lifecycle_manager import LifecycleManager
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.stack import create_nodes

EXIT_SAME, EXIT_DIFFERS, EXIT_CANNOT_RUN = 0, 1, 2
_ENDED = (Stage.DONE, Stage.FAILED, Stage.CANCELED)


class RecordedRun:
    """What a run folder holds, read once."""

    def __init__(self, folder: Path, deadline: float | None = None) -> None:
        self.folder = folder
        bag = folder / "bag"
        if not (bag / "metadata.yaml").is_file():
            raise ValueError(f"{folder} is not a run folder: no bag/metadata.yaml")
        #: topic -> (type, messages) of the bag's topics the replay does not read (not the stack's own)
        self.unread: dict[str, tuple[str, int]] = {}
        self.messages = list(read_messages(bag, deadline, unread=self.unread))
        graphs = [m for topic, _, m in self.messages if topic == "/scene_graph"]
        if not graphs:
            raise ValueError(f"{bag} holds no /scene_graph message: nothing to start the replay from")
        self.start_graph = min(graphs, key=lambda m: m.version)
        self.summary = summarize(self.messages)
        if not self.summary.instruction:
            raise ValueError(f"{bag} holds no instruction (no /plan_results or /execution_events message)")
        ended = [m.stage for t, _, m in self.messages if t == "/execution_events" and m.stage in _ENDED]
        # a task ends CANCELED for an operator's cancel, or for a skill that ended CANCELED (an injected failure
        # the replay injects again): only the first cannot be reproduced
        skills = [m for topic, _, m in self.messages if topic == "/skill_results"]
        self.failures = injected_failures(
            (r.step.action, r.step.target, r.outcome.error_code, r.outcome.error_msg) for r in skills
        )
        injected_cancel = any(spec.endswith(f":{SkillCode.CANCELED.label}") for spec in self.failures.split(","))
        if Stage.CANCELED in ended and not injected_cancel:
            raise InterruptedRunError(f"{folder} was canceled mid-task (Ctrl-C or a cancel): a replay cannot cancel it")
        if not ended:
            raise InterruptedRunError(f"{folder} has no end: the run was stopped before its task ended")
        paths = sorted((folder / "llm").glob("plan_task_*.json"))
        self.transcript = merge_transcripts([read_transcript(p, folder) for p in paths])


def read_transcript(path: Path, folder: Path) -> Any:
    """One LLM transcript of a run folder: a regular file inside the folder, bounded, JSON; errors name the file."""
    files.inside(path, folder, "transcript")  # a link to /etc/passwd is refused, not read
    text = files.read_text(path, MAX_TRANSCRIPT_BYTES, "transcript")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"transcript {path} is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError(f"transcript {path} is nested too deeply") from None


def unread_note(unread: dict[str, tuple[str, int]]) -> str:
    """One line naming the bag's topics the replay did not read, and why; '' when it read them all."""
    if not unread:
        return ""
    names = ", ".join(f"{topic} ({count} {kind})" for topic, (kind, count) in sorted(unread.items())[:10])
    more = f" and {len(unread) - 10} more" if len(unread) > 10 else ""
    return (
        f"not read from the bag: {names}{more}: the replay compares only the stack's own topics "
        f"({', '.join(RECORDED_TOPICS)}) recorded at the root; a run recorded in a namespace is not replayed"
    )


class InterruptedRunError(ValueError):
    """The recorded run did not end on its own: there is nothing the same run would reproduce."""


def summarize(messages: list[tuple[str, int, Any]]) -> RunSummary:
    """A run's plans, skill outcomes, events (in sequence order, planning progress left out) and final graph."""
    summary = RunSummary()
    events = sorted((m for t, _, m in messages if t == "/execution_events"), key=lambda e: e.sequence)
    reports = [m for t, _, m in messages if t == "/plan_results"]
    summary.instruction = reports[0].instruction if reports else (events[0].instruction if events else "")
    for r in reports:
        o = r.outcome
        summary.plans.append(
            plan_line(o.success, o.error_code, o.verified, ((s.action, s.target) for s in o.full_plan))
        )
    for t, _, m in messages:
        if t == "/skill_results":
            summary.outcomes.append(outcome_line(m.step.action, m.step.target, m.outcome.success, m.outcome.error_code))
    for e in events:
        if e.status != Status.PROGRESS:
            line = event_line(
                e.stage, e.status, e.step_index, e.step_count, (e.step.action, e.step.target), e.error_code
            )
            summary.events.append(line)
    summary.graph = final_graph(messages)
    return summary


def final_graph(messages: list[tuple[str, int, Any]]) -> dict[str, Any]:
    """The newest full graph patched with every later update, in version order."""
    graphs = [m for t, _, m in messages if t == "/scene_graph"]
    if not graphs:
        return {}
    base = max(graphs, key=lambda m: m.version)
    graph, version = msg_to_graph(base), base.version
    updates = {m.version: m for t, _, m in messages if t == "/scene_graph_updates" and m.version > version}
    for v in sorted(updates):
        apply_in_place(graph, msg_to_update(updates[v]))  # a graph of its own, read from the bag
    return graph_to_dict(graph)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sayplan_replay", description=(__doc__ or "").splitlines()[0])
    p.add_argument("run", help="run folder written by sayplan_demo (holds bag/ and llm/)")
    p.add_argument("--failure", default=None, help="injected skill failure(s); default: those the run recorded")
    p.add_argument("--skill-delay", type=float, default=0.01, help="simulated seconds per skill")
    p.add_argument("--out", default="", help="folder for the replayed run (default: a temporary folder)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before the replay gives up")
    return p.parse_args(argv)


def replay(recorded: RecordedRun, args: argparse.Namespace, context: Context) -> tuple[RunSummary, Path]:
    """Run the recorded instruction through the current stack; the summary of the new bag and its folder."""
    out = Path(args.out) if args.out else Path(tempfile.gettempdir())
    out.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="replay_", dir=out))
    start = run_dir / "start_graph.json"
    save(msg_to_graph(recorded.start_graph), start)
    transcript = run_dir / "replayed_transcript.json"
    transcript.write_text(json.dumps(recorded.transcript, ensure_ascii=False), encoding="utf-8")
    failures = recorded.failures if args.failure is None else args.failure
    overrides = {
        "scene_graph_server": [Parameter("env", value=str(start))],
        "planner": [
            Parameter("replay_transcript", value=str(transcript)),
            Parameter("record_transcript", value=str(run_dir / "llm")),
        ],
        "sim_skill_server": [
            Parameter("env", value=str(start)),
            Parameter("failures", value=failures),
            Parameter("skill_delay_s", value=args.skill_delay),
        ],
    }
    namespace = f"sayplan_replay_{uuid.uuid4().hex[:8]}"
    executor = MultiThreadedExecutor(num_threads=6, context=context)
    nodes: list[Node] = []
    try:
        nodes = create_nodes(context, "sim", overrides, namespace=namespace)
        recorder = BagRecorder(
            context=context, namespace=namespace, parameter_overrides=[Parameter("output", value=str(run_dir / "bag"))]
        )
        nodes.append(recorder)
        operator = rclpy.create_node("replay_operator", namespace=namespace, context=context)
        nodes.append(operator)
        events: list[ExecutionEvent] = []
        operator.create_subscription(ExecutionEvent, "execution_events", events.append, EVENTS_QOS)
        for node in nodes:
            executor.add_node(node)
        spinner = Spinner(executor, Interrupt())  # signals: this program's own handlers (KeyboardInterrupt)
        wait_for_startup(next(n for n in nodes if isinstance(n, LifecycleManager)), spinner)
        handle = send_task(recorded.summary.instruction, operator, spinner)
        spinner.wait(handle.get_result_async(), "task result", args.timeout)
        deadline = time.monotonic() + 5.0  # the last events and graph update on their way to the recorder
        while time.monotonic() < deadline and not any(e.stage in _ENDED for e in events):
            time.sleep(0.05)
        time.sleep(0.3)
        recorder.close()
        if recorder.error is not None:
            raise RuntimeError(f"the replayed run's bag is incomplete: {recorder.error}")
    finally:
        executor.shutdown(timeout_sec=2.0)
        for node in nodes:
            node.destroy_node()
    return summarize(list(read_messages(run_dir / "bag"))), run_dir


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    context = Context()
    code = EXIT_CANNOT_RUN
    try:
        recorded = RecordedRun(Path(args.run), time.monotonic() + args.timeout)  # --timeout covers the reading
        if note := unread_note(recorded.unread):  # before a difference those messages may explain
            print(f"sayplan_replay: {note}", file=sys.stderr)
        for sig in (signal.SIGINT, signal.SIGTERM):  # both end the replay as Ctrl-C does: nodes destroyed, 130
            signal.signal(sig, _interrupt)
        rclpy.init(
            args=["--ros-args", "--log-level", "WARN"], context=context, signal_handler_options=SignalHandlerOptions.NO
        )
        replayed, run_dir = replay(recorded, args, context)
        differences = diff_runs(recorded.summary, replayed)
        print(f"replayed {args.run} -> {run_dir}")
        print(report(recorded.summary, replayed, differences))
        if differences and note:
            print(f"note: {note}")
        code = EXIT_DIFFERS if differences else EXIT_SAME
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # one line, whatever went wrong: the run could not be replayed
        print(
            f"sayplan_replay: cannot replay {args.run}: {' '.join(str(exc).split()) or type(exc).__name__}",
            file=sys.stderr,
        )
        code = EXIT_CANNOT_RUN
    finally:
        context.try_shutdown()
    if code == 130:  # the interrupted goal's worker thread may still wait on the robot it no longer has: the
        sys.stdout.flush()  # interpreter would join it at exit; the bag is closed and the nodes are gone
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
