"""The reference pages under docs/reference/ are what scripts/gen_reference.py writes from the code today."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_reference_page_is_up_to_date() -> None:
    stale = _generator().stale()
    assert not stale, f"stale pages in docs/reference/: {stale}; run scripts/gen_reference.py"


def test_the_check_finds_a_stale_page(tmp_path: Path) -> None:
    """The comparison can fail: a folder where one page was edited by hand, and one page is missing."""
    generator = _generator()
    pages = generator.pages()
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert generator.stale(tmp_path) == []
    (tmp_path / "outcomes.md").write_text(pages["outcomes.md"].replace("| 2 |", "| 7 |", 1), encoding="utf-8")
    (tmp_path / "cli.md").unlink()
    assert generator.stale(tmp_path) == ["outcomes.md", "cli.md"]


def test_the_pages_hold_what_the_code_defines() -> None:
    """An independent look at a few facts, so an empty or wrong generator cannot pass the comparison."""
    from sayplan_core.outcomes import PlanCode, SkillCode, TaskCode
    from sayplan_core.planners import PLANNERS
    from sayplan_core.plugins import ROBOT_REGISTRY
    from sayplan_core.settings import node_settings
    from sayplan_core.sim.action_set import builtin_action_sets, load_action_set

    pages = _generator().pages()
    for enum in (SkillCode, PlanCode, TaskCode):
        for member in enum:
            assert f"| {member.value} | `{member.name}` |" in pages["outcomes.md"]
    for node, settings in node_settings(bundled_only=True).items():
        assert f"| `{node}` |" in pages["parameters.md"]
        for setting in settings:
            assert f"| `{setting.name}` |" in pages["parameters.md"]
    for name in builtin_action_sets():
        for action in load_action_set(name).actions:
            assert f"| `{action}` |" in pages["action_sets.md"]
    for name in [*PLANNERS.bundled(), *ROBOT_REGISTRY.bundled()]:
        assert f"| `{name}` |" in pages["plugins.md"]
    for command in ("env import", "verify", "path", "plan", "bench", "llm check"):
        assert f"## `sayplan {command}`" in pages["cli.md"]
