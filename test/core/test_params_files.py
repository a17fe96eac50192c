"""sayplan_core.params_files: what a params file and a `-p` rule give, and the check against the nodes'
declarations (issue 39 items 6, 7 and 9; the stack and launch tests are test/ros/test_params_given.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sayplan_core import params_files, settings
from sayplan_core.params_files import check_arguments, notes_lines

ROOT = Path(__file__).resolve().parents[2]


def problems(tmp_path: Path, text: str, *rules: str) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    args = ["--ros-args", "--params-file", str(path)]
    for rule in rules:
        args += ["-p", rule]
    return check_arguments(args).lines()


def test_the_shipped_params_files_pass() -> None:
    for path in sorted((ROOT / "config").rglob("*.yaml")):
        report = check_arguments(["--ros-args", "--params-file", str(path)])
        assert report.count == 0 and not notes_lines(report), (path, report.lines())


def test_namespaces_wildcards_and_nested_options_are_read_as_rcl_reads_them(tmp_path: Path) -> None:
    text = (
        "/robot1/planner:\n  ros__parameters:\n    temprature: 0.1\n"
        "robot2:\n  executor:\n    ros__parameters:\n      max_execution_replan: 1\n"
        "/**/planner:\n  ros__parameters:\n    embodiedrag:\n      retrieval_top_kk: 3\n"
        "/**:\n  ros__parameters:\n    use_sim_time: true\n    map_frame: map\n"
    )
    found = problems(tmp_path, text)
    assert any("section /robot1/planner: planner has no parameter temprature (did you mean temperature?)" in p
               for p in found), found  # fmt: skip
    assert any("section robot2/executor: executor has no parameter max_execution_replan" in p for p in found), found
    assert any("embodiedrag.retrieval_top_kk (did you mean embodiedrag.retrieval_top_k?)" in p for p in found), found
    assert len(found) == 3, found  # map_frame in /** may be another program's: each node warns about it


def test_types_as_rcl_and_rclpy_take_them(tmp_path: Path) -> None:
    text = (
        "sim_skill_server:\n  ros__parameters:\n    skill_delay_s: 1\n    env: 3\n    failures: ''\n"
        "planner:\n  ros__parameters:\n    timeout_s: 1e3\n    planners: [sayplan]\n"
        "lifecycle_manager:\n  ros__parameters:\n    node_names: [planner, sim_skill_server]\n"
    )
    found = problems(tmp_path, text, "executor:planner:=3", "executor:plan_timeout_s:=10.0")
    joined = "\n".join(found)
    assert "skill_delay_s is given an integer (1), declared a double: write 1.0" in joined
    assert "env is given an integer (3), declared a string: put the value in quotes" in joined
    assert "timeout_s is given a string ('1e3'), declared a double: write it with a decimal point" in joined
    assert "-p executor:planner:=3: executor's parameter planner is given an integer (3)" in joined
    assert len(found) == 4 + ("planners" in joined), found  # planners is a string: a list is refused too


def test_aliases_and_layouts_rcl_would_not_read_are_refused(tmp_path: Path) -> None:
    text = "a: &x\n  ros__parameters: {temperature: 0.1}\nplanner: *x\n"
    (found,) = problems(tmp_path, text)
    assert "alias" in found and "refused" in found, found
    (found,) = problems(tmp_path, "planner:\n  temperature: 0.1\n")
    assert "section planner/temperature: expected ros__parameters under it, found a double" in found, found
    (found,) = problems(tmp_path, "- planner\n")
    assert "expected node names at the top level, found a string array" in found, found


def test_sections_for_other_programs_are_said_and_a_typo_of_ours_refused(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("amcl:\n  ros__parameters: {a: 1}\nexector:\n  ros__parameters: {a: 1}\n", encoding="utf-8")
    report = check_arguments(["--ros-args", "--params-file", str(path)])
    assert report.lines() == [f"params file {path}, section exector: no node of the stack is named exector "
                              "(did you mean executor?)"]  # fmt: skip
    assert notes_lines(report) == ["params file section(s) for no node of the stack, ignored by it: amcl"]


def count_close_names(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    calls = [0]
    real = module.close_names

    def counted(*args: Any, **kwargs: Any) -> list[str]:
        calls[0] += 1
        return list(real(*args, **kwargs))

    monkeypatch.setattr(module, "close_names", counted)
    return calls


def test_twenty_thousand_names_are_bounded_work_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 9: a closest name is looked for only for what is shown, the rest are counted."""
    calls = count_close_names(monkeypatch, params_files)
    names = "".join(f"    unknown_{i}: 1\n" for i in range(20_000))
    found = problems(tmp_path, f"planner:\n  ros__parameters:\n{names}")
    assert len(found) == 21 and found[-1] == "and 19980 more problem(s)", found[-1]
    assert calls[0] <= params_files.MAX_SHOWN
    calls[0] = 0
    path = tmp_path / "site.yaml"
    path.write_text(f"/**:\n  ros__parameters:\n{names}", encoding="utf-8")
    report = check_arguments(["--ros-args", "--params-file", str(path)])
    assert report.count == 0 and calls[0] <= params_files.MAX_EXAMINED
    assert notes_lines(report) == [f"{20_000 - params_files.MAX_EXAMINED} more parameter(s) of /** sections that no "
                                   f"node of the stack has were not checked for typos (over 200)"]  # fmt: skip
    calls = count_close_names(monkeypatch, settings)
    refused, unread = settings.not_in_the_stack("planner", [f"site_{i}" for i in range(20_000)])
    assert refused == "" and len(unread) == 20_000 and calls[0] <= settings.MAX_EXAMINED


def test_a_file_over_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, f'planner:\n  ros__parameters:\n    model: "{"A" * 2_000_000}"\n')
    assert found.endswith("over the 1 MB limit") and len(found) < 300, found[:300]
