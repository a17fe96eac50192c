"""Every setting declared once: config files and the parameter reference agree with the tables; the checks hold.

A misspelled planner option is refused with the name meant."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.settings import PER_GOAL, STARTUP, Setting, node_settings, planner_settings

ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILES = sorted((ROOT / "config").rglob("*.yaml"))
NODE_SETTINGS = node_settings()
ALL = [(node, s) for node, table in NODE_SETTINGS.items() for s in table]


def flat(section: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A YAML section's parameters by their ROS names (nested sections are dotted, as rclpy reads them)."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        out.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_files_hold_only_declared_settings_with_valid_values(path: Path) -> None:
    for node, body in (yaml.safe_load(path.read_text()) or {}).items():
        table = NODE_SETTINGS[node]
        for name, value in flat(body["ros__parameters"]).items():
            assert name in table, f"{path.name}: {node} has no setting '{name}'"
            table[name].check(value)


def test_the_reference_table_is_the_generated_one() -> None:
    from sayplan_core.reference import parameters_page

    text = (ROOT / "docs" / "reference" / "parameters.md").read_text()
    assert text == parameters_page(), "stale docs/reference/parameters.md: run scripts/gen_reference.py"


@pytest.mark.parametrize(("node", "setting"), ALL, ids=[f"{n}.{s.name}" for n, s in ALL])
def test_every_default_passes_its_own_check_and_files_are_read_only(node: str, setting: Setting) -> None:
    assert setting.check(setting.default) == setting.default
    assert setting.when in (STARTUP, PER_GOAL) and setting.description
    if setting.names_file:
        assert setting.read_only


NUMERIC = [(n, s) for n, s in ALL if s.type in (int, float) and (s.minimum is not None or s.maximum is not None)]


@given(
    st.sampled_from(NUMERIC), st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**9), 10**9))
)
def test_numeric_checks_accept_exactly_the_declared_range(item: tuple[str, Setting], value: Any) -> None:
    _, setting = item
    expected = (
        (setting.type is float or isinstance(value, int))
        and not (isinstance(value, float) and not math.isfinite(value))
        and (setting.minimum is None or value >= setting.minimum)
        and (setting.maximum is None or value <= setting.maximum)
    )
    try:
        setting.check(value)
        accepted = True
    except ValueError as exc:
        accepted = False
        assert setting.name in str(exc)
    assert accepted == expected, (setting.name, value)


def test_strings_outside_the_choices_are_refused() -> None:
    method = NODE_SETTINGS["path_planner"]["method"]
    with pytest.raises(ValueError, match="method must be one of dijkstra, astar, got 'bfs'"):
        method.check("bfs")
    embedder = NODE_SETTINGS["planner"]["embodiedrag.embedder"]
    assert embedder.check("ollama:nomic-embed-text") == "ollama:nomic-embed-text"
    with pytest.raises(ValueError, match=r"embodiedrag\.embedder must be one of"):
        embedder.check("word2vec")


def test_cli_flags_are_the_planner_settings() -> None:
    """Every flagged planner-node setting is a flag of `sayplan plan` with the setting's default, and every
    planner's own option is reachable from the CLI (a flag of its own, or one it shares with an equal option)."""
    from sayplan_core.cli import build_parser
    from sayplan_core.planner_flags import planner_flags
    from sayplan_core.planners import PLANNERS
    from sayplan_core.settings import planner_settings

    parser = build_parser(declared=True)
    plan = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["plan"]
    flags = {a.option_strings[0]: (a.dest, a.default) for a in plan._actions if a.option_strings}
    table = planner_settings()
    targets: set[str] = set()
    for flag, f in planner_flags().items():
        assert flags[flag] == (f.dest, table[f.targets[0]].default), flag
        for target in f.targets:
            assert table[target].default == table[f.targets[0]].default, (flag, target)
        targets.update(f.targets)
    own = {s.name for s in table if "." in s.name}
    assert own == {f"{name}.{s.name}" for name in PLANNERS for s in node_option_rows(PLANNERS[name].Options)}
    assert own <= targets, sorted(own - targets)


def node_option_rows(cls: type) -> list[Setting]:
    from sayplan_core.options import table

    return table(cls)


def test_planner_options_validate_by_the_same_table() -> None:
    """The drift the table was meant to end: an option the planner node refuses is refused by the core too."""
    from dataclasses import replace

    from sayplan_core.planners import PLANNERS, PlannerOptions, make_planner
    from sayplan_core.planners.embodiedrag import RetrievalOptions

    with pytest.raises(ValueError, match="max_replans must be <= 50"):
        PlannerOptions(max_replans=100).validate()
    table = node_settings()["planner"]
    with pytest.raises(ValueError, match="retrieval_top_k must be <= 100"):
        make_planner("embodiedrag", object(), None, RetrievalOptions(retrieval_top_k=1000))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="embodiedrag planner takes RetrievalOptions"):
        make_planner("embodiedrag", object(), None, PLANNERS["abstract"].Options())  # type: ignore[arg-type]
    assert table["embodiedrag.retrieval_top_k"].maximum == 100
    assert replace(PlannerOptions(), max_replans=50).validate() is None


def test_planner_settings_suggest_the_name_meant() -> None:
    settings = planner_settings()
    assert "sayplan.floor_view_rooms" in settings  # the name the misspelling below means
    with pytest.raises(ValueError) as info:
        settings.check({"sayplan.floor_veiw_rooms": 2})
    message = str(info.value)
    assert "sayplan.floor_veiw_rooms" in message and "did you mean sayplan.floor_view_rooms?" in message
