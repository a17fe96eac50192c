"""The options of the stack's own nodes, one typed dataclass per node (see `sayplan_core.options`).

Planners and robots declare theirs beside their code (a planner's `Options`, a robot
plugin's `Options`); the fields several components share are declared once here, as
functions that return a fresh field, so every table that lists them says the same.
Defaults that a core object already holds (LlmConfig, Budget) are taken from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sayplan_core.llm.selection import BACKENDS, LlmConfig
from sayplan_core.llm.session import Budget
from sayplan_core.options import option
from sayplan_core.perception.labels import DEFAULT_ASSETS, DEFAULT_CONTAINERS

_LLM, _BUDGET = LlmConfig(), Budget()


# ----------------------------------------------------------------------------- fields several nodes share
def graph_wait_option() -> Any:
    return option(
        5.0,
        "how long a goal waits for the scene graph: the first one after start-up, then the version its request "
        "follows, seconds",
        minimum=0.0,
        maximum=600.0,
        per_goal=True,
    )


@dataclass(frozen=True)
class NavigationOptions:
    """What every robot that drives its base to graph nodes (through Nav2 or its own link) reads; a robot's
    options extend it, so each table lists these fields first and alike."""

    site_file: str = option(
        "",
        "site bindings (YAML): node -> robot goal name and/or map pose; unbound rooms and poses use their graph "
        "position",
        names_file=True,
    )
    nav2_action: str = option(
        "navigate_to_pose", "Nav2 NavigateToPose action the base drives through (navigation_backend nav2)"
    )
    nav2_behavior_tree: str = option(
        "", "behavior tree file for NavigateToPose goals (empty: the navigator's default)", names_file=True
    )
    driver_wait_s: float = option(
        5.0,
        "how long to wait for a robot driver's action server (Nav2, arm, gripper) to appear or answer, seconds",
        minimum=0.1,
        maximum=600.0,
        per_goal=True,
    )
    nav2_leg_timeout_s: float = option(
        100.0,
        "longest one NavigateToPose leg may take; then it is canceled and the skill ends timeout (keep it under "
        "the executor's skill_timeout_s), seconds",
        minimum=1.0,
        maximum=3600.0,
        per_goal=True,
    )
    nav2_cancel_timeout_s: float = option(
        2.0,
        "how long Nav2 may take to confirm a cancel; after that the skill ends a latched robot_fault (the base may "
        "still move), seconds",
        minimum=0.1,
        maximum=60.0,
        per_goal=True,
    )


# ----------------------------------------------------------------------------- the planner node
def _is_planner(value: Any) -> bool:
    from sayplan_core.planners import PLANNERS

    return value in PLANNERS


@dataclass(frozen=True)
class PlannerNodeOptions:
    """The planner node's own options: which planners it offers, its LLM, its budget. The planners' common
    options are `PlannerOptions`, each planner's own ones its `Options` (namespaced `<planner>.<field>`)."""

    planner: str = option(
        "sayplan",
        "default planner (a goal may name another)",
        choices=(),
        accepts=_is_planner,
        accepts_text="an installed planner (sayplan plugins)",
        per_goal=True,
    )
    planners: str = option("", "comma-separated planners this node offers (empty: every installed planner)")
    llm: str = option(
        _LLM.backend,
        "LLM backend; auto: OpenAI if a key is set, else Ollama, else local",
        choices=BACKENDS,
        flag="--llm",
    )
    model: str = option(
        _LLM.model,
        "model name (empty = the backend's default); local: a model pack (qwen-1.5b, qwen-0.5b, gemma-270m) or a "
        ".gguf path",
        flag="--model",
    )
    base_url: str = option(_LLM.base_url, "OpenAI-compatible or Ollama server URL (empty = default)", flag="--base-url")
    api_key_env: str = option(
        _LLM.api_key_env, "environment variable holding the API key (never logged)", flag="--api-key-env"
    )
    timeout_s: float = option(
        _LLM.timeout_s,
        "deadline of one LLM call, seconds (the whole call, not each read); 0: the backend's default, 60 s for a "
        "server, 600 s for the embedded model",
        minimum=0.0,
        maximum=3600.0,
        flag="--timeout",
    )
    retries: int = option(
        _BUDGET.max_transient_retries,
        "retries of a failed LLM call, with bounded backoff",
        minimum=0,
        maximum=20,
        flag="--retries",
    )
    max_calls: int = option(
        _BUDGET.max_calls, "LLM calls per goal", minimum=1, maximum=10_000, per_goal=True, flag="--max-calls"
    )
    max_tokens: int = option(
        _BUDGET.max_tokens,
        "LLM tokens per goal (tokens the server reports as used)",
        minimum=1,
        maximum=100_000_000,
        per_goal=True,
        flag="--max-tokens",
    )
    replay_transcript: str = option(
        "",
        "answer from this recorded transcript instead of an LLM (tests, demos)",
        names_file=True,
        flag="--replay",
    )
    record_transcript: str = option(
        "",
        "folder (node) or file (CLI) for the transcripts of every LLM exchange; one file per goal",
        names_file=True,
        flag="--record",
    )
    graph_wait_s: float = graph_wait_option()

    def offered(self) -> tuple[str, ...]:
        """The planners this node offers (every installed one unless `planners` names some)."""
        from sayplan_core.planners import PLANNERS

        named = tuple(p.strip() for p in self.planners.split(",") if p.strip())
        return named or tuple(PLANNERS)

    def llm_config(self, temperature: float) -> LlmConfig:
        """The LLM backend's configuration (a replay transcript replaces the backend)."""
        return LlmConfig(
            backend="replay" if self.replay_transcript else self.llm,
            model=self.model,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            temperature=temperature,
            timeout_s=self.timeout_s,
            retries=self.retries,
            replay_path=self.replay_transcript,
        )

    def budget(self) -> Budget:
        return Budget(max_calls=self.max_calls, max_tokens=self.max_tokens, max_transient_retries=self.retries)


# ----------------------------------------------------------------------------- the other core nodes
@dataclass(frozen=True)
class ExecutorOptions:
    max_execution_replans: int = option(
        3, "replans after skill failures before the task is aborted", minimum=0, maximum=50, per_goal=True
    )
    plan_timeout_s: float = option(
        900.0, "how long to wait for a plan_task result, seconds", minimum=0.1, maximum=86_400.0, per_goal=True
    )
    skill_timeout_s: float = option(
        120.0, "how long to wait for one execute_skill result, seconds", minimum=0.1, maximum=86_400.0, per_goal=True
    )
    action_server_wait_s: float = option(
        10.0,
        "how long to wait for the planner's or the robot's action server to appear or accept a goal, seconds",
        minimum=0.1,
        maximum=600.0,
        per_goal=True,
    )
    planner: str = option(
        "",
        "planner to ask for (empty = the planner node's default)",
        choices=("",),
        accepts=_is_planner,
        accepts_text="an installed planner (sayplan plugins)",
        per_goal=True,
    )


@dataclass(frozen=True)
class SceneGraphServerOptions:
    env: str = option(
        "office",
        "bundled environment (office, home) or a graph file (native JSON, SayPlan/GRASIF JSON, 3DSG .npz)",
        names_file=True,
    )
    frame_id: str = option("map", "frame of node positions and markers")
    allow_no_agent: bool = option(
        False, "serve a graph without the robot in it (a map perception is building); planners need the agent"
    )
    full_graph_every: int = option(
        0,
        "publish the full graph on scene_graph every N updates (0: only at start-up; followers that join late or "
        "miss an update fetch it from get_scene_graph)",
        minimum=0,
        maximum=100_000,
    )
    update_history: int = option(
        100, "updates kept latched on scene_graph_updates for followers that join late", minimum=1, maximum=10_000
    )
    action_set_files: str = option(
        "",
        "comma-separated action-set YAML files verify_plan accepts by name, besides the bundled ones",
        names_file=True,
    )
    journal_dir: str = option(
        "",
        "folder where every accepted update is journaled (fsynced) and the live graph resumed from after a crash or "
        "restart; empty: the graph lives in memory only",
        names_file=True,
    )
    journal_compact_every: int = option(
        1000,
        "journal: write a snapshot of the graph and empty the journal every N updates",
        minimum=1,
        maximum=1_000_000,
    )


@dataclass(frozen=True)
class PathPlannerOptions:
    method: str = option("dijkstra", "search algorithm", choices=("dijkstra", "astar"), per_goal=True)


@dataclass(frozen=True)
class PerceptionOptions:
    room_regions_file: str = option(
        "",
        "YAML mapping room id -> [[x_min, y_min], [x_max, y_max]] (empty: nearest room/pose node)",
        names_file=True,
    )
    asset_labels: str = option(",".join(sorted(DEFAULT_ASSETS)), "comma-separated labels of immovable assets")
    container_labels: str = option(",".join(sorted(DEFAULT_CONTAINERS)), "assets whose inside can hold objects")
    voxel: float = option(0.025, "voxel size of object clouds, metres", minimum=0.001, maximum=1.0)
    match_threshold: float = option(
        1.1, "geometric overlap + semantic similarity needed to merge a detection", minimum=0.0, maximum=2.0
    )
    min_detections: int = option(2, "objects seen fewer times are dropped at finalize", minimum=1, maximum=1000)


@dataclass(frozen=True)
class FoxgloveBridgeOptions:
    host: str = option(
        "127.0.0.1",
        "address the Foxglove WebSocket server binds to (127.0.0.1: this machine only; any other address shows the "
        "graph, the plan and the diagnostics to whoever reaches it, without authentication)",
    )
    port: int = option(8765, "TCP port of the Foxglove WebSocket server (0: any free port)", minimum=0, maximum=65535)
    page_port: int = option(
        8766,
        "TCP port of the HTTP server that hands out the monitor page (sayplan_core/viz/monitor.html), bound to `host` "
        "(0: any free port; -1: no page)",
        minimum=-1,
        maximum=65535,
    )
    client_backlog: int = option(
        1024,
        "messages queued per viewer; a viewer that falls further behind loses its oldest (the stack never waits)",
        minimum=16,
        maximum=100_000,
    )
    frame_id: str = option("map", "frame of the scene graph's entities")


# ----------------------------------------------------------------------------- lifecycle and recording
@dataclass(frozen=True)
class ManagedNodeOptions:
    """What every managed node reads besides its own options (sayplan_ros.lifecycle)."""

    autostart: bool = option(
        False, "configure and activate at start-up, without a lifecycle manager (a node run alone)"
    )


@dataclass(frozen=True)
class LifecycleManagerOptions:
    node_names: tuple[str, ...] = option((), "the managed nodes, in start-up order (empty: the sim stack's)")
    autostart: bool = option(True, "configure and activate every node at start-up")
    node_wait_s: float = option(
        30.0, "how long to wait for a node's lifecycle services to appear, seconds", minimum=0.1, maximum=3600.0
    )
    transition_timeout_s: float = option(
        120.0, "how long one node may take for one transition, seconds", minimum=0.1, maximum=3600.0
    )
    monitor_wait_s: float = option(
        3.0,
        "after a failed start-up, how long to wait for a /diagnostics subscriber (a monitor) to be matched so it "
        "hears why before the program ends, seconds (a stack that fails at once can end before discovery matched "
        "a monitor that is already running)",
        minimum=0.0,
        maximum=60.0,
    )


@dataclass(frozen=True)
class BagRecorderOptions:
    output: str = option("", "bag folder to create (must not exist)", names_file=True)
    storage: str = option("mcap", "rosbag2 storage plugin", choices=("mcap", "sqlite3"))
