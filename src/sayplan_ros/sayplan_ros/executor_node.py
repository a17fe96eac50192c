"""executor: the `execute_task` action, closing the loop between planner, skills and scene graph.

The loop itself is sayplan_core.execution.closed_loop; this node only wires it to
ROS: planning is a `plan_task` goal, each step an `execute_skill` goal, and every
skill's graph update goes to `apply_graph_update` so a replan starts from the
current state. The active plan is published latched on `active_plan` (RViz path).
One task at a time: goals that arrive while one runs are rejected.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.execution.closed_loop import PlanOutcome, SkillResult, StepReport, run_closed_loop
from sayplan_core.sim.plan import PlanStep
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask, PlanTask
from sayplan_interfaces.msg import ExecutionEvent, Plan, SkillReport
from sayplan_interfaces.msg import PlanStep as PlanStepMsg
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.conversions import steps_from_msgs, steps_to_msgs
from sayplan_ros.qos import EVENTS_QOS, LATCHED_STATE_QOS
from sayplan_ros.runner import run_nodes


class StepTimeoutError(RuntimeError):
    pass


class ExecutorNode(Node):
    def __init__(self, node_name: str = "executor", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        params = {
            "max_replans": (3, "replans after skill failures before the task is aborted"),
            "plan_timeout_s": (900.0, "seconds to wait for a plan_task result"),
            "skill_timeout_s": (120.0, "seconds to wait for one execute_skill result"),
            "planner": ("", "planner to ask for (empty = the planner node's default)"),
        }
        for name, (default, text) in params.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=text))
        self._max_replans = int(self.get_parameter("max_replans").value)
        self._plan_timeout = float(self.get_parameter("plan_timeout_s").value)
        self._skill_timeout = float(self.get_parameter("skill_timeout_s").value)
        self._planner = str(self.get_parameter("planner").value)
        if self._max_replans < 0 or self._plan_timeout <= 0 or self._skill_timeout <= 0:
            raise ValueError("max_replans must be >= 0 and the timeouts positive")
        group = ReentrantCallbackGroup()
        self._plan_client = ActionClient(self, PlanTask, "plan_task", callback_group=group)
        self._skill_client = ActionClient(self, ExecuteSkill, "execute_skill", callback_group=group)
        self._update_client = self.create_client(ApplyGraphUpdate, "apply_graph_update", callback_group=group)
        self._plan_pub = self.create_publisher(Plan, "active_plan", LATCHED_STATE_QOS)
        self._events = self.create_publisher(ExecutionEvent, "execution_events", EVENTS_QOS)
        self._skills = self.create_publisher(SkillReport, "skill_results", EVENTS_QOS)
        self._lock = threading.Lock()
        self._busy = False
        self._server = ActionServer(
            self,
            ExecuteTask,
            "execute_task",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=group,
        )

    # ------------------------------------------------------------------ waiting on futures
    def _wait(self, future: Future, timeout: float, cancelled: Any = None, on_cancel: Any = None) -> Any:
        """Block this callback's thread (not the executor) until the future is done."""
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        deadline = time.monotonic() + timeout
        cancel_sent = False
        while not done.wait(0.05):
            if cancelled is not None and not cancel_sent and cancelled():
                cancel_sent = True
                if on_cancel is not None:
                    on_cancel()
            if time.monotonic() > deadline:
                raise StepTimeoutError(f"no answer within {timeout:.0f} s")
        return future.result()

    def _send(
        self, client: ActionClient, name: str, goal: Any, timeout: float, cancelled: Any, on_feedback: Any = None
    ) -> Any:
        if not client.wait_for_server(timeout_sec=5.0):
            raise StepTimeoutError(f"action server '{name}' is not available")
        handle = self._wait(client.send_goal_async(goal, feedback_callback=on_feedback), 10.0)
        if not handle.accepted:
            raise StepTimeoutError(f"'{name}' rejected the goal (busy?)")
        wrapped = self._wait(handle.get_result_async(), timeout, cancelled, handle.cancel_goal_async)
        return wrapped.result

    # ------------------------------------------------------------------ the loop's three functions
    def _plan(self, instruction: str, context: str, cancelled: Any, on_progress: Any = None) -> PlanOutcome:
        goal = PlanTask.Goal(instruction=instruction, planner=self._planner, context=context)

        def forward(msg: Any) -> None:
            if on_progress is not None:
                f = msg.feedback
                where = f" {f.node}" if f.node else ""
                detail = f": {f.message}" if f.message else ""
                on_progress(f"{f.stage}{where}, round {f.replanning_round}, {f.tokens_used} tokens{detail}")

        try:
            result = self._send(self._plan_client, "plan_task", goal, self._plan_timeout, cancelled, forward)
        except StepTimeoutError as exc:
            return PlanOutcome(False, [], f"plan_task: {exc}")
        return PlanOutcome(bool(result.success), steps_from_msgs(result.full_plan), result.message)

    def _run_skill(self, step: PlanStep, cancelled: Any) -> SkillResult:
        goal = ExecuteSkill.Goal(skill=step.action, target=step.target)
        try:
            result = self._send(self._skill_client, "execute_skill", goal, self._skill_timeout, cancelled)
        except StepTimeoutError as exc:
            return SkillResult(False, "error", f"execute_skill: {exc}")
        update = result.graph_update
        report = SkillReport(
            step=PlanStepMsg(action=step.action, target=step.target),
            success=bool(result.success),
            failure_code=result.failure_code,
            message=result.message,
            graph_update=update,
        )
        report.header.stamp = self.get_clock().now().to_msg()
        self._skills.publish(report)
        if update.upsert or update.remove or update.connect or update.disconnect:
            if not self._update_client.wait_for_service(timeout_sec=5.0):
                return SkillResult(False, "error", "apply_graph_update is not available")
            answer = self._wait(self._update_client.call_async(ApplyGraphUpdate.Request(update=update)), 10.0)
            if not answer.success:
                self.get_logger().error(f"skill result could not update the scene graph: {answer.message}")
        return SkillResult(bool(result.success), result.failure_code, result.message)

    # ------------------------------------------------------------------ action server
    def _on_goal(self, goal: ExecuteTask.Goal) -> GoalResponse:
        with self._lock:
            if self._busy or not goal.instruction.strip():
                return GoalResponse.REJECT
            self._busy = True
        return GoalResponse.ACCEPT

    def _publish_plan(self, instruction: str, steps: list[PlanStepMsg], current: int) -> None:
        msg = Plan(instruction=instruction, steps=steps, current_step=current)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "map"
        self._plan_pub.publish(msg)

    def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteTask.Result:
        try:
            return self._run(goal_handle)
        finally:
            with self._lock:
                self._busy = False

    def _run(self, goal_handle: ServerGoalHandle) -> ExecuteTask.Result:
        instruction = goal_handle.request.instruction
        cancelled = lambda: bool(goal_handle.is_cancel_requested)  # noqa: E731
        current_plan: list[PlanStepMsg] = []

        def plan(text: str, context: str) -> PlanOutcome:
            stage = "replanning" if context else "planning"
            outcome = self._plan(
                text, context, cancelled, lambda status: report(StepReport(stage, 0, 0, None, status, replans[0]))
            )
            current_plan[:] = steps_to_msgs(outcome.full_plan)
            self._publish_plan(text, current_plan, 0 if outcome.success else -1)
            return outcome

        replans = [0]

        def report(r: StepReport) -> None:
            replans[0] = r.replans
            if r.stage == "executing" and r.status == "running":
                self._publish_plan(instruction, current_plan, r.step_index)
            step = steps_to_msgs([r.step])[0] if r.step is not None else PlanStepMsg()
            event = ExecutionEvent(
                instruction=instruction,
                stage=r.stage,
                step_index=r.step_index,
                step_count=r.step_count,
                step=step,
                status=r.status,
                replans=r.replans,
            )
            event.header.stamp = self.get_clock().now().to_msg()
            self._events.publish(event)
            goal_handle.publish_feedback(
                ExecuteTask.Feedback(
                    stage=r.stage,
                    step_index=r.step_index,
                    step_count=r.step_count,
                    step=step,
                    status=r.status,
                    replans=r.replans,
                )
            )

        outcome = run_closed_loop(
            instruction,
            plan,
            lambda step: self._run_skill(step, cancelled),
            report,
            cancelled,
            self._max_replans,
        )
        self._publish_plan(instruction, current_plan, -1)
        result = ExecuteTask.Result(
            success=outcome.success,
            message=outcome.message,
            executed=steps_to_msgs(outcome.executed),
            replans=outcome.replans,
        )
        if outcome.cancelled:
            goal_handle.canceled()
        elif outcome.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        self.get_logger().info(f"execute_task: {outcome.message}")
        return result

    def destroy_node(self) -> None:
        self._server.destroy()
        self._plan_client.destroy()
        self._skill_client.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_nodes("executor", lambda: [ExecutorNode()], args)
