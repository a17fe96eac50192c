"""Every setting of the stack, declared once: name, type, default, range, meaning, and when it is read.

The ROS parameter declarations (with ranges and read-only flags), the `sayplan` CLI
flags and the range checks are all generated from these tables, and a test checks the
YAML files under config/ and the README's parameter tables against them. A setting
read at start-up is read-only at run time; one read per goal may be changed while the
node runs (the change is checked, and a bad value refused) and applies to the next goal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sayplan_core.llm.selection import BACKENDS, LlmConfig
from sayplan_core.llm.session import Budget
from sayplan_core.perception.structure import DEFAULT_ASSETS, DEFAULT_CONTAINERS
from sayplan_core.planners import PLANNERS
from sayplan_core.planners.base import PlannerOptions

STARTUP = "start-up"
PER_GOAL = "per goal"


@dataclass(frozen=True)
class Setting:
    name: str
    default: bool | int | float | str
    description: str
    when: str = STARTUP
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    names_file: bool = False  # a path on the host: always read-only, never taken from a message
    flag: str = ""  # the CLI flag, when the CLI offers it

    def __post_init__(self) -> None:
        assert self.when in (STARTUP, PER_GOAL), self.name
        assert not (self.names_file and self.when != STARTUP), f"{self.name}: a file setting is read at start-up"

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def read_only(self) -> bool:
        return self.when == STARTUP

    def coerce(self, value: Any) -> Any:
        """The value as this setting's type (an int is a valid float); ValueError naming the setting if not."""
        kind = self.type
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{self.name} must be a {kind.__name__}, got {value!r}")
        return value

    def check(self, value: Any) -> Any:
        """Coerce and range-check one value; raises ValueError naming the setting and the allowed range."""
        value = self.coerce(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{self.name} must be a finite number, got {value}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{self.name} must be >= {self.minimum:g}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{self.name} must be <= {self.maximum:g}, got {value}")
        if self.choices and value not in self.choices and not (self.name == "embedder" and _endpoint(value)):
            allowed = ", ".join(self.choices) + (", openai:<model>, ollama:<model>" if self.name == "embedder" else "")
            raise ValueError(f"{self.name} must be one of {allowed}, got '{value}'")
        return value

    def range_text(self) -> str:
        if self.choices:
            return ", ".join(c or '""' for c in self.choices)
        if self.minimum is not None or self.maximum is not None:
            return f"{_number_text(self.minimum)}..{_number_text(self.maximum)}"
        return ""

    def default_text(self) -> str:
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return str(self.default)


def _number_text(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _endpoint(value: str) -> bool:
    kind, _, model = value.partition(":")
    return kind in ("openai", "ollama") and bool(model)


class Settings:
    """The settings of one component, in declaration order."""

    def __init__(self, component: str, settings: Iterable[Setting]) -> None:
        self.component = component
        self._by_name = {s.name: s for s in settings}

    def __iter__(self) -> Iterator[Setting]:
        return iter(self._by_name.values())

    def __getitem__(self, name: str) -> Setting:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def defaults(self) -> dict[str, Any]:
        return {s.name: s.default for s in self}

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Every value checked (unknown names refused); missing ones take their default."""
        unknown = sorted(set(values) - set(self._by_name))
        if unknown:
            raise ValueError(f"unknown {self.component} setting(s): {', '.join(unknown)}")
        out = self.defaults()
        for name, value in values.items():
            out[name] = self[name].check(value)
        return out


# ----------------------------------------------------------------------------- the planner and its LLM
# Defaults are the core objects' own (PlannerOptions, LlmConfig, Budget): declared once, there.
_OPT, _LLM, _BUDGET = PlannerOptions(), LlmConfig(), Budget()

GRAPH_WAIT_S = Setting(
    "graph_wait_s",
    5.0,
    "how long a goal waits for the scene graph: the first one after start-up, then the version its request follows, seconds",
    PER_GOAL,
    0.0,
    600.0,
)


PLANNER_SETTINGS = Settings(
    "planner",
    [
        Setting("planner", "sayplan", "default planner (a goal may name another)", PER_GOAL, choices=tuple(PLANNERS)),
        Setting("llm", _LLM.backend, "LLM backend; auto: OpenAI if a key is set, else Ollama, else local", choices=BACKENDS, flag="--llm"),
        Setting("model", _LLM.model, "model name (empty = the backend's default; a .gguf path for local)", flag="--model"),
        Setting("base_url", _LLM.base_url, "OpenAI-compatible or Ollama server URL (empty = default)", flag="--base-url"),
        Setting("api_key_env", _LLM.api_key_env, "environment variable holding the API key (never logged)", flag="--api-key-env"),
        Setting("temperature", _OPT.temperature, "sampling temperature", PER_GOAL, 0.0, 2.0, flag="--temperature"),
        Setting("timeout_s", _LLM.timeout_s, "deadline of one LLM call, seconds (the whole call, not each read)", minimum=0.1, maximum=3600.0, flag="--timeout"),
        Setting("retries", _BUDGET.max_transient_retries, "retries of a failed LLM call, with bounded backoff", minimum=0, maximum=20, flag="--retries"),
        Setting("max_replans", _OPT.max_replans, "replanning rounds (SayPlan: 5)", PER_GOAL, 0, 50, flag="--max-replans"),
        Setting("max_calls", _BUDGET.max_calls, "LLM calls per goal", PER_GOAL, 1, 10_000, flag="--max-calls"),
        Setting("max_tokens", _BUDGET.max_tokens, "LLM tokens per goal (tokens the server reports as used)", PER_GOAL, 1, 100_000_000, flag="--max-tokens"),
        Setting("max_answer_tokens", _OPT.max_answer_tokens, "completion tokens per LLM answer", PER_GOAL, 16, 100_000, flag="--max-answer-tokens"),
        Setting("embedder", _OPT.embedder, "embodiedrag/abstract embeddings: local (MiniLM, offline), openai:<model>, ollama:<model>", choices=("local",), flag="--embedder"),
        Setting("retrieval_top_k", _OPT.retrieval_top_k, "embodiedrag: entities retrieved per query", PER_GOAL, 1, 100, flag="--top-k"),
        Setting("retrieval_threshold", _OPT.retrieval_threshold, "embodiedrag: minimum cosine similarity of a retrieved entity", PER_GOAL, -1.0, 1.0, flag="--retrieval-threshold"),
        Setting("vector_store", _OPT.vector_store, "embodiedrag: vector search, both exact", choices=("faiss", "numpy"), flag="--vector-store"),
        Setting("candidate_plans", _OPT.candidate_plans, "abstract: candidate plans asked of the LLM", PER_GOAL, 1, 10, flag="--candidate-plans"),
        Setting("step_threshold", _OPT.step_threshold, "abstract: steps less relevant to the command than this are dropped", PER_GOAL, -1.0, 1.0, flag="--step-threshold"),
        Setting("reach_distance", _OPT.reach_distance, "ltl: an object's proposition holds within this distance of it, metres", PER_GOAL, 0.05, 100.0, flag="--reach-distance"),
        Setting("replay_transcript", "", "answer from this recorded transcript instead of an LLM (tests, demos)", names_file=True, flag="--replay"),
        Setting("record_transcript", "", "folder (node) or file (CLI) for the transcripts of every LLM exchange; one file per goal", names_file=True, flag="--record"),
        GRAPH_WAIT_S,
    ],
)  # fmt: skip


def llm_config(values: Mapping[str, Any]) -> LlmConfig:
    """The LLM backend configuration from checked planner settings."""
    replay = str(values["replay_transcript"])
    return LlmConfig(
        backend="replay" if replay else str(values["llm"]),
        model=str(values["model"]),
        base_url=str(values["base_url"]),
        api_key_env=str(values["api_key_env"]),
        temperature=float(values["temperature"]),
        timeout_s=float(values["timeout_s"]),
        retries=int(values["retries"]),
        replay_path=replay,
    )


def planner_options(values: Mapping[str, Any], action_set: str = "") -> PlannerOptions:
    """Planner options from checked planner settings."""
    budget = Budget(
        max_calls=int(values["max_calls"]),
        max_tokens=int(values["max_tokens"]),
        max_transient_retries=int(values["retries"]),
    )
    return PlannerOptions(
        max_replans=int(values["max_replans"]),
        action_set=action_set,
        budget=budget,
        temperature=float(values["temperature"]),
        max_answer_tokens=int(values["max_answer_tokens"]),
        embedder=str(values["embedder"]),
        retrieval_top_k=int(values["retrieval_top_k"]),
        retrieval_threshold=float(values["retrieval_threshold"]),
        vector_store=str(values["vector_store"]),
        candidate_plans=int(values["candidate_plans"]),
        step_threshold=float(values["step_threshold"]),
        reach_distance=float(values["reach_distance"]),
    )


# ----------------------------------------------------------------------------- the other nodes
EXECUTOR_SETTINGS = Settings(
    "executor",
    [
        Setting("max_replans", 3, "replans after skill failures before the task is aborted", PER_GOAL, 0, 50),
        Setting("plan_timeout_s", 900.0, "how long to wait for a plan_task result, seconds", PER_GOAL, 0.1, 86_400.0),
        Setting("skill_timeout_s", 120.0, "how long to wait for one execute_skill result, seconds", PER_GOAL, 0.1, 86_400.0),
        Setting("server_wait_s", 10.0, "how long to wait for a server to appear or accept a goal, seconds", PER_GOAL, 0.1, 600.0),
        Setting("planner", "", "planner to ask for (empty = the planner node's default)", PER_GOAL, choices=("", *PLANNERS)),
    ],
)  # fmt: skip

SCENE_GRAPH_SERVER_SETTINGS = Settings(
    "scene_graph_server",
    [
        Setting("env", "office", "bundled environment (office, home) or a graph file (native JSON, SayPlan/GRASIF JSON, 3DSG .npz)", names_file=True),
        Setting("frame_id", "map", "frame of node positions and markers"),
        Setting("allow_no_agent", False, "serve a graph without the robot in it (a map perception is building); planners need the agent"),
        Setting("full_graph_every", 50, "publish the full graph on scene_graph every N updates (0: only at start-up)", minimum=0, maximum=100_000),
        Setting("update_history", 100, "updates kept latched on scene_graph_updates for followers that join late", minimum=1, maximum=10_000),
        Setting("action_set_files", "", "comma-separated action-set YAML files verify_plan accepts by name, besides the bundled ones", names_file=True),
        Setting("journal_dir", "", "folder where every accepted update is journaled (fsynced) and the live graph resumed from after a crash or restart; empty: the graph lives in memory only", names_file=True),
        Setting("journal_compact_every", 1000, "journal: write a snapshot of the graph and empty the journal every N updates", minimum=1, maximum=1_000_000),
    ],
)  # fmt: skip

PATH_PLANNER_SETTINGS = Settings(
    "path_planner",
    [Setting("method", "dijkstra", "search algorithm", PER_GOAL, choices=("dijkstra", "astar"))],
)

# Navigation settings every robot backend that drives through Nav2 shares (defined once, listed in each table).
SITE_FILE = Setting(
    "site_file",
    "",
    "site bindings (YAML): node -> robot goal name and/or map pose; unbound rooms and poses use their graph position",
    names_file=True,
)
NAV2_ACTION = Setting(
    "nav2_action", "navigate_to_pose", "Nav2 NavigateToPose action the base drives through (navigation_backend nav2)"
)
NAV2_BEHAVIOR_TREE = Setting(
    "nav2_behavior_tree",
    "",
    "behavior tree file for NavigateToPose goals (empty: the navigator's default)",
    names_file=True,
)
SERVER_WAIT_S = Setting(
    "server_wait_s",
    5.0,
    "how long to wait for a robot action server (Nav2, arm, gripper) to appear or answer, seconds",
    PER_GOAL,
    0.1,
    600.0,
)
NAV2_LEG_TIMEOUT_S = Setting(
    "nav2_leg_timeout_s",
    100.0,
    "longest one NavigateToPose leg may take; then it is canceled and the skill ends timeout (keep it under the "
    "executor's skill_timeout_s), seconds",
    PER_GOAL,
    1.0,
    3600.0,
)
NAV2_CANCEL_TIMEOUT_S = Setting(
    "nav2_cancel_timeout_s",
    2.0,
    "how long Nav2 may take to confirm a cancel; after that the skill ends a latched robot_fault (the base may still "
    "move), seconds",
    PER_GOAL,
    0.1,
    60.0,
)

SIM_SKILL_SERVER_SETTINGS = Settings(
    "sim_skill_server",
    [
        Setting("env", "office", "environment the simulated world starts from (office, home or a graph file)", names_file=True),
        Setting("world_changes_file", "", "YAML list of changes that make the truth differ from the robot's graph", names_file=True),
        Setting("failures", "", "injected failures, comma-separated skill:target:code[:times] (codes: SkillOutcome names)"),
        Setting("skill_delay_s", 0.2, "simulated duration of every skill, seconds", minimum=0.0, maximum=3600.0),
        Setting("action_set", "sayplan", "action set the skills follow (a bundled name or a YAML file)", names_file=True),
        Setting("skills", "", "comma-separated skills the simulated robot has (empty: every skill of the action set)"),
        Setting("result_timeout_s", 10.0, "how long a finished skill's result is kept for its client, seconds", minimum=0.1, maximum=3600.0),
        Setting("navigation_backend", "sim", "sim: gotos only change the simulated world; nav2: each goto first drives the leg through Nav2", choices=("sim", "nav2")),
        SITE_FILE, NAV2_ACTION, NAV2_BEHAVIOR_TREE, SERVER_WAIT_S, NAV2_LEG_TIMEOUT_S, NAV2_CANCEL_TIMEOUT_S,
    ],
)  # fmt: skip


# ----------------------------------------------------------------------------- Franka arm on an Omron LD base
FRANKA_OMRON_SKILL_SERVER_SETTINGS = Settings(
    "franka_omron_skill_server",
    [
        Setting("navigation_backend", "arcl", "how the base is driven: arcl (Omron LD over ARCL, TCP) or nav2 (NavigateToPose)", choices=("arcl", "nav2")),
        SITE_FILE,
        Setting("motions_file", "", "taught arm motions per asset (YAML); empty: the robot offers only goto and done", names_file=True),
        Setting("arcl_host", "", "address of the Omron base's ARCL server (navigation_backend arcl)"),
        Setting("arcl_port", 7171, "ARCL TCP port", minimum=1, maximum=65535),
        Setting("arcl_password_env", "SAYPLAN_ARCL_PASSWORD", "environment variable holding the ARCL password (never logged)"),
        Setting("arcl_timeout_s", 10.0, "how long to wait for the base to connect, log in or answer a query, seconds", minimum=0.1, maximum=600.0),
        NAV2_ACTION, NAV2_BEHAVIOR_TREE, NAV2_LEG_TIMEOUT_S, NAV2_CANCEL_TIMEOUT_S,
        Setting("arm_action", "/fr3_arm_controller/follow_joint_trajectory", "FollowJointTrajectory action of the arm's trajectory controller"),
        Setting("gripper_grasp_action", "/franka_gripper/grasp", "franka_gripper Grasp action"),
        Setting("gripper_move_action", "/franka_gripper/move", "franka_gripper Move action"),
        Setting("gripper_homing_action", "/franka_gripper/homing", "franka_gripper Homing action"),
        Setting("home_gripper", True, "home the gripper before its first use (its width is unknown after a power cycle)"),
        Setting("grasp_width", 0.04, "finger width expected around a grasped object, m (a motions-file grasp overrides it)", PER_GOAL, 0.0, 0.08),
        Setting("grasp_force", 20.0, "grasp force, N (the Franka Hand holds at most 70 N continuously)", PER_GOAL, 1.0, 70.0),
        Setting("grasp_speed", 0.05, "finger speed when grasping, m/s", PER_GOAL, 0.001, 0.2),
        Setting("grasp_epsilon", 0.01, "how far from the expected width the fingers may stop and still hold, m", PER_GOAL, 0.0, 0.08),
        Setting("open_width", 0.08, "finger width when opening the gripper, m", PER_GOAL, 0.0, 0.08),
        Setting("gripper_speed", 0.1, "finger speed when opening, m/s", PER_GOAL, 0.001, 0.2),
        Setting("arm_time_tolerance_s", 0.5, "how long after a taught motion's end the arm may take to settle, s", PER_GOAL, 0.0, 60.0),
        Setting("gripper_state_topic", "/franka_gripper/joint_states", "franka_gripper's finger joint states, read back after every skill but done"),
        Setting("gripper_stop_service", "/franka_gripper/stop", "franka_gripper's stop service (std_srvs/Trigger), called on shutdown while a gripper command runs"),
        Setting("hand_readback_s", 1.0, "how long to wait for a fresh gripper state when reading the hand back, seconds", PER_GOAL, 0.05, 30.0),
        Setting("gripper_width_tolerance", 0.005, "fingers within this of closed, or of where they were opened to, hold nothing, m", PER_GOAL, 0.0005, 0.02),
        Setting("drive_timeout_s", 100.0, "longest one drive of the base (an ARCL goto or gotoPoint, a Nav2 leg) may take before it is stopped (timeout), seconds", PER_GOAL, 1.0, 3600.0),
        Setting("arm_timeout_s", 10.0, "longest an arm motion may take beyond its taught duration before it is canceled (timeout), seconds", PER_GOAL, 0.1, 600.0),
        Setting("gripper_timeout_s", 15.0, "longest a grasp, opening or homing of the gripper may take before it is canceled (timeout), seconds", PER_GOAL, 0.1, 600.0),
        Setting("stop_timeout_s", 2.0, "how long the base may take to confirm a stop (ARCL Stopped) before that is a latched fault, seconds", PER_GOAL, 0.1, 30.0),
        Setting("arm_cancel_timeout_s", 5.0, "how long the arm's or gripper's server may take to confirm a cancel before that is a latched fault, seconds", PER_GOAL, 0.1, 60.0),
        Setting("arcl_status_period_s", 0.5, "seconds between the watchdog's ARCL status queries while the base drives", PER_GOAL, 0.05, 10.0),
        Setting("arcl_silence_s", 3.0, "a base that sends nothing this long while it drives (no answer to status) ends the drive as a latched robot fault, seconds", PER_GOAL, 0.2, 60.0),
        SERVER_WAIT_S,
        GRAPH_WAIT_S,
    ],
)  # fmt: skip


PERCEPTION_SETTINGS = Settings(
    "perception",
    [
        Setting("room_regions_file", "", "YAML mapping room id -> [[x_min, y_min], [x_max, y_max]] (empty: nearest room/pose node)", names_file=True),
        Setting("asset_labels", ",".join(sorted(DEFAULT_ASSETS)), "comma-separated labels of immovable assets"),
        Setting("container_labels", ",".join(sorted(DEFAULT_CONTAINERS)), "assets whose inside can hold objects"),
        Setting("voxel", 0.025, "voxel size of object clouds, metres", minimum=0.001, maximum=1.0),
        Setting("match_threshold", 1.1, "geometric overlap + semantic similarity needed to merge a detection", minimum=0.0, maximum=2.0),
        Setting("min_detections", 2, "objects seen fewer times are dropped at finalize", minimum=1, maximum=1000),
    ],
)  # fmt: skip

# ----------------------------------------------------------------------------- robot `spot` (sayplan_spot)
# The robot's address is a parameter; the login never is: it is read from the environment variables named here.
SPOT_SKILL_SERVER_SETTINGS = Settings(
    "spot_skill_server",
    [
        Setting("hostname", "192.168.80.3", "the robot's address (hostname or IP; 192.168.80.3 is Spot's own WiFi access point)"),
        Setting("port", 0, "the robot's gRPC port (0: the SDK's default, 443)", minimum=0, maximum=65535),
        Setting("ca_cert_file", "", "root certificate the robot's TLS certificate is checked against (empty: the one bundled with bosdyn-client)", names_file=True),
        Setting("username_env", "BOSDYN_CLIENT_USERNAME", "environment variable holding the robot user name (never logged)"),
        Setting("password_env", "BOSDYN_CLIENT_PASSWORD", "environment variable holding the robot password (never logged)"),
        Setting("site_file", "", "site file: scene-graph node -> GraphNav waypoint and/or map pose, plus handles and places (sayplan_core.robots.spot)", names_file=True),
        Setting("action_set", "spot", "the action set plans are written in (spot_lookplangraph for the lookplangraph planner)", choices=("spot", "spot_lookplangraph")),
        Setting("take_lease", False, "take the body lease even when another client (the tablet) holds it"),
        Setting("power_off_on_exit", True, "sit and power the motors off when the node stops"),
        Setting("connect_timeout_s", 30.0, "how long connecting, powering on and standing may take, seconds", minimum=1.0, maximum=600.0),
        Setting("rpc_timeout_s", 5.0, "deadline of every single call to the robot (a command, a feedback or state read, a stop), seconds; the SDK's own default is 30 s", minimum=0.1, maximum=60.0),
        GRAPH_WAIT_S,
        Setting("lease_check_in_s", 1.0, "seconds between lease keep-alive check-ins", minimum=0.05, maximum=10.0),
        Setting("feedback_period_s", 0.1, "seconds between feedback requests while a command runs", PER_GOAL, 0.01, 5.0),
        Setting("navigate_timeout_s", 120.0, "longest a navigate_to or a walk may take, seconds", PER_GOAL, 1.0, 3600.0),
        Setting("arm_timeout_s", 30.0, "longest a grasp, place or arm move may take, seconds", PER_GOAL, 0.1, 600.0),
        Setting("handle_pull_s", 3.0, "how long open/close pull or push a grasped handle (position-controlled constrained manipulation) before letting go, seconds", PER_GOAL, 0.05, 60.0),
        Setting("max_walk_m", 15.0, "farthest a body trajectory goes to a node without a waypoint, metres", PER_GOAL, 0.5, 200.0),
        Setting("standoff_m", 0.8, "how far from an asset the robot stands to reach it, metres", PER_GOAL, 0.3, 3.0),
        Setting("place_height_m", 0.8, "hand height above an asset's position to let go at, when the site file has no place for it", PER_GOAL, 0.0, 2.0),
        Setting("image_source", "hand_color_image", "camera that look_on / look_inside capture", PER_GOAL),
        Setting("vlm_llm", "", "VLM backend that names what look_on / look_inside see (empty: capture only)", choices=("", *BACKENDS)),
        Setting("vlm_model", "", "VLM model name (empty: the backend's default)"),
        Setting("vlm_base_url", "", "VLM server URL (empty: the backend's default)"),
        Setting("vlm_api_key_env", "OPENAI_API_KEY", "environment variable holding the VLM API key (never logged)"),
        Setting("vlm_replay_transcript", "", "answer the VLM from this recorded transcript (tests)", names_file=True),
    ],
)  # fmt: skip


#: Every node's settings, by node name (the keys of the config files).
NODE_SETTINGS: dict[str, Settings] = {
    "scene_graph_server": SCENE_GRAPH_SERVER_SETTINGS,
    "path_planner": PATH_PLANNER_SETTINGS,
    "planner": PLANNER_SETTINGS,
    "executor": EXECUTOR_SETTINGS,
    "sim_skill_server": SIM_SKILL_SERVER_SETTINGS,
    "perception": PERCEPTION_SETTINGS,
    "spot_skill_server": SPOT_SKILL_SERVER_SETTINGS,
    "franka_omron_skill_server": FRANKA_OMRON_SKILL_SERVER_SETTINGS,
}


def markdown_table(nodes: Mapping[str, Settings] | None = None) -> str:
    """The README's parameter table, generated from the settings (a test keeps the README equal to it)."""
    lines = [
        "| node | parameter | default | range | read | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for node, settings in (nodes or NODE_SETTINGS).items():
        for index, s in enumerate(settings):
            text = s.default_text()
            default = f"`{text if len(text) <= 40 else text[:37] + '...'}`" if text else "empty"
            read = "start-up" if s.read_only else "per goal"
            label = f"`{node}`" if index == 0 else ""
            lines.append(f"| {label} | `{s.name}` | {default} | {s.range_text()} | {read} | {s.description} |")
    return "\n".join(lines)
