"""executor: the `execute_task` action, closing the loop between planner, skills and scene graph.

The loop itself is sayplan_core.execution.closed_loop; this node only wires it to
ROS: planning is a `plan_task` goal, each step an `execute_skill` goal, and every
skill's graph update goes to `apply_graph_update` so a replan starts from the
current state. Before the robot moves, the plan is checked against what the skill
server says it can run (`describe_skills`), and the planner is asked for plans in
the robot's action set; a robot with a latched fault (sayplan_core.robots.fault_latch) ends
the task before the planner is asked, and so does a skill server that is not active (a paused stack:
NOT_ACTIVE, naming its lifecycle state); a pause mid-task ends the task PAUSED. Every event of the loop (planning
progress included) is numbered and published on `execution_events` as well as sent as feedback.

The goal's thread waits on action futures (threading events set by their done
callbacks, no polling); a cancel request is forwarded at once to the running child
goal, whose result then ends the wait.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from action_msgs.srv import CancelGoal
from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.diagnostics import Status as DiagnosticStatus
from sayplan_core.diagnostics import executor_status
from sayplan_core.execution.closed_loop import StepReport, run_closed_loop
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.node_options import ExecutorOptions
from sayplan_core.outcomes import Stage, Status, TaskCode
from sayplan_core.planners.base import PlanResult
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask, PlanTask
from sayplan_interfaces.msg import ExecutionEvent, Plan, PlanProgress, SkillReport
from sayplan_interfaces.srv import ApplyGraphUpdate, DescribeSkills, GetSceneGraph
from sayplan_ros.clocks import steady_timer
from sayplan_ros.conversions import (
    describe_progress,
    msg_to_plan_result,
    msg_to_skill_result,
    step_report_to_event,
    step_to_msg,
    steps_to_msgs,
)
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.goals import CancelMarks, finish_goal
from sayplan_ros.parameters import current_options, declare_options
from sayplan_ros.qos import EVENTS_QOS, LATCHED_STATE_QOS
from sayplan_ros.rivals import RIVAL_CHECK_S, RIVAL_GRACE_S, rival_action_servers, rival_servers
from sayplan_ros.runner import RESULT_GRACE_S, result_sent, run_nodes
from sayplan_ros.server_watch import SERVER_CHECK_S, ServerWatch
from sayplan_ros.single_goal import SingleGoal


class WaitError(RuntimeError):
    """A server did not answer in time, refused a goal, or is not there; `code` says how the task ends."""

    def __init__(self, code: TaskCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.late: Any = None  # after a timeout: the canceled goal's wrapped result, if it came in action_server_wait_s


def wait_future(future: Future, timeout: float, what: str, watch: ServerWatch | None = None) -> Any:
    """Block this goal's thread (never the executor's) until `future` is done or `timeout` passes; with a
    `watch`, also until the server that took the goal is gone (its timer sets the same event)."""
    done = watch.done if watch is not None else threading.Event()
    future.add_done_callback(lambda _f: done.set())
    finished = done.wait(timeout)
    if watch is not None and watch.lost and not future.done():
        raise WaitError(TaskCode.SERVER_UNAVAILABLE, f"{watch.lost}; send the task again once the server is back")
    if not finished:
        raise WaitError(TaskCode.TIMEOUT, f"no answer from {what} within {timeout:g} s")
    return future.result()


#: On shutdown, how long a task that ended CANCELED waits for the node's own cancel request to reach it, seconds.
CANCEL_ARRIVAL_S = 1.0


class _TaskRun:
    """The state of one execute_task goal: its event numbering and the child goal a cancel must reach."""

    def __init__(self, node: ExecutorNode, handle: ServerGoalHandle) -> None:
        self.node = node
        self.handle = handle
        self.instruction: str = handle.request.instruction
        self.sequence = 0
        self.plan_msgs: list[Any] = []
        self.action_set = ""
        self.child: Any = None  # the running plan_task / execute_skill goal handle
        self.replans = 0
        self.lock = threading.Lock()
        self.cancel_seen = threading.Event()  # the cancel callback ran (the goal is about to be CANCELING)

    @property
    def graph_version(self) -> int:
        """The newest scene-graph version the executor has seen (a plan's, or an update it applied, in this task
        or the one before): the next plan and the next skill must be judged on it or a newer one, whatever their
        copies have heard so far."""
        return self.node.graph_version

    def saw(self, version: int) -> None:
        self.node.graph_version = max(self.node.graph_version, version)

    def canceled(self) -> bool:
        """A cancel was requested, or the node is stopping (its own cancel request may still be on its way while
        the skill server, stopping too, already ended the skill or left)."""
        return bool(self.handle.is_cancel_requested) or self.node.stopping.is_set()

    def emit(self, report: StepReport) -> None:
        self.replans = report.replans
        event = step_report_to_event(report, self.instruction, self.sequence)
        self.sequence += 1
        event.header.stamp = self.node.get_clock().now().to_msg()
        self.node.events.publish(event)
        self.handle.publish_feedback(ExecuteTask.Feedback(event=event))
        if report.stage is Stage.EXECUTING and report.status is Status.RUNNING:
            self.node.publish_plan(self.instruction, self.action_set, self.plan_msgs, report.step_index)

    def cancel_child(self) -> None:
        with self.lock:
            child = self.child
        if child is not None:
            try:
                child.cancel_goal_async()
            except Exception as exc:  # the client may be gone (shutdown); the wait ends on its own deadline
                self.node.get_logger().warning(f"could not forward the cancel: {exc!r}")


class ExecutorNode(Node):
    def __init__(self, node_name: str = "executor", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        declare_options(self, ExecutorOptions)
        group = self._group = ReentrantCallbackGroup()
        self._plan_client = ActionClient(self, PlanTask, "plan_task", callback_group=group)
        self._skill_client = ActionClient(self, ExecuteSkill, "execute_skill", callback_group=group)
        self._rival_pause = threading.Event()  # never set (see _refuse_rivals)
        self._update_client = self.create_client(ApplyGraphUpdate, "apply_graph_update", callback_group=group)
        self._describe_client = self.create_client(DescribeSkills, "describe_skills", callback_group=group)
        self._plan_pub = self.create_publisher(Plan, "active_plan", LATCHED_STATE_QOS)
        self.events = self.create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
        self._skills = self.create_publisher(SkillReport, "skill_results", EVENTS_QOS)
        self._single = SingleGoal(self.get_logger(), "execute_task")
        self._run: _TaskRun | None = None
        self._no_run = threading.Event()  # set while no task runs: what stop_for_shutdown waits on
        self._no_run.set()
        self.graph_version = 0  # see _TaskRun.graph_version; one task at a time writes it
        self.graph_epoch = 0  # the scene_graph_server start graph_version counts in
        self.stopping = threading.Event()  # set on SIGINT/SIGTERM (stop_for_shutdown): the task ends CANCELED
        self._graph_client = self.create_client(GetSceneGraph, "get_scene_graph", callback_group=group)
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)
        self._server = ActionServer(
            self,
            ExecuteTask,
            "execute_task",
            execute_callback=self._execute,
            goal_callback=lambda goal: self._single.accept(
                goal, lambda g: None if g.instruction.strip() else "the instruction is empty"
            ),
            cancel_callback=self._on_cancel,
            callback_group=group,
        )
        # its own server's cancel service: on shutdown the task is canceled as an operator cancels it
        self._cancel_all = self.create_client(CancelGoal, "execute_task/_action/cancel_goal", callback_group=group)
        self._cancel_marks = CancelMarks(self, "execute_task", group)

    def stop_for_shutdown(self, timeout_s: float) -> bool:
        """On SIGINT/SIGTERM (sayplan_ros.runner, a plain thread, the executor still spinning): cancel the running
        task the way an operator does (a CancelGoal for every goal), so it ends CANCELED, its running plan or skill
        goal is canceled, and the last event reaches the subscribers. Uses half of `timeout_s`: the robot's own
        stop comes after. True when no task is left running."""
        self.stopping.set()
        run = self._run
        if run is None:
            return True
        deadline = time.monotonic() + timeout_s / 2
        self.get_logger().warning("stopping: the running task is canceled before the node exits")
        sent = result_sent(self._server, run.handle.goal_id)  # registered before the goal can end
        run.cancel_child()  # at once: the DDS cancel below may arrive after the skill server stopped on its own
        if self._cancel_all.wait_for_service(timeout_sec=max(0.0, deadline - time.monotonic())):
            self._cancel_all.call_async(CancelGoal.Request())  # a zero goal id and stamp: every goal
        ended = self._no_run.wait(max(0.0, deadline - time.monotonic()))  # a plain thread, never a callback
        if not ended:
            self.get_logger().error("the running task did not end before the node exits")
        self.events.wait_for_all_acked(Duration(seconds=max(0.0, deadline - time.monotonic())))
        # the result response handed to the middleware (not a guess at how late the executor task runs), then a
        # bounded grace for its delivery: a service response has no wait_for_all_acked
        if sent.wait(max(0.0, deadline - time.monotonic())):
            time.sleep(min(RESULT_GRACE_S, max(0.0, deadline - time.monotonic())))
        else:
            self.get_logger().error("the task's result was not sent before the node exits")
        return ended

    # ------------------------------------------------------------------ helpers
    @property
    def options(self) -> ExecutorOptions:
        """The options now (every one is read per goal)."""
        return current_options(self, ExecutorOptions)

    def publish_plan(self, instruction: str, action_set: str, steps: list[Any], current: int) -> None:
        msg = Plan(instruction=instruction, action_set=action_set, steps=steps, current_step=current)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "map"
        self._plan_pub.publish(msg)

    def _send(self, run: _TaskRun, client: ActionClient, name: str, goal: Any, timeout: float, feedback: Any) -> Any:
        """Send a child goal, keep it cancellable, and wait for its wrapped result (status + result)."""
        wait = self.options.action_server_wait_s
        if not client.wait_for_server(timeout_sec=wait):
            raise WaitError(TaskCode.SERVER_UNAVAILABLE, f"action server '{name}' is not available")
        self._refuse_rivals(name, "goal is not sent", action=True)
        handle = wait_future(client.send_goal_async(goal, feedback_callback=feedback), wait, f"'{name}' (goal)")
        if not handle.accepted:
            raise WaitError(TaskCode.SERVER_UNAVAILABLE, f"'{name}' rejected the goal (busy with another one?)")
        with run.lock:
            run.child = handle
        if run.canceled():  # a cancel that arrived while the goal was being sent
            handle.cancel_goal_async()
        result = handle.get_result_async()
        watch = ServerWatch(self, name, name)
        timer = steady_timer(self, SERVER_CHECK_S, watch.check, self._group)
        try:
            wrapped = wait_future(result, timeout, f"'{name}'", watch)
            self._refuse_rivals(name, "result is not taken", action=True)
            return wrapped
        except WaitError as exc:
            if exc.code is TaskCode.SERVER_UNAVAILABLE:  # nobody left to cancel or to answer
                raise
            handle.cancel_goal_async()
            with contextlib.suppress(WaitError):  # what it did before it stopped (a skill's update) is still wanted
                exc.late = wait_future(result, wait, f"'{name}' (canceled)")
            raise
        finally:
            self.destroy_timer(timer)
            with run.lock:
                run.child = None

    def _call(self, client: Any, request: Any, what: str) -> Any:
        """Call a service whose answer steers the task; only while one node offers it (sayplan_ros/rivals.py), before
        the request is sent and when the answer is read, else the task ends SERVER_UNAVAILABLE naming the rivals."""
        wait = self.options.action_server_wait_s
        if not client.wait_for_service(timeout_sec=wait):
            raise WaitError(TaskCode.SERVER_UNAVAILABLE, f"service '{what}' is not available")
        self._refuse_rivals(what, "request is not sent")
        answer = wait_future(client.call_async(request), wait, f"'{what}'")
        self._refuse_rivals(what, "answer is not taken")
        return answer

    def _refuse_rivals(self, name: str, what: str, action: bool = False) -> None:
        """End the task when a second server of `name` is still listed RIVAL_GRACE_S after it was first seen (a
        restarted server's old endpoints leave within that time). Runs in the goal's own thread, not a callback."""
        deadline = time.monotonic() + RIVAL_GRACE_S
        while (problem := rival_action_servers(self, name) if action else rival_servers(self, name)) and (
            time.monotonic() < deadline
        ):
            self._rival_pause.wait(RIVAL_CHECK_S)  # never set: a bounded pause before counting again
        if problem:
            message = f"{problem}: the '{name}' {what} (only one server is trusted)"
            self.get_logger().error(message)
            raise WaitError(TaskCode.SERVER_UNAVAILABLE, message)

    # ------------------------------------------------------------------ the loop's functions
    def _plan(self, run: _TaskRun, catalog: SkillCatalog, context: str) -> PlanResult:
        stage = Stage.REPLANNING if context else Stage.PLANNING
        goal = PlanTask.Goal(
            instruction=run.instruction,
            planner=run.handle.request.planner or self.options.planner,
            action_set=catalog.default,
            context=context,
            graph_version=run.graph_version,
        )
        forwarded = [0]

        def forward(progress: PlanProgress) -> None:
            if progress.sequence == forwarded[0]:  # in order; a gap is filled from the result below
                forwarded[0] += 1
                run.emit(StepReport(stage, 0, 0, None, Status.PROGRESS, run.replans, describe_progress(progress)))

        wrapped = self._send(
            run,
            self._plan_client,
            "plan_task",
            goal,
            self.options.plan_timeout_s,
            lambda msg: forward(msg.feedback.progress),
        )
        outcome = wrapped.result.outcome
        for progress in outcome.progress[forwarded[0] :]:
            forward(progress)
        plan = msg_to_plan_result(outcome, run.instruction)
        run.saw(int(outcome.graph_version))
        run.plan_msgs, run.action_set = list(outcome.full_plan), plan.action_set
        self.publish_plan(run.instruction, plan.action_set, run.plan_msgs, 0 if plan.success else -1)
        return plan

    def _run_skill(self, run: _TaskRun, step: PlanStep, action_set: str) -> SkillResult:
        goal = ExecuteSkill.Goal(step=step_to_msg(step), action_set=action_set, graph_version=run.graph_version)
        try:
            wrapped = self._send(run, self._skill_client, "execute_skill", goal, self.options.skill_timeout_s, None)
        except WaitError as exc:
            if exc.late is not None:  # timed out, then stopped: what it did still goes into the graph
                try:
                    self._take_result(run, step, action_set, exc.late.result.outcome)
                except WaitError as late:  # the task still ends with the timeout
                    self.get_logger().error(f"the result of {step}, which timed out, was not applied: {late}")
            raise
        return self._take_result(run, step, action_set, wrapped.result.outcome)

    def _take_result(self, run: _TaskRun, step: PlanStep, action_set: str, outcome: Any) -> SkillResult:
        """Report a skill's outcome and apply its graph update (the task ends if the graph refuses it)."""
        report = SkillReport(step=step_to_msg(step), action_set=action_set, outcome=outcome)
        report.header.stamp = self.get_clock().now().to_msg()
        self._skills.publish(report)
        update = outcome.graph_update
        if update.upsert or update.remove or update.connect or update.disconnect:
            answer = self._call(self._update_client, ApplyGraphUpdate.Request(update=update), "apply_graph_update")
            if not answer.success:
                raise WaitError(
                    TaskCode.SCENE_GRAPH_UPDATE_REFUSED,
                    f"the scene graph refused the result of {step}: {answer.message}",
                )
            run.saw(int(answer.version))
        return msg_to_skill_result(outcome)

    def _follow_server_start(self) -> None:
        """A scene_graph_server that started again (a new epoch) counts versions anew (from 1 without a journal):
        the version remembered from the last task then means nothing, and waiting for it would fail every task."""
        if not self._graph_client.service_is_ready():  # nothing to follow yet: the planner says so if it matters
            return
        try:
            answer = self._call(self._graph_client, GetSceneGraph.Request(version_only=True), "get_scene_graph")
        except WaitError as exc:
            self.get_logger().warning(f"could not ask scene_graph_server for its version: {exc}")
            return
        epoch = int(answer.graph.epoch)
        if answer.success and epoch != self.graph_epoch:
            if self.graph_epoch:
                self.get_logger().warning(
                    f"scene_graph_server started again (version {answer.graph.version}); following that start"
                )
            self.graph_epoch, self.graph_version = epoch, int(answer.graph.version)

    def _catalog(self) -> SkillCatalog:
        answer = self._call(self._describe_client, DescribeSkills.Request(), "describe_skills")
        sets = {info.name: frozenset(info.skills) for info in answer.action_sets}
        if not sets:
            raise WaitError(TaskCode.ACTION_SET_MISMATCH, f"the skill server of '{answer.robot}' speaks no action set")
        if answer.fault:  # refused before the planner is asked: no plan can run until an operator clears it
            raise WaitError(TaskCode.ROBOT_FAULT, f"robot '{answer.robot}' has a latched fault: {answer.fault}")
        if answer.lifecycle_state not in ("", "active"):  # paused (or not started): refused before planning
            raise WaitError(TaskCode.NOT_ACTIVE, f"refused before planning: {answer.lifecycle_state}")
        return SkillCatalog(answer.robot, sets, answer.default_action_set or next(iter(sets)))

    # ------------------------------------------------------------------ action server
    def _on_cancel(self, _goal: Any) -> CancelResponse:
        run = self._run
        if run is not None:
            run.cancel_seen.set()
            run.cancel_child()
        return CancelResponse.ACCEPT

    def _execute(self, handle: ServerGoalHandle) -> ExecuteTask.Result:
        run = _TaskRun(self, handle)
        self._run = run
        self._no_run.clear()
        try:
            try:
                result = self._loop(run)
            except Exception as exc:  # a bug must end this goal, not the process
                self.get_logger().error(f"execute_task failed: {exc!r}")
                result = ExecuteTask.Result(
                    error_code=int(TaskCode.INTERNAL_ERROR), error_msg=f"internal error: {exc!r}"
                )
            finally:
                self._single.release()
            self.publish_plan(run.instruction, run.action_set, run.plan_msgs, -1)
            canceled = result.error_code == TaskCode.CANCELED
            if canceled and (self.stopping.is_set() or run.cancel_seen.is_set()):
                # the shutdown's own cancel request, on its way over DDS, or one whose callback ran but that rclpy
                # has not marked CANCELING yet: wait until it is (bounded)
                self._cancel_marks.wait(handle, CANCEL_ARRIVAL_S)
            finish_goal(handle, result.success, canceled)
            self.get_logger().info(f"execute_task: {result.error_msg or 'done'}")
            return result
        finally:
            self._run = None  # after the goal's end state: stop_for_shutdown waits for it
            self._no_run.set()

    def _loop(self, run: _TaskRun) -> ExecuteTask.Result:
        failure: list[WaitError] = []

        def guarded(fn: Any, *args: Any) -> Any:
            """A wait that fails ends the task with its own code (the loop sees a stop)."""
            try:
                return fn(*args)
            except WaitError as exc:
                failure.append(exc)
                raise _StopError from exc

        try:
            self._follow_server_start()
            catalog = guarded(self._catalog)
            outcome = run_closed_loop(
                run.instruction,
                lambda _text, context: guarded(self._plan, run, catalog, context),
                lambda step, action_set: guarded(self._run_skill, run, step, action_set),
                run.emit,
                run.canceled,
                self.options.max_execution_replans,
                check_plan=lambda plan: catalog.check_plan((s.action for s in plan.full_plan), plan.action_set),
            )
        except _StopError:
            code = TaskCode.CANCELED if run.canceled() else failure[0].code
            message = "canceled" if run.canceled() else str(failure[0])
            stage = Stage.CANCELED if run.canceled() else Stage.FAILED
            run.emit(StepReport(stage, 0, 0, None, Status.FAILED, run.replans, message, int(code)))
            return ExecuteTask.Result(error_code=int(code), error_msg=message)
        return ExecuteTask.Result(
            success=outcome.success,
            error_code=int(outcome.code),
            error_msg=outcome.message,
            executed=steps_to_msgs(outcome.executed),
            replans=outcome.replans,
        )

    def _diagnostics(self) -> list[DiagnosticStatus]:
        run = self._run
        servers = {
            "plan_task": self._plan_client.server_is_ready(),
            "execute_skill": self._skill_client.server_is_ready(),
            "apply_graph_update": self._update_client.service_is_ready(),
            "describe_skills": self._describe_client.service_is_ready(),
        }
        rivals = [
            problem for name in ("apply_graph_update", "describe_skills") if (problem := rival_servers(self, name))
        ]
        rivals += [problem for name in ("plan_task", "execute_skill") if (problem := rival_action_servers(self, name))]
        missing = [name for name, up in servers.items() if not up]
        return [executor_status(run.instruction if run else "", missing, rivals)]

    def destroy_node(self) -> None:
        self._server.destroy()
        self._plan_client.destroy()
        self._skill_client.destroy()
        super().destroy_node()


class _StopError(Exception):
    """Unwinds the closed loop when a wait failed (the failure itself is kept aside)."""


def main(args: list[str] | None = None) -> None:
    run_nodes("executor", lambda: [ExecutorNode()], args)
