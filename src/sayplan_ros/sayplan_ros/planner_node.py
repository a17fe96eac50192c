"""planner: the `plan_task` action server over the sayplan_core planners.

Plans on the latest latched `scene_graph`. One goal at a time: a goal that arrives
while another runs is rejected (the caller retries or cancels the running one).
The LLM backend is built on the first goal, so the node starts even when the LLM
is unreachable; such a goal is aborted with the backend's message.
"""

from __future__ import annotations

import threading
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from sayplan_core.llm.replay import RecordingBackend
from sayplan_core.llm.selection import BACKENDS, LlmConfig, make_backend
from sayplan_core.llm.session import Budget
from sayplan_core.llm.types import LlmBackend, LlmError
from sayplan_core.planners import PLANNERS, PlannerOptions, Progress, make_planner
from sayplan_interfaces.action import PlanTask
from sayplan_interfaces.msg import LlmCallStats, PlanReport
from sayplan_ros.conversions import steps_to_msgs
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.qos import EVENTS_QOS
from sayplan_ros.runner import run_nodes

PARAMETERS: dict[str, tuple[Any, str]] = {
    "planner": ("sayplan", f"default planner: {', '.join(PLANNERS)}"),
    "llm": ("auto", f"LLM backend: {', '.join(BACKENDS)}"),
    "model": ("", "model name (empty = the backend's default)"),
    "base_url": ("", "OpenAI-compatible or Ollama server URL (empty = default)"),
    "api_key_env": ("OPENAI_API_KEY", "environment variable holding the API key (never logged)"),
    "temperature": (0.0, "sampling temperature, 0..2"),
    "timeout_s": (60.0, "seconds per LLM call"),
    "retries": (4, "retries of a failed LLM call, with bounded backoff"),
    "max_replans": (5, "replanning rounds (SayPlan: 5)"),
    "max_calls": (40, "LLM calls per goal"),
    "max_tokens": (250000, "LLM tokens per goal"),
    "max_answer_tokens": (1024, "completion tokens per LLM answer"),
    "replay_transcript": ("", "answer from this recorded transcript instead of an LLM (tests, demos)"),
    "record_transcript": ("", "save every LLM exchange of this node to this JSON file (updated after each goal)"),
    "embedder": ("local", "embodiedrag/abstract embeddings: local (MiniLM, offline), openai:<model>, ollama:<model>"),
    "retrieval_top_k": (3, "embodiedrag: entities retrieved per query"),
    "retrieval_threshold": (0.45, "embodiedrag: minimum cosine similarity of a retrieved entity, -1..1"),
    "vector_store": ("faiss", "embodiedrag: faiss or numpy (both exact)"),
    "candidate_plans": (3, "abstract: candidate plans asked of the LLM"),
    "step_threshold": (0.5, "abstract: steps less relevant to the command than this are dropped (Kwon et al.)"),
    "graph_wait_s": (5.0, "how long a goal waits for the first scene graph (just after start-up) before aborting"),
}


class PlannerNode(Node):
    def __init__(self, node_name: str = "planner", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        for name, (default, description) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=description))
        self._planner_name = str(self.get_parameter("planner").value)
        if self._planner_name not in PLANNERS:
            raise ValueError(f"parameter 'planner' must be one of {', '.join(PLANNERS)}, got '{self._planner_name}'")
        self._llm_config = self._read_llm_config()
        self._llm_config.validate()
        self._options = self._read_options()
        self._backend: LlmBackend | None = None
        self._recorder: RecordingBackend | None = None
        self._lock = threading.Lock()
        self._busy = False
        self._reports = self.create_publisher(PlanReport, "plan_results", EVENTS_QOS)
        group = ReentrantCallbackGroup()
        self._follower = GraphFollower(self, group)
        self._server = ActionServer(
            self,
            PlanTask,
            "plan_task",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=group,
        )

    def _read_llm_config(self) -> LlmConfig:
        replay = str(self.get_parameter("replay_transcript").value)
        return LlmConfig(
            backend="replay" if replay else str(self.get_parameter("llm").value),
            model=str(self.get_parameter("model").value),
            base_url=str(self.get_parameter("base_url").value),
            api_key_env=str(self.get_parameter("api_key_env").value),
            temperature=float(self.get_parameter("temperature").value),
            timeout_s=float(self.get_parameter("timeout_s").value),
            retries=int(self.get_parameter("retries").value),
            replay_path=replay,
        )

    def _read_options(self) -> PlannerOptions:
        ints = {
            k: int(self.get_parameter(k).value) for k in ("max_replans", "max_calls", "max_tokens", "max_answer_tokens")
        }
        if ints["max_replans"] < 0 or ints["max_calls"] < 1 or ints["max_tokens"] < 1 or ints["max_answer_tokens"] < 16:
            raise ValueError(f"planner limits out of range: {ints}")
        budget = Budget(
            max_calls=ints["max_calls"], max_tokens=ints["max_tokens"], max_transient_retries=self._llm_config.retries
        )
        options = PlannerOptions(
            max_replans=ints["max_replans"],
            budget=budget,
            temperature=self._llm_config.temperature,
            max_answer_tokens=ints["max_answer_tokens"],
            embedder=str(self.get_parameter("embedder").value),
            retrieval_top_k=int(self.get_parameter("retrieval_top_k").value),
            retrieval_threshold=float(self.get_parameter("retrieval_threshold").value),
            vector_store=str(self.get_parameter("vector_store").value),
            candidate_plans=int(self.get_parameter("candidate_plans").value),
            step_threshold=float(self.get_parameter("step_threshold").value),
        )
        options.validate()
        return options

    @property
    def graph_version(self) -> int:
        """Version of the scene graph this planner would plan on (0 before the first one arrives)."""
        return self._follower.latest()[1]

    def _on_goal(self, goal: PlanTask.Goal) -> GoalResponse:
        with self._lock:
            if self._busy:
                self.get_logger().warning("rejecting plan_task goal: another goal is running")
                return GoalResponse.REJECT
            if not goal.instruction.strip() or (goal.planner and goal.planner not in PLANNERS):
                self.get_logger().warning(
                    f"rejecting plan_task goal: empty instruction or unknown planner '{goal.planner}'"
                )
                return GoalResponse.REJECT
            self._busy = True
        return GoalResponse.ACCEPT

    def _get_backend(self) -> LlmBackend:
        if self._backend is None:
            backend, note = make_backend(self._llm_config)
            record = str(self.get_parameter("record_transcript").value)
            self._recorder = RecordingBackend(backend) if record else None
            self._backend = self._recorder or backend
            self.get_logger().info(note)
        return self._backend

    def _execute(self, goal_handle: ServerGoalHandle) -> PlanTask.Result:
        try:
            return self._plan(goal_handle)
        finally:
            with self._lock:
                self._busy = False

    def _plan(self, goal_handle: ServerGoalHandle) -> PlanTask.Result:
        goal: PlanTask.Goal = goal_handle.request
        result = PlanTask.Result()
        self._follower.wait(float(self.get_parameter("graph_wait_s").value))
        graph, version = self._follower.latest()
        if graph is None:
            result.message = "no scene graph received yet on 'scene_graph'"
            goal_handle.abort()
            return result
        try:
            backend = self._get_backend()
        except LlmError as exc:
            result.message = f"LLM backend unavailable: {exc}"
            self.get_logger().error(result.message)
            goal_handle.abort()
            return result
        planner = make_planner(goal.planner or self._planner_name, backend, self._options)
        self.get_logger().info(f"planning '{goal.instruction}' with {planner.name} on graph version {version}")

        def feedback(p: Progress) -> None:
            msg = PlanTask.Feedback(
                stage=p.stage,
                node=p.node,
                step=p.step,
                replanning_round=p.replanning_round,
                tokens_used=p.tokens_used,
                message=p.message,
            )
            goal_handle.publish_feedback(msg)

        outcome = planner.plan(
            graph,
            goal.instruction,
            on_progress=feedback,
            should_cancel=lambda: bool(goal_handle.is_cancel_requested),
            context=goal.context,
        )
        result.success, result.message, result.verified = outcome.success, outcome.message, outcome.verified
        result.plan, result.full_plan = steps_to_msgs(outcome.plan), steps_to_msgs(outcome.full_plan)
        result.replanning_rounds = outcome.replanning_rounds
        result.feedback_history, result.explored_nodes = outcome.feedback_history, outcome.explored_nodes
        result.llm_calls = [
            LlmCallStats(
                stage=c.stage,
                model=c.model,
                prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens,
                latency_s=c.latency_s,
            )
            for c in outcome.calls
        ]
        if self._recorder is not None:
            self._recorder.save(str(self.get_parameter("record_transcript").value))
        report = PlanReport(instruction=goal.instruction, planner=planner.name)
        report.header.stamp = self.get_clock().now().to_msg()
        for key in ("success", "message", "plan", "full_plan", "replanning_rounds", "feedback_history"):
            setattr(report, key, getattr(result, key))
        report.explored_nodes, report.llm_calls = result.explored_nodes, result.llm_calls
        self._reports.publish(report)
        if outcome.cancelled:
            goal_handle.canceled()
        elif outcome.success:
            goal_handle.succeed()
        else:
            self.get_logger().warning(f"plan_task failed: {outcome.message}")
            goal_handle.abort()
        return result

    def destroy_node(self) -> None:
        self._server.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_nodes("planner", lambda: [PlannerNode()], args)
