"""Named QoS profiles, so every publisher and subscriber of a topic agrees."""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)

#: Latched state (the scene graph, the current markers): late joiners get the last message.
LATCHED_STATE_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

#: Camera images and other high-rate sensor streams.
SENSOR_QOS = qos_profile_sensor_data

#: Ordinary events (progress, reports) that must not be dropped: a deep history, so bursts reach slow readers.
EVENTS_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

#: Scene-graph updates: reliable, and latched with a history, so a follower that joins late gets the full graph
#: (latched on `scene_graph`) plus the updates after it; anything older is fetched with `get_scene_graph`.
GRAPH_UPDATES_HISTORY = 100
GRAPH_UPDATES_QOS = QoSProfile(
    depth=GRAPH_UPDATES_HISTORY,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

#: RViz markers (scene_graph_markers): the whole drawing, then only changes, so none may be dropped: reliable with
#: a history for a viewer that falls behind in a burst, latched (a latecomer gets the whole drawing when it matches).
MARKERS_QOS = QoSProfile(
    depth=GRAPH_UPDATES_HISTORY,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

#: /diagnostics as diagnostic_updater publishes it: depth 1, reliable, volatile (the aggregator's subscription).
DIAGNOSTICS_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
