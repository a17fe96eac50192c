"""Typed outcomes of skills, plans and tasks, and the stages the closed loop reports.

These mirror the constants of `sayplan_interfaces` (SkillOutcome, PlanOutcome,
ExecuteTask.Result, ExecutionEvent, PlanProgress) value for value, so the core, the
nodes, robot backends and tests speak one vocabulary; a test keeps both sides equal.
A code's range says who can act on it: the planner (replan), nobody (refuse up
front), the caller (stopped), or a person at the robot (a fault).
"""

from __future__ import annotations

from enum import Enum, IntEnum

#: Terminal states of a ROS action goal, as action_msgs/GoalStatus numbers them: defined here once for the core,
#: which imports no ROS package (nodes use GoalStatus itself; test_goal_status checks the two agree).
STATUS_SUCCEEDED = 4
STATUS_CANCELED = 5
STATUS_ABORTED = 6


class SkillCode(IntEnum):
    """Why a skill ended (SkillOutcome)."""

    NONE = 0
    # the world is not as the plan assumed: the planner can act on it
    NOT_FOUND = 1
    GRASP_FAILED = 2
    LOCKED = 3
    BLOCKED = 4
    UNREACHABLE = 5
    SKILL_FAILED = 6
    # the request cannot run on this robot: refused before the robot moves
    UNKNOWN_SKILL = 100
    WRONG_ACTION_SET = 101
    INVALID_TARGET = 102
    SCENE_GRAPH_OUT_OF_SYNC = 103  # the server's copy of the graph lacks the version the step follows
    NOT_ACTIVE = 104  # the skill server is not active (lifecycle): refused before the robot moved
    # stopped from outside
    CANCELED = 200
    TIMEOUT = 201
    PAUSED = 202  # the skill server was deactivated mid-skill (a lifecycle PAUSE): the robot was stopped as on a cancel
    # robot faults the planner cannot fix
    LEASE_LOST = 300
    ESTOPPED = 301
    NOT_POWERED = 302
    ROBOT_FAULT = 303
    FAULT_LATCHED = 304  # refused before the robot moved: an earlier fault is latched until an operator clears it
    SERVER_UNAVAILABLE = 305  # a robot's action server (the navigator, a controller) that had the goal went away
    INTERNAL_ERROR = 399

    @property
    def label(self) -> str:
        """The lower-case name used in logs, parameters and reports (`grasp_failed`)."""
        return self.name.lower()

    @property
    def replannable(self) -> bool:
        """The planner can plan around it from the updated scene graph."""
        return 1 <= self.value < 100

    @property
    def refused(self) -> bool:
        return 100 <= self.value < 200

    @property
    def stopped(self) -> bool:
        return 200 <= self.value < 300

    @property
    def robot_fault(self) -> bool:
        return self.value >= 300

    @property
    def latches(self) -> bool:
        """After this outcome the robot's state is not known to be safe: its skill server refuses every later
        skill until an operator clears the fault (an already latched fault is not latched again)."""
        return self.robot_fault and self is not SkillCode.FAULT_LATCHED

    @classmethod
    def parse(cls, text: str) -> SkillCode:
        """`grasp_failed` or `GRASP_FAILED` -> SkillCode.GRASP_FAILED; a clear ValueError otherwise."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            known = ", ".join(c.label for c in cls if c is not cls.NONE)
            raise ValueError(f"unknown skill outcome '{text}' (one of: {known})") from None


class PlanCode(IntEnum):
    """Why planning ended without a plan (PlanOutcome)."""

    NONE = 0
    NO_SCENE_GRAPH = 1
    SCENE_GRAPH_OUT_OF_SYNC = 2
    BACKEND_ERROR = 3
    BUDGET_EXHAUSTED = 4
    SEARCH_FAILED = 5
    REPLANS_EXHAUSTED = 6
    NOT_EXECUTABLE = 7
    UNSUPPORTED_ACTION_SET = 8
    CANCELED = 9
    INTERNAL_ERROR = 10
    NOT_ACTIVE = 11  # the planner is not active (lifecycle): nothing was planned
    UNKNOWN_PLANNER = 12  # the goal names a planner the node does not offer
    PAUSED = 13  # the planner was deactivated mid-plan (a lifecycle PAUSE): its LLM call was ended

    @property
    def label(self) -> str:
        return self.name.lower()


class TaskCode(IntEnum):
    """Why an execute_task goal ended (ExecuteTask.Result)."""

    NONE = 0
    PLANNING_FAILED = 1
    REPLANS_EXHAUSTED = 2
    ROBOT_FAULT = 3
    SKILL_REFUSED = 4
    ACTION_SET_MISMATCH = 5
    SERVER_UNAVAILABLE = 6
    TIMEOUT = 7
    CANCELED = 8
    SCENE_GRAPH_UPDATE_REFUSED = 9
    INTERNAL_ERROR = 10
    PAUSED = 11  # the stack was paused (a lifecycle PAUSE) mid-task: the skill or plan under way was stopped
    NOT_ACTIVE = 12  # refused before planning: the skill server or the planner is not active (paused, not started)

    @property
    def label(self) -> str:
        return self.name.lower()


class Stage(str, Enum):
    """Stages of the closed loop (ExecutionEvent.STAGE_*)."""

    PLANNING = "planning"
    EXECUTING = "executing"
    REPLANNING = "replanning"
    DONE = "done"
    FAILED = "failed"
    CANCELED = "canceled"

    def __str__(self) -> str:
        return self.value


class Status(str, Enum):
    """What happened within a stage (ExecutionEvent.STATUS_*)."""

    PROGRESS = "progress"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


class PlanStage(str, Enum):
    """Steps a planner reports while it works (PlanProgress.STAGE_*)."""

    SEARCH = "search"
    PLAN = "plan"
    VERIFY = "verify"
    REPLAN = "replan"
    DONE = "done"

    def __str__(self) -> str:
        return self.value
