"""Site bindings: a node's robot-side target from the site file, else its scene-graph position."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sayplan_core.envs import load_env
from sayplan_core.graph.model import GraphError
from sayplan_core.robots.binding import SiteBinding

OFFICE = load_env("office")


def test_bound_nodes_use_their_entry_and_others_their_position(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("frame: map\nnodes:\n  kitchen: {target: wp-kitchen}\n  nikos_desk: {pose: [1.5, -2, 90]}\n")
    binding = SiteBinding.load(site)
    assert binding.target(OFFICE, "kitchen").name == "wp-kitchen"
    desk = binding.target(OFFICE, "nikos_desk")
    assert desk.name is None and desk.pose == (1.5, -2.0, math.pi / 2)
    position = OFFICE.nodes["pose8"].position
    assert position is not None
    assert binding.target(OFFICE, "pose8").pose == (position[0], position[1], 0.0)
    assert binding.check_against(OFFICE) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: [kitchen]", "'nodes' mapping"),
        ("nodes:\n  kitchen: {}", "needs 'target'"),
        ("nodes:\n  kitchen: {target: ''}", "non-empty string"),
        ("nodes:\n  kitchen: {pose: [1, 2]}", "pose must be"),
        ("nodes:\n  kitchen: {pose: [1, .nan, 0]}", "pose must be"),
        ("nodes:\n  kitchen: {waypoint: x}", "needs 'target'"),
        ("robots: 2", "unknown key"),
        ("nodes: {kitchen: {target: x}", "cannot read site file"),
    ],
)
def test_bad_site_files_are_refused_with_the_node(tmp_path: Path, text: str, message: str) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(text)
    with pytest.raises(ValueError, match=message):
        SiteBinding.load(site)


def test_a_node_without_position_or_entry_is_an_error() -> None:
    with pytest.raises(GraphError, match="no position"):
        SiteBinding().target(OFFICE, "floor1")
    assert SiteBinding.from_dict({"nodes": {"atlantis": {"target": "x"}}}).check_against(OFFICE) == ["atlantis"]
