"""Every command the README (and docs/*.md) shows is run, so it cannot drift from the code.

The commands are read from the fenced code blocks: every line of a `bash`/`sh`/`shell`/`console` block (continuations
joined, comments dropped), and every `$ ` line of a `text` block, whose following lines are its expected output.
Each command must be in COVERAGE: run here (cheap and offline, with a timeout), run by a named test or CI script
(which must contain the command or the entry point it calls), or listed as not runnable here with the reason (a
robot, a Docker engine, a ROS CLI, a live LLM), which the test prints. A command in no entry fails with its line.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*```(\S*)\s*$")
TIMEOUT_S = 300


@dataclass(frozen=True)
class Command:
    path: Path
    line: int
    text: str
    output: tuple[str, ...] | None = None  # a `$ ` line of a text block: what it prints

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Run:
    """Run by this test (from the repository root), and it must exit 0."""


@dataclass(frozen=True)
class Elsewhere:
    """Run by `file` (a test or a CI script), which must contain `needle` (the command or its entry point)."""

    file: str
    needle: str


@dataclass(frozen=True)
class NotHere:
    """Cannot run on this machine; `reason` says why (printed by the test)."""

    reason: str


DOCKER = "no Docker engine on this machine; hadolint checks the Dockerfiles in test/core/test_packaging.py"
ROS_CLI = "the ros2 command line (ros2cli) is not in the PyPI wheels this machine runs"
COVERAGE: dict[str, Run | Elsewhere | NotHere] = {
    # quick start
    "make demo": Elsewhere("Makefile", "$(WS) sayplan_demo --llm $(LLM)"),
    "make test": Elsewhere(".ci/run", "exec make test"),
    # the operator's clear (a service call; the tests call the same service through rclpy)
    "ros2 service call /sim_skill_server/clear_fault std_srvs/srv/Trigger": Elsewhere(
        "test/ros/test_sim_fault_latch.py", "clear_fault"
    ),
    "ros2 service call /spot_skill_server/clear_fault std_srvs/srv/Trigger": Elsewhere(
        "test/ros/test_spot_failsafe.py", "clear_fault"
    ),
    "ros2 service call /spot_skill_server/stand_up std_srvs/srv/Trigger": Elsewhere(
        "test/ros/test_spot_failsafe.py", "stand_up"
    ),
    "ros2 service call /franka_omron_skill_server/clear_fault std_srvs/srv/Trigger": Elsewhere(
        "test/ros/test_franka_failsafe.py", "clear_fault"
    ),
    # a ROS 2 install
    "source /opt/ros/jazzy/setup.bash": NotHere("no /opt/ros on this machine: ROS 2 comes from PyPI wheels"),
    "sudo -E scripts/install_deps.sh all planners": NotHere(
        "needs /opt/ros, rosdep and root; test/core/test_packaging.py runs its check-keys, check-pip and pip steps"
    ),
    "sayplan --version": Elsewhere("test/core/test_packaging.py", "sayplan --help"),
    "sayplan --help": Elsewhere("test/core/test_packaging.py", "sayplan --help"),
    "colcon build --symlink-install": Elsewhere("scripts/colcon_build.sh", "--symlink-install"),
    "source install/setup.bash": Elsewhere("test/core/test_packaging.py", "install/setup.bash"),
    "ros2 launch sayplan_ros sayplan.launch.py robot:=sim": Elsewhere("test/ros/test_shutdown.py", "sayplan.launch.py"),
    "docker build -f docker/Dockerfile -t sayplan:jazzy .": NotHere(DOCKER),
    "docker build -f docker/spot.Dockerfile -t sayplan-spot:jazzy .": NotHere(DOCKER),
    "docker compose -f docker/compose.spot-jetson.yaml up": NotHere(DOCKER),
    "docker build -f docker/Dockerfile --build-arg ROS_DISTRO=humble --build-arg EXTRAS= -t sayplan:humble .": NotHere(
        DOCKER
    ),
    # the LLM's reachability
    "OLLAMA_HOST=10.0.0.5:11434 sayplan llm check --llm ollama": Elsewhere(
        "test/core/test_llm_probe.py", "sayplan llm check --llm ollama"
    ),
    "sayplan llm check --llm openai --model gpt-4o-mini --probe-timeout 3": NotHere(
        "needs an OpenAI key; test/core/test_llm_probe.py probes an OpenAI-compatible local server the same way"
    ),
    # diagnostics
    "ros2 topic echo /diagnostics diagnostic_msgs/msg/DiagnosticArray": NotHere(
        ROS_CLI + "; test/ros/test_diagnostics.py subscribes to /diagnostics through rclpy"
    ),
    "ros2 run rqt_robot_monitor rqt_robot_monitor": NotHere("rqt is a GUI that is not in the PyPI wheels"),
    # replay
    "scripts/ws_env.sh sayplan_replay runs/demo_20261125_034854": Elsewhere(
        "test/ros/test_replay.py", "sayplan_replay"
    ),
    "scripts/ws_env.sh python -m sayplan_ros.bag_player runs/demo_20261125_034854/bag --rate 1.0 --linger 30": Elsewhere(
        "test/ros/test_bag.py", "sayplan_ros.bag_player"
    ),
    "ros2 bag play runs/demo_20261125_034854/bag --clock": NotHere(
        "rosbag2 is not in the PyPI wheels; test/ros/test_bag.py plays the bag with sayplan_ros.bag_player"
    ),
    "ros2 launch sayplan_ros sayplan.launch.py robot:=sim use_sim_time:=true": Elsewhere(
        "test/ros/test_sim_time.py", "use_sim_time"
    ),
    "colcon build --symlink-install && source install/setup.bash": Elsewhere(
        "scripts/colcon_build.sh", "--symlink-install"
    ),
    "ros2 launch sayplan_ros sayplan.launch.py robot:=sim planner:=sayplan llm:=auto env:=office rviz:=true": Elsewhere(
        "test/launch/sayplan_sim_launch.py", "sayplan.launch.py"
    ),
    'ros2 action send_goal /execute_task sayplan_interfaces/action/ExecuteTask "{instruction: '
    "'Make Niko a coffee and place the mug on his desk.'}\" --feedback": NotHere(
        ROS_CLI + "; test/launch/sayplan_sim_launch.py sends the same execute_task goal through rclpy"
    ),
    # without ros2 launch
    "scripts/ws_env.sh sayplan_stack [--robot sim] --ros-args --params-file config/sayplan.yaml --params-file "
    "config/robots/sim.yaml": Elsewhere("test/ros/test_executables.py", "sayplan_stack"),
    "scripts/ws_env.sh sayplan_demo [--llm auto] [--failure pickup:coffee_mug:grasp_failed] [--storage sqlite3] "
    "[--namespace ns] [--verbose]": Elsewhere("test/ros/test_demo.py", '"sayplan_demo"'),
    # the Foxglove bridge (docs/howto/monitor.md)
    "scripts/ws_env.sh sayplan_demo --foxglove": Elsewhere("test/ros/test_foxglove_bridge.py", '"--foxglove"'),
    "scripts/ws_env.sh sayplan_demo --foxglove --stay": Elsewhere("test/ros/test_monitor_page.py", '"--stay"'),
    "make monitor": Elsewhere("Makefile", "pytest: build test-overlay test-llm monitor"),
    "SAYPLAN_TEST_OVERLAY=1 SAYPLAN_REGENERATE_SCREENSHOTS=1 scripts/ws_env.sh python -m pytest -q "
    "test/ros/test_monitor_page.py": Elsewhere("test/ros/test_monitor_page.py", "SAYPLAN_REGENERATE_SCREENSHOTS"),
    "ros2 launch sayplan_ros sayplan.launch.py robot:=sim foxglove:=true foxglove_port:=8765": NotHere(
        ROS_CLI + "; test/ros/test_foxglove_bridge.py checks the parameters these arguments give the bridge"
    ),
    # the sayplan command
    "scripts/ws_env.sh sayplan env list": Run(),
    "scripts/ws_env.sh sayplan env show home": Run(),
    "scripts/ws_env.sh sayplan env tokens office --encoding o200k_base": Run(),
    "scripts/ws_env.sh sayplan env import test/core/data/sayplan_appendix_l.json /tmp/appendix_l.json": Run(),
    "scripts/ws_env.sh sayplan env import test/core/data/grasif_node_list_tasks.json /tmp/grasif/": Run(),
    # Hydra graphs (docs/howto/hydra.md): export, import back and plan on it, in this order, by one test
    "scripts/ws_env.sh sayplan env export office /tmp/office.sparkdsg": Elsewhere(
        "test/core/test_spark_dsg.py", '["env", "export", "office"'
    ),
    "scripts/ws_env.sh sayplan env import /tmp/office.sparkdsg /tmp/office_from_hydra.json": Elsewhere(
        "test/core/test_spark_dsg.py", '["env", "import", str(out), str(back)]'
    ),
    "scripts/ws_env.sh sayplan path --env /tmp/office_from_hydra.json --to cafeteria": Elsewhere(
        "test/core/test_spark_dsg.py", '["path", "--env", str(back), "--to", "cafeteria"]'
    ),
    'scripts/ws_env.sh sayplan verify --env office --plan "goto(kitchen) > done" --expand --strict': Run(),
    "scripts/ws_env.sh sayplan path --env home --from kitchen --to bedroom5 --method astar": Run(),
    "scripts/ws_env.sh sayplan demo --task office-lh-05": Run(),
    # docs/ltl.md: a given formula, no LLM
    """scripts/ws_env.sh sayplan plan --env office --formula '["AND", ["EVENTUALLY", "reach(apple1)"], """
    """["ALWAYS", ["NOT", "enter(kitchen)"]]]'""": Run(),
    'scripts/ws_env.sh sayplan plan --env office --formula "& F apple1 G ! kitchen" --reach-distance 1.5': Run(),
    # planners with a live LLM
    'scripts/ws_env.sh sayplan plan --env office --instruction "Make Niko a coffee and place the mug on his desk." '
    "--planner sayplan --llm auto [--model gpt-4o] [--record run.json]": NotHere(
        "needs a live LLM (OPENAI_API_KEY or an Ollama server); test/core/test_cli.py runs `plan` on a transcript"
    ),
    'scripts/ws_env.sh sayplan plan --env office --instruction "..." --replay run.json': Elsewhere(
        "test/core/test_cli.py", '"--replay"'
    ),
    "scripts/ws_env.sh sayplan bench --planners sayplan,sayplan_lite,llm_p,llm_as_planner,lookplangraph,embodiedrag,"
    "embodiedrag_strict,abstract,ltl --llm openai --out bench_out [--families long_horizon] "
    "[--ids office-lh-05,...] [--record-dir t/ | --replay-dir t/] [--fresh]": NotHere(
        "needs an OpenAI key; test/core/test_bench.py runs the bench on replayed transcripts"
    ),
    "scripts/ws_env.sh sayplan bench --llm local --ids office-ss-02,office-sp-01,office-sp-12 --planners "
    "sayplan,sayplan_lite,llm_p,llm_as_planner --max-calls 6 --max-answer-tokens 300 --out bench_out": NotHere(
        "34 minutes with the embedded model (make local-llm); its figures are in docs/measured/gemma3_270m/"
    ),
    "scripts/ws_env.sh python scripts/bench_planners.py --out docs/measured/planners.md": NotHere(
        "a 2.5-minute benchmark that rewrites docs/measured/planners.md; run by hand when the planners change"
    ),
    "scripts/ws_env.sh python scripts/bench_planning_overhead.py --write docs/measured/planning_overhead.md": Elsewhere(
        "test/core/test_planning_overhead_bench.py", "scripts/bench_planning_overhead.py"
    ),
    "scripts/ws_env.sh python scripts/bench_planning_overhead.py --planners llm_as_planner --sizes 1000 "
    "--profile /tmp/plan.prof": Elsewhere("test/core/test_planning_overhead_bench.py", "--profile"),
    # the embedded model packs (docs/howto/llm.md)
    "scripts/install_local_llm.sh": Elsewhere("Makefile", "bash scripts/install_local_llm.sh"),
    "scripts/install_local_llm.sh qwen-0.5b gemma-270m": NotHere(
        "downloads 0.75 GB of model parts from PyPI (and builds llama.cpp if it is not there); "
        "test/core/test_model_packs.py runs the script's checks and the install steps on a small fake pack"
    ),
    "make local-llm PACKS=all": NotHere(
        "downloads 1.9 GB of model parts from PyPI (and builds llama.cpp if it is not there); "
        "test/core/test_model_packs.py runs the install steps on a small fake pack"
    ),
    "scripts/ws_env.sh python -m sayplan_core.llm.model_packs list": Run(),
    # Spot's payload network
    "sudo nmcli con add type ethernet ifname eth0 con-name spot-payload ipv4.method manual ipv4.addresses "
    '192.168.50.5/24 ipv4.routes "192.168.80.0/24 192.168.50.3" ipv4.never-default yes': NotHere(
        "configures the network port wired to a Spot"
    ),
    "sudo nmcli con up spot-payload && ping -c1 192.168.50.3": NotHere("needs a Spot on the payload port"),
}


def _strip_comment(line: str) -> str:
    """The line without a `#` comment (a `#` inside quotes, or glued to a word, is kept)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def extract(path: Path) -> tuple[list[Command], list[int]]:
    """The commands of `path` and the lines of fences without a language."""
    commands: list[Command] = []
    unlabeled: list[int] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    language: str | None = None
    pending: list[str] = []
    start = 0
    transcript: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence:
            if language is None:
                language = fence.group(1)
                if not language:
                    unlabeled.append(number)
            else:
                for first, text, output in transcript:
                    commands.append(Command(path, first, text, tuple(output)))
                language, pending, transcript = None, [], []
            continue
        if language in SHELL_BLOCKS:
            text = _strip_comment(line).strip()
            if not text and not pending:
                continue
            if not pending:
                start = number
            if text.endswith("\\"):
                pending.append(text[:-1].strip())
                continue
            pending.append(text)
            commands.append(Command(path, start, " ".join(part for part in pending if part)))
            pending = []
        elif language == "text":
            if line.startswith("$ "):
                transcript.append((number, line[2:].strip(), []))
            elif transcript:
                transcript[-1][2].append(line)
    return commands, unlabeled


ALL = [command for path in DOCUMENTS for command in extract(path)[0]]


def test_every_code_block_names_its_language() -> None:
    """A command cannot hide from this test in a fence without a language."""
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in DOCUMENTS for line in extract(path)[1]]
    assert not bad, f"fenced blocks without a language (use bash for commands, text for the rest): {bad}"


def test_every_command_is_covered() -> None:
    shell = [command for command in ALL if command.output is None]
    missing = [f"{command.where()}: {command.text}" for command in shell if command.text not in COVERAGE]
    assert not missing, "commands that no test, CI script or 'not runnable here' entry covers:\n" + "\n".join(missing)
    shown = {command.text for command in shell}
    stale = [text for text in COVERAGE if text not in shown]
    assert not stale, f"COVERAGE names commands no document shows any more: {stale}"


def test_commands_run_elsewhere_are_in_the_named_files() -> None:
    for text, coverage in COVERAGE.items():
        if isinstance(coverage, Elsewhere):
            named = ROOT / coverage.file
            assert named.is_file(), f"{text!r}: {coverage.file} does not exist"
            assert coverage.needle in named.read_text(encoding="utf-8"), (
                f"{text!r}: {coverage.file} does not contain {coverage.needle!r}"
            )


def test_commands_not_runnable_here_say_why() -> None:
    not_here = {text: c.reason for text, c in COVERAGE.items() if isinstance(c, NotHere)}
    for text, reason in not_here.items():
        assert reason.strip(), text
        print(f"not runnable here: {text}\n    because {reason}")


def _run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


@pytest.mark.parametrize("command", [t for t, c in COVERAGE.items() if isinstance(c, Run)])
def test_the_cheap_commands_run(command: str) -> None:
    done = _run(command)
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


TRANSCRIPTS = [command for command in ALL if command.output is not None]


@pytest.mark.parametrize("command", TRANSCRIPTS, ids=[command.where() for command in TRANSCRIPTS])
def test_the_shown_output_is_what_the_command_prints(command: Command) -> None:
    """A `$ sayplan ...` example prints exactly the lines shown under it (stdout, then stderr)."""
    assert command.text.startswith("sayplan "), f"{command.where()}: only sayplan examples are run here"
    done = _run(f"scripts/ws_env.sh {command.text}")
    printed = (done.stdout + done.stderr).rstrip("\n").splitlines()
    assert printed == list(command.output), f"{command.where()}: {command.text}"


def test_the_extractor_joins_continuations_and_drops_comments(tmp_path: Path) -> None:
    """The extraction itself, on a small document: continuations, comments, `#` in quotes, transcripts."""
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nmake demo   # the main job\n\n# a comment line\nfoo --a \\\n    --b '#not a comment'\n```\n"
        "```text\n$ sayplan env list\noffice\nhome\nnot a command\n```\n",
        encoding="utf-8",
    )
    commands, unlabeled = extract(page)
    assert [c.text for c in commands] == ["make demo", "foo --a --b '#not a comment'", "sayplan env list"]
    assert [c.line for c in commands] == [2, 5, 9] and unlabeled == []
    assert commands[2].output == ("office", "home", "not a command")


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_resolves() -> None:
    """The README's and docs' links to files of the repository (docs moved out of the README included) exist."""
    broken = []
    for path in DOCUMENTS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                if not (path.parent / target.split("#")[0]).exists():
                    broken.append(f"{path.relative_to(ROOT)}:{number}: {target}")
    assert not broken, f"links to missing files: {broken}"
