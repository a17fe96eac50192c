"""A launch_testing test (run by `launch_test`, see test/ros/test_launch.py): sayplan.launch.py robot:=sim starts
every node of the stack as its own process, and an execute_task goal sent over DDS runs to success, with the LLM
answered from a replayed transcript and a grasp failure injected (so the run replans)."""

from __future__ import annotations

import tempfile
import time
import unittest
import uuid
from pathlib import Path

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import rclpy
import yaml
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.action import ActionClient

from sayplan_core.outcomes import TaskCode
from sayplan_interfaces.action import ExecuteTask
from sayplan_ros.stack import stack_specs

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = f"launch_test_{uuid.uuid4().hex[:8]}"
INSTRUCTION = "Make Niko a coffee and place the mug on his desk."


def generate_test_description() -> tuple[LaunchDescription, dict[str, object]]:
    folder = Path(tempfile.mkdtemp(prefix="sayplan_launch_test_"))
    params = folder / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {
                "planner": {
                    "ros__parameters": {
                        "replay_transcript": str(ROOT / "src/sayplan_ros/transcripts/demo_office_lh05.json"),
                        "record_transcript": str(folder / "llm"),
                    }
                },
                "sim_skill_server": {
                    "ros__parameters": {"failures": "pickup:coffee_mug:grasp_failed", "skill_delay_s": 0.02}
                },
            }
        )
    )
    stack = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(ROOT / "launch" / "sayplan.launch.py")),
        launch_arguments={
            "robot": "sim",
            "params_file": str(params),
            "namespace": NAMESPACE,
            "log_level": "warn",
        }.items(),
    )
    return LaunchDescription([stack, launch_testing.actions.ReadyToTest()]), {"folder": folder}


class TestTheLaunchedStack(unittest.TestCase):
    def test_every_node_of_the_stack_runs_as_its_own_process(
        self, proc_info: launch_testing.ActiveProcInfoHandler
    ) -> None:
        expected = {spec.executable for spec in stack_specs("sim")}
        deadline = time.monotonic() + 30.0
        while len(proc_info.process_names()) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.1)
        started = {name.rsplit("-", 1)[0] for name in proc_info.process_names()}
        self.assertEqual(started, expected)

    def test_execute_task_runs_to_success(self, folder: Path) -> None:
        context = rclpy.Context()
        rclpy.init(context=context)
        node = rclpy.create_node("launch_test_operator", namespace=NAMESPACE, context=context)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            client = ActionClient(node, ExecuteTask, "execute_task")
            self.assertTrue(client.wait_for_server(timeout_sec=60.0), "execute_task never appeared")
            goal = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION))
            executor.spin_until_future_complete(goal, timeout_sec=30.0)
            self.assertTrue(goal.done() and goal.result().accepted)
            result = goal.result().get_result_async()
            deadline = time.monotonic() + 120.0
            while not result.done() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.5)
            self.assertTrue(result.done(), "no result within 120 s")
            answer = result.result().result
            self.assertTrue(answer.success, answer.error_msg)
            self.assertEqual(answer.error_code, TaskCode.NONE)
            self.assertEqual(answer.replans, 1)
            self.assertEqual(answer.executed[-1].action, "done")
            self.assertEqual(
                sorted(p.name for p in (folder / "llm").iterdir()), ["plan_task_001.json", "plan_task_002.json"]
            )
        finally:
            node.destroy_node()
            context.try_shutdown()


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_every_process_exits_cleanly(self, proc_info: launch_testing.ProcInfoHandler) -> None:
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
