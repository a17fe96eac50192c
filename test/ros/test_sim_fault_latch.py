"""A property test of the fault latch on the simulated robot driving through Nav2 (navigation_backend nav2), over DDS.

Random skill sequences (steps of the demo plan, in order or not, and any goto), injected robot faults (the
`failures` parameter), Nav2 legs aborted with codes no Nav2 release knows, and the operator's clear_fault at random
points, and at the end one clear once the faults stop. After every operation: while a fault is latched no NavigateToPose goal is sent and the simulated world does
not change, and every skill is refused with FAULT_LATCHED; a robot fault latches; after a successful clear skills run
again (checked last: one clear, then a goto that drives); and the graph built by applying each result's update to the office graph agrees with the simulated world
about where the agent is and what it holds.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip(
    "nav2_msgs", reason="nav2_msgs is not importable: build the test overlay (scripts/build_test_overlay.sh)"
)

from fakes.ros_robot import FakeNav2, Leg
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from transcripts import GOOD_PLAN

from sayplan_core.envs import load_env
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_interfaces.action import ExecuteSkill
from sayplan_interfaces.msg import PlanStep
from sayplan_ros.conversions import msg_to_update
from sayplan_ros.sim_skill_server import SimSkillServer

pytestmark = pytest.mark.ros
NAV2_ACTION = "/navigate_to_pose"
PLAN = [step for step in GOOD_PLAN if step[0] != "done"]
PLACES = ["pose7", "pose8", "kitchen", "nikos_office", "pose12"]
POOL = sorted(set(PLAN) | {("goto", p) for p in PLACES})
LATCHING = [c.label for c in SkillCode if c.latches]
#: Codes no Nav2 release defines (0: Jazzy's abort without a reason), and Kilted's own navigator codes.
NAV2_CODES = [0, 1, 99, 8000, 9000, 9003, 12345, 65535]
_NAMESPACES = itertools.count()


operation = st.one_of(
    st.tuples(st.just("next")),  # the demo plan's next step
    st.tuples(st.just("any"), st.sampled_from(POOL)),
    st.tuples(st.just("abort"), st.sampled_from(PLACES), st.sampled_from(NAV2_CODES)),
    st.tuples(st.just("clear")),
)
failure = st.tuples(st.sampled_from(POOL), st.sampled_from(LATCHING), st.integers(1, 2))


def world_snapshot(sim: SimSkillServer) -> Any:
    """Everything the simulated world knows: each node's place and states, where the agent is, what it holds."""
    state = sim.world.state
    truth = state.apply_to()
    nodes = tuple((n, truth.parent(n), truth.relation(n), tuple(truth.nodes[n].states)) for n in sorted(truth.nodes))
    return nodes, state.location, state.holding, state.accessed, state.finished


class Operator:
    """This test's side of the wire: execute_skill goals and clear_fault calls to one sim skill server."""

    def __init__(self, ros: Any, sim: SimSkillServer) -> None:
        self.ros = ros
        node = ros.node(f"operator_{sim.get_namespace().strip('/')}")
        self.skills = ActionClient(node, ExecuteSkill, f"{sim.get_namespace()}/execute_skill")
        self.clear = node.create_client(Trigger, sim.clear_fault_service)
        assert self.skills.wait_for_server(timeout_sec=20.0)

    def run(self, skill: str, target: str) -> Any:
        sent = self.skills.send_goal_async(ExecuteSkill.Goal(step=PlanStep(action=skill, target=target)))
        self.ros.wait_for(sent.done, what="goal acceptance")
        result = sent.result().get_result_async()
        self.ros.wait_for(result.done, timeout=15.0, what=f"{skill}({target})")
        return result.result().result.outcome

    def clear_fault(self) -> Any:
        return self.ros.call(self.clear, Trigger.Request())


@given(
    operations=st.lists(operation, min_size=3, max_size=10),
    failures=st.lists(failure, max_size=3, unique_by=lambda f: f[0]),
)
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: each example costs DDS round trips
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_nothing_moves_while_a_fault_is_latched(
    ros: Any, operations: list[tuple[Any, ...]], failures: list[tuple[tuple[str, str], str, int]]
) -> None:
    nav2 = getattr(ros, "latch_nav2", None)
    if nav2 is None:  # one navigator for every example (the fixture is per test); each example has its own robot
        nav2 = ros.latch_nav2 = ros.add(FakeNav2(action=NAV2_ACTION, start=(30.0, 0.0), context=ros.context))
    nav2.unscript()
    injected = ",".join(f"{skill}:{target}:{code}:{times}" for (skill, target), code, times in failures)
    params = {
        "navigation_backend": "nav2",
        "nav2_action": NAV2_ACTION,
        "skill_delay_s": 0.0,
        "driver_wait_s": 10.0,  # a goal Nav2 accepts after this would reach it during a later step: not this test
        "failures": injected,
    }
    sim = ros.add(
        SimSkillServer(
            namespace=f"/latch{next(_NAMESPACES)}",
            context=ros.context,
            parameter_overrides=[Parameter(k, value=v) for k, v in params.items()],
        )
    )
    operator = Operator(ros, sim)
    graph: SceneGraph = load_env("office")
    latched = False
    plan_index = 0
    try:
        for op in operations:
            if op[0] == "clear":
                answer = operator.clear_fault()
                # the navigator is there and no goal of ours is under way: the check passes
                assert answer.success, answer.message
                assert ("cleared: " in answer.message) if latched else answer.message == "no fault latched"
                assert sim.fault_latch.fault is None
                if latched:
                    event("an operator cleared a latched fault")
                latched = False
                continue
            if op[0] == "next":
                skill, target = PLAN[plan_index % len(PLAN)]
            elif op[0] == "any":
                skill, target = op[1]
            else:
                skill, target = "goto", op[1]
                nav2.script(Leg("abort", error_code=op[2]))
            goals, before = len(nav2.goals), world_snapshot(sim)
            outcome = operator.run(skill, target)
            code = SkillCode(outcome.error_code)
            sent = len(nav2.goals) - goals
            if latched:
                assert code is SkillCode.FAULT_LATCHED, (skill, target, outcome.error_msg)
                assert "refused before the robot moved: fault latched" in outcome.error_msg
                assert sent == 0 and world_snapshot(sim) == before, "the robot moved while a fault was latched"
                event("a skill refused while latched")
            else:
                assert code is not SkillCode.FAULT_LATCHED, outcome.error_msg
                assert sent <= 1 and (sent == 0 or skill == "goto")
                if op[0] == "abort" and sent == 1:
                    assert code is SkillCode.ROBOT_FAULT and world_snapshot(sim) == before, outcome.error_msg
                if code.latches:
                    assert sim.fault_latch.fault is not None and "latched" in outcome.error_msg
                    event("latched by a Nav2 abort" if sent else "latched by an injected fault")
                    latched = True
                elif outcome.success and op[0] == "next":
                    plan_index += 1
            if op[0] == "abort" and sent == 0:
                nav2.unscript()  # refused before any leg: the scripted abort is not for a later goto
            graph = apply_update(graph, msg_to_update(outcome.graph_update))
            assert graph.agent_location() == sim.world.state.location, (skill, target, outcome.error_msg)
            assert graph.held_object() == sim.world.state.holding, (skill, target, outcome.error_msg)
            assert (sim.fault_latch.fault is not None) == latched
        # the faults stop: one clear brings the robot back, and it drives again (to a place no failure is injected
        # for, away from where it stands)
        nav2.unscript()
        answer = operator.clear_fault()
        assert answer.success and sim.fault_latch.fault is None, answer.message
        injected_at = {target for (skill, target), _code, _times in failures if skill == "goto"}
        place = next(p for p in PLACES if p not in injected_at and p != sim.world.state.location)
        goals = len(nav2.goals)
        outcome = operator.run("goto", place)
        assert outcome.success and len(nav2.goals) == goals + 1, outcome.error_msg
        assert sim.world.state.location == place
    finally:
        ros.destroy(sim)
