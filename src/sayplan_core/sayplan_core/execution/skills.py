"""What every robot's skill server shares: the result of one skill, and the check that a request is one the robot
speaks, made before the robot moves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.outcomes import SkillCode
from sayplan_core.sim.action_set import ActionSet, load_action_set


@dataclass
class SkillResult:
    """How one skill ended, and what the robot now knows about the nodes it touched (and where it is)."""

    success: bool
    code: SkillCode = SkillCode.NONE
    message: str = ""
    update: GraphUpdate = field(default_factory=GraphUpdate)

    def __post_init__(self) -> None:
        if not self.success and self.code is SkillCode.NONE:
            self.code = SkillCode.SKILL_FAILED  # a failure always has a reason, if only "it failed"
        if self.success:
            self.code = SkillCode.NONE


@dataclass(frozen=True)
class SkillCatalog:
    """The action sets a skill server speaks and, in each, the skills it implements.

    A robot may implement only part of an action set (Spot cannot `turn_on`); a plan
    that needs a skill outside the catalog is refused before the robot moves.
    """

    robot: str
    sets: Mapping[str, frozenset[str]]
    default: str

    @classmethod
    def of(
        cls, robot: str, action_sets: Iterable[str | ActionSet], skills: Iterable[str] | None = None
    ) -> SkillCatalog:
        """Every listed action set; `skills` limits each to what the robot implements (default: all of it)."""
        loaded = [load_action_set(s) if isinstance(s, str) else s for s in action_sets]
        if not loaded:
            raise ValueError(f"robot '{robot}' must speak at least one action set")
        limit = None if skills is None else frozenset(skills)
        sets = {a.name: frozenset(n for n in a.names() if limit is None or n in limit) for a in loaded}
        return cls(robot, sets, loaded[0].name)

    def check(self, skill: str, action_set: str) -> SkillResult | None:
        """None when the robot can run `skill` of `action_set` (empty = the default set); else the refusal."""
        name = action_set or self.default
        if name not in self.sets:
            return SkillResult(
                False,
                SkillCode.WRONG_ACTION_SET,
                f"{self.robot} speaks the action set(s) {', '.join(sorted(self.sets))}, not '{name}'",
            )
        if skill not in self.sets[name]:
            return SkillResult(
                False,
                SkillCode.UNKNOWN_SKILL,
                f"{self.robot} has no skill '{skill}' in action set '{name}' "
                f"(it has: {', '.join(sorted(self.sets[name]))})",
            )
        return None

    def check_plan(self, skills: Iterable[str], action_set: str) -> str | None:
        """The first reason a whole plan cannot run here, or None."""
        for skill in skills:
            refusal = self.check(skill, action_set)
            if refusal is not None:
                return refusal.message
        return None
