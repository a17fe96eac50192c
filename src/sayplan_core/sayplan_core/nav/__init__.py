"""Navigation: shortest paths over the room/pose layer."""

from sayplan_core.nav.path_planner import NoPathError, PathPlanner, PathResult

__all__ = ["NoPathError", "PathPlanner", "PathResult"]
