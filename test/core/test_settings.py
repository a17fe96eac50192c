"""Every setting declared once: config files and the parameter reference agree with the tables; the checks hold."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.settings import NODE_SETTINGS, PER_GOAL, STARTUP, Setting, markdown_table

ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILES = sorted((ROOT / "config").rglob("*.yaml"))
ALL = [(node, s) for node, table in NODE_SETTINGS.items() for s in table]


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_files_hold_only_declared_settings_with_valid_values(path: Path) -> None:
    for node, body in (yaml.safe_load(path.read_text()) or {}).items():
        table = NODE_SETTINGS[node]
        for name, value in body["ros__parameters"].items():
            assert name in table, f"{path.name}: {node} has no setting '{name}'"
            table[name].check(value)


def test_the_reference_table_is_the_generated_one() -> None:
    text = (ROOT / "docs" / "reference" / "parameters.md").read_text()
    begin = text.index("<!-- settings:begin")
    block = text[text.index("\n", begin) + 1 : text.index("<!-- settings:end -->")].strip()
    assert block == markdown_table(), "stale docs/reference/parameters.md: run scripts/gen_reference.py"


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
    embedder = NODE_SETTINGS["planner"]["embedder"]
    assert embedder.check("ollama:nomic-embed-text") == "ollama:nomic-embed-text"
    with pytest.raises(ValueError, match="embedder must be one of"):
        embedder.check("word2vec")


def test_cli_flags_are_the_planner_settings() -> None:
    from sayplan_core.cli import build_parser
    from sayplan_core.settings import PLANNER_SETTINGS

    parser = build_parser()
    plan = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["plan"]
    flags = {a.dest: (a.option_strings[0], a.default) for a in plan._actions if a.option_strings}
    for setting in PLANNER_SETTINGS:
        if setting.flag:
            assert flags[setting.name] == (setting.flag, setting.default), setting.name
