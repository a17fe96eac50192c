"""Launch files: checked where `launch` is importable (a ROS install), skipped with the reason otherwise."""

from __future__ import annotations

import importlib.util
import runpy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HAVE_LAUNCH = importlib.util.find_spec("launch") is not None and importlib.util.find_spec("launch_ros") is not None


def test_config_is_keyed_by_node_name() -> None:
    config = yaml.safe_load((ROOT / "config" / "sayplan.yaml").read_text())
    assert set(config) == {"scene_graph_server", "path_planner"}
    for node, body in config.items():
        assert set(body) == {"ros__parameters"}, node


@pytest.mark.skipif(not HAVE_LAUNCH, reason="launch/launch_ros are not on PyPI; this test runs on a ROS 2 install")
def test_launch_description_builds() -> None:
    module = runpy.run_path(str(ROOT / "launch" / "sayplan.launch.py"))
    description = module["generate_launch_description"]()
    names = [getattr(e, "name", None) for e in description.entities]
    assert "env" in names and "path_method" in names
