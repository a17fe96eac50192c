"""The signals the action servers' waits are woken by (sayplan_ros.goals): a stop event that calls back, and a
wakeup a plain thread sets to end a coroutine's wait on the executor, with nothing left behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sayplan_ros.goals import StopEvent, Wakeup

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: bounds waits in seconds
#: A transcript the planner's activation probe accepts (no call of it is made here).
TRANSCRIPT = Path(__file__).resolve().parents[2] / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"


def test_a_stop_event_calls_back_once_when_set_and_at_once_when_already_set() -> None:
    stop = StopEvent()
    calls: list[str] = []
    stop.on_set(lambda: calls.append("first"))
    forget = stop.on_set(lambda: calls.append("forgotten"))
    forget()
    assert calls == [] and not stop.is_set()
    setter = threading.Thread(target=stop.set)
    setter.start()
    assert stop.wait(5.0)  # still a threading.Event for the threads that wait on it
    setter.join()
    assert calls == ["first"]
    stop.set()  # a second set calls nobody again
    assert calls == ["first"]
    stop.on_set(lambda: calls.append("late"))
    assert calls == ["first", "late"]


def _await(ros: Any, node: Any, timeout_s: float, set_after_s: float | None) -> float:
    """Run one Wakeup.wait(timeout_s) as a coroutine on the executor, set from a plain thread after
    `set_after_s` (None: never); returns how long the wait took."""
    waited: list[float] = []
    wakeup = Wakeup(node)

    async def wait() -> None:
        started = time.monotonic()
        await wakeup.wait(timeout_s)
        waited.append(time.monotonic() - started)

    task = ros.executor.create_task(wait)
    if set_after_s is not None:
        threading.Timer(set_after_s, wakeup.set).start()
    ros.wait_for(task.done, timeout=30.0, what="the wait to end")
    return waited[0]


def test_a_wakeup_set_from_a_plain_thread_ends_the_wait_long_before_its_timeout(ros: Any) -> None:
    node = ros.node("waiter")
    guards, timers = len(list(node.guards)), len(list(node.timers))
    waited = _await(ros, node, timeout_s=20.0, set_after_s=0.3)
    assert 0.25 <= waited < 5.0, waited  # not before the set, and nowhere near the 20 s timeout
    assert len(list(node.guards)) == guards and len(list(node.timers)) == timers  # nothing left behind


def test_a_wakeup_nobody_sets_ends_at_its_timeout(ros: Any) -> None:
    node = ros.node("waiter")
    guards, timers = len(list(node.guards)), len(list(node.timers))
    waited = _await(ros, node, timeout_s=0.5, set_after_s=None)
    assert 0.45 <= waited < 5.0, waited
    assert len(list(node.guards)) == guards and len(list(node.timers)) == timers


def test_a_cancel_ends_a_plan_goal_waiting_for_a_graph_version_at_once(ros: Any) -> None:
    """The planner's goal thread waits for a version its copy does not hold yet; rclpy marking the goal CANCELING
    (read on the action's own status topic) wakes it: CANCELED long before graph_wait_s, and no LLM call made."""
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    from rclpy.parameter import Parameter

    from sayplan_core.outcomes import PlanCode
    from sayplan_interfaces.action import PlanTask
    from sayplan_ros.planner_node import PlannerNode
    from sayplan_ros.scene_graph_server import SceneGraphServer

    server = ros.add(SceneGraphServer(context=ros.context))
    params = [Parameter("replay_transcript", value=str(TRANSCRIPT)), Parameter("graph_wait_s", value=60.0)]
    planner = ros.add(PlannerNode(context=ros.context, parameter_overrides=params))
    ros.wait_for(lambda: planner.graph_version == server.version, what="the planner's copy of the graph")
    client = ActionClient(ros.node("operator"), PlanTask, "plan_task")
    assert client.wait_for_server(timeout_sec=10.0)
    goal = PlanTask.Goal(instruction="make coffee", graph_version=server.version + 5)
    sent = client.send_goal_async(goal)
    ros.wait_for(sent.done, what="acceptance")
    handle = sent.result()
    result = handle.get_result_async()
    time.sleep(0.5)  # well into the wait
    assert not result.done()
    started = time.monotonic()
    ros.wait_for(handle.cancel_goal_async().done, what="cancel response")
    ros.wait_for(result.done, timeout=5.0, what="the canceled goal's result")  # graph_wait_s is 60 s
    waited = time.monotonic() - started
    wrapped = result.result()
    assert wrapped.status == GoalStatus.STATUS_CANCELED, wrapped.result.outcome.error_msg
    assert wrapped.result.outcome.error_code == PlanCode.CANCELED
    assert waited < 5.0
    assert wrapped.result.outcome.llm_calls == []  # nothing was planned
