"""Site bindings: which robot-side target (a GraphNav waypoint, an ARCL goal, a map pose) stands for a node.

A site file is written once per building, after mapping it with the robot:

    frame: map
    nodes:
      kitchen: {target: "wp-kitchen-door"}           # the robot's own name for the place
      nikos_desk: {pose: [12.5, 3.2, 90]}            # x, y in metres, heading in degrees
      pose8: {target: "pose8", pose: [4.0, 1.0, 0]}

A node without an entry is reached at its position in the scene graph (heading 0).
The file is untrusted input like any other: it is checked whole, and errors name the node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sayplan_core import files
from sayplan_core.graph.model import GraphError, SceneGraph

#: A site file larger than this is refused before it is parsed.
MAX_SITE_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Target:
    """Where to send the robot for one node: its bound name, and/or a map pose (x, y in m, yaw in rad)."""

    node: str
    name: str | None = None
    pose: tuple[float, float, float] | None = None

    def describe(self) -> str:
        if self.name:
            return f"'{self.name}'"
        assert self.pose is not None
        x, y, yaw = self.pose
        return f"({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f} deg)"


@dataclass(frozen=True)
class SiteBinding:
    frame: str = "map"
    entries: Mapping[str, Target] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> SiteBinding:
        return cls.from_dict(read_site_file(path), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<site>") -> SiteBinding:
        if data is None:
            return cls()
        if not isinstance(data, Mapping) or not isinstance(data.get("nodes", {}), Mapping):
            raise ValueError(f"{source}: a site file holds 'frame' and a 'nodes' mapping")
        unknown = set(data) - {"frame", "nodes"}
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        entries: dict[str, Target] = {}
        for node, raw in (data.get("nodes") or {}).items():
            entries[str(node)] = _target(str(node), raw, source)
        return cls(str(data.get("frame", "map")), entries)

    def target(self, graph: SceneGraph, node_id: str) -> Target:
        """Where to send the robot for `node_id`: its entry, else its position in the graph."""
        entry = self.entries.get(node_id)
        if entry is not None:
            return entry
        node = graph.node(node_id)
        if node.position is None:
            raise GraphError(f"'{node_id}' has no position in the scene graph and no entry in the site file", node_id)
        return Target(node_id, None, (float(node.position[0]), float(node.position[1]), 0.0))

    def check_against(self, graph: SceneGraph) -> list[str]:
        """Entries that name nodes the graph does not have (a site file for another building?)."""
        return sorted(n for n in self.entries if n not in graph.nodes)


def read_site_file(path: str | Path) -> Any:
    """The YAML of a site file, refused whole when too large or unreadable (one line naming the file)."""
    path = Path(path)
    try:
        return files.load_yaml(files.read_text(path, MAX_SITE_FILE_BYTES, "site file"))
    except files.FileReadError as exc:
        raise ValueError(str(exc)) from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"cannot read site file {path}: {exc}") from exc


def finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _target(node: str, raw: Any, source: str) -> Target:
    where = f"{source}: node '{node}'"
    if not isinstance(raw, Mapping) or not raw or set(raw) - {"target", "pose"}:
        raise ValueError(f"{where} needs 'target' (the robot's name for it) and/or 'pose' [x, y, heading_deg]")
    name = raw.get("target")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"{where}: target must be a non-empty string")
    pose = raw.get("pose")
    parsed: tuple[float, float, float] | None = None
    if pose is not None:
        if not isinstance(pose, list) or len(pose) != 3 or not all(finite_number(v) for v in pose):
            raise ValueError(f"{where}: pose must be [x, y, heading_deg] with finite numbers")
        parsed = (float(pose[0]), float(pose[1]), math.radians(float(pose[2])))
    return Target(node, name.strip() if isinstance(name, str) else None, parsed)
