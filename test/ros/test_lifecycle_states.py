"""The lifecycle manager against nodes it finds in states its commands cannot end in, over DDS.

A managed node can be finalized (someone sent it `shutdown`), left unconfigured (a RESET, then RESUME instead of
STARTUP), or in the middle of a transition another client started (`ros2 lifecycle set` from a shell). The manager
must never report the stack active over such a node: it waits out a transition under way and fails naming a node
it cannot bring where the command ends.

Its settle and end-state checks against plain rclpy LifecycleNodes (third-party nodes as far as the manager knows:
it reaches them through their lifecycle services only): PAUSE, RESET and SHUTDOWN over a node someone finalized
still take down every other node; a startup refused by a finalized node does not try to take that node down; a
node stuck in a transition fails the startup once; a node that goes silent while waited for fails it naming the
node; a refused RESUME leaves no node active; destroying the manager while it waits ends its autostart.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")

from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.lifecycle import State as LifecycleState
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from sayplan_interfaces.srv import ManageLifecycleNodes
from sayplan_ros.lifecycle_manager import LifecycleManager
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = pytest.mark.ros

#: a failed start-up here has no monitor to tell: no 3 s wait for one to be matched
QUIET_FAILURE = Parameter("monitor_wait_s", value=0.0)

Request = ManageLifecycleNodes.Request


def manager(ros: Any, names: list[str], autostart: bool = True, timeout_s: float = 30.0) -> LifecycleManager:
    params = [
        Parameter("node_names", value=names),
        QUIET_FAILURE,
        Parameter("autostart", value=autostart),
        Parameter("node_wait_s", value=10.0),
        Parameter("transition_timeout_s", value=timeout_s),
    ]
    return ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))


def test_startup_fails_naming_a_finalized_node(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    sim.trigger_shutdown()  # as `ros2 lifecycle set /sim_skill_server shutdown` would
    assert sim.lifecycle_state() == State.PRIMARY_STATE_FINALIZED
    boss = manager(ros, ["sim_skill_server"])
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert not ok
    assert line == (
        "sim_skill_server is finalized, not active, after startup: a finalized node cannot come back: "
        "restart its process"
    ), line
    assert boss.exit_reason == line  # the program ends with this line, not a stack reported active
    is_active = ros.node("operator").create_client(Trigger, "/lifecycle_manager/is_active")
    assert not ros.call(is_active, Trigger.Request()).success


def test_resume_of_an_unconfigured_node_fails_and_says_to_send_startup(ros: Any) -> None:
    sim = ros.add(SimSkillServer(context=ros.context), bring_up=False)
    manager(ros, ["sim_skill_server"], autostart=False)
    client = ros.node("operator")
    manage = client.create_client(ManageLifecycleNodes, "/lifecycle_manager/manage_nodes")
    is_active = client.create_client(Trigger, "/lifecycle_manager/is_active")
    answer = ros.call(manage, ManageLifecycleNodes.Request(command=ManageLifecycleNodes.Request.RESUME), 30.0)
    assert not answer.success
    assert answer.message == (
        "sim_skill_server is unconfigured, not active, after resume: resume only activates inactive nodes: send STARTUP"
    ), answer.message
    assert not ros.call(is_active, Trigger.Request()).success
    assert sim.lifecycle_state() == State.PRIMARY_STATE_UNCONFIGURED
    answer = ros.call(manage, ManageLifecycleNodes.Request(command=ManageLifecycleNodes.Request.STARTUP), 30.0)
    assert answer.success, answer.message
    assert sim.lifecycle_state() == State.PRIMARY_STATE_ACTIVE
    assert ros.call(is_active, Trigger.Request()).success


class Plain(LifecycleNode):
    """A managed node whose transitions all succeed (rclpy's defaults)."""

    def __init__(self, name: str, context: Any) -> None:
        super().__init__(name, context=context)

    def state(self) -> int:
        return int(self._state_machine.current_state[0])


class SlowToConfigure(Plain):
    """A third-party managed node whose get_state answers while a transition runs (its own callback group, as a
    multithreaded C++ node's can): its configure waits until the test lets it go, `hold_s` at the most."""

    def __init__(self, name: str, context: Any, hold_s: float = 30.0) -> None:
        super().__init__(name, context)
        self.hold_s = hold_s
        self.entered = threading.Event()
        self.release = threading.Event()
        self.asked = 0
        service = self._service_get_state
        service.callback_group = ReentrantCallbackGroup()
        service.callback_group.add_entity(service)
        answer = service.callback

        def counted(request: Any, response: Any) -> Any:
            self.asked += 1
            return answer(request, response)

        service.callback = counted

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.entered.set()
        self.release.wait(self.hold_s)
        return TransitionCallbackReturn.SUCCESS


def stuck_node(ros: Any) -> SlowToConfigure:
    """A node whose configure never ends while the test runs (its get_state still answers, on its own group)."""
    return ros.add(SlowToConfigure("stuck_node", ros.context, hold_s=120.0))


def configure_from_a_shell(ros: Any, node: SlowToConfigure) -> Any:
    """Another client (`ros2 lifecycle set` from a shell) starts the node's configure, which stays under way; the
    future of the shell's answer."""
    shell = ros.node("shell").create_client(ChangeState, f"/{node.get_name()}/change_state")
    assert shell.wait_for_service(timeout_sec=10.0)
    request = ChangeState.Request()
    request.transition.id = Transition.TRANSITION_CONFIGURE
    configured = shell.call_async(request)
    assert node.entered.wait(10.0)
    return configured


def test_a_node_in_the_middle_of_a_configure_is_waited_for_then_activated(ros: Any) -> None:
    slow = ros.add(SlowToConfigure("slow_node", ros.context))
    configured = configure_from_a_shell(ros, slow)  # another client's configure, under way when the manager starts
    boss = manager(ros, ["slow_node"])
    ros.wait_for(lambda: slow.asked >= 3, timeout=20.0, what="the manager asking the busy node's state")
    assert not boss.started.is_set()  # not reported up while the node is still configuring
    slow.release.set()
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert ok, line
    ros.wait_for(configured.done, what="the shell's configure answer")
    assert configured.result().success
    assert slow._state_machine.current_state[0] == State.PRIMARY_STATE_ACTIVE


# ------------------------------------------------------------------------------ settle and end-state checks
def command(ros: Any, code: int) -> Any:
    manage = ros.node(f"operator_{code}_{time.monotonic_ns()}").create_client(
        ManageLifecycleNodes, "/lifecycle_manager/manage_nodes"
    )
    return ros.call(manage, Request(command=code), 60.0)


def two_up(ros: Any) -> tuple[Plain, Plain]:
    first, second = ros.add(Plain("plain_a", ros.context)), ros.add(Plain("plain_b", ros.context))
    boss = manager(ros, ["plain_a", "plain_b"])
    assert boss.started.wait(40.0) and boss.startup_result[0], boss.startup_result
    assert first.state() == second.state() == State.PRIMARY_STATE_ACTIVE
    return first, second


@pytest.mark.parametrize(
    ("code", "left"),
    [(Request.PAUSE, State.PRIMARY_STATE_INACTIVE), (Request.RESET, State.PRIMARY_STATE_UNCONFIGURED)],
)
def test_pause_and_reset_still_take_down_every_other_node_when_one_is_finalized(ros: Any, code: int, left: int) -> None:
    """plain_b (started last, so taken down first) was shut down by someone else: PAUSE / RESET must still bring
    plain_a down (before 84ea8b8 they did; since, the command stopped at plain_b and left plain_a active)."""
    first, second = two_up(ros)
    second.trigger_shutdown()
    assert second.state() == State.PRIMARY_STATE_FINALIZED
    answer = command(ros, code)
    assert not answer.success and "plain_b is finalized" in answer.message, answer.message
    assert first.state() == left, first.state()


def test_shutdown_over_a_finalized_node_finalizes_the_rest(ros: Any) -> None:
    first, second = two_up(ros)
    second.trigger_shutdown()
    answer = command(ros, Request.SHUTDOWN)
    assert answer.success, answer.message
    assert first.state() == second.state() == State.PRIMARY_STATE_FINALIZED
    again = command(ros, Request.SHUTDOWN)  # everything already finalized: nothing to send, nothing wrong
    assert again.success, again.message


def test_a_startup_refused_by_a_finalized_node_does_not_try_to_take_that_node_down(
    ros: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    first, second = ros.add(Plain("plain_a", ros.context)), ros.add(Plain("plain_b", ros.context))
    second.trigger_shutdown()
    boss = manager(ros, ["plain_a", "plain_b"])
    assert boss.started.wait(40.0)
    ok, line = boss.startup_result
    assert not ok and line.startswith("plain_b is finalized"), line
    assert first.state() == State.PRIMARY_STATE_UNCONFIGURED  # brought up, then taken back down
    err = capfd.readouterr().err
    # plain_b was never brought up: "taking it down" only adds a second, misleading error line
    assert "while taking the stack down" not in err, err


def test_a_node_stuck_in_a_transition_fails_the_startup_once_not_twice(
    ros: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    stuck = stuck_node(ros)
    try:
        configure_from_a_shell(ros, stuck)
        boss = manager(ros, ["stuck_node"], timeout_s=2.0)
        assert boss.started.wait(40.0)
        ok, line = boss.startup_result
        assert not ok and line.startswith("stuck_node: still in transition"), line
        assert boss.exit_reason == line
        err = capfd.readouterr().err
        assert "while taking the stack down" not in err, err  # nothing was sent to it: nothing to take down
    finally:
        stuck.release.set()


def test_destroying_the_manager_while_it_waits_for_a_settling_node_ends_its_wait(ros: Any) -> None:
    stuck = stuck_node(ros)
    try:
        configure_from_a_shell(ros, stuck)
        params = [
            Parameter("node_names", value=["stuck_node"]),
            QUIET_FAILURE,
            Parameter("node_wait_s", value=10.0),
            Parameter("transition_timeout_s", value=60.0),
        ]
        boss = LifecycleManager(context=ros.context, parameter_overrides=params)
        ros.executor.add_node(boss)
        ros.wait_for(lambda: boss._worker.is_alive() and not boss.started.is_set(), what="the manager's worker")
        time.sleep(1.5)  # the autostart is polling the busy node by now
        ros.destroy(boss)
        # the worker sees the manager close within one resend period and ends its wait
        ros.wait_for(boss.started.is_set, timeout=5.0, what="the autostart to end")
        ok, line = boss.startup_result
        assert not ok and "shutting down" in line, line
        assert boss.exit_reason is None  # a manager being closed does not ask the program to fail
    finally:
        stuck.release.set()


def test_destroying_the_manager_while_it_waits_for_a_missing_node_still_ends_the_autostart(ros: Any) -> None:
    """The worker is inside wait_for_service (the node is not there yet, node_wait_s 10 s) when the manager is
    destroyed: its clients go away under it. Whatever that raises, the autostart must end (`started` set, a line
    saying why): demo.py's main thread waits on `started`."""
    params = [Parameter("node_names", value=["never_there"]), QUIET_FAILURE, Parameter("node_wait_s", value=10.0)]
    boss = LifecycleManager(context=ros.context, parameter_overrides=params)
    ros.executor.add_node(boss)
    time.sleep(1.5)  # the autostart is waiting for never_there's services by now
    assert not boss.started.is_set()
    ros.destroy(boss)
    ros.wait_for(boss.started.is_set, timeout=15.0, what="the autostart to end after the manager was destroyed")
    ok, line = boss.startup_result
    assert not ok and line != "not started", line


def test_a_refused_resume_leaves_no_node_active_behind_a_stack_reported_not_active(ros: Any) -> None:
    """plain_b was cleaned up (unconfigured) while the stack was paused: RESUME activates plain_a, then fails on
    plain_b. is_active says false, so plain_a must not be left serving as if the stack were up."""
    first, second = two_up(ros)
    assert command(ros, Request.PAUSE).success
    second.trigger_cleanup()
    assert second.state() == State.PRIMARY_STATE_UNCONFIGURED
    answer = command(ros, Request.RESUME)
    assert not answer.success and answer.message.startswith("plain_b is unconfigured"), answer.message
    assert first.state() == State.PRIMARY_STATE_INACTIVE, first.state()
    assert command(ros, Request.STARTUP).success  # what the line says to do, and it works
    assert first.state() == second.state() == State.PRIMARY_STATE_ACTIVE


def test_a_node_that_goes_silent_while_it_is_waited_for_fails_the_startup_naming_it(ros: Any) -> None:
    """The node being waited out stops answering (its process hangs or goes away): the wait is bounded by
    node_wait_s per question, and the line names the node."""
    stuck = stuck_node(ros)
    try:
        configure_from_a_shell(ros, stuck)
        params = [
            Parameter("node_names", value=["stuck_node"]),
            QUIET_FAILURE,
            Parameter("node_wait_s", value=2.0),
            Parameter("transition_timeout_s", value=60.0),
        ]
        boss = ros.add(LifecycleManager(context=ros.context, parameter_overrides=params))
        time.sleep(1.5)  # the manager is polling the busy node
        assert not boss.started.is_set()
        ros.executor.remove_node(stuck)  # silent from now on
        assert boss.started.wait(30.0)  # not the 60 s transition_timeout_s
        ok, line = boss.startup_result
        assert not ok and line.startswith("stuck_node: no answer asking it for its state"), line
    finally:
        stuck.release.set()
