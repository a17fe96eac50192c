"""sim_skill_server: the `execute_skill` action for robot `sim`, against a simulated ground-truth world.

The truth is the environment plus `world_changes` (YAML), so it can differ from the
robot's graph; `failures` inject skill failures. Each skill takes `skill_delay_s`,
waited on with a timer (not a sleep) so the executor stays free and cancel works.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import yaml
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

from sayplan_core.envs import load_env
from sayplan_core.execution.sim_world import InjectedFailure, SimulatedWorld, apply_world_changes
from sayplan_core.graph.model import GraphError
from sayplan_interfaces.action import ExecuteSkill
from sayplan_ros.conversions import update_to_msg
from sayplan_ros.runner import run_nodes


def parse_failure(text: str) -> InjectedFailure:
    """`skill:target:code[:times]`, e.g. `pickup:coffee_mug:grasp_failed:1`."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts[:3]):
        raise ValueError(f"failure '{text}' must be skill:target:code[:times]")
    times = int(parts[3]) if len(parts) == 4 else 1
    return InjectedFailure(parts[0], parts[1], parts[2], times)


class SimSkillServer(Node):
    def __init__(self, node_name: str = "sim_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        describe = {
            "env": ("office", "environment the simulated world starts from (office, home or a graph file)"),
            "world_changes_file": ("", "YAML list of changes that make the truth differ from the robot's graph"),
            "failures": ("", "injected failures, comma-separated skill:target:code[:times]"),
            "skill_delay_s": (0.2, "simulated duration of every skill, seconds"),
            "action_set": ("sayplan", "action set the skills follow"),
        }
        for name, (default, text) in describe.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=text))
        truth = load_env(str(self.get_parameter("env").value))
        changes_file = str(self.get_parameter("world_changes_file").value)
        if changes_file:
            try:
                changes = yaml.safe_load(Path(changes_file).read_text(encoding="utf-8")) or []
            except (OSError, yaml.YAMLError) as exc:
                raise ValueError(f"cannot read world_changes_file {changes_file}: {exc}") from exc
            if not isinstance(changes, list):
                raise ValueError(f"world_changes_file {changes_file} must hold a list of changes")
            truth = apply_world_changes(truth, changes)
        failures = [parse_failure(f.strip()) for f in str(self.get_parameter("failures").value).split(",") if f.strip()]
        self._delay = float(self.get_parameter("skill_delay_s").value)
        if self._delay < 0:
            raise ValueError(f"skill_delay_s must be >= 0, got {self._delay}")
        self.world = SimulatedWorld(truth, str(self.get_parameter("action_set").value), failures)
        self._lock = threading.Lock()
        self._group = ReentrantCallbackGroup()
        self._server = ActionServer(
            self,
            ExecuteSkill,
            "execute_skill",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=self._group,
        )
        note = f", {len(failures)} injected failure(s)" if failures else ""
        self.get_logger().info(f"simulated world from '{self.get_parameter('env').value}'{note}")

    def _wait(self, seconds: float) -> Future:
        """A future done after `seconds`, driven by a one-shot timer."""
        future = Future()
        timer = None

        def fire() -> None:
            if timer is not None:
                timer.cancel()
            future.set_result(True)

        timer = self.create_timer(max(seconds, 0.001), fire, callback_group=self._group)
        return future

    async def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteSkill.Result:
        goal: ExecuteSkill.Goal = goal_handle.request
        result = ExecuteSkill.Result()
        steps = 4
        for index in range(steps):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.failure_code, result.message = "canceled", f"{goal.skill}({goal.target}) canceled"
                return result
            goal_handle.publish_feedback(ExecuteSkill.Feedback(status="running", progress=index / steps))
            await self._wait(self._delay / steps)
        with self._lock:
            try:
                outcome = self.world.execute(goal.skill, goal.target)
            except GraphError as exc:
                result.failure_code, result.message = "error", str(exc)
                goal_handle.abort()
                return result
        result.success, result.failure_code, result.message = outcome.success, outcome.failure_code, outcome.message
        result.graph_update = update_to_msg(outcome.update)
        if outcome.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def destroy_node(self) -> None:
        self._server.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_nodes("sim_skill_server", lambda: [SimSkillServer()], args)
