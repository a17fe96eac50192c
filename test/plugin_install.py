"""Install the test plugin package (test/plugins) into a folder the way pip would: its modules and a
`.dist-info` holding METADATA and entry_points.txt. Python finds its entry points once the folder is on
PYTHONPATH; nothing of the stack is edited."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PLUGINS = Path(__file__).resolve().parent / "plugins"
NAME = "sayplan_dummy_plugin"


def _entry_points_text() -> str:
    text = (PLUGINS / NAME / "__init__.py").read_text(encoding="utf-8")
    begin = text.index('ENTRY_POINTS = """\\\n') + len('ENTRY_POINTS = """\\\n')
    return text[begin : text.index('"""', begin)]


def install(folder: Path, entry_points: str | None = None) -> Path:
    """The site folder to put on PYTHONPATH; `entry_points` replaces the package's own (a broken install)."""
    site = folder / "site"
    shutil.copytree(PLUGINS / NAME, site / NAME, ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{NAME}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 0.1.0\n", encoding="utf-8")
    text = _entry_points_text() if entry_points is None else entry_points
    (info / "entry_points.txt").write_text(text, encoding="utf-8")
    return site


def env_with(site: Path) -> dict[str, str]:
    """This process's environment with `site` first on PYTHONPATH."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}
