"""Spot as a robot plugin (entry point `sayplan.robots: spot`): its skill server's options.

ROS- and SDK-free, so the registry, the docs and the CLI read it without rclpy or bosdyn.
The robot's address is an option; the login never is: it is read from the environment
variables named here.
"""

from __future__ import annotations

from dataclasses import dataclass

from sayplan_core.llm.selection import BACKENDS
from sayplan_core.node_options import graph_wait_option
from sayplan_core.options import option
from sayplan_core.plugins import RobotPlugin


# fmt: off
@dataclass(frozen=True)
class SpotRobotOptions:
    hostname: str = option("192.168.80.3", "the robot's address (hostname or IP; 192.168.80.3 is Spot's own WiFi access point)")
    port: int = option(0, "the robot's gRPC port (0: the SDK's default, 443)", minimum=0, maximum=65535)
    ca_cert_file: str = option("", "root certificate the robot's TLS certificate is checked against (empty: the one bundled with bosdyn-client)", names_file=True)
    username_env: str = option("BOSDYN_CLIENT_USERNAME", "environment variable holding the robot user name (never logged)")
    password_env: str = option("BOSDYN_CLIENT_PASSWORD", "environment variable holding the robot password (never logged)")
    site_file: str = option("", "site file: scene-graph node -> GraphNav waypoint and/or map pose, plus handles and places (see the Spot guide in docs/)", names_file=True)
    action_set: str = option("spot", "the action set plans are written in: spot, spot_lookplangraph (for the lookplangraph planner), or a YAML file whose every action plays a role Spot runs", names_file=True)
    take_lease: bool = option(False, "take the body lease even when another client (the tablet) holds it")
    power_off_on_exit: bool = option(True, "sit and power the motors off when the node stops")
    connect_timeout_s: float = option(30.0, "how long connecting, powering on and standing may take, seconds", minimum=1.0, maximum=600.0)
    rpc_timeout_s: float = option(5.0, "deadline of every single call to the robot (a command, a feedback or state read, a stop), seconds; the SDK's own default is 30 s", minimum=0.1, maximum=60.0)
    graph_wait_s: float = graph_wait_option()
    lease_check_in_s: float = option(1.0, "seconds between lease keep-alive check-ins", minimum=0.05, maximum=10.0)
    feedback_period_s: float = option(0.1, "seconds between feedback requests while a command runs", minimum=0.01, maximum=5.0, per_goal=True)
    navigate_timeout_s: float = option(120.0, "longest a navigate_to or a walk may take, seconds", minimum=1.0, maximum=3600.0, per_goal=True)
    arm_timeout_s: float = option(30.0, "longest a grasp, place or arm move may take, seconds", minimum=0.1, maximum=600.0, per_goal=True)
    stop_timeout_s: float = option(2.0, "how long the robot may take, after the stop command a cancel or a deadline sends, to report it stands still (the stop in force, the body under 0.05 m/s) before that is a latched robot_fault, seconds", minimum=0.1, maximum=30.0, per_goal=True)
    handle_pull_s: float = option(3.0, "how long open/close pull or push a grasped handle (position-controlled constrained manipulation) before letting go, seconds", minimum=0.05, maximum=60.0, per_goal=True)
    max_walk_m: float = option(15.0, "farthest a body trajectory goes to a node without a waypoint, metres", minimum=0.5, maximum=200.0, per_goal=True)
    standoff_m: float = option(0.8, "how far from an asset the robot stands to reach it, metres", minimum=0.3, maximum=3.0, per_goal=True)
    place_height_m: float = option(0.8, "hand height above an asset's position to let go at, when the site file has no place for it", minimum=0.0, maximum=2.0, per_goal=True)
    image_source: str = option("hand_color_image", "camera that look_on / look_inside capture", per_goal=True)
    vlm_llm: str = option("", "VLM backend that names what look_on / look_inside see (empty: capture only)", choices=("", *BACKENDS))
    vlm_model: str = option("", "VLM model name (empty: the backend's default)")
    vlm_base_url: str = option("", "VLM server URL (empty: the backend's default)")
    vlm_api_key_env: str = option("OPENAI_API_KEY", "environment variable holding the VLM API key (never logged)")
    vlm_replay_transcript: str = option("", "answer the VLM from this recorded transcript (tests)", names_file=True)
# fmt: on


SPOT = RobotPlugin(
    name="spot",
    summary="Boston Dynamics Spot with an arm, through bosdyn-client (GraphNav, manipulation, hand camera)",
    node_name="spot_skill_server",
    package="sayplan_spot",
    executable="spot_skill_server",
    node_class="sayplan_spot.skill_server:SpotSkillServer",
    Options=SpotRobotOptions,
)
