"""Nav2 as the navigation backend of any robot: the test-only wire types equal upstream's, and the simulated robot
(`navigation_backend: nav2`) drives every goto leg through a fake Nav2 over DDS before its world changes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "nav2_msgs", reason="nav2_msgs is not importable: build the test overlay (scripts/build_test_overlay.sh)"
)

import threading
import time

from action_msgs.msg import GoalStatus
from ament_index_python.packages import get_package_share_directory
from fakes.ros_robot import FakeNav2, Leg, _sleep
from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from transcripts import GOAL, GOOD_PLAN, INSTRUCTION, say, write_transcript

from sayplan_core.envs import load_env
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim import check_goals
from sayplan_interfaces.action import ExecuteSkill, ExecuteTask
from sayplan_interfaces.msg import PlanStep
from sayplan_ros.sim_skill_server import SimSkillServer
from sayplan_ros.stack import create_nodes

pytestmark = pytest.mark.ros
OFFICE = load_env("office")

#: RIHS01 hashes of the upstream Jazzy types. The first four are from ../shared/robot-interfaces/README.md (built
#: from navigation2 branch jazzy 1.3.x and franka_ros2 branch jazzy v3.4.0). FollowJointTrajectory's was obtained
#: here: ros-controls/control_msgs branch jazzy (5.8.0, commit f901df2662f2) built unchanged with the venv's
#: rosidl in a scratch workspace outside the repository, read from
#: install/control_msgs/share/control_msgs/action/FollowJointTrajectory.json.
UPSTREAM_HASHES = {
    ("nav2_msgs", "NavigateToPose"): "RIHS01_a56dba8a3234a1215e610180dc703ae25bbf406dded8b54887891c9732857eab",
    ("franka_msgs", "Grasp"): "RIHS01_8e8a4bb9d96564ae56fb2d47e932c65656316f5c10365958a26df3517a06bb92",
    ("franka_msgs", "Move"): "RIHS01_ff1f93537cae0ce92792433e368199606771ad62bb819d78078bfe37144d3ef1",
    ("franka_msgs", "Homing"): "RIHS01_2156a4bd902561e59e6081ba94428daf9a453f960596f8b7ca12e8281e0caeeb",
    (
        "control_msgs",
        "FollowJointTrajectory",
    ): "RIHS01_738ebcb7a2d7cfa42f9f1001cc99ce3a4383d1cfe508015d9be8485e4b1c66f6",
}


@pytest.mark.parametrize(("package", "action"), sorted(UPSTREAM_HASHES), ids=lambda v: str(v))
def test_wire_types_equal_upstream(package: str, action: str) -> None:
    """rosidl hashes every field name, type and nested type: equal hashes mean the same type on the wire."""
    description = Path(get_package_share_directory(package)) / "action" / f"{action}.json"
    hashes = json.loads(description.read_text())["type_hashes"]
    assert hashes[0]["type_name"] == f"{package}/action/{action}"
    assert hashes[0]["hash_string"] == UPSTREAM_HASHES[(package, action)]


def test_messages_are_field_checked() -> None:
    """ROS_PYTHON_CHECK_FIELDS is on for these tests: a float field refuses an int instead of sending garbage."""
    from geometry_msgs.msg import Point
    from nav2_msgs.action import NavigateToPose

    with pytest.raises(AssertionError):
        NavigateToPose.Feedback(distance_remaining=1)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):  # nested types too (geometry_msgs is imported long before these tests)
        Point(x=1)  # type: ignore[arg-type]


def start_sim(ros: Any, **params: Any) -> tuple[SimSkillServer, FakeNav2]:
    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    values: dict[str, Any] = {"navigation_backend": "nav2", "skill_delay_s": 0.0, "driver_wait_s": 2.0, **params}
    sim = ros.add(
        SimSkillServer(context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    )
    return sim, nav2


def run(
    ros: Any, skill: str, target: str, feedback: list[Any] | None = None, cancel_when: Any = None
) -> tuple[int, Any]:
    client = ActionClient(ros.node(f"operator_{len(ros._nodes)}"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(
        ExecuteSkill.Goal(step=PlanStep(action=skill, target=target)),
        feedback_callback=(lambda f: feedback.append(f.feedback)) if feedback is not None else None,
    )
    ros.wait_for(sent.done, what="goal acceptance")
    handle = sent.result()
    if cancel_when is not None:
        ros.wait_for(cancel_when, what="the leg to start")
        handle.cancel_goal_async()
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=15.0, what="execute_skill result")
    return result.result().status, result.result().result.outcome


def test_a_sim_goto_drives_the_leg_through_nav2_first(ros: Any) -> None:
    sim, nav2 = start_sim(ros)
    feedback: list[Any] = []
    status, outcome = run(ros, "goto", "pose8", feedback)
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    frame, x, y, yaw, tree = nav2.goals[0]
    position = OFFICE.nodes["pose8"].position
    assert position is not None and (frame, x, y, yaw, tree) == ("map", position[0], position[1], 0.0, "")
    assert sim.world.state.location == "pose8"
    progress = [f.progress for f in feedback if "m left" in f.status]
    assert progress and progress == sorted(progress) and math.isclose(progress[-1], 1.0)


@pytest.mark.parametrize(
    ("error_code", "code", "name"),
    [
        (208, SkillCode.UNREACHABLE, "ComputePathToPose.NO_VALID_PATH"),
        (105, SkillCode.BLOCKED, "FollowPath.FAILED_TO_MAKE_PROGRESS"),
        (703, SkillCode.BLOCKED, "Spin.COLLISION_AHEAD"),
        (202, SkillCode.ROBOT_FAULT, "ComputePathToPose.TF_ERROR"),
    ],
)
def test_a_failed_leg_leaves_the_world_unchanged(ros: Any, error_code: int, code: SkillCode, name: str) -> None:
    sim, nav2 = start_sim(ros)
    nav2.script(Leg("abort", error_code=error_code, error_msg="from the fake"))
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is code
    assert name in outcome.error_msg and "from the fake" in outcome.error_msg
    assert sim.world.state.location == "pose7"


def test_a_goto_the_world_refuses_sends_no_nav2_goal(ros: Any, tmp_path: Path) -> None:
    """The simulated truth lost pose14, the only way to chris_office: the world refuses the goto, so the base must not
    drive there first (and end up where the world says it is not)."""
    changes = tmp_path / "changes.yaml"
    changes.write_text("- {kind: remove, node: pose14}\n")
    sim, nav2 = start_sim(ros, world_changes_file=str(changes))
    status, outcome = run(ros, "goto", "chris_office")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.UNREACHABLE
    assert "no path joins them" in outcome.error_msg
    assert nav2.goals == [] and sim.world.state.location == "pose7"
    status, outcome = run(ros, "goto", "pose8")  # a goto the world allows still drives first
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert len(nav2.goals) == 1 and sim.world.state.location == "pose8"


def test_an_injected_goto_failure_sends_no_nav2_goal(ros: Any) -> None:
    sim, nav2 = start_sim(ros, failures="goto:pose8:estopped")
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.ESTOPPED
    assert nav2.goals == [] and sim.world.state.location == "pose7"


def test_each_leg_starts_with_no_known_pose(ros: Any) -> None:
    """A leg that ends before Nav2 sent any feedback (a goal pose it could not transform) must not report the pose
    an earlier leg ended at: last_pose is unknown, and the caller falls back to what its graph says."""
    from sayplan_ros.navigation.action_call import sleep
    from sayplan_ros.navigation.nav2_client import Nav2Client

    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    node = ros.node("nav2_user")
    client = Nav2Client(node, "navigate_to_pose", "map")

    def leg(x: float) -> Any:
        task = ros.executor.create_task(
            client.drive(
                (x, 0.0, 0.0), f"x={x}", 2.0, lambda s: sleep(node, s), lambda _t, _p: None, lambda: False, 100.0, 2.0
            )
        )
        ros.wait_for(task.done, what="the leg")
        return task.result()

    assert leg(35.0).ok
    assert client.last_pose is not None and math.isclose(client.last_pose[0], 35.0)
    nav2.script(Leg("abort", error_code=202, feedback=0))
    outcome = leg(40.0)
    assert outcome.code is SkillCode.ROBOT_FAULT and len(nav2.goals) == 2
    assert client.last_pose is None
    nav2.script(Leg("abort", error_code=105))  # a leg with feedback reports where it stopped
    assert leg(40.0).code is SkillCode.BLOCKED
    assert client.last_pose is not None and math.isclose(client.last_pose[0], 37.5)


def test_site_file_poses_and_frame_reach_nav2(ros: Any, tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("frame: office_map\nnodes:\n  pose8: {pose: [35.2, 0.4, 90]}\n  pose9: {target: only-a-name}\n")
    sim, nav2 = start_sim(ros, site_file=str(site), nav2_behavior_tree="/bt/slow.xml")
    status, _ = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED
    frame, x, y, yaw, tree = nav2.goals[0]
    assert (frame, x, y, tree) == ("office_map", 35.2, 0.4, "/bt/slow.xml") and math.isclose(yaw, math.pi / 2)
    status, outcome = run(ros, "goto", "pose9")  # a name Nav2 cannot drive to: refused before any goal is sent
    assert SkillCode(outcome.error_code) is SkillCode.INVALID_TARGET and "needs a map pose" in outcome.error_msg
    assert len(nav2.goals) == 1 and sim.world.state.location == "pose8"


def test_cancel_mid_navigation_cancels_the_nav2_goal(ros: Any) -> None:
    sim, nav2 = start_sim(ros)
    nav2.script(Leg("hold"))
    status, outcome = run(ros, "goto", "pose8", cancel_when=lambda: bool(nav2.goals))
    assert status == GoalStatus.STATUS_CANCELED and SkillCode(outcome.error_code) is SkillCode.CANCELED
    assert nav2.canceled == 1 and sim.world.state.location == "pose7"


@pytest.mark.serial  # alone: a 0.3 s driver wait
def test_an_inactive_or_missing_navigator_is_a_robot_fault(ros: Any) -> None:
    sim, nav2 = start_sim(ros, driver_wait_s=0.3)
    nav2.active = False
    _, outcome = run(ros, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT and "rejected" in outcome.error_msg
    assert "latched" in outcome.error_msg and sim.clear_fault_service in outcome.error_msg
    ros.destroy(nav2)
    ros.wait_for(lambda: not sim._nav.server_ready(), what="the navigator to be gone")
    _, outcome = run(ros, "goto", "pose8")  # latched: refused before anything is asked of the navigator
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and "rejected" in outcome.error_msg
    refused = ros.clear_fault(sim)  # the check looks for the navigator, and says it is missing
    assert not refused.success and "still latched: robot_fault during goto(pose8)" in refused.message
    assert "no Nav2 NavigateToPose action server on 'navigate_to_pose'" in refused.message, refused.message
    _, outcome = run(ros, "goto", "pose8")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED
    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    cleared = ros.clear_fault(sim)
    assert cleared.success and "robot_fault during goto(pose8)" in cleared.message, cleared.message
    assert "Nav2's navigator answers on 'navigate_to_pose'" in cleared.message
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    assert sim.world.state.location == "pose8" and len(nav2.goals) == 1


def test_robot_sim_navigates_through_nav2_in_the_whole_stack(ros: Any, tmp_path: Path) -> None:
    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    transcript = write_transcript(
        tmp_path / "t.json", say("expand", "kitchen"), say("expand", "nikos_office"), say("plan", plan=GOOD_PLAN)
    )
    params = {"navigation_backend": "nav2", "skill_delay_s": 0.0}
    nodes = create_nodes(
        ros.context,
        "sim",
        {
            "planner": [Parameter("replay_transcript", value=str(transcript))],
            "sim_skill_server": [Parameter(k, value=v) for k, v in params.items()],
        },
    )
    for node in nodes:
        ros.add(node)
    client = ActionClient(ros.node("operator"), ExecuteTask, "execute_task")
    assert client.wait_for_server(timeout_sec=10.0)
    sent = client.send_goal_async(ExecuteTask.Goal(instruction=INSTRUCTION))
    ros.wait_for(sent.done, what="goal acceptance")
    result_future = sent.result().get_result_async()
    ros.wait_for(result_future.done, timeout=60.0, what="execute_task result")
    result = result_future.result().result
    assert result.success, result.error_msg
    # Dijkstra picked the route; Nav2 drove each hop of it, in order, to the hop's graph position
    hops = [s.target for s in result.executed if s.action == "goto"]
    expected = [OFFICE.nodes[h].position[:2] for h in hops]  # type: ignore[index]
    assert [(x, y) for _f, x, y, _yaw, _t in nav2.goals] == expected
    graph = next(n for n in nodes if n.get_name() == "scene_graph_server").graph
    assert check_goals(graph, [GOAL]).success


# ----------------------------------------------------------------------------- deadlines, stops and node death (issue 23)
class StuckNav2(FakeNav2):
    """A navigator whose behaviour tree hangs in a tick. bt_navigator accepts every cancel of an active goal
    (nav2_util/simple_action_server.hpp, branch jazzy: handle_cancel returns ACCEPT) but only looks at it between
    tree ticks (nav2_behavior_tree bt_action_server_impl.hpp: the is_canceling check passed to BehaviorTreeEngine::run),
    so a tick that never returns never ends the goal. Here the tick returns when the test sets `release`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.release = threading.Event()
        self.cancel_seen = threading.Event()

    async def _execute(self, handle: Any) -> Any:
        goal = handle.request
        self.goals.append((goal.pose.header.frame_id, goal.pose.pose.position.x, goal.pose.pose.position.y, 0.0, ""))
        while not self.release.is_set():
            if handle.is_cancel_requested:
                self.cancel_seen.set()
            await _sleep(self, 0.02, self._group)
        if handle.is_cancel_requested:
            self.canceled += 1
            handle.canceled()
        else:
            handle.succeed()
        return NavigateToPose.Result()


def test_a_leg_past_its_deadline_is_canceled_and_times_out(ros: Any) -> None:
    """nav2_leg_timeout_s bounds the leg itself: Nav2 is asked to cancel, confirms, and the step ends TIMEOUT (the
    base stopped: nothing latched); the world is unchanged and the next goto drives."""
    sim, nav2 = start_sim(ros, nav2_leg_timeout_s=1.0)
    nav2.script(Leg("hold"))
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.TIMEOUT
    assert "took longer than 1 s (nav2_leg_timeout_s); Nav2 canceled the leg" in outcome.error_msg
    assert nav2.canceled == 1 and sim.world.state.location == "pose7" and sim.fault_latch.fault is None
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


@pytest.mark.serial  # alone: a 0.5 s cancel timeout
def test_a_cancel_nav2_never_confirms_is_a_latched_fault(ros: Any) -> None:
    """The leg's deadline passes, the cancel is accepted but the goal never ends: after nav2_cancel_timeout_s the
    skill ends robot_fault and is latched; clear_fault refuses while that goal may still drive the base, and clears
    once Nav2 ended it."""
    nav2 = ros.add(StuckNav2(start=(30.0, 0.0), context=ros.context))
    values = {"navigation_backend": "nav2", "skill_delay_s": 0.0, "nav2_leg_timeout_s": 1.0,
              "nav2_cancel_timeout_s": 0.5}  # fmt: skip
    sim = ros.add(
        SimSkillServer(context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    )
    status, outcome = run(ros, "goto", "pose8")
    assert status == GoalStatus.STATUS_ABORTED and SkillCode(outcome.error_code) is SkillCode.ROBOT_FAULT
    assert "Nav2 did not confirm the cancel within 0.5 s (nav2_cancel_timeout_s)" in outcome.error_msg
    assert "latched" in outcome.error_msg and nav2.cancel_seen.is_set()
    _, outcome = run(ros, "goto", "pose9")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and len(nav2.goals) == 1
    refused = ros.clear_fault(sim)
    assert not refused.success and "may still be driving the base" in refused.message, refused.message
    nav2.release.set()
    ros.wait_for(lambda: nav2.canceled == 1, what="the stuck goal to end")
    ros.wait_for(lambda: not sim._nav.moving, what="the client to hear the goal ended")
    cleared = ros.clear_fault(sim)
    assert cleared.success, cleared.message
    assert sim.world.state.location == "pose7"


def test_a_cancel_during_a_skill_that_nav2_never_confirms_is_latched(ros: Any) -> None:
    """The operator cancels the skill mid-leg and Nav2 never ends the goal: the skill ends CANCELED (the base's
    contract), but the unconfirmed stop is latched all the same."""
    nav2 = ros.add(StuckNav2(start=(30.0, 0.0), context=ros.context))
    values = {"navigation_backend": "nav2", "skill_delay_s": 0.0, "nav2_cancel_timeout_s": 0.3}
    sim = ros.add(
        SimSkillServer(context=ros.context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    )
    status, _ = run(ros, "goto", "pose8", cancel_when=lambda: bool(nav2.goals))
    assert status == GoalStatus.STATUS_CANCELED
    fault = sim.fault_latch.fault
    assert fault is not None and fault.code is SkillCode.ROBOT_FAULT and "did not confirm the cancel" in fault.cause
    _, outcome = run(ros, "goto", "pose9")
    assert SkillCode(outcome.error_code) is SkillCode.FAULT_LATCHED and len(nav2.goals) == 1
    nav2.release.set()


def client_and_leg(ros: Any, nav2: Any) -> tuple[Any, Any]:
    """A Nav2Client on a node of its own with one leg under way (held by the navigator)."""
    from sayplan_ros.navigation.action_call import sleep
    from sayplan_ros.navigation.nav2_client import Nav2Client

    node = ros.node(f"nav2_user_{len(ros._nodes)}")
    client = Nav2Client(node, "navigate_to_pose", "map")
    task = ros.executor.create_task(
        client.drive(
            (35.0, 0.0, 0.0), "x=35", 2.0, lambda s: sleep(node, s), lambda _t, _p: None, lambda: False, 100.0, 2.0
        )
    )
    ros.wait_for(lambda: bool(nav2.goals), what="the leg to start")
    return client, task


def test_stop_and_wait_cancels_the_leg_and_waits_for_nav2(ros: Any) -> None:
    """Nav2Client.stop_and_wait, from a plain thread (this one) while the executor spins: True once Nav2 ended the
    goal; True at once when nothing runs; False (bounded) when Nav2 never ends it."""
    nav2 = ros.add(FakeNav2(start=(30.0, 0.0), context=ros.context))
    nav2.script(Leg("hold"))
    client, task = client_and_leg(ros, nav2)
    assert client.moving
    assert client.stop_and_wait(3.0) and nav2.canceled == 1 and not client.moving
    ros.wait_for(task.done, what="the leg")
    assert task.result().code is SkillCode.CANCELED
    assert client.stop_and_wait(0.1)  # nothing runs any more

    stuck = ros.add(StuckNav2(action="stuck_navigate_to_pose", context=ros.context))
    from sayplan_ros.navigation.action_call import sleep
    from sayplan_ros.navigation.nav2_client import Nav2Client

    node = ros.node("stuck_user")
    stuck_client = Nav2Client(node, "stuck_navigate_to_pose", "map")
    leg = ros.executor.create_task(
        stuck_client.drive(
            (35.0, 0.0, 0.0), "x=35", 2.0, lambda s: sleep(node, s), lambda _t, _p: None, lambda: False, 100.0, 30.0
        )
    )
    ros.wait_for(lambda: bool(stuck.goals), what="the stuck leg to start")
    started = time.monotonic()
    assert not stuck_client.stop_and_wait(0.5)
    assert time.monotonic() - started >= 0.5 and stuck.cancel_seen.wait(5.0) and stuck_client.moving
    stuck.release.set()
    ros.wait_for(leg.done, what="the stuck leg")
    assert not stuck_client.moving


def test_a_destroyed_client_cancels_its_leg(ros: Any) -> None:
    """The node goes without a signal (destroyed mid-leg): the cancel is still sent, without waiting on DDS."""
    sim, nav2 = start_sim(ros)
    nav2.script(Leg("hold"))
    client = ActionClient(ros.node("operator"), ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=10.0)
    client.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
    ros.wait_for(lambda: bool(nav2.goals), what="the leg to start")
    ros.destroy(sim)
    ros.wait_for(lambda: nav2.canceled == 1, timeout=5.0, what="the navigator to see the cancel")


@pytest.mark.serial  # alone: bounds waits in seconds
def test_waits_run_on_the_steady_clock_with_sim_time_and_no_clock(ros: Any) -> None:
    """Issue 24 review #8: with use_sim_time and nothing on /clock, ROS time stands still; `wait_for` and `sleep`
    (every action call's and the Franka arm's waits) still end on time."""
    from rclpy.node import Node
    from rclpy.task import Future

    from sayplan_ros.navigation.action_call import sleep, wait_for

    node = ros.add(
        Node("sim_time_user", context=ros.context, parameter_overrides=[Parameter("use_sim_time", value=True)])
    )
    began = time.monotonic()
    waited = ros.executor.create_task(wait_for(node, Future(), 0.3))
    slept = ros.executor.create_task(sleep(node, 0.3))
    ros.wait_for(lambda: waited.done() and slept.done(), timeout=5.0, what="the waits to end")
    assert waited.result() is False and time.monotonic() - began < 5.0
