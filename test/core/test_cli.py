"""The `sayplan` CLI: outputs, exit codes and one-line errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from sayplan_core.cli import main
from sayplan_core.envs import load_env
from sayplan_core.sim import verify_plan


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_env_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["env", "list"], capsys)
    assert code == 0 and out.split() == ["office", "home"]
    code, out, _ = run(["--json", "env", "show", "home"], capsys)
    data = json.loads(out)
    assert code == 0 and data["counts"]["room"] == 28 and data["counts"]["floor"] == 3


def test_env_tokens_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--json", "env", "tokens", "office", "--encoding", "o200k_base"], capsys)
    table = json.loads(out)
    assert code == 0 and table["encoding"] == "o200k_base"
    assert table["collapsed_tokens"] < table["full_tokens"]


def test_verify_success_and_failure_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(["goto(kitchen)", "turn_on(coffee_machine)", "done"]))
    code, out, _ = run(["verify", "--env", "office", "--plan", str(plan), "--expand", "--strict"], capsys)
    assert code == 0 and out.startswith("plan verified (8 steps): goto(pose8)")
    code, out, _ = run(["--json", "verify", "--env", "office", "--plan", "goto(kitchen) > pickup(orange)"], capsys)
    result = json.loads(out)
    assert code == 1 and result["failed_step"] == 1
    assert result["feedback"].startswith("cannot pickup(orange): orange is on kitchen_bench")


def test_path_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--json", "path", "--env", "office", "--to", "cafeteria", "--method", "astar"], capsys)
    data = json.loads(out)
    assert code == 0 and data["nodes"][0] == "pose7" and data["nodes"][-1] == "cafeteria"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["env", "show", "hospital"], "unknown environment 'hospital'"),
        (["verify", "--env", "office", "--plan", "goto(kitchen) > pick up mug"], "cannot read 'pick up mug'"),
        (["path", "--env", "office", "--to", "fridge"], "goal 'fridge' is an asset"),
        (["verify", "--env", "office", "--plan", "done", "--action-set", "nope"], "unknown action set 'nope'"),
    ],
)
def test_errors_are_one_line_with_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sayplan: error: ") and message in err


def test_demo_shows_the_closed_loop(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["demo"], capsys)
    assert code == 0
    assert "cannot pickup(coffee_mug): it is inside kitchen_cupboard, which is closed" in out
    assert "plan verified" in out and "goal met" in out and "replanning rounds 1" in out


def test_a_stepwise_run_ended_by_the_model_says_what_was_executed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13: five refused moves and then done() is not 'verified after 5 replanning rounds: done'."""
    from transcripts import write_transcript

    def move(name: str, target: str) -> str:
        return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})

    bad = [move("pick_up", "kitchen_bench")] * 5  # an asset: refused each time
    path = write_transcript(tmp_path / "lpg.json", move("go_to", "kitchen"), *bad, move("done", ""))
    code, out, _ = run(
        ["plan", "--env", "office", "--instruction", "x", "--planner", "lookplangraph", "--replay", str(path)], capsys
    )
    assert code == 0
    summary = next(line for line in out.splitlines() if line.startswith("lookplangraph:"))
    assert summary == (
        "lookplangraph: executed 1 action(s) step by step (5 infeasible proposal(s) refused), "
        "then the model ended the task: go_to(kitchen) > done"
    )


# ------------------------------------------------------------------ issue 11: one-line errors, never a traceback
@pytest.mark.parametrize(
    ("make_plan", "message"),
    [
        (lambda d: str(d), "it is a folder"),
        (lambda d: "", "--plan is empty"),
        (lambda d: "   ", "--plan is empty"),
        (lambda d: _write(d / "plan.json", b"\xff\xfe not utf-8"), "not UTF-8 text"),
        (lambda d: _write(d / "deep.json", b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
        (lambda d: str(d / "missing.json"), "No such file"),
    ],
)
def test_verify_plan_argument_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_plan: Any, message: str
) -> None:
    code, out, err = run(["verify", "--env", "office", "--plan", make_plan(tmp_path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["verify", "--env", "office"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "the following arguments are required: --plan" in err


def test_a_deeply_nested_graph_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("{" + '"a":{' * 50_000 + "}" * 50_001)
    code, out, err = run(["env", "show", str(deep)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "nested too deeply" in err


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`sayplan env show BIG --text | head -1`: no BrokenPipe traceback, the exit code of a SIGPIPE."""
    import subprocess
    import sys

    from sayplan_core.envs.generator import generate_building, spec_for_size
    from sayplan_core.graph.native_format import save

    big = tmp_path / "big.json"
    save(generate_building(spec_for_size(3000, seed=1)), big)  # its text is far more than a pipe buffer holds
    reader = subprocess.Popen(
        [sys.executable, "-m", "sayplan_core.cli", "env", "show", str(big), "--text"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()
    reader.stdout.close()  # what head does after its line
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 141
    assert first.startswith(b"building_") and err == "", err


def test_lookplangraph_tells_the_model_when_a_step_changed_nothing() -> None:
    """Under the noop policy a repeated open succeeds; the next prompt says it changed nothing."""
    from transcripts import transcript

    from sayplan_core.envs import load_env
    from sayplan_core.llm.replay import RecordingBackend
    from sayplan_core.planners import make_planner

    def move(name: str, target: str) -> str:
        return json.dumps({"chain_of_thought": "", "next_move": {"function_name": name, "function_target": target}})

    answers = [move("go_to", "kitchen"), move("open", "fridge"), move("open", "fridge"), move("done", "")]
    recorder = RecordingBackend(transcript(*answers))
    result = make_planner("lookplangraph", recorder).plan(load_env("office"), "open the fridge")
    assert result.success and [str(s) for s in result.plan] == [
        "go_to(kitchen)",
        "open(fridge)",
        "open(fridge)",
        "done",
    ]
    last_prompt = recorder.calls[3]["messages"][1]["content"]
    assert "open(fridge): fridge is already open; nothing to do" in last_prompt
    assert "already open" not in recorder.calls[2]["messages"][1]["content"]


# ------------------------------------------------------------------ issue 13 review: verify with other action sets
@pytest.mark.parametrize("flag", ["--strict", "--expand"])
def test_pose_by_pose_flags_are_refused_for_a_set_that_cannot_name_poses(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # lookplangraph's go_to takes rooms: --strict asked for pose hops it cannot write, --expand wrote them
    code, _, err = run(
        ["verify", "--env", "office", "--action-set", "lookplangraph", flag, "--plan", "go_to(kitchen) > done"], capsys
    )
    assert code == 2
    assert f"{flag} spells out every pose on the way, and lookplangraph's go_to takes only room nodes" in err
    with pytest.raises(ValueError, match="strict navigation walks pose by pose"):
        verify_plan(load_env("office"), "go_to(kitchen) > done", "lookplangraph", strict_navigation=True)


def test_verify_prints_the_notes_of_repeated_steps(capsys: pytest.CaptureFixture[str]) -> None:
    plan = "go_to(kitchen) > open(fridge) > close(fridge) > close(fridge) > done"
    code, out, _ = run(["verify", "--env", "office", "--action-set", "lookplangraph", "--plan", plan], capsys)
    assert code == 0 and "note: step 3 close(fridge): fridge is already closed; nothing to do" in out
    code, out, _ = run(["--json", "verify", "--env", "office", "--action-set", "lookplangraph", "--plan", plan], capsys)
    assert json.loads(out)["notes"] == ["step 3 close(fridge): fridge is already closed; nothing to do"]


# ------------------------------------------------------------------ --version and global flags anywhere
def _leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command the parser knows, with its parser, found by walking argparse's own subparser tables."""
    found: list[tuple[tuple[str, ...], Any]] = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found.extend(_leaf_parsers(child, (*path, name)))
    return found


def test_a_command_declared_when_chosen_takes_and_shows_what_the_whole_tree_declares(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`sayplan X --help` declares X's flags only once X is chosen: its help is the one the whole tree (as the
    reference page reads it) shows for X, for every command and group."""
    from sayplan_core.cli import build_parser

    parsers = _leaf_parsers(build_parser(declared=True))
    assert len(parsers) >= 12
    for path, parser in parsers:
        with pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        out, err = capsys.readouterr()
        assert done.value.code == 0 and err == "", path
        assert out == parser.format_help(), f"sayplan {' '.join(path)} --help differs from the declared tree's"


def test_version_is_the_installed_distributions_and_matches_package_xml(capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from importlib import metadata

    installed = metadata.version("sayplan_core")
    manifest = Path(__file__).resolve().parents[2] / "src" / "sayplan_core" / "package.xml"
    assert ET.parse(manifest).getroot().findtext("version") == installed  # the two may not drift apart
    for argv in (["--version"], ["path", "--version"], ["env", "show", "--version"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        out, err = capsys.readouterr()
        assert done.value.code == 0 and out == f"sayplan {installed}\n" and err == "", argv
    shell = subprocess.run([sys.executable, "-m", "sayplan_core.cli", "--version"], capture_output=True, text=True)
    assert shell.returncode == 0 and shell.stdout == f"sayplan {installed}\n"


@pytest.mark.parametrize(
    "command",
    [
        ["env", "list"],
        ["env", "show", "home"],
        ["env", "tokens", "office"],
        ["path", "--env", "office", "--to", "cafeteria"],
        ["verify", "--env", "office", "--plan", "goto(kitchen) > pickup(orange)"],
        ["llm", "which", "--llm", "ollama"],
    ],
)
def test_json_after_the_subcommand_is_the_same_as_before(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code_before, before, _ = run(["--json", *command], capsys)
    code_after, after, _ = run([*command, "--json"], capsys)
    code_plain, plain, _ = run(command, capsys)
    assert code_before == code_after == code_plain
    assert json.loads(after) == json.loads(before)
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain)  # without --json anywhere: text (the flag after a command does not stick)


def test_every_command_takes_the_global_flags() -> None:
    from sayplan_core.cli import build_parser

    parsers = _leaf_parsers(build_parser(declared=True))
    assert len(parsers) >= 12  # the top level, env and llm groups, and every command
    for path, parser in parsers:
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert {"--json", "--version"} <= flags, f"sayplan {' '.join(path)} lacks a global flag"
