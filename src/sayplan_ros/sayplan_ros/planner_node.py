"""planner: the `plan_task` action server over the sayplan_core planners.

Plans on its copy of the live scene graph (kept in step by GraphFollower) and refuses
to plan on a copy it knows is stale. One goal at a time.

Managed (sayplan_ros.lifecycle): configure reads and checks the settings (the LLM's among them) and starts the
`plan_task` server; activate asks the LLM whether it answers (`probe_llm`, bounded by `timeout_s` and at most
PROBE_TIMEOUT_S) and refuses to activate, with the probe's one line, when it does not, so a stack whose LLM is
unreachable does not come up; a goal while the node is not active ends NOT_ACTIVE. The backend itself is built
on the first goal; a backend that fails later aborts that goal with its message.

The node hosts the planners it is configured to offer (`planners`; every installed one by default), each with
its own options as `<planner>.<field>` parameters (sayplan_core.settings.planner_settings); a goal names one, and
a planner that is not offered ends the goal UNKNOWN_PLANNER. A goal names the action set the robot speaks; a
planner that cannot write plans in it says so (UNSUPPORTED_ACTION_SET) instead of producing a plan the robot
cannot run. With `record_transcript` set (a folder), every goal's LLM exchange is written to its own file there.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.parameter import Parameter

from sayplan_core.graph import limits
from sayplan_core.llm.http import CallAbort, abortable
from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.selection import LlmConfig, make_backend, probe_llm
from sayplan_core.llm.types import LlmBackend, LlmError
from sayplan_core.node_options import PlannerNodeOptions
from sayplan_core.options import build
from sayplan_core.outcomes import PlanCode
from sayplan_core.planners import PLANNERS, Progress, make_planner
from sayplan_core.settings import planner_config, planner_options, planner_settings
from sayplan_interfaces.action import PlanTask
from sayplan_interfaces.msg import PlanOutcome, PlanReport
from sayplan_ros.conversions import plan_failure_to_msg, plan_result_to_msg, progress_to_msg
from sayplan_ros.diagnostics import DiagnosticsPublisher, LlmWatch
from sayplan_ros.goals import CancelMarks, finish_goal
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.lifecycle import ManagedNode
from sayplan_ros.parameters import current
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.runner import run_nodes
from sayplan_ros.single_goal import SingleGoal

#: The longest the activation's LLM probe may take, seconds (a backend that answers at all answers sooner).
PROBE_TIMEOUT_S = 10.0


class PlannerNode(ManagedNode):
    def __init__(self, node_name: str = "planner", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._settings = planner_settings()  # every installed planner's options, namespaced
        self.declare(self._settings)
        self.add_on_set_parameters_callback(self._on_set_planner)
        self._llm_config = LlmConfig()
        self._offered: tuple[str, ...] = ()
        self._record_dir = ""
        self._backend: LlmBackend | None = None
        self._backend_lock = threading.Lock()
        self._goals = 0
        self._abort = CallAbort()  # the running goal's: a cancel shuts its LLM connection down at once
        self._paused: CallAbort | None = None  # the goal's abort a deactivate (a lifecycle PAUSE) ended
        self._reports = self.create_publisher(PlanReport, "plan_results", EVENTS_QOS)
        self._group = ReentrantCallbackGroup()
        self.follower = GraphFollower(self, self._group)
        self._llm_watch: LlmWatch | None = None  # from configure to cleanup
        self.diagnostics_publisher = DiagnosticsPublisher(self, lambda: LlmWatch.statuses(self._llm_watch))
        self._single = SingleGoal(self.get_logger(), "plan_task")
        # a goal marked CANCELING wakes the wait for the graph version (its stop condition) at once
        self._cancel_marks = CancelMarks(self, "plan_task", self._group, self.follower.wake_waiters)
        self._server: ActionServer | None = None

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        values = self.read_settings(self._settings)
        node = build(PlannerNodeOptions, values)
        config = node.llm_config(planner_options(values).temperature)
        config.validate()
        offered = node.offered()
        missing = [name for name in offered if name not in PLANNERS]
        if missing:
            raise ValueError(f"planners names {', '.join(missing)}, not installed (installed: {', '.join(PLANNERS)})")
        if node.planner not in offered:
            raise ValueError(f"the default planner '{node.planner}' is not among planners ({', '.join(offered)})")
        self._llm_config, self._record_dir, self._offered = config, node.record_transcript, offered
        self._llm_watch = LlmWatch(config)
        self._server = ActionServer(
            self,
            PlanTask,
            "plan_task",
            execute_callback=self._execute,
            goal_callback=lambda goal: self._single.accept(goal, self._refuse),
            cancel_callback=self._on_cancel,
            callback_group=self._group,
        )

    def activate(self) -> None:
        """Only with an LLM that answers: a stack that cannot plan does not come up. The client is built here, not
        on the first goal, whose answer would otherwise wait for its SDK's import (about 1.2 s CPU for openai) or
        the embedded model's load."""
        probe = probe_llm(self._llm_config, min(self._llm_config.timeout_s or PROBE_TIMEOUT_S, PROBE_TIMEOUT_S))
        if self._llm_watch is not None:
            self._llm_watch.record(probe)  # /diagnostics reports it from now on
        if not probe.ok:
            raise RuntimeError(probe.detail)
        self.get_logger().info(f"LLM: {probe.detail}")
        self._get_backend()

    def deactivate(self) -> None:
        self._paused = self._abort  # the goal under way, if any, ends PAUSED
        self._abort.abort()  # a plan under way ends now instead of after its LLM call

    def cleanup(self) -> None:
        if self._llm_watch is not None:
            self._llm_watch.stop()
            self._llm_watch = None
        if self._server is not None:
            self._server.destroy()
            self._server = None
        with self._backend_lock:
            self._backend = None

    def _on_set_planner(self, parameters: list[Parameter]) -> SetParametersResult:
        """The default planner may change per goal, but only to one this node offers (an installed planner left
        out of `planners` would end every goal UNKNOWN_PLANNER). Before configure, configure checks it."""
        for parameter in parameters:
            if parameter.name == "planner" and self._offered and parameter.value not in self._offered:
                reason = (
                    f"planner '{str(parameter.value)[:80]}' is not offered by this node "
                    f"(planners: {', '.join(self._offered)}; `planners` is read at start-up)"
                )
                self.get_logger().warning(f"refused parameter change: {reason}")
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    @property
    def graph_version(self) -> int:
        """Version of the scene graph this planner would plan on (0 before the first one arrives)."""
        return self.follower.version()

    def _on_cancel(self, _goal: Any) -> CancelResponse:
        """Accept, and end the goal's LLM call now: a slow server must not hold a cancel (issue 24)."""
        self._abort.abort()
        return CancelResponse.ACCEPT

    @staticmethod
    def _refuse(goal: PlanTask.Goal) -> str | None:
        if not goal.instruction.strip():
            return "the instruction is empty"
        if len(goal.instruction) > limits.MAX_INSTRUCTION_CHARS:
            return f"the instruction is {len(goal.instruction)} characters long, over {limits.MAX_INSTRUCTION_CHARS}"
        if len(goal.planner) > limits.MAX_ID_CHARS:  # never echoed back: no planner id is that long
            return f"the planner id is {len(goal.planner)} characters long, over {limits.MAX_ID_CHARS}"
        if len(goal.context) > limits.MAX_CONTEXT_CHARS:
            return f"the context is {len(goal.context)} characters long, over {limits.MAX_CONTEXT_CHARS}"
        return None

    def _get_backend(self) -> LlmBackend:
        with self._backend_lock:
            if self._backend is None:
                backend, note = make_backend(self._llm_config)
                self._backend = backend
                self.get_logger().info(note)
            return self._backend

    def _execute(self, handle: ServerGoalHandle) -> PlanTask.Result:
        goal: PlanTask.Goal = handle.request
        planner_name = goal.planner or build(PlannerNodeOptions, current(self, self._settings)).planner
        abort = self._abort = CallAbort()
        try:
            if not self.is_active:
                message = f"plan_task refused: {self.not_active()}"
                self.get_logger().warning(message)
                outcome = plan_failure_to_msg(planner_name, goal.action_set, PlanCode.NOT_ACTIVE, message)
            else:
                with abortable(self._abort):
                    outcome = self._plan(handle, planner_name)
        except Exception as exc:  # a planner bug ends this goal, not the node
            self.get_logger().error(f"plan_task failed: {exc!r}")
            outcome = plan_failure_to_msg(
                planner_name, goal.action_set, PlanCode.INTERNAL_ERROR, f"internal error: {exc!r}"
            )
        finally:
            self._single.release()
        paused = self._paused is abort and not outcome.success and outcome.error_code != PlanCode.NOT_ACTIVE
        if (
            paused and not handle.is_cancel_requested
        ):  # stopped by the node's deactivate, not by a cancel: no cancel is on its way
            message = (
                f"planning stopped: {self.get_name()} was paused (lifecycle deactivate) and ended its LLM call; "
                "resume the stack (the lifecycle manager's RESUME), then send the task again"
            )
            self.get_logger().warning(message)
            outcome = plan_failure_to_msg(planner_name, goal.action_set, PlanCode.PAUSED, message)
        elif self._abort.aborted and not handle.is_cancel_requested:
            # the cancel callback ended the LLM call before rclpy marked the goal CANCELING (it does once the
            # callback returned): ending now would abort a goal whose cancel was accepted. This goal's own thread.
            self._cancel_marks.wait(handle)
        report = PlanReport(instruction=goal.instruction, outcome=outcome)
        report.header.stamp = self.get_clock().now().to_msg()
        self._reports.publish(report)
        if handle.is_cancel_requested:  # an accepted cancel always ends as CANCELED
            outcome.success, outcome.error_code = False, int(PlanCode.CANCELED)
            outcome.error_msg = outcome.error_msg if outcome.error_msg == "canceled" else "canceled"
        if finish_goal(handle, outcome.success, outcome.error_code == PlanCode.CANCELED) == "aborted":
            self.get_logger().warning(f"plan_task failed: {outcome.error_msg}")
        return PlanTask.Result(outcome=outcome)

    def _plan(self, handle: ServerGoalHandle, planner_name: str) -> PlanOutcome:
        goal: PlanTask.Goal = handle.request
        if planner_name not in self._offered:
            return plan_failure_to_msg(
                planner_name[:80],
                goal.action_set,
                PlanCode.UNKNOWN_PLANNER,
                f"unknown planner '{planner_name[:80]}' (this node offers: {', '.join(self._offered)})",
            )
        values = current(self, self._settings)
        wait_s = build(PlannerNodeOptions, values).graph_wait_s
        graph, version = self.follower.wait_for_version(
            int(goal.graph_version), wait_s, lambda: bool(handle.is_cancel_requested)
        )
        if handle.is_cancel_requested:
            return plan_failure_to_msg(planner_name, goal.action_set, PlanCode.CANCELED, "canceled")
        problem = self.follower.problem()
        if graph is None:
            why = f"; the copy is out of sync: {problem}" if problem else ""
            return plan_failure_to_msg(
                planner_name,
                goal.action_set,
                PlanCode.NO_SCENE_GRAPH,
                f"no scene graph received yet on 'scene_graph'{why}",
            )
        if not problem and not self.follower.server_present():
            problem = "scene_graph_server is gone (nothing publishes its graph), so the copy may be stale"
        if problem:
            return plan_failure_to_msg(
                planner_name,
                goal.action_set,
                PlanCode.SCENE_GRAPH_OUT_OF_SYNC,
                f"the planner's scene graph is out of sync with the server: {problem}",
            )
        if version < goal.graph_version:  # a replan right after a skill must see what that skill changed
            return plan_failure_to_msg(
                planner_name,
                goal.action_set,
                PlanCode.SCENE_GRAPH_OUT_OF_SYNC,
                f"the planner's scene graph is at version {version}; the goal needs {goal.graph_version}"
                f" (waited {wait_s:g} s)",
            )
        try:
            backend = self._get_backend()
        except LlmError as exc:
            message = f"LLM backend unavailable: {exc}"
            self.get_logger().error(message)
            return plan_failure_to_msg(planner_name, goal.action_set, PlanCode.BACKEND_ERROR, message)
        recorder = RecordingBackend(backend) if self._record_dir else None
        options, config = planner_options(values, goal.action_set.strip()), planner_config(planner_name, values)
        planner = make_planner(planner_name, recorder or backend, options, config)
        self.get_logger().info(f"planning '{goal.instruction}' with {planner.name} on graph version {version}")
        sequence = [0]

        def feedback(p: Progress) -> None:
            handle.publish_feedback(PlanTask.Feedback(progress=progress_to_msg(p, sequence[0])))
            sequence[0] += 1

        try:
            result = planner.plan(
                graph,
                goal.instruction,
                on_progress=feedback,
                should_cancel=lambda: bool(handle.is_cancel_requested),
                context=goal.context,
            )
        finally:
            if recorder is not None:
                self._save_transcript(recorder)
        return plan_result_to_msg(result, version)

    def _save_transcript(self, recorder: RecordingBackend) -> None:
        folder = Path(self._record_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = recorder.save_new(folder, "plan_task", self._goals + 1)
            self._goals = int(path.stem.rsplit("_", 1)[1])
        except OSError as exc:
            self.get_logger().error(f"cannot write the transcript to {folder}: {exc}")


def main(args: list[str] | None = None) -> None:
    run_nodes("planner", lambda: [PlannerNode()], args)
