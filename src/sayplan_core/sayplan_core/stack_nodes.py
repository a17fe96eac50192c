"""The stack's nodes, named once: ROS name, the executable that starts each alone, its class and its options.

`sayplan_ros.stack` starts these nodes (`sayplan_stack`, the demo and the tests; the launch file starts the same
list as processes) and `sayplan_core.settings` derives every node's parameter table from the same entries, so a
node added here is started and documented, and its parameters checked, without another edit. A robot's skill
server comes from its plugin (sayplan_core.plugins). Classes are named as `module:Class` strings: the core never
imports rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.node_options import (
    BagRecorderOptions,
    ExecutorOptions,
    FoxgloveBridgeOptions,
    LifecycleManagerOptions,
    PathPlannerOptions,
    PerceptionOptions,
    SceneGraphServerOptions,
)
from sayplan_core.plugins import ROBOT_REGISTRY


@dataclass(frozen=True)
class StackNode:
    """One node: its ROS name, the package and executable that start it alone ('' for none), its class."""

    name: str
    package: str
    executable: str
    cls: str  # module:Class, imported only when the node is created (robot SDKs stay optional)
    #: Its options dataclass (sayplan_core.node_options, a robot plugin's); None for the planner node, whose
    #: parameters come from the installed planners (settings.planner_settings).
    options: type | None
    managed: bool = False  # a lifecycle node, brought up by the lifecycle manager


def _ours(name: str, cls: str, options: type | None, managed: bool = False, executable: str | None = None) -> StackNode:
    return StackNode(
        name, "sayplan_ros", name if executable is None else executable, f"sayplan_ros.{cls}", options, managed
    )


SCENE_GRAPH_SERVER = _ours("scene_graph_server", "scene_graph_server:SceneGraphServer", SceneGraphServerOptions)
PATH_PLANNER = _ours("path_planner", "path_planner_node:PathPlannerNode", PathPlannerOptions)
PLANNER = _ours("planner", "planner_node:PlannerNode", None, managed=True)
EXECUTOR = _ours("executor", "executor_node:ExecutorNode", ExecutorOptions)
#: The nodes every robot's stack runs, in start-up order (the robot's skill server follows them).
CORE_NODES: tuple[StackNode, ...] = (SCENE_GRAPH_SERVER, PATH_PLANNER, PLANNER, EXECUTOR)
#: Brings the managed nodes up (last in the stack: every node it manages exists before it starts).
MANAGER = _ours("lifecycle_manager", "lifecycle_manager:LifecycleManager", LifecycleManagerOptions)
#: Optional: the live view for Foxglove or Lichtblick (`foxglove:=true`, `sayplan_demo --foxglove`); a follower
#: that only reads, so it starts before the manager like any other node and nothing waits for it.
FOXGLOVE = _ours("foxglove_bridge", "foxglove_bridge:FoxgloveBridge", FoxgloveBridgeOptions)
#: Started beside the stack, not by `sayplan_stack`: perception on a robot with a camera (its own executable and
#: launch argument), the bag recorder by the demo and `sayplan_replay`.
PERCEPTION = _ours("perception", "perception_node:PerceptionNode", PerceptionOptions)
BAG_RECORDER = _ours("bag_recorder", "bag:BagRecorder", BagRecorderOptions, executable="")


def robot_node(robot: str) -> StackNode:
    """The skill server of an installed robot (KeyError if there is none of that id)."""
    plugin = ROBOT_REGISTRY[robot]
    return StackNode(plugin.node_name, plugin.package, plugin.executable, plugin.node_class, plugin.Options, True)
