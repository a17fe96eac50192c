"""A planner and a robot from outside the stack (tests only): see test/plugins/README.md."""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.nav.path_planner import PathPlanner
from sayplan_core.options import option
from sayplan_core.outcomes import PlanCode, PlanStage
from sayplan_core.planners.base import PlanJob, Planner, Progress
from sayplan_core.plugins import RobotPlugin
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_core.sim.simulator import verify_plan

#: The entry points a `pip install` of this package would write.
ENTRY_POINTS = """\
[sayplan.planners]
dummy = sayplan_dummy_plugin:DummyPlanner

[sayplan.robots]
dummy = sayplan_dummy_plugin:DUMMY_ROBOT
"""


@dataclass(frozen=True)
class DummyOptions:
    destination: str = option("kitchen", "the room the dummy planner sends the robot to", per_goal=True)
    laps: int = option(1, "how many times the plan goes there and back", minimum=1, maximum=3, per_goal=True)


class DummyPlanner(Planner):
    """Goes to one room (and back, `laps` times) without asking the LLM; the plan is verified as any other."""

    name = "dummy"
    summary = "test plugin: drives to one room, no LLM"
    Options = DummyOptions
    config: DummyOptions

    def _run(self, job: PlanJob) -> None:
        graph, _instruction, session, result, progress = job.parts()
        actions = load_action_set(self.action_set)
        home = graph.agent_location() or ""
        plan = [PlanStep("goto", self.config.destination), PlanStep("goto", home)] * self.config.laps
        plan = [*plan[:-1], PlanStep("done")]
        result.plan = plan
        result.full_plan = PathPlanner(graph).expand_plan(plan)
        check = verify_plan(graph, result.full_plan, actions)
        progress(Progress(PlanStage.VERIFY, 0, "", 0, session.tokens_used, check.feedback))
        result.verified = result.success = check.success
        result.message = "plan verified" if check.success else check.feedback
        if not check.success:
            result.failure = PlanCode.NOT_EXECUTABLE


@dataclass(frozen=True)
class DummyRobotOptions:
    env: str = option("office", "the world the dummy robot runs its skills in", names_file=True)
    greeting: str = option("hello", "what the robot says when it is configured")


DUMMY_ROBOT = RobotPlugin(
    name="dummy",
    summary="test plugin: a robot whose skills change a simulated world",
    node_name="dummy_skill_server",
    package="sayplan_dummy_plugin",
    executable="dummy_skill_server",
    node_class="sayplan_dummy_plugin.node:DummySkillServer",
    Options=DummyRobotOptions,
)
