"""The scene-graph simulator: declarative action sets, forward simulation, goal checking."""

from sayplan_core.sim.action_set import ActionSet, load_action_set
from sayplan_core.sim.goals import GoalPredicate, check_goals, goal_from_dict
from sayplan_core.sim.plan import PlanFormatError, PlanStep, format_plan, parse_plan
from sayplan_core.sim.simulator import VerificationResult, verify_plan
from sayplan_core.sim.world_state import WorldState

__all__ = [
    "ActionSet",
    "GoalPredicate",
    "PlanFormatError",
    "PlanStep",
    "VerificationResult",
    "WorldState",
    "check_goals",
    "format_plan",
    "goal_from_dict",
    "load_action_set",
    "parse_plan",
    "verify_plan",
]
