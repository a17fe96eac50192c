"""The lifecycle manager against nodes it finds in states its commands cannot end in, over DDS.

A managed node can be finalized (someone sent it `shutdown`), left unconfigured (a RESET, then RESUME instead of
STARTUP), or in the middle of a transition another client started (`ros2 lifecycle set` from a shell). The manager
must never report the stack active over such a node: it waits out a transition under way and fails naming a node
it cannot bring where the command ends.
"""

from __future__ import annotations

import threading
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


def manager(ros: Any, names: list[str], autostart: bool = True) -> LifecycleManager:
    params = [
        Parameter("node_names", value=names),
        Parameter("autostart", value=autostart),
        Parameter("node_wait_s", value=10.0),
        Parameter("transition_timeout_s", value=30.0),
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


class SlowToConfigure(LifecycleNode):
    """A third-party managed node whose get_state answers while a transition runs (its own callback group, as a
    multithreaded C++ node's can): its configure waits until the test lets it go."""

    def __init__(self, context: Any) -> None:
        super().__init__("slow_node", context=context)
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
        self.release.wait(30.0)
        return TransitionCallbackReturn.SUCCESS


def test_a_node_in_the_middle_of_a_configure_is_waited_for_then_activated(ros: Any) -> None:
    slow = ros.add(SlowToConfigure(ros.context))
    shell = ros.node("shell").create_client(ChangeState, "/slow_node/change_state")
    assert shell.wait_for_service(timeout_sec=10.0)
    request = ChangeState.Request()
    request.transition.id = Transition.TRANSITION_CONFIGURE
    configured = shell.call_async(request)  # another client's configure, under way when the manager starts
    assert slow.entered.wait(10.0)
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
