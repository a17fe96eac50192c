"""config/foxglove_layout.json, the Foxglove/Lichtblick layout, against what foxglove_bridge really serves.

A bridge runs in-process; a client speaking the Foxglove protocol reads its advertised channels, and every message
path of every panel (a topic, then fields) must name an advertised channel and fields its advertised schema has.
The layout's tree and its panel configs must name the same panels. That the panels draw is not checked here
(no Foxglove or Lichtblick on this machine); the monitor page is drawn by a browser in test_monitor_page.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable: run the ROS tests through `make test`")
pytest.importorskip("foxglove", reason="foxglove-sdk is not installed: pip install -r requirements/monitor.txt")

from rclpy.parameter import Parameter
from test_foxglove_bridge import WAIT_S, FoxgloveClient, viewer

from sayplan_ros.foxglove_bridge import FoxgloveBridge
from sayplan_ros.scene_graph_server import SceneGraphServer

pytestmark = pytest.mark.ros

LAYOUT = Path(__file__).resolve().parents[2] / "config" / "foxglove_layout.json"
#: the panels the layout may use: each is in both Foxglove and Lichtblick
PANEL_TYPES = {"3D", "Indicator", "Table", "StateTransitions", "RawMessages", "Plot"}


def panel_ids(node: Any) -> list[str]:
    """The panels of a layout tree (a panel id, or a split with `first` and `second`)."""
    if isinstance(node, str):
        return [node]
    return [*panel_ids(node["first"]), *panel_ids(node["second"])]


def message_paths(config: dict[str, Any]) -> list[str]:
    """Every message path a panel's config reads (`/topic.field.field`) or topic it shows."""
    paths = [config[key] for key in ("topicPath", "path") if key in config]
    paths += [item["value"] for item in config.get("paths", [])]
    return paths + list(config.get("topics", {}))


def resolve(path: str, channels: dict[str, dict[str, Any]]) -> None:
    """Fails unless `path` is an advertised topic followed by fields of that channel's JSON schema."""
    topic = max((t for t in channels if path == t or path.startswith(t + ".")), key=len, default=None)
    assert topic is not None, f"{path}: no channel the bridge advertises"
    fields = path[len(topic) :].split(".")[1:]
    if not fields:
        return
    channel = channels[topic]
    assert channel["schemaEncoding"] == "jsonschema", f"{path}: fields of a {channel['schemaEncoding']} channel"
    schema = json.loads(channel["schema"])
    for field in fields:
        while schema.get("type") == "array":  # a Table shows an array's items as rows
            schema = schema["items"]
        assert field in schema.get("properties", {}), f"{path}: {channel['schemaName']} has no field {field!r}"
        schema = schema["properties"][field]


def test_every_panel_reads_a_channel_and_fields_the_bridge_serves(ros: Any) -> None:
    layout = json.loads(LAYOUT.read_text(encoding="utf-8"))
    panels = layout["configById"]
    assert sorted(panel_ids(layout["layout"])) == sorted(panels)  # each panel placed once, none without a config
    assert {panel.split("!")[0] for panel in panels} <= PANEL_TYPES

    ros.add(SceneGraphServer(context=ros.context))
    ports = [Parameter("port", value=0), Parameter("page_port", value=-1)]
    bridge = ros.add(FoxgloveBridge(context=ros.context, parameter_overrides=ports))
    # the graph first: a bridge destroyed while its first fetch is out leaves that call's future unread
    ros.wait_for(lambda: bridge.follower.version() > 0, timeout=WAIT_S, what="the bridge's copy of the graph")
    with viewer(bridge.port) as ws:
        channels = FoxgloveClient(ws).channels
    read = [path for config in panels.values() for path in message_paths(config)]
    for path in read:
        resolve(path, channels)
    # every channel the bridge serves is in some panel
    assert {t for t in channels if not any(p == t or p.startswith(t + ".") for p in read)} == set(), read
    print(f"\n{LAYOUT.name}: {len(panels)} panels read {len(read)} message paths of {len(channels)} channels")
