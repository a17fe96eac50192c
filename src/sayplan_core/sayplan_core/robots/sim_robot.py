"""The simulated robot as a robot plugin: its skill server's options and where the node lives.

The node (sayplan_ros.sim_skill_server) is named, not imported: the registry stays free of rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.node_options import NavigationOptions
from sayplan_core.options import option
from sayplan_core.plugins import RobotPlugin


# fmt: off
@dataclass(frozen=True)
class SimRobotOptions(NavigationOptions):
    env: str = option("office", "environment the simulated world starts from (office, home or a graph file)", names_file=True)
    world_changes_file: str = option("", "YAML list of changes that make the truth differ from the robot's graph", names_file=True)
    failures: str = option("", "injected failures, comma-separated skill:target:code[:times] (codes: SkillOutcome names)")
    skill_delay_s: float = option(0.2, "simulated duration of every skill, seconds", minimum=0.0, maximum=3600.0)
    action_set: str = option("sayplan", "action set the skills follow (a bundled name or a YAML file)", names_file=True)
    skills: str = option("", "comma-separated skills the simulated robot has (empty: every skill of the action set)")
    result_timeout_s: float = option(10.0, "how long a finished skill's result is kept for its client, seconds", minimum=0.1, maximum=3600.0)
    navigation_backend: str = option("sim", "sim: gotos only change the simulated world; nav2: each goto first drives the leg through Nav2", choices=("sim", "nav2"))
# fmt: on


SIM_ROBOT = RobotPlugin(
    name="sim",
    summary="a simulated robot: skills change a simulated world (optionally driving each goto through Nav2)",
    node_name="sim_skill_server",
    package="sayplan_ros",
    executable="sim_skill_server",
    node_class="sayplan_ros.sim_skill_server:SimSkillServer",
    Options=SimRobotOptions,
)
