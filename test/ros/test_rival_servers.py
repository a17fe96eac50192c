"""A peer that offers a service the executor trusts (describe_skills, apply_graph_update) beside the real server
is never listened to: the task ends SERVER_UNAVAILABLE naming both nodes, before the robot moves, and /diagnostics
says so (ERROR) while the rival is there. Found by a hostile review: a node offering describe_skills that answered
first with a latched fault failed every task ("robot has a latched fault: e-stop pressed (rogue)"), and one
offering apply_graph_update that answered first with version 10^12 made the next step wait for a version the
graph never reaches. (A task reaches apply_graph_update only after a skill, through the same guarded call as
describe_skills; here that case checks what the executor reports.) Once the rival leaves, the report clears."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from rclpy.action import ActionClient

from sayplan_core.outcomes import TaskCode
from sayplan_interfaces.action import ExecuteTask
from sayplan_interfaces.srv import ApplyGraphUpdate, DescribeSkills
from sayplan_ros.executor_node import ExecutorNode
from sayplan_ros.rivals import rival_servers
from sayplan_ros.scene_graph_server import SceneGraphServer
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = pytest.mark.ros
GUARD_S = 60.0


def run_task(ros: Any) -> Any:
    """One task sent to the executor as an operator would; its result."""
    client = ActionClient(ros.node(f"operator_{len(ros._nodes)}"), ExecuteTask, "execute_task")
    assert client.wait_for_server(timeout_sec=GUARD_S)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction="Find me a carrot."))
    ros.wait_for(sent.done, timeout=GUARD_S, what="the goal's acceptance")
    result = sent.result().get_result_async()
    ros.wait_for(result.done, timeout=GUARD_S, what="the task's result")
    return result.result().result


def rogue_describe(_request: Any, response: Any) -> Any:
    response.robot, response.fault = "sim", "e-stop pressed (rogue)"
    return response


def rogue_apply(_request: Any, response: Any) -> Any:
    response.success, response.version = True, 10**12
    return response


@pytest.mark.parametrize(
    ("service", "kind", "answer"),
    [("describe_skills", DescribeSkills, rogue_describe), ("apply_graph_update", ApplyGraphUpdate, rogue_apply)],
    ids=["describe_skills", "apply_graph_update"],
)
def test_a_rival_server_is_named_and_no_task_runs_while_it_is_there(
    ros: Any, service: str, kind: Any, answer: Any
) -> None:
    ros.add(SceneGraphServer(context=ros.context))
    ros.add(SimSkillServer(context=ros.context))
    executor = ros.add(ExecutorNode(context=ros.context))
    rogue = ros.node("helper_rogue")
    offered = rogue.create_service(kind, service, answer)
    ros.wait_for(lambda: rival_servers(executor, service) != "", timeout=GUARD_S, what="both servers discovered")
    problem = rival_servers(executor, service)
    assert "2 nodes offer" in problem and "/helper_rogue" in problem, problem
    status = executor._diagnostics()[0]
    assert status.level.name == "ERROR" and "helper_rogue" in status.message, status

    if service == "describe_skills":  # the first call of a task: refused before the planner is asked
        outcome = run_task(ros)
        assert outcome.error_code == int(TaskCode.SERVER_UNAVAILABLE), outcome.error_msg
        assert "helper_rogue" in outcome.error_msg and "latched fault" not in outcome.error_msg, outcome.error_msg

    rogue.destroy_service(offered)
    ros.wait_for(lambda: rival_servers(executor, service) == "", timeout=GUARD_S, what="the rival gone")
    assert executor._diagnostics()[0].level.name != "ERROR"


def test_plan_path_names_the_rival_that_keeps_the_graph_away(ros: Any) -> None:
    """A peer offering get_scene_graph from the start: the path planner's copy never comes, and plan_path says why
    (the rival, by name), not "no scene graph received yet"."""
    from sayplan_interfaces.srv import GetSceneGraph, PlanPath
    from sayplan_ros.path_planner_node import PathPlannerNode

    rogue = ros.node("helper_rogue")
    rogue.create_service(GetSceneGraph, "get_scene_graph", lambda _request, response: response)
    ros.add(SceneGraphServer(context=ros.context))
    planner = ros.add(PathPlannerNode(context=ros.context))
    ros.wait_for(lambda: "helper_rogue" in planner.follower.problem(), timeout=GUARD_S, what="the rival seen")
    paths = ros.node("operator").create_client(PlanPath, "plan_path")
    answer = ros.call(paths, PlanPath.Request(start="kitchen", goal="nikos_office"))
    assert not answer.success and "helper_rogue" in answer.message, answer.message


def test_a_rival_plan_task_server_is_named_and_its_plan_never_runs(ros: Any) -> None:
    """Found by a second hostile review: a node offering plan_task beside the planner answered a replan with a
    verified plan of one `done()`, and the task ended "success" with the goal not met. Action servers follow the
    same rule as the services: while two offer plan_task (or execute_skill), no goal is sent to either."""
    from rclpy.action import ActionServer

    from sayplan_interfaces.action import PlanTask

    ros.add(SceneGraphServer(context=ros.context))
    ros.add(SimSkillServer(context=ros.context))
    executor = ros.add(ExecutorNode(context=ros.context))
    answered: list[str] = []

    def plan_done(handle: Any) -> Any:
        answered.append(handle.request.instruction)
        handle.succeed()
        return PlanTask.Result()

    for name in ("planner_stand_in", "helper_rogue"):
        ActionServer(ros.node(name), PlanTask, "plan_task", plan_done)
    ros.wait_for(lambda: "helper_rogue" in executor._diagnostics()[0].message, timeout=GUARD_S, what="the rival seen")
    outcome = run_task(ros)
    assert outcome.error_code == int(TaskCode.SERVER_UNAVAILABLE), outcome.error_msg
    assert "2 nodes offer '/plan_task'" in outcome.error_msg and "helper_rogue" in outcome.error_msg, outcome.error_msg
    assert answered == []  # no goal went to either
