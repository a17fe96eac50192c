"""Launch the SayPlan stack on a ROS 2 install: one process per node.

    ros2 launch sayplan_ros sayplan.launch.py robot:=sim planner:=sayplan llm:=auto env:=office rviz:=true \
        params_file:=my_site.yaml namespace:=robot1 use_sim_time:=false log_level:=info \
        foxglove:=true foxglove_port:=8765 foxglove_page_port:=

`foxglove_bridge` (foxglove:=true) is optional: if it cannot start or stops (its port taken), launch logs one line
and the stack runs on without it; every other node is required (its exit ends the launch). Its monitor page is on
foxglove_page_port, by default foxglove_port + 1 (8766; any free port when foxglove_port is 0), so two stacks given
two WebSocket ports get two page ports.

The node list is `sayplan_ros.stack.stack_specs(robot)`, the same list `sayplan_stack`, `sayplan_demo` and the tests
compose in one process. Parameters come, in order (later wins), from config/sayplan.yaml,
config/robots/<robot>.yaml, config/planners/<planner>.yaml (each if there is one), `params_file`, and the launch
arguments (env, llm, use_sim_time). Every file is keyed by node name; the sections are applied to the nodes
whatever their namespace. Each file is checked before any node starts (sayplan_core.params_files): a name a node
does not declare in its own section, or a value of the wrong type, is refused naming the file.

Every node runs with the stack's DDS liveness profile (config/dds/fastdds_liveness.xml: a killed node is noticed in
4 s) unless FASTRTPS_DEFAULT_PROFILES_FILE or FASTDDS_DEFAULT_PROFILES_FILE names a file of the user's own, or
RMW_IMPLEMENTATION is not Fast DDS.
"""

from __future__ import annotations

import os
import shutil
import signal
from typing import Any

import launch.logging
from ament_index_python.packages import PackageNotFoundError, get_package_prefix, get_package_share_directory
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnProcessIO
from launch.events import Shutdown
from launch.events.process import ProcessExited, ProcessIO, SignalProcess
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sayplan_core import params_files
from sayplan_core.llm.selection import BACKENDS
from sayplan_core.planners import PLANNERS
from sayplan_core.stack_nodes import FOXGLOVE
from sayplan_ros.runner import SHUTDOWN_STOP_S, TEARDOWN_S
from sayplan_ros.stack import ROBOTS, composed_parameters, stack_specs

LLMS = tuple(b for b in BACKENDS if b != "replay")  # replay: set planner.replay_transcript in params_file
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")
#: launch escalates after 5 s by default; a node's own bound (runner.SHUTDOWN_STOP_S to stop its robot, then
#: runner.TEARDOWN_S) is 4 s, too close on a loaded machine: a SIGKILL must never cut a robot's stop short
SIGTERM_TIMEOUT_S = str(round(2 * (SHUTDOWN_STOP_S + TEARDOWN_S)))


def read_params_file(path: str) -> Any:
    """A params file's YAML, read bounded and without aliases (sayplan_core.params_files); RuntimeError naming it."""
    try:
        return params_files.load(path)
    except (OSError, ValueError) as exc:
        raise RuntimeError(" ".join(str(exc).split())) from None


def check_params_files(paths: list[str]) -> None:
    """Every params file against what the stack's nodes declare, before any node starts: a name a node does not
    have in its own section (a typo, or another node's), a typo of ours in a `/**` section, a value of the wrong
    type are refused, one line each (bounded); sections for no node of the stack are said once."""
    report = params_files.Report([], 0, [])
    given: list[params_files.Given] = []
    for path in paths:
        given += params_files.file_entries(path, read_params_file(path), report)
    params_files.check(given, report=report)
    for line in params_files.notes_lines(report):
        launch.logging.get_logger("sayplan.launch").warning(line)
    if report.count:
        raise RuntimeError("refused the parameters given:\n" + "\n".join(report.lines()))


def node_sections(path: str, node: str) -> dict[str, Any]:
    """The parameters a params file gives `node` (its own section, then a `/**` section for every node)."""
    data = read_params_file(path) or {}
    if not isinstance(data, dict):
        raise RuntimeError(f"params file {path}: expected node names at the top level")
    out: dict[str, Any] = {}
    for key in ("/**", node, f"/{node}"):
        body = data.get(key)
        if isinstance(body, dict):
            out.update(flat(body.get("ros__parameters") or {}))
    return out


def flat(parameters: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sections as the dotted names ROS gives them (`embodiedrag: {retrieval_top_k: 3}` is
    `embodiedrag.retrieval_top_k`), so a later file overrides one option of a plugin, not its whole section."""
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def stack_parameters(value: dict[str, str], config: str) -> dict[str, dict[str, Any]]:
    """Each node's parameters for these launch argument values: the files in order, then the arguments."""
    # a plugin installed from another package may bring no file of its own here
    layered = [os.path.join(config, "robots", f"{value['robot']}.yaml")]
    layered.append(os.path.join(config, "planners", f"{value['planner']}.yaml"))
    files = [os.path.join(config, "sayplan.yaml"), *(path for path in layered if os.path.isfile(path))]
    if value["params_file"]:
        files.append(value["params_file"])
    check_params_files(files)
    sim_time = value["use_sim_time"].lower() in ("true", "1", "yes")
    given: dict[str, dict[str, Any]] = {"scene_graph_server": {"env": value["env"]}, "planner": {"llm": value["llm"]}}
    foxglove = _flag(value.get("foxglove", FOXGLOVE_DEFAULTS["foxglove"]))
    if foxglove:
        port = _port(value.get("foxglove_port", FOXGLOVE_DEFAULTS["foxglove_port"]))
        page_port = value.get("foxglove_page_port", FOXGLOVE_DEFAULTS["foxglove_page_port"])
        given["foxglove_bridge"] = {"port": port, "page_port": _page_port(page_port, port)}
    if value["robot"] == "sim":
        given["sim_skill_server"] = {"env": value["env"]}
    given.update(composed_parameters(value["robot"]))  # the lifecycle manager's node list
    out: dict[str, dict[str, Any]] = {}
    for spec in stack_specs(value["robot"], foxglove):
        parameters: dict[str, Any] = {}
        for path in files:
            parameters.update(node_sections(path, spec.name))
        parameters.update(given.get(spec.name, {}))
        parameters["use_sim_time"] = sim_time
        out[spec.name] = parameters
    return out


class RequiredNodes:
    """Ends the launch when a node of the stack ends while it runs, with one line saying which and why; an optional
    node (foxglove_bridge) that ends gets that line only, and the stack runs on without it."""

    def __init__(self) -> None:
        self.last_error: dict[str, str] = {}
        self.nodes: list[Node] = []
        self.optional: list[Node] = []

    def on_stderr(self, event: ProcessIO) -> None:
        """Keep the node's last line on stderr: a node that cannot start says why there (sayplan_ros.runner)."""
        lines = [line.strip() for line in event.text.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            self.last_error[event.process_name] = lines[-1]

    def on_exit(
        self, event: ProcessExited, context: LaunchContext
    ) -> OpaqueFunction | EmitEvent | list[EmitEvent | OpaqueFunction] | None:
        if context.is_shutdown:  # stopping anyway (Ctrl-C, or another node failed first)
            return None
        if any(event.action is node for node in self.optional):
            if event.returncode != 0:
                why = self.last_error.get(event.process_name, "no error line")
                launch.logging.get_logger("sayplan.launch").error(
                    f"optional node {event.process_name} exited with code {event.returncode}: {why}; "
                    "the stack runs on without it"
                )
            return None
        if event.returncode == 0:
            # a clean stop is a node's answer to SIGINT/SIGTERM, and the others got the same signal (a terminal's
            # process group, systemd's cgroup): launch must not signal them again, which would cut their robot
            # stop short (sayplan_ros.runner exits at once on a second signal); it escalates if one is still there
            return EmitEvent(
                event=Shutdown(reason=f"node {event.process_name} stopped (exit code 0)", due_to_sigint=True)
            )
        why = self.last_error.get(event.process_name, "no error line")
        reason = f"node {event.process_name} exited with code {event.returncode}: {why}"

        def fail(_context: LaunchContext) -> None:
            # launch logs this one line, shuts down (SIGINT to whatever still runs, then its escalation), exits 1
            raise RuntimeError(reason)

        def started(action: Any) -> bool:
            return any(action is node for node in self.nodes) and action.process_details is not None

        # SIGTERM first: a node still importing ends silently (SIGINT would print a KeyboardInterrupt traceback
        # for each), one already serving stops its robot and exits (the SIGINT launch sends next changes nothing)
        return [EmitEvent(event=SignalProcess(signal_number=signal.SIGTERM, process_matcher=started)),
                OpaqueFunction(function=fail)]  # fmt: skip


#: the Foxglove bridge's launch arguments and their defaults
FOXGLOVE_DEFAULTS = {"foxglove": "false", "foxglove_port": "8765", "foxglove_page_port": ""}


def _flag(value: str) -> bool:
    return value.lower() in ("true", "1", "yes")


def _port(value: str) -> int:
    """foxglove_port: a TCP port (0: any free one); anything else is refused before a node starts."""
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise RuntimeError(f"launch argument foxglove_port:={value} is not a port (0..65535)")
    return int(value)


def _page_port(value: str, port: int) -> int:
    """foxglove_page_port: a TCP port, 0 (any free one) or -1 (no page); empty: foxglove_port + 1 (0 for 0)."""
    if value == "":
        return port + 1 if 0 < port < 65535 else 0
    if not value.lstrip("-").isdigit() or not -1 <= int(value) <= 65535:
        raise RuntimeError(f"launch argument foxglove_page_port:={value} is not a port (0..65535) or -1 (no page)")
    return int(value)


def _check_rviz(value: str) -> bool:
    """Whether RViz runs; rviz:=true without rviz2 installed is refused before any node starts."""
    if value.lower() not in ("true", "1", "yes"):
        return False
    try:
        get_package_prefix("rviz2")
    except PackageNotFoundError:
        raise RuntimeError(
            "rviz:=true but rviz2 is not installed (apt install ros-$ROS_DISTRO-rviz2), or use rviz:=false"
        ) from None
    return True


def _prefix() -> str | None:
    """`setpriv --pdeathsig TERM`: the node gets SIGTERM when the launch process dies (util-linux, Linux)."""
    setpriv = shutil.which("setpriv")
    return f"{setpriv} --pdeathsig TERM" if setpriv else None


#: where Fast DDS reads a profiles file's path from (Fast DDS 2, in Humble and Jazzy: the first; 3, in Kilted: the
#: second)
PROFILE_VARIABLES = ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE")


def liveness_env(config: str) -> dict[str, str]:
    """config/dds/fastdds_liveness.xml for every node: a killed node is dropped by its peers after 4 s, not Fast
    DDS's 20 s, so the executor notices a dead planner or skill server in seconds. Not when the user names a
    profiles file (theirs wins: the lease is set there) or runs another RMW (Cyclone DDS has its own setting)."""
    if any(os.environ.get(name) for name in PROFILE_VARIABLES):
        return {}
    if not (os.environ.get("RMW_IMPLEMENTATION") or "rmw_fastrtps_cpp").startswith("rmw_fastrtps"):  # "": default
        return {}
    profile = os.path.join(config, "dds", "fastdds_liveness.xml")
    if not os.path.isfile(profile):  # an install from before the file was installed: every node would log an error
        launch.logging.get_logger("sayplan.launch").warning(
            f"{profile} is missing (rebuild the workspace): a killed node is noticed after Fast DDS's 20 s lease"
        )
        return {}
    return dict.fromkeys(PROFILE_VARIABLES, profile)


def _nodes(context: LaunchContext) -> list[Node | RegisterEventHandler]:
    config = os.path.join(get_package_share_directory("sayplan_ros"), "config")
    value = {name: LaunchConfiguration(name).perform(context) for name in (
        "robot", "planner", "llm", "env", "params_file", "namespace", "use_sim_time", "log_level", "rviz")}  # fmt: skip
    for name, default in FOXGLOVE_DEFAULTS.items():  # optional: a launch file that includes this one may not set them
        value[name] = LaunchConfiguration(name, default=default).perform(context)
    for name, allowed in (
        ("robot", tuple(ROBOTS)),
        ("planner", tuple(PLANNERS)),
        ("llm", LLMS),
        ("log_level", LOG_LEVELS),
    ):
        if value[name] not in allowed:
            raise RuntimeError(f"launch argument {name}:={value[name]} is not one of {', '.join(allowed)}")
    rviz = _check_rviz(value["rviz"])
    parameters = stack_parameters(value, config)
    required = RequiredNodes()
    prefix = _prefix()
    nodes: list[Node] = []
    dds = liveness_env(config)
    for spec in stack_specs(value["robot"], _flag(value["foxglove"])):
        nodes.append(
            Node(
                package=spec.package,
                executable=spec.executable,
                exec_name=spec.executable,  # the process's label in launch's lines (not setpriv's)
                name=spec.name,
                namespace=value["namespace"],
                parameters=[parameters[spec.name]],
                arguments=["--ros-args", "--log-level", value["log_level"]],
                output="screen",
                prefix=prefix,
                additional_env=dds,
            )
        )
        if spec.name == FOXGLOVE.name:  # the live view: the stack runs on without it
            required.optional.append(nodes[-1])
    required.nodes = list(nodes)
    handlers = [
        RegisterEventHandler(OnProcessIO(target_action=node, on_stderr=required.on_stderr)) for node in nodes
    ] + [RegisterEventHandler(OnProcessExit(target_action=node, on_exit=required.on_exit)) for node in nodes]
    if rviz:
        share = get_package_share_directory("sayplan_ros")
        nodes.append(
            Node(
                package="rviz2",
                executable="rviz2",
                exec_name="rviz2",
                namespace=value["namespace"],
                arguments=["-d", os.path.join(share, "config", "sayplan.rviz")],
                prefix=prefix,
            )
        )
    return [*handlers, *nodes]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument("robot", default_value="sim", description=" | ".join(ROBOTS)),
            DeclareLaunchArgument("planner", default_value="sayplan", description=" | ".join(PLANNERS)),
            DeclareLaunchArgument("llm", default_value="auto", description=" | ".join(LLMS)),
            DeclareLaunchArgument("env", default_value="office", description="office | home | <graph file>"),
            DeclareLaunchArgument("params_file", default_value="", description="YAML keyed by node name, applied last"),
            DeclareLaunchArgument("namespace", default_value="", description="namespace of every node of the stack"),
            DeclareLaunchArgument(
                "use_sim_time", default_value="false", description="use /clock (bag replay, simulators)"
            ),
            DeclareLaunchArgument("log_level", default_value="info", description=" | ".join(LOG_LEVELS)),
            DeclareLaunchArgument("rviz", default_value="false", description="start RViz with the scene graph view"),
            DeclareLaunchArgument(
                "foxglove",
                default_value=FOXGLOVE_DEFAULTS["foxglove"],
                description="start foxglove_bridge: the live graph, plan and diagnostics for Foxglove or Lichtblick",
            ),
            DeclareLaunchArgument(
                "foxglove_port",
                default_value=FOXGLOVE_DEFAULTS["foxglove_port"],
                description="port of foxglove_bridge (bound to 127.0.0.1); optional: if it cannot start, the stack "
                "runs on without it",
            ),
            DeclareLaunchArgument(
                "foxglove_page_port",
                default_value=FOXGLOVE_DEFAULTS["foxglove_page_port"],
                description="port of the monitor page foxglove_bridge serves (empty: foxglove_port + 1; -1: none)",
            ),
            DeclareLaunchArgument(
                "sigterm_timeout",
                default_value=SIGTERM_TIMEOUT_S,
                description="seconds launch waits after Ctrl-C before it escalates to SIGTERM (and as long again to "
                "SIGKILL); above every node's own bound (robot stop, then teardown)",
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
