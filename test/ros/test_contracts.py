"""The contracts between nodes: typed outcomes mirrored exactly, and plans refused before the robot moves
when they are written in words the robot does not speak."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.outcomes import PlanCode, PlanStage, SkillCode, Stage, Status, TaskCode
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask
from sayplan_interfaces.msg import ExecutionEvent, PlanOutcome, PlanProgress, PlanStep, SkillOutcome
from sayplan_interfaces.srv import DescribeSkills
from sayplan_ros.stack import ROBOTS, create_nodes, load_class

pytestmark = pytest.mark.ros


def constants(msg_class: type, prefix: str = "") -> dict[str, Any]:
    """The named constants of a generated message class (rosidl keeps them in its metaclass)."""
    meta = type(msg_class)
    found: dict[str, Any] = getattr(meta, f"_{meta.__name__}__constants")
    return {k[len(prefix) :]: v for k, v in found.items() if k.startswith(prefix)}


@pytest.mark.parametrize(
    ("enum", "msg_class", "prefix"),
    [
        (SkillCode, SkillOutcome, ""),
        (PlanCode, PlanOutcome, ""),
        (TaskCode, ExecuteTask.Result, ""),
        (Stage, ExecutionEvent, "STAGE_"),
        (Status, ExecutionEvent, "STATUS_"),
        (PlanStage, PlanProgress, "STAGE_"),
    ],
)
def test_core_enums_mirror_the_interface_constants(enum: type[Enum], msg_class: type, prefix: str) -> None:
    assert {m.name: m.value for m in enum} == constants(msg_class, prefix)


def test_every_skill_code_has_one_spelling() -> None:
    labels = [c.label for c in SkillCode]
    assert len(set(labels)) == len(labels) and "canceled" in labels and "cancelled" not in labels


def send(ros: Any, client: ActionClient, goal: Any, timeout: float = 60.0) -> Any:
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(goal)
    ros.wait_for(future.done, what="goal acceptance")
    handle = future.result()
    assert handle.accepted
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=timeout, what="result")
    return result.result()


def until_canceled(ros: Any, name: str, result: Any) -> Any:
    """A skill server whose every skill runs until it is canceled, then ends with `result(step)` (a SkillResult)."""
    from sayplan_core.execution.skills import SkillCatalog
    from sayplan_core.sim.action_set import load_action_set
    from sayplan_ros.skill_server import SkillServer

    class UntilCanceled(SkillServer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(name, **kwargs)
            self.serve(SkillCatalog.of("sim", [load_action_set("sayplan")]))

        async def run_skill(self, step: Any, context: Any) -> Any:
            while not context.cancel_requested():
                await context.sleep(0.01)
            return result(step)

    return UntilCanceled(context=ros.context)


def sim_stack(ros: Any, overrides: dict[str, list[Parameter]], replace: dict[str, Callable[[], Any]]) -> list[Any]:
    """The sim stack on the test's domain, with the nodes named in `replace` made by their factories instead."""
    nodes = create_nodes(ros.context, "sim", overrides)
    for name, make in replace.items():
        old = next(n for n in nodes if n.get_name() == name)
        nodes.remove(old)
        old.destroy_node()
        nodes.append(make())
    for node in nodes:
        ros.add(node)
    return nodes


def test_a_skill_server_refuses_another_action_set_before_the_robot_moves(ros: Any) -> None:
    skills = ros.add(load_class(ROBOTS["sim"])(context=ros.context))
    describe = ros.call(ros.node("probe").create_client(DescribeSkills, "describe_skills"), DescribeSkills.Request())
    assert describe.robot == "sim" and describe.default_action_set == "sayplan"
    assert {s.name for s in describe.action_sets} == {"sayplan"}
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    before = skills.world.state.location
    wrapped = send(
        ros, client, ExecuteSkill.Goal(step=PlanStep(action="go_to", target="kitchen"), action_set="lookplangraph")
    )
    assert wrapped.status == GoalStatus.STATUS_ABORTED
    assert wrapped.result.outcome.error_code == SkillCode.WRONG_ACTION_SET
    assert "not 'lookplangraph'" in wrapped.result.outcome.error_msg
    wrapped = send(ros, client, ExecuteSkill.Goal(step=PlanStep(action="fly", target="kitchen")))
    assert wrapped.result.outcome.error_code == SkillCode.UNKNOWN_SKILL
    assert skills.world.state.location == before  # nothing moved


def test_an_accepted_cancel_ends_canceled_even_when_the_skill_finishes_anyway(ros: Any) -> None:
    """docs/concepts/contracts.md: "An accepted cancel always ends as CANCELED". A robot whose skill runs to the end
    after the cancel was accepted reports CANCELED, and its result still carries what the skill changed."""
    from sayplan_core.execution.skills import SkillResult
    from sayplan_core.graph.updates import GraphUpdate

    def done(step: Any) -> SkillResult:  # a backend whose skill cannot be stopped: it succeeds after the cancel
        return SkillResult(True, SkillCode.NONE, f"{step} done", GraphUpdate(remove=["coffee_mug"]))

    ros.add(until_canceled(ros, "finishes_anyway", done))
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    future = client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen")))
    ros.wait_for(future.done, what="acceptance")
    handle = future.result()
    cancel = handle.cancel_goal_async()
    ros.wait_for(cancel.done, what="cancel response")
    result = handle.get_result_async()
    ros.wait_for(result.done, what="result")
    wrapped = result.result()
    assert wrapped.status == GoalStatus.STATUS_CANCELED
    assert (
        wrapped.result.outcome.error_code == SkillCode.CANCELED and "had finished" in wrapped.result.outcome.error_msg
    )
    assert list(wrapped.result.outcome.graph_update.remove) == ["coffee_mug"]


def test_a_plan_the_robot_cannot_run_is_refused_before_the_first_step(ros: Any, tmp_path: Path) -> None:
    """The simulated robot lacks turn_on: the verified plan needs it, so the task ends before moving."""
    t = write_transcript(tmp_path / "t.json", say("expand", "kitchen"), say("plan", plan=GOOD_PLAN))
    skills_without_turn_on = "goto,access,pickup,release,open,close,turn_off,done"
    nodes = create_nodes(
        ros.context,
        "sim",
        {
            "planner": [Parameter("replay_transcript", value=str(t))],
            "sim_skill_server": [
                Parameter("skills", value=skills_without_turn_on),
                Parameter("skill_delay_s", value=0.0),
            ],
        },
    )
    for node in nodes:
        ros.add(node)
    sim = next(n for n in nodes if n.get_name() == "sim_skill_server")
    before = sim.world.state.location
    wrapped = send(
        ros, ActionClient(ros.node("operator"), ExecuteTask, "execute_task"), ExecuteTask.Goal(instruction=INSTRUCTION)
    )
    assert wrapped.status == GoalStatus.STATUS_ABORTED
    assert wrapped.result.error_code == TaskCode.ACTION_SET_MISMATCH, wrapped.result.error_msg
    assert "no skill 'turn_on'" in wrapped.result.error_msg and not wrapped.result.executed
    assert sim.world.state.location == before


def test_every_step_follows_the_graph_version_the_task_has_seen(ros: Any, tmp_path: Path) -> None:
    """The executor names, with each skill goal, the version its last applied update produced (the plan's graph
    for the first step), so a skill server whose copy lags waits instead of judging the step on the old graph.
    Oracle: with nothing else writing to the graph, that is the server's version when the skill starts."""
    from sayplan_core.execution.skills import SkillResult
    from sayplan_ros.planner_node import PlannerNode
    from sayplan_ros.scene_graph_server import SceneGraphServer
    from sayplan_ros.sim_skill_server import SimSkillServer
    from sayplan_ros.skill_server import SkillContext

    seen: list[tuple[str, int, int]] = []
    planned: list[tuple[int, int]] = []

    class Watched(SimSkillServer):
        async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
            seen.append((str(step), context.graph_version, graph.version))
            return await super().run_skill(step, context)

    class WatchedPlanner(PlannerNode):
        def _plan(self, handle: Any, planner_name: str) -> Any:
            planned.append((int(handle.request.graph_version), graph.version))
            return super()._plan(handle, planner_name)

    back = [(a, b) for a, b in reversed(GOOD_PLAN[:-1]) if a == "goto"] + [("done", "")]  # a second task
    t = write_transcript(
        tmp_path / "t.json",
        say("expand", "kitchen"),
        say("plan", plan=GOOD_PLAN),
        say("expand", "kitchen"),
        say("plan", plan=back),
    )
    nodes = sim_stack(ros, {}, {
        "sim_skill_server": lambda: Watched(context=ros.context, parameter_overrides=[Parameter("skill_delay_s", value=0.0)]),
        "planner": lambda: WatchedPlanner(context=ros.context, parameter_overrides=[Parameter("replay_transcript", value=str(t))]),
    })  # fmt: skip
    graph = next(n for n in nodes if isinstance(n, SceneGraphServer))
    tasks = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    wrapped = send(ros, tasks, ExecuteTask.Goal(instruction=INSTRUCTION))
    assert wrapped.status == GoalStatus.STATUS_SUCCEEDED, wrapped.result.error_msg
    assert len(seen) >= len(GOOD_PLAN) - 1  # every step but `done`, each goto split into its hops
    assert all(follows == version > 0 for _, follows, version in seen), seen
    assert [v for _, v, _ in seen] == sorted(v for _, v, _ in seen) and seen[-1][1] > seen[0][1]
    after_first = graph.version
    wrapped = send(ros, tasks, ExecuteTask.Goal(instruction="go back"))
    assert wrapped.status == GoalStatus.STATUS_SUCCEEDED, wrapped.result.error_msg
    # the first plan follows the version the executor asked the server for before the task (it names the server's
    # start, GetSceneGraph.version_only); the second follows the last update of the first (the executor remembers)
    assert planned == [(1, 1), (after_first, after_first)], planned


def test_a_skill_that_times_out_still_reports_what_it_did(ros: Any, tmp_path: Path) -> None:
    """skill_timeout_s passes: the executor cancels the skill, and the update its canceled result carries (the
    robot picked the mug before it was stopped) is applied before the task ends TIMEOUT (found by review: lost)."""
    from sayplan_core.execution.skills import SkillResult
    from sayplan_core.graph.model import Node
    from sayplan_core.graph.updates import GraphUpdate, NodeUpsert
    from sayplan_ros.scene_graph_server import SceneGraphServer

    def in_hand(step: Any) -> SkillResult:  # the robot had the mug in hand when it was stopped
        mug = NodeUpsert(Node("coffee_mug", "object", name="coffee mug"), "agent", "inside_hand")
        return SkillResult(False, SkillCode.CANCELED, f"{step} canceled", GraphUpdate(upsert=[mug]))

    t = write_transcript(tmp_path / "t.json", say("expand", "kitchen"), say("plan", plan=GOOD_PLAN))
    overrides = {
        "planner": [Parameter("replay_transcript", value=str(t))],
        "executor": [Parameter("skill_timeout_s", value=0.5)],
    }
    nodes = sim_stack(ros, overrides, {"sim_skill_server": lambda: until_canceled(ros, "sim_skill_server", in_hand)})
    graph = next(n for n in nodes if isinstance(n, SceneGraphServer))
    wrapped = send(
        ros, ActionClient(ros.node("operator"), ExecuteTask, "execute_task"), ExecuteTask.Goal(instruction=INSTRUCTION)
    )
    assert wrapped.status == GoalStatus.STATUS_ABORTED and wrapped.result.error_code == TaskCode.TIMEOUT
    assert graph.graph.parent("coffee_mug") == "agent"


def test_a_planner_asked_for_words_it_cannot_write_says_so(ros: Any, tmp_path: Path) -> None:
    """lookplangraph writes go_to/pick_up plans; a robot speaking sayplan gets a typed refusal, not a plan."""
    t = write_transcript(tmp_path / "t.json")
    nodes = create_nodes(
        ros.context,
        "sim",
        {"planner": [Parameter("replay_transcript", value=str(t)), Parameter("planner", value="lookplangraph")]},
    )
    for node in nodes:
        ros.add(node)
    wrapped = send(
        ros, ActionClient(ros.node("operator"), ExecuteTask, "execute_task"), ExecuteTask.Goal(instruction=INSTRUCTION)
    )
    assert wrapped.result.error_code == TaskCode.PLANNING_FAILED
    assert "writes plans in the action set(s) lookplangraph, not 'sayplan'" in wrapped.result.error_msg
