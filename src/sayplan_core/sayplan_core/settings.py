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
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got '{value}'")
        return value

    def range_text(self) -> str:
        if self.choices:
            return " | ".join(self.choices)
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else f"{self.minimum:g}"
            high = "" if self.maximum is None else f"{self.maximum:g}"
            return f"{low}..{high}"
        return ""


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
PLANNER_SETTINGS = Settings(
    "planner",
    [
        Setting("planner", "sayplan", "default planner (a goal may name another)", PER_GOAL, choices=tuple(PLANNERS)),
        Setting("llm", "auto", "LLM backend; auto: OpenAI if a key is set, else Ollama, else local", choices=BACKENDS, flag="--llm"),
        Setting("model", "", "model name (empty = the backend's default; a .gguf path for local)", flag="--model"),
        Setting("base_url", "", "OpenAI-compatible or Ollama server URL (empty = default)", flag="--base-url"),
        Setting("api_key_env", "OPENAI_API_KEY", "environment variable holding the API key (never logged)", flag="--api-key-env"),
        Setting("temperature", 0.0, "sampling temperature", PER_GOAL, 0.0, 2.0, flag="--temperature"),
        Setting("timeout_s", 60.0, "deadline of one LLM call, seconds (the whole call, not each read)", minimum=0.1, maximum=3600.0, flag="--timeout"),
        Setting("retries", 4, "retries of a failed LLM call, with bounded backoff", minimum=0, maximum=20, flag="--retries"),
        Setting("max_replans", 5, "replanning rounds (SayPlan: 5)", PER_GOAL, 0, 50, flag="--max-replans"),
        Setting("max_calls", 40, "LLM calls per goal", PER_GOAL, 1, 10_000, flag="--max-calls"),
        Setting("max_tokens", 250_000, "LLM tokens per goal (tokens the server reports as used)", PER_GOAL, 1, 100_000_000, flag="--max-tokens"),
        Setting("max_answer_tokens", 1024, "completion tokens per LLM answer", PER_GOAL, 16, 100_000, flag="--max-answer-tokens"),
        Setting("embedder", "local", "embodiedrag/abstract embeddings: local (MiniLM, offline), openai:<model>, ollama:<model>", choices=("local",), flag="--embedder"),
        Setting("retrieval_top_k", 3, "embodiedrag: entities retrieved per query", PER_GOAL, 1, 100, flag="--top-k"),
        Setting("retrieval_threshold", 0.45, "embodiedrag: minimum cosine similarity of a retrieved entity", PER_GOAL, -1.0, 1.0, flag="--retrieval-threshold"),
        Setting("vector_store", "faiss", "embodiedrag: vector search, both exact", choices=("faiss", "numpy"), flag="--vector-store"),
        Setting("candidate_plans", 3, "abstract: candidate plans asked of the LLM", PER_GOAL, 1, 10, flag="--candidate-plans"),
        Setting("step_threshold", 0.5, "abstract: steps less relevant to the command than this are dropped", PER_GOAL, -1.0, 1.0, flag="--step-threshold"),
        Setting("replay_transcript", "", "answer from this recorded transcript instead of an LLM (tests, demos)", names_file=True, flag="--replay"),
        Setting("record_transcript", "", "folder (node) or file (CLI) for the transcripts of every LLM exchange; one file per goal", names_file=True, flag="--record"),
        Setting("graph_wait_s", 5.0, "how long a goal that arrives right after start-up waits for the first scene graph", PER_GOAL, 0.0, 600.0),
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

SIM_SKILL_SERVER_SETTINGS = Settings(
    "sim_skill_server",
    [
        Setting("env", "office", "environment the simulated world starts from (office, home or a graph file)", names_file=True),
        Setting("world_changes_file", "", "YAML list of changes that make the truth differ from the robot's graph", names_file=True),
        Setting("failures", "", "injected failures, comma-separated skill:target:code[:times] (codes: SkillOutcome names)"),
        Setting("skill_delay_s", 0.2, "simulated duration of every skill, seconds", minimum=0.0, maximum=3600.0),
        Setting("action_set", "sayplan", "action set the skills follow (a bundled name or a YAML file)", names_file=True),
        Setting("skills", "", "comma-separated skills the simulated robot has (empty: every skill of the action set)"),
        Setting("navigation_backend", "sim", "sim: gotos only change the simulated world; nav2: each goto first drives the leg through Nav2", choices=("sim", "nav2")),
        SITE_FILE, NAV2_ACTION, NAV2_BEHAVIOR_TREE, SERVER_WAIT_S,
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
        NAV2_ACTION, NAV2_BEHAVIOR_TREE,
        Setting("arm_action", "/fr3_arm_controller/follow_joint_trajectory", "FollowJointTrajectory action of the arm's trajectory controller"),
        Setting("gripper_grasp_action", "/franka_gripper/grasp", "franka_gripper Grasp action"),
        Setting("gripper_move_action", "/franka_gripper/move", "franka_gripper Move action"),
        Setting("gripper_homing_action", "/franka_gripper/homing", "franka_gripper Homing action"),
        Setting("home_gripper", True, "home the gripper before its first use (its width is unknown after a power cycle)"),
        Setting("grasp_width", 0.04, "finger width expected around a grasped object, m (a motions-file grasp overrides it)", PER_GOAL, 0.0, 0.08),
        Setting("grasp_force", 20.0, "grasp force, N", PER_GOAL, 1.0, 140.0),
        Setting("grasp_speed", 0.05, "finger speed when grasping, m/s", PER_GOAL, 0.001, 0.2),
        Setting("grasp_epsilon", 0.01, "how far from the expected width the fingers may stop and still hold, m", PER_GOAL, 0.0, 0.08),
        Setting("open_width", 0.08, "finger width when opening the gripper, m", PER_GOAL, 0.0, 0.08),
        Setting("gripper_speed", 0.1, "finger speed when opening, m/s", PER_GOAL, 0.001, 0.2),
        Setting("arm_time_tolerance_s", 0.5, "how long after a taught motion's end the arm may take to settle, s", PER_GOAL, 0.0, 60.0),
        SERVER_WAIT_S,
        Setting("graph_wait_s", 5.0, "how long a skill that arrives right after start-up waits for the first scene graph", PER_GOAL, 0.0, 600.0),
    ],
)  # fmt: skip
