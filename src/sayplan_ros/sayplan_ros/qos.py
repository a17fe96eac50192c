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

#: Ordinary events (updates, status) that must not be dropped.
EVENTS_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
