"""The dummy robot's skill server: the SkillServer contract, a simulated world behind it."""

from __future__ import annotations

from typing import Any

from sayplan_core.envs import load_env
from sayplan_core.execution.sim_world import SimulatedWorld
from sayplan_core.execution.skills import SkillCatalog, SkillResult
from sayplan_core.sim.plan import PlanStep
from sayplan_dummy_plugin import DummyRobotOptions
from sayplan_ros.skill_server import SkillContext, SkillServer


class DummySkillServer(SkillServer):
    def __init__(self, node_name: str = "dummy_skill_server", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_options(DummyRobotOptions)
        self.world: SimulatedWorld | None = None

    def configure(self) -> None:
        options = self.read_options(DummyRobotOptions)
        self.world = SimulatedWorld(load_env(options.env), "sayplan", [])
        self.serve(SkillCatalog.of("dummy", [self.world.actions]))
        self.get_logger().info(f"dummy robot says {options.greeting}")

    async def run_skill(self, step: PlanStep, context: SkillContext) -> SkillResult:
        assert self.world is not None
        return self.world.execute(step.action, step.target)
