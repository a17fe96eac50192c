"""Planners and robots are plugins: a package adds one through entry points alone, with its own typed options.

The test plugin package (test/plugins) is installed into a temporary folder as pip would install it, and the
`sayplan` CLI runs in a subprocess with that folder on PYTHONPATH: nothing of the stack is edited, and this
process's registry never sees the plugin. The oracle for a plan is the scene-graph simulator's own replay of it
and the graph's room list, not the planner's word.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_install import env_with, install

from sayplan_core.envs import load_env
from sayplan_core.sim.plan import parse_step
from sayplan_core.sim.simulator import verify_plan

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPT = ROOT / "src" / "sayplan_ros" / "transcripts" / "demo_office_lh05.json"  # a valid file: never asked
INSTRUCTION = "Make Niko a coffee and place the mug on his desk."  # the transcript's (a replay checks it)


def sayplan(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sayplan_core.cli", *args]
    return subprocess.run(command, env=env_with(site), capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("dummy"))


def test_an_installed_plugin_is_listed_with_its_options(site: Path) -> None:
    done = sayplan(site, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    planners = {p["id"]: p for p in listed["planners"]}
    robots = {r["id"]: r for r in listed["robots"]}
    assert {"sayplan", "ltl", "dummy"} <= set(planners) and {"sim", "spot", "franka_omron", "dummy"} <= set(robots)
    assert [(o["name"], o["default"], o["range"]) for o in planners["dummy"]["options"]] == [
        ("destination", "kitchen", ""),
        ("laps", 1, "1..3"),
    ]
    assert robots["dummy"]["node"] == "dummy_skill_server" and listed["left_out"] == []
    assert [o["name"] for o in robots["dummy"]["options"]] == ["env", "greeting"]


def test_without_the_plugin_installed_it_is_not_there(tmp_path: Path) -> None:
    done = sayplan(tmp_path, "plugins", "--json")  # an empty folder on PYTHONPATH
    assert done.returncode == 0, done.stderr
    assert "dummy" not in {p["id"] for p in json.loads(done.stdout)["planners"]}


@pytest.mark.parametrize(("room", "laps"), [("kitchen", 1), ("mail_room", 2), ("cafeteria", 3)])
def test_a_goal_runs_through_the_plugin_planner_with_its_options_from_the_cli(site: Path, room: str, laps: int) -> None:
    args = ["plan", "--env", "office", "--instruction", INSTRUCTION, "--planner", "dummy", "--replay", str(TRANSCRIPT)]
    done = sayplan(site, *args, "--destination", room, "--laps", str(laps), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["planner"] == "dummy" and result["success"] and result["calls"] == []
    office = load_env("office")
    steps = [parse_step(s) for s in (_step(text) for text in result["full_plan"])]
    replay = verify_plan(office, steps)  # the simulator's own replay, not the planner's word
    assert replay.success, replay.feedback
    visits = [s.target for s in steps if s.action == "goto"].count(room)
    assert visits == laps and room in office.ids_of_type("room")


def _step(text: str) -> dict[str, Any]:
    action, _, rest = text.partition("(")
    return {"action": action, "target": rest.rstrip(")")}


def test_a_plugin_option_out_of_its_range_is_refused_naming_the_flag(site: Path) -> None:
    args = ["plan", "--env", "office", "--instruction", INSTRUCTION, "--planner", "dummy", "--replay", str(TRANSCRIPT)]
    done = sayplan(site, *args, "--laps", "4")
    assert done.returncode == 2 and "--laps must be <= 3, got 4" in done.stderr, done.stderr


def test_a_broken_plugin_is_left_out_with_the_reason_and_the_others_still_work(tmp_path: Path) -> None:
    broken = "[sayplan.planners]\nghost = no_such_module:Ghost\nsayplan = sayplan_dummy_plugin:DummyPlanner\n"
    site = install(tmp_path, broken)
    done = sayplan(site, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    left_out = " | ".join(listed["left_out"])
    assert "'ghost' (no_such_module:Ghost): cannot be loaded: ModuleNotFoundError" in left_out
    # a third party cannot take a built-in id: the bundled sayplan planner stays
    assert "'sayplan' (sayplan_dummy_plugin:DummyPlanner): a plugin of this id is already registered" in left_out
    assert {p["id"]: p["summary"] for p in listed["planners"]}["sayplan"].startswith("SayPlan:")
    assert "ghost" not in {p["id"] for p in listed["planners"]}


def test_a_bench_row_records_every_option_and_a_resume_with_one_changed_is_refused(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    bench = [
        "bench",
        "--planners",
        "dummy,ltl",
        "--ids",
        "office-lh-05",
        "--out",
        str(out),
        "--replay",
        str(TRANSCRIPT),
    ]
    done = sayplan(site, *bench, "--destination", "mail_room")
    assert done.returncode in (0, 3), done.stderr  # ltl asks the LLM: its transcript is another task's
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    settings = rows[0]["settings"]
    for name in ("max_replans", "max_search_steps", "temperature", "max_answer_tokens", "max_calls", "max_tokens"):
        assert name in settings, name
    assert settings["dummy.destination"] == "mail_room" and settings["dummy.laps"] == 1
    assert settings["ltl.reach_distance"] == 1.0  # once missing: 0.5 m and 5 m runs looked alike
    for changed in (
        ["--destination", "mail_room", "--laps", "2"],
        ["--destination", "mail_room", "--reach-distance", "5"],
    ):
        again = sayplan(site, *bench, *changed)
        assert again.returncode == 2, again.stderr
        assert "made with other settings" in again.stderr, again.stderr
    same = sayplan(site, *bench, "--destination", "mail_room")
    assert same.returncode in (0, 3) and "made with other settings" not in same.stderr, same.stderr


#: A third party's mistakes, each its own plugin (review of issue 26): a default out of its own range or choices,
#: a default of a type no parameter has, and fields named like the CLI's own flags and dests.
HOSTILE = '''
from dataclasses import dataclass

from sayplan_core.options import option
from sayplan_core.planners.base import Planner


class _Echo(Planner):
    """Succeeds at once with its options as the message, so a test reads what reached the planner."""

    def _run(self, job):
        job.result.success, job.result.message = True, repr(self.config)


@dataclass(frozen=True)
class OutOfRange:
    laps: int = option(0, "a default below its own minimum", minimum=1, maximum=3)


@dataclass(frozen=True)
class NotAChoice:
    mode: str = option("z", "a default not among its choices", choices=("a", "b"))


@dataclass(frozen=True)
class NoneDefault:
    thing: str = option(None, "a default no parameter type holds")


@dataclass(frozen=True)
class Clash:
    env: str = option("e", "named like plan --env")
    json: str = option("j", "named like the global --json")
    func: str = option("f", "named like the subcommand's dest")
    limit: int = option(1, "named like bench --limit", minimum=0, maximum=9)


@dataclass(frozen=True)
class Lists:
    rooms: tuple = option(("kitchen",), "a list of strings")


class ListsPlanner(_Echo):
    name, Options = "lists", Lists


class NoRun(Planner):
    name = "no_run"  # never implements _run: it cannot be made


class OutOfRangePlanner(_Echo):
    name, Options = "out_of_range", OutOfRange


class NotAChoicePlanner(_Echo):
    name, Options = "not_a_choice", NotAChoice


class NoneDefaultPlanner(_Echo):
    name, Options = "none_default", NoneDefault


class ClashPlanner(_Echo):
    name, Options = "clash", Clash
'''


def install_hostile(folder: Path, planners: dict[str, str]) -> Path:
    """A third-party dist (not ours: no `sayplan_` prefix) whose entry points are `planners` (id -> class)."""
    site = folder / "site"
    site.mkdir()
    (site / "acme_hostile.py").write_text(HOSTILE, encoding="utf-8")
    info = site / "acme_hostile-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme_hostile\nVersion: 0.1.0\n", encoding="utf-8")
    points = "".join(f"{name} = acme_hostile:{cls}\n" for name, cls in planners.items())
    (info / "entry_points.txt").write_text(f"[sayplan.planners]\n{points}", encoding="utf-8")
    return site


def plan_args(planner: str) -> list[str]:
    return ["plan", "--env", "office", "--instruction", INSTRUCTION, "--planner", planner, "--replay", str(TRANSCRIPT)]


def test_a_plugin_whose_defaults_fail_their_own_declaration_is_left_out_and_the_others_still_plan(
    tmp_path: Path,
) -> None:
    bad = {
        "out_of_range": "OutOfRangePlanner",
        "not_a_choice": "NotAChoicePlanner",
        "none_default": "NoneDefaultPlanner",
    }
    site = install_hostile(tmp_path, bad)
    listed = sayplan(site, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    left_out = " | ".join(json.loads(listed.stdout)["left_out"])
    assert "'out_of_range' (acme_hostile:OutOfRangePlanner): its Options" in left_out and "laps" in left_out
    assert "'not_a_choice' (acme_hostile:NotAChoicePlanner): its Options" in left_out and "mode" in left_out
    assert "'none_default' (acme_hostile:NoneDefaultPlanner): its Options" in left_out and "thing" in left_out
    assert not set(bad) & {p["id"] for p in json.loads(listed.stdout)["planners"]}
    done = sayplan(site, *plan_args("sayplan"), "--json")  # once refused: "--laps must be >= 1, got 0"
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["success"]


def test_a_plugin_option_named_like_a_cli_flag_takes_its_planner_s_flag_and_breaks_no_command(tmp_path: Path) -> None:
    site = install_hostile(tmp_path, {"clash": "ClashPlanner"})
    listed = sayplan(site, "plugins")  # once: a traceback (argparse: conflicting option string: --env)
    assert listed.returncode == 0 and "clash" in listed.stdout, listed.stderr
    done = sayplan(site, *plan_args("sayplan"), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["success"], done.stderr
    flags = ["--clash-env", "E", "--clash-json", "J", "--func", "F", "--limit", "7"]  # plan has no --limit
    done = sayplan(site, *plan_args("clash"), *flags, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # --json still means JSON output, and the command still runs
    assert result["message"] == "Clash(env='E', json='J', func='F', limit=7)"
    refused = sayplan(site, *plan_args("clash"), "--limit", "10")
    assert refused.returncode == 2 and "--limit must be <= 9, got 10" in refused.stderr, refused.stderr
    bench = sayplan(site, "bench", "--help")  # bench has its own --limit: the field's flag is its planner's
    assert bench.returncode == 0 and "--clash-limit CLASH_LIMIT" in bench.stdout, bench.stdout


def test_a_third_party_named_like_our_packages_cannot_take_a_bundled_robot_s_id(tmp_path: Path) -> None:
    """Only our own distributions rank first: a `sayplan_acme` earlier on the path once replaced Spot."""
    from sayplan_core.plugins import ROBOT_REGISTRY

    if "spot" not in ROBOT_REGISTRY:
        pytest.skip("sayplan_spot is not installed here: run through scripts/ws_env.sh after scripts/colcon_build.sh")
    site = tmp_path / "site"
    site.mkdir()
    module = "from sayplan_core.plugins import RobotPlugin\n"
    module += "SPOT = RobotPlugin('spot', 'not Spot', 'spot_skill_server', 'acme', 'x', 'acme_spot:Nothing')\n"
    (site / "acme_spot.py").write_text(module, encoding="utf-8")
    info = site / "sayplan_acme-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sayplan_acme\nVersion: 0.1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[sayplan.robots]\nspot = acme_spot:SPOT\n", encoding="utf-8")
    done = sayplan(site, "plugins", "--json")  # the site is first on PYTHONPATH: its entry point is found first
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert {r["id"]: r["summary"] for r in listed["robots"]}["spot"].startswith("Boston Dynamics Spot")
    assert "'spot' (acme_spot:SPOT): a plugin of this id is already registered" in " | ".join(listed["left_out"])


def test_a_plugin_list_option_is_a_comma_separated_flag(tmp_path: Path) -> None:
    """Once, `--rooms kitchen,cafeteria` became the characters of the text: ('k', 'i', ...)."""
    site = install_hostile(tmp_path, {"lists": "ListsPlanner"})
    done = sayplan(site, *plan_args("lists"), "--rooms", "kitchen, cafeteria", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["message"] == "Lists(rooms=('kitchen', 'cafeteria'))"
    default = sayplan(site, *plan_args("lists"), "--json")
    assert json.loads(default.stdout)["message"] == "Lists(rooms=('kitchen',))", default.stderr


def test_a_planner_that_cannot_be_made_is_left_out_not_an_internal_error(tmp_path: Path) -> None:
    site = install_hostile(tmp_path, {"no_run": "NoRun"})
    listed = sayplan(site, "plugins", "--json")
    assert "'no_run' (acme_hostile:NoRun): its class is abstract" in " | ".join(json.loads(listed.stdout)["left_out"])
    done = sayplan(site, *plan_args("no_run"))  # once: "internal error: TypeError ... (please report it)"
    assert done.returncode == 2 and "invalid choice: 'no_run'" in done.stderr, done.stderr
