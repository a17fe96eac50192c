"""Issue 23 on Spot, at the protocol boundary (the fake Spot driven by the unmodified bosdyn-client): each numbered
defect reproduced, and a bounded property test over random skill sequences with injected faults.

1. open/close: a claw that will not let go of the handle is a latched robot fault; the arm is never stowed (the
   stow closes the claw) and nothing moves until an operator clears it. A put-down whose gripper will not open
   is one too, and the object stays in the hand in the graph.
3. a skill that grasps is refused before any motion while the hand is not empty (the graph or the gripper).
4. after an e-stop (released since), no skill powers on or stands the robot: only the operator's clear and
   stand_up do.
5. a body walk is sent as 1 s commands renewed while the node lives (the SIGKILL bound is test_spot_signals.py).
10. a TLS certificate mismatch is named as such, not as "the robot may be offline".

Issue 38 (fail-safe v2), each test failing on the code before it:
4. a pickup refused because the claw holds something unknown never puts the object in the hand in the graph.
6. a cancel waits for the robot to report it stands still (the stop in force, the body under 0.05 m/s); a stop it
   never confirms is a latched fault, and the operator's clear is refused while the body moves.
(7, an e-stopped robot counts as stopped when the node exits, is in test_spot_signals.py.)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "bosdyn.client", reason="the Spot SDK is not installed: pip install -r requirements/spot.txt (make test does)"
)

from action_msgs.msg import GoalStatus
from fakes.spot import FakeSpot, FakeWorld
from fakes.spot.certs import make_tls
from fakes.spot.harness import login, run_skill, spot_skill_server, stand_up, stop_node, wait_until
from fakes.spot.office import office, office_site, office_world
from fakes.spot.services import AUTHORITIES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rclpy.action import ActionClient

from sayplan_core.outcomes import SkillCode
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_interfaces.srv import ApplyGraphUpdate

pytestmark = [pytest.mark.ros, pytest.mark.serial]  # alone: a clear's robot check races the fake robot's timers
OFFICE = office()
#: Motion the robot may only make at the operator's request (the node starting, ~/stand_up).
POWER_UP = {"power_on", "stand"}


@pytest.fixture
def spot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSpot]:
    with FakeSpot.running(tmp_path, office_world(OFFICE)) as fake:
        login(monkeypatch, fake)
        yield fake


class Executor:
    """What the executor does between skills: send a step that follows the last graph version, apply its update."""

    def __init__(self, ros: Any) -> None:
        self.ros = ros
        operator = ros.node(f"executor_{len(ros._nodes)}")
        self.skills = ActionClient(operator, ExecuteSkill, "execute_skill")
        self.apply = operator.create_client(ApplyGraphUpdate, "apply_graph_update")
        self.version = 0

    def run(self, skill: str, target: str = "", timeout: float = 30.0) -> tuple[int, Any]:
        status, outcome = run_skill(self.ros, self.skills, skill, target, timeout, graph_version=self.version)
        update = outcome.graph_update
        if update.upsert or update.remove:
            answer = self.ros.call(self.apply, ApplyGraphUpdate.Request(update=update))
            assert answer.success, answer.message
            self.version = int(answer.version)
        return status, outcome


def graph_server(ros: Any) -> Any:
    from sayplan_ros.scene_graph_server import SceneGraphServer

    return next(node for node in ros._nodes if isinstance(node, SceneGraphServer))


def gripper_attribute(outcome: Any) -> str | None:
    for node in outcome.graph_update.upsert:
        if node.id == "agent":
            for kv in node.attributes:
                if kv.key == "gripper":
                    return str(kv.value).strip('"')
    return None


def moves_since(world: FakeWorld, mark: int) -> list[str]:
    return [kind for _, kind in world.motion_log[mark:]]


def at_cupboard(executor: Executor) -> None:
    for skill, target in (("goto", "kitchen"), ("open", "kitchen_cupboard"), ("access", "kitchen_cupboard")):
        status, outcome = executor.run(skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


# ----------------------------------------------------------------------------- defect 1
def test_a_claw_stuck_on_the_handle_is_a_latched_fault_and_the_arm_is_never_stowed_on_it(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        status, outcome = executor.run("goto", "kitchen")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        world.handles["kitchen_cupboard"].stuck = True
        mark = len(world.motion_log)
        status, outcome = executor.run("open", "kitchen_cupboard")
        assert status == GoalStatus.STATUS_ABORTED and outcome.error_code == SkillCode.ROBOT_FAULT, outcome.error_msg
        assert "will not let go of the handle of kitchen_cupboard" in outcome.error_msg
        assert "latched" in outcome.error_msg and server.clear_fault_service in outcome.error_msg
        moves = moves_since(world, mark)
        # the claw was told to open (and could not); after that nothing: no stow, no closing the claw on the handle
        assert moves[-1] == "gripper" and moves.count("gripper") == 1, moves
        assert world.holding == "handle:kitchen_cupboard" and world.arm == "out"
        assert gripper_attribute(outcome) == "the handle of kitchen_cupboard"
        navigations, mark = len(spot.calls("NavigateTo")), len(world.motion_log)
        status, outcome = executor.run("goto", "nikos_office")  # defect 1: walked off holding the handle
        assert outcome.error_code == SkillCode.FAULT_LATCHED and "will not let go" in outcome.error_msg
        assert len(spot.calls("NavigateTo")) == navigations and moves_since(world, mark) == []
        cleared = ros.clear_fault(server)
        assert not cleared.success and "gripper: holding something" in cleared.message, cleared.message
        assert "the scene graph does not" in cleared.message
        world.handles["kitchen_cupboard"].stuck = False  # the operator frees the claw by hand
        with world.lock:
            world.release()
        cleared = ros.clear_fault(server)
        assert cleared.success and "gripper: empty" in cleared.message, cleared.message
        assert moves_since(world, mark) == []  # checking moved nothing
        status, outcome = executor.run("goto", "nikos_office")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


def test_a_gripper_that_will_not_open_on_a_put_down_is_a_robot_fault_and_the_object_stays_in_the_hand(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        at_cupboard(executor)
        status, outcome = executor.run("pickup", "coffee_mug")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        world.gripper_jammed = True
        status, outcome = executor.run("release", "coffee_mug")
        assert outcome.error_code == SkillCode.ROBOT_FAULT and "will not open" in outcome.error_msg
        assert world.holding == "coffee_mug" and world.arm == "carry"  # carried back, never stowed on it
        assert gripper_attribute(outcome) == "coffee_mug"
        assert graph_server(ros).graph.held_object() == "coffee_mug"
        assert server.fault_latch.fault is not None


# ----------------------------------------------------------------------------- defect 3
@pytest.mark.parametrize("who", ["graph", "gripper"])
def test_a_grasp_with_a_hand_that_is_not_empty_is_refused_before_any_motion(
    ros: Any, spot: FakeSpot, tmp_path: Path, who: str
) -> None:
    """The graph says the hand holds the mug: a pickup is a planning mistake, refused (invalid_target). The graph
    says the hand is empty but the gripper holds something: unknown load, a latched robot fault. Either way the
    claw does not open, nothing moves, and what was held stays held."""
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        at_cupboard(executor)
        if who == "graph":
            status, outcome = executor.run("pickup", "coffee_mug")
            assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        else:
            with world.lock:
                world.holding = "coffee_mug"  # something the graph does not know of is in the claw
        grasps, mark = len(spot.calls("ManipulationApi")), len(world.motion_log)
        status, outcome = executor.run("pickup", "clean_glass")
        assert status == GoalStatus.STATUS_ABORTED
        if who == "graph":
            assert outcome.error_code == SkillCode.INVALID_TARGET and "already holds coffee_mug" in outcome.error_msg
            assert server.fault_latch.fault is None
        else:
            assert outcome.error_code == SkillCode.ROBOT_FAULT and "refused before the robot moved" in outcome.error_msg
            assert server.fault_latch.fault is not None
        assert len(spot.calls("ManipulationApi")) == grasps and moves_since(world, mark) == []
        assert world.holding == "coffee_mug"
        status, outcome = executor.run("open", "kitchen_cupboard")  # grasping a handle needs an empty hand too
        assert outcome.error_code in (SkillCode.INVALID_TARGET, SkillCode.FAULT_LATCHED), outcome.error_msg
        assert len(spot.calls("ManipulationApi")) == grasps and moves_since(world, mark) == []


# ----------------------------------------------------------------------------- defect 4
def test_after_an_estop_is_released_no_skill_powers_on_or_stands_the_robot(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    world = spot.world
    world.speed_mps = 3.0
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        future = executor.skills.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="kitchen")))
        wait_until(world.moving, what="walking")
        world.press_estop()
        ros.wait_for(future.done, what="acceptance")
        result = future.result().get_result_async()
        ros.wait_for(result.done, timeout=15.0, what="result")
        assert result.result().result.outcome.error_code == SkillCode.ESTOPPED
        mark, powers = len(world.motion_log), len(spot.calls("PowerCommand"))
        world.release_estop()
        status, outcome = executor.run("goto", "kitchen")
        assert outcome.error_code == SkillCode.FAULT_LATCHED and "estopped" in outcome.error_msg
        cleared = ros.clear_fault(server)
        assert cleared.success and "e-stop: released" in cleared.message and "motors: off" in cleared.message
        status, outcome = executor.run("goto", "kitchen")  # cleared, but the motors are off: never re-powered
        assert outcome.error_code == SkillCode.NOT_POWERED and "never powers the robot on" in outcome.error_msg
        assert moves_since(world, mark) == [] and len(spot.calls("PowerCommand")) == powers
        assert not world.motors_on and not world.standing
        refused = stand_up(ros, server)  # not while latched
        assert not refused.success and "clear it first" in refused.message and not world.motors_on
        assert ros.clear_fault(server).success
        stood = stand_up(ros, server)  # the operator's explicit step
        assert stood.success and world.motors_on and world.standing, stood.message
        assert set(moves_since(world, mark)) == POWER_UP
        world.speed_mps = 60.0
        status, outcome = executor.run("goto", "kitchen")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg


# ----------------------------------------------------------------------------- defect 5
def test_a_walk_is_sent_as_one_second_commands_renewed_while_the_node_lives(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Each body trajectory ends about 1 s after it is sent (robot clock) and the walk re-sends it; a
    trajectory nobody renews stops the fake robot at its end time, as the proto's end_time says."""
    world = spot.world
    pose8 = OFFICE.nodes["pose8"].position
    assert pose8 is not None
    world.speed_mps = math.hypot(pose8[0] - world.body.x, pose8[1] - world.body.y) / 2.0  # a 2 s walk
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0):
        status, outcome = run_skill(ros, Executor(ros).skills, "goto", "pose8")
    assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
    walks = [
        c for c in spot.calls("RobotCommand") if c.command.synchronized_command.mobility_command.HasField(
            "se2_trajectory_request"
        )
    ]  # fmt: skip
    assert len(walks) >= 3
    for call in walks:
        sent = call.header.request_timestamp.seconds + call.header.request_timestamp.nanos * 1e-9
        end = call.command.synchronized_command.mobility_command.se2_trajectory_request.end_time
        assert 0.5 < end.seconds + end.nanos * 1e-9 - (sent + world.clock_skew_s) < 1.5
    assert (world.body.x, world.body.y) == pytest.approx(pose8[:2], abs=1e-6)


def test_stop_motion_stops_a_walk_and_waits_for_the_robot_to_confirm(ros: Any, spot: FakeSpot, tmp_path: Path) -> None:
    """SkillServer.stop_for_shutdown (what SIGINT/SIGTERM run) mid-walk: the skill stops, Spot's stop is sent
    and confirmed (stop in force, body still); the subprocess version is test_spot_signals.py."""
    world = spot.world
    world.speed_mps = 1.0
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0) as server:
        future = Executor(ros).skills.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action="goto", target="pose8")))
        wait_until(world.moving, what="walking")
        stops = world.stop_count
        done: list[bool] = []
        thread = threading.Thread(target=lambda: done.append(server.stop_for_shutdown(3.0)))
        thread.start()
        thread.join(timeout=5.0)
        assert done == [True] and not world.moving() and world.stop_count >= stops + 2  # the cancel's and its own
        ros.wait_for(future.done, what="acceptance")


# ----------------------------------------------------------------------------- defect 10
def test_a_certificate_that_does_not_match_is_named_not_reported_as_offline(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    (tmp_path / "other").mkdir()
    other = make_tls(tmp_path / "other", AUTHORITIES)  # a root that did not sign the robot's certificate
    with spot_skill_server(ros, spot, tmp_path, bring_up=False, ca_cert_file=str(other.ca_path)) as server:
        with pytest.raises(RuntimeError) as refused:
            server.bring_up()  # configure opens the session: refused, with the reason
        assert not server.configured
    message = str(refused.value)
    assert "TLS certificate does not match" in message and str(other.ca_path) in message
    assert "offline" not in message and spot.calls("NavigateTo") == []
    assert server.transition_error.endswith(message)


# ----------------------------------------------------------------------------- issue 23 review (second round)
def cancel_when(ros: Any, executor: Executor, skill: str, target: str, started: Any, what: str) -> tuple[int, Any]:
    """Send a step, cancel it once `started()` holds; (status, outcome)."""
    future = executor.skills.send_goal_async(
        ExecuteSkill.Goal(step=PlanStep(action=skill, target=target), graph_version=executor.version)
    )
    wait_until(started, timeout=20.0, what=what)
    ros.wait_for(future.done, what="acceptance")
    handle = future.result()
    handle.cancel_goal_async()
    result = handle.get_result_async()
    ros.wait_for(result.done, timeout=15.0, what="canceled result")
    return result.result().status, result.result().result.outcome


def test_a_failed_handle_grasp_opens_the_claw_and_reads_it_before_any_stow(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Review finding 5: the Manipulation API reports the handle grasp failed, but the claw closed on the handle
    (and it is stuck there). The arm is never stowed on it (the stow closes the claw): the claw is opened, read
    back, and a claw still on the handle is a latched robot fault."""
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        status, outcome = executor.run("goto", "kitchen")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        with world.lock:
            world.grasp_failures["handle:kitchen_cupboard"] = 1
            world.grasp_caught.add("handle:kitchen_cupboard")
            world.handles["kitchen_cupboard"].stuck = True
        mark = len(world.motion_log)
        status, outcome = executor.run("open", "kitchen_cupboard")
        moves = moves_since(world, mark)
        assert outcome.error_code == SkillCode.ROBOT_FAULT and "will not let go" in outcome.error_msg, outcome.error_msg
        assert "arm_stowed" not in moves and moves[-1] == "gripper", moves
        assert world.holding == "handle:kitchen_cupboard" and world.arm == "out"
        assert server.fault_latch.fault is not None


def test_a_failed_handle_grasp_that_let_go_stows_after_opening_the_claw(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Review finding 5, the usual case: the claw caught the handle on a failed grasp but lets go when opened, so
    the arm is stowed after the claw opened (never closed on the handle); grasp_failed, nothing latched."""
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        status, outcome = executor.run("goto", "kitchen")
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        with world.lock:
            world.grasp_failures["handle:kitchen_cupboard"] = 1
            world.grasp_caught.add("handle:kitchen_cupboard")
        mark = len(world.motion_log)
        status, outcome = executor.run("open", "kitchen_cupboard")
        moves = moves_since(world, mark)
        assert outcome.error_code == SkillCode.GRASP_FAILED, outcome.error_msg
        # the claw opened (and let go) before the stow, whose own claw close follows it
        assert moves[moves.index("grasp") + 1 :] == ["gripper", "arm_stowed", "gripper"], moves
        assert world.holding is None and world.arm_stowed
        assert server.fault_latch.fault is None


def test_a_canceled_walk_whose_stop_the_robot_refuses_is_a_latched_robot_fault(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Review findings 10 and 7: a cancel mid-walk whose stop command the robot does not accept leaves the robot
    possibly moving: the goal ends CANCELED, but the fault is latched, once (by the base class only), and the next
    step is refused with nothing moving."""
    world = spot.world
    world.speed_mps = 1.0
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0) as server:
        executor = Executor(ros)
        spot.failing["RobotCommand"] = lambda r: r.command.full_body_command.HasField("stop_request")
        status, outcome = cancel_when(ros, executor, "goto", "pose8", world.moving, "walking")
        assert status == GoalStatus.STATUS_CANCELED, outcome.error_msg
        fault = server.fault_latch.fault
        assert fault is not None and fault.code is SkillCode.ROBOT_FAULT, fault
        assert "did not accept the stop command" in fault.cause and server.fault_latch.later == []
        del spot.failing["RobotCommand"]
        with world.lock:
            world.stop_motion("stop")  # the operator stops it
        mark = len(world.motion_log)
        status, outcome = executor.run("goto", "kitchen")
        assert outcome.error_code == SkillCode.FAULT_LATCHED and moves_since(world, mark) == []


def test_a_gripper_that_cannot_be_read_after_a_pickup_is_a_robot_fault(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Review finding 10: after a grasp the gripper is read back; a robot that does not answer then leaves what
    the hand holds unknown: a latched robot fault, not a success."""
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        at_cupboard(executor)
        carried = threading.Event()

        def after_carry(_request: Any) -> bool:
            if world.arm == "carry":
                carried.set()
            return carried.is_set()

        spot.failing["GetRobotState"] = after_carry
        status, outcome = executor.run("pickup", "coffee_mug")
        del spot.failing["GetRobotState"]
        assert status == GoalStatus.STATUS_ABORTED and outcome.error_code == SkillCode.ROBOT_FAULT, outcome.error_msg
        assert "the gripper could not be read back" in outcome.error_msg
        assert server.fault_latch.fault is not None and world.holding == "coffee_mug"


# ----------------------------------------------------------------------------- issue 38
@pytest.mark.parametrize(("skill", "target"), [("pickup", "coffee_mug"), ("close", "kitchen_cupboard")])
def test_a_grasp_refused_for_something_unknown_in_the_claw_never_claims_the_hand_holds_what_it_does_not(
    ros: Any, spot: FakeSpot, tmp_path: Path, skill: str, target: str
) -> None:
    """Issue 38 item 4: the claw holds something no scene graph knows of, so the pickup (or close) is refused before
    the robot moves (a latched robot fault). The gripper reads "holding", but the grasp never ran: the update, and
    the graph it is applied to, must not put the mug in the hand nor name the cupboard's handle as what the claw
    holds, not even until the next skill corrects it. Then the operator frees the claw, clears, and it runs."""
    world = spot.world
    with spot_skill_server(ros, spot, tmp_path) as server:
        executor = Executor(ros)
        at_cupboard(executor)
        graph = graph_server(ros).graph
        where = (graph.parent("coffee_mug"), graph.relation("coffee_mug"))
        with world.lock:
            world.holding = "stray_cable"  # in the claw, in no scene graph
        mark = len(world.motion_log)
        status, outcome = executor.run(skill, target)
        assert status == GoalStatus.STATUS_ABORTED and outcome.error_code == SkillCode.ROBOT_FAULT, outcome.error_msg
        assert "refused before the robot moved" in outcome.error_msg and moves_since(world, mark) == []
        assert gripper_attribute(outcome) == "something the scene graph does not hold"
        mug = [(n.parent, n.relation) for n in outcome.graph_update.upsert if n.id == "coffee_mug"]
        assert all(place == where for place in mug), mug  # the update itself says the mug is where it was
        graph = graph_server(ros).graph
        assert graph.held_object() is None, "the graph claims the hand holds what it does not"
        assert (graph.parent("coffee_mug"), graph.relation("coffee_mug")) == where
        assert "open" in graph.nodes["kitchen_cupboard"].states
        with world.lock:
            world.holding = None  # the operator frees the claw by hand
        cleared = ros.clear_fault(server)
        assert cleared.success and "gripper: empty" in cleared.message, cleared.message
        status, outcome = executor.run(skill, target)
        assert status == GoalStatus.STATUS_SUCCEEDED, outcome.error_msg
        graph = graph_server(ros).graph
        if skill == "pickup":
            assert graph.held_object() == "coffee_mug" == world.holding
        else:
            assert "closed" in graph.nodes["kitchen_cupboard"].states and world.holding is None


def test_a_cancel_ends_only_once_the_robot_reports_it_stands_still(ros: Any, spot: FakeSpot, tmp_path: Path) -> None:
    """Issue 38 item 6: the robot accepts the cancel's stop but walks on for 1 s (the fake's stop_coast_s) before
    it stands. The goal ends CANCELED only once the robot state says the body is still, and nothing latches: it
    stopped within stop_timeout_s."""
    world = spot.world
    world.speed_mps = 0.5  # 10 s to pose8
    world.stop_coast_s = 1.0
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0, stop_timeout_s=10.0) as server:
        status, outcome = cancel_when(ros, Executor(ros), "goto", "pose8", world.moving, "walking")
        assert not world.moving(), "the goal ended while the robot still walked"
        assert status == GoalStatus.STATUS_CANCELED and outcome.error_code == SkillCode.CANCELED, outcome.error_msg
        assert server.fault_latch.fault is None
        with world.lock:
            coasted = [m.halted for m in world.motions.values() if m.coast_until is not None]
        assert coasted == ["stop"]  # it did walk on after the stop (the fault injected), then stood


@pytest.mark.parametrize("fault", ["estop", "lease"])
def test_a_fault_met_under_a_cancel_latches_and_the_robot_stays_refused_until_it_is_cleared(
    ros: Any, spot: FakeSpot, tmp_path: Path, fault: str
) -> None:
    """The operator hits the e-stop (or a tablet takes the lease) and cancels the task at once: the goal ends
    CANCELED, but the fault is latched as it is without the cancel. Before, a canceled skill never asked the robot
    what was behind the stop, nothing latched, and after the e-stop's release `stand_up` and the next `goto` ran
    without anyone calling clear_fault."""
    world = spot.world
    world.speed_mps = 0.25
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0, stop_timeout_s=2.0) as server:
        executor = Executor(ros)

        def walking_then_fault() -> bool:
            if not world.moving():
                return False
            with world.lock:
                world.press_estop() if fault == "estop" else world.steal_lease("tablet-operator")
            return True

        status, outcome = cancel_when(ros, executor, "goto", "pose8", walking_then_fault, "walking")
        assert status == GoalStatus.STATUS_CANCELED and outcome.error_code == SkillCode.CANCELED, outcome.error_msg
        latched = server.fault_latch.fault
        expected = SkillCode.ESTOPPED if fault == "estop" else SkillCode.LEASE_LOST
        assert latched is not None and latched.code is expected, latched
        with world.lock:  # the operator releases the e-stop / the tablet gives control back, without clear_fault
            world.estopped = False
            if world.lease_owner == "tablet-operator":
                world.lease_owner = ""
        assert not stand_up(ros, server).success  # refused while latched
        mark = len(world.motion_log)
        _, refused = executor.run("goto", "kitchen")
        assert refused.error_code == SkillCode.FAULT_LATCHED and moves_since(world, mark) == [], refused.error_msg
        cleared = ros.clear_fault(server)
        assert cleared.success, cleared.message


def test_a_stop_the_robot_never_confirms_after_a_cancel_is_a_latched_fault_until_the_body_stands_still(
    ros: Any, spot: FakeSpot, tmp_path: Path
) -> None:
    """Issue 38 item 6: the robot accepts the cancel's stop and walks on (it walked 2.6 m in the review). The goal
    still ends CANCELED, but after stop_timeout_s without the robot reporting it is still, a robot fault is latched
    (once), the operator's clear is refused while the body moves, and nothing is sent until it is cleared."""
    world = spot.world
    world.speed_mps = 0.25  # 20 s to pose8: it walks on for the whole test
    site = office_site(tmp_path / "site.yaml", OFFICE, unbound=("pose8",))
    with spot_skill_server(ros, spot, tmp_path, site=site, max_walk_m=40.0, stop_timeout_s=1.0) as server:
        executor = Executor(ros)
        world.stop_coast_s = math.inf  # the stop is accepted, and the body walks on
        status, outcome = cancel_when(ros, executor, "goto", "pose8", world.moving, "walking")
        assert status == GoalStatus.STATUS_CANCELED, outcome.error_msg
        fault = server.fault_latch.fault
        assert fault is not None and fault.code is SkillCode.ROBOT_FAULT, outcome.error_msg
        assert "did not report that it stands still" in fault.cause, fault.cause
        assert server.fault_latch.later == [] and world.moving()
        cleared = ros.clear_fault(server)
        assert not cleared.success and "body: moving" in cleared.message, cleared.message
        with world.lock:
            world.stop_coast_s = 0.0
            world.stop_motion("stop")  # the operator stops it (the tablet, the e-stop)
        mark = len(world.motion_log)
        status, outcome = executor.run("goto", "kitchen")
        assert outcome.error_code == SkillCode.FAULT_LATCHED and moves_since(world, mark) == []
        cleared = ros.clear_fault(server)
        assert cleared.success and "body: still" in cleared.message, cleared.message
        assert moves_since(world, mark) == []


# ----------------------------------------------------------------------------- property: random skills and faults
SKILLS = [
    ("goto", "kitchen"),
    ("goto", "nikos_office"),
    ("open", "kitchen_cupboard"),
    ("close", "kitchen_cupboard"),
    ("access", "kitchen_cupboard"),
    ("pickup", "coffee_mug"),
    ("release", "coffee_mug"),
]
REPAIR = ("repair", "")
FAULTS = ["none", "none", "estop", "estop_released", "power_cut", "lease", "fall", "stuck_handle", "jammed", "slip"]
_examples = iter(range(10**6))


def inject(world: FakeWorld, fault: str) -> None:
    """What goes wrong before the next step, as the fake models it."""
    with world.lock:
        if fault in ("estop", "estop_released"):
            world.press_estop()
            if fault == "estop_released":
                world.release_estop()
        elif fault == "power_cut":
            world.cut_motor_power()
        elif fault == "lease":
            world.steal_lease("tablet-operator")
        elif fault == "fall":
            world.fall()
        elif fault == "stuck_handle":
            world.handles["kitchen_cupboard"].stuck = True
        elif fault == "jammed":
            world.gripper_jammed = True
        elif fault == "slip" and world.holding is not None and not world.holding.startswith("handle:"):
            world.release()  # the object slips out of the claw


def repair(ros: Any, server: Any, world: FakeWorld) -> None:
    """An operator fixes what is wrong on the robot, clears the fault, then powers on and stands it."""
    with world.lock:
        world.estopped = False
        world.behavior_fault = ""
        if world.lease_owner == "tablet-operator":
            world.lease_owner = ""  # the tablet releases control
        world.handles["kitchen_cupboard"].stuck = False
        world.gripper_jammed = False
        if world.holding is not None and world.holding.startswith("handle:"):
            world.release()  # the claw freed by hand
    mark = len(world.motion_log)
    if server.fault_latch.fault is not None:
        cleared = ros.clear_fault(server)
        assert cleared.success, cleared.message
    assert moves_since(world, mark) == []  # checking the robot never moves it
    if not (world.motors_on and world.standing):
        stood = stand_up(ros, server)
        assert stood.success, stood.message


def expected_gripper(world: FakeWorld) -> set[str]:
    held = world.holding
    if held is None:
        return {"empty"}
    if held.startswith("handle:"):
        return {f"the handle of {held.removeprefix('handle:')}"}
    return {held}


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=st.lists(st.tuples(st.sampled_from([*SKILLS, REPAIR]), st.sampled_from(FAULTS)), min_size=4, max_size=7))
def test_no_motion_while_a_fault_is_latched_and_the_graph_agrees_with_the_gripper(
    ros: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: list[tuple[tuple[str, str], str]]
) -> None:
    """Random steps, each after an injected fault (or none), on a fresh fake Spot and graph: a step sent while a
    fault is latched is refused with nothing moving; no skill ever powers on or stands the robot; after every
    skill that read the gripper, its update and the applied scene graph say what the fake's gripper holds; once the
    faults stop, one repair and clear bring the robot back and it walks again."""
    from sayplan_ros.scene_graph_server import SceneGraphServer

    folder = tmp_path / f"example{next(_examples)}"
    folder.mkdir()
    with FakeSpot.running(folder, office_world(OFFICE)) as spot:
        login(monkeypatch, spot)
        world = spot.world
        graph = ros.add(SceneGraphServer(context=ros.context))
        try:
            with spot_skill_server(ros, spot, folder, graph=False, max_walk_m=40.0) as server:
                executor = Executor(ros)
                for (skill, target), fault in plan:
                    inject(world, fault)
                    if skill == "repair":
                        repair(ros, server, world)
                        continue
                    latched = server.fault_latch.fault is not None
                    mark = len(world.motion_log)
                    _, outcome = executor.run(skill, target)
                    moves = moves_since(world, mark)
                    step = f"{skill}({target}) after {fault}: {outcome.error_msg}"
                    if latched:
                        assert outcome.error_code == SkillCode.FAULT_LATCHED and moves == [], step
                    assert not set(moves) & POWER_UP, step  # only the operator powers on and stands
                    said = gripper_attribute(outcome)
                    if outcome.error_code == SkillCode.NONE:
                        assert said is not None, step
                    if said is not None:
                        assert said in expected_gripper(world), (step, said, world.holding)
                        held = world.holding if world.holding in OFFICE.nodes else None
                        assert graph.graph.held_object() == held, (step, world.holding)
                # the faults stop: the operator repairs the robot and clears once (repair asserts the clear
                # succeeds), and the robot walks again
                repair(ros, server, world)
                assert server.fault_latch.fault is None
                mark = len(world.motion_log)
                walked = [executor.run("goto", room)[1] for room in ("kitchen", "nikos_office")]
                assert all(o.error_code == SkillCode.NONE for o in walked), [o.error_msg for o in walked]
                assert moves_since(world, mark), "the robot did not walk after the clear"
        finally:
            stop_node(ros, graph)
