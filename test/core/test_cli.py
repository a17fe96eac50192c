"""The `sayplan` CLI: outputs, exit codes and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sayplan_core.cli import main


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
        (["path", "--env", "office", "--to", "fridge"], "goal 'fridge' is a asset"),
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
