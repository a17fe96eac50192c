"""perception: fuse RGB-D detections into the live scene graph (sayplan_core.perception).

Subscribes to a depth image (32FC1 metres or 16UC1 millimetres), its CameraInfo, the
camera pose in the map frame (PoseStamped; use a TF bridge where tf2_ros exists) and
the detector's DetectionArray. Messages are matched by header stamp; each complete
frame is fused and its incremental GraphUpdate sent to `apply_graph_update`.
`finalize` (std_srvs/Trigger) runs the last denoise / merge / prune pass.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import yaml
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, Image
from std_srvs.srv import Trigger

from sayplan_core import files
from sayplan_core.diagnostics import Status, follower_status, perception_status
from sayplan_core.graph.model import SceneGraph
from sayplan_core.graph.updates import GraphUpdate
from sayplan_core.node_options import PerceptionOptions
from sayplan_core.perception.fusion import Detection, Frame, FusionConfig, ObjectMap
from sayplan_core.perception.geometry import CameraIntrinsics
from sayplan_core.perception.structure import SceneGraphMapper, StructureConfig
from sayplan_interfaces.msg import DetectionArray
from sayplan_interfaces.srv import ApplyGraphUpdate
from sayplan_ros.conversions import update_to_msg
from sayplan_ros.diagnostics import DiagnosticsPublisher
from sayplan_ros.graph_follower import GraphFollower
from sayplan_ros.guard import guarded, guarded_service
from sayplan_ros.parameters import declare_options
from sayplan_ros.qos import EVENTS_QOS, SENSOR_QOS
from sayplan_ros.rivals import rival_servers
from sayplan_ros.runner import run_nodes

STAMP_TOLERANCE_NS = 20_000_000  # 20 ms
MAX_REGIONS_FILE_BYTES = 10 * 1024 * 1024  # the largest room_regions_file read


def image_to_array(msg: Image) -> np.ndarray:
    if msg.encoding == "32FC1":
        return np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(msg.height, msg.width)
    if msg.encoding == "16UC1":
        return np.frombuffer(bytes(msg.data), dtype=np.uint16).reshape(msg.height, msg.width).astype(np.float32) / 1000
    if msg.encoding == "mono8":
        return np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.width)
    raise ValueError(f"unsupported image encoding '{msg.encoding}' (32FC1, 16UC1 or mono8)")


def pose_to_matrix(msg: PoseStamped) -> np.ndarray:
    q, p = msg.pose.orientation, msg.pose.position
    x, y, z, w = q.x, q.y, q.z, q.w
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation, (p.x, p.y, p.z)
    return pose


def stamp_ns(header: Any) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


class PerceptionNode(Node):
    def __init__(self, node_name: str = "perception", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        options = declare_options(self, PerceptionOptions)
        regions: dict[str, Any] = {}
        regions_file = options.room_regions_file
        if regions_file:
            try:
                raw = files.load_yaml(files.read_text(regions_file, MAX_REGIONS_FILE_BYTES, "room_regions_file")) or {}
                regions = {
                    str(k): ((float(v[0][0]), float(v[0][1])), (float(v[1][0]), float(v[1][1]))) for k, v in raw.items()
                }
            except files.FileReadError as exc:
                raise ValueError(str(exc)) from exc
            except (
                yaml.YAMLError,
                TypeError,
                IndexError,
                ValueError,
                AttributeError,
            ) as exc:
                raise ValueError(f"room_regions_file {regions_file}: {exc}") from exc

        def labels(text: str) -> frozenset[str]:
            return frozenset(x.strip() for x in text.split(",") if x.strip())

        fusion = FusionConfig(
            voxel=options.voxel, threshold=options.match_threshold, min_detections=options.min_detections
        )
        structure = StructureConfig(labels(options.asset_labels), labels(options.container_labels), regions)
        self.mapper = SceneGraphMapper(ObjectMap(fusion), structure)
        self._lock = threading.Lock()
        self._depth: OrderedDict[int, Image] = OrderedDict()
        self._poses: OrderedDict[int, PoseStamped] = OrderedDict()
        self._info: CameraInfo | None = None
        self.frames_fused = 0
        self.frames_skipped = 0  # detections whose depth image, pose or camera info never arrived
        self.updates_sent = 0  # non-empty updates handed to apply_graph_update (an empty one is never sent)
        self._not_applied: deque[GraphUpdate] = deque()  # filled by response callbacks, drained with the mapper
        group = MutuallyExclusiveCallbackGroup()  # frames are fused one at a time, in order
        self._follower = GraphFollower(self)
        depth = guarded(self, "camera/depth", lambda m: self._keep(self._depth, m))
        pose = guarded(self, "camera/pose", lambda m: self._keep(self._poses, m))
        self.create_subscription(Image, "camera/depth", depth, SENSOR_QOS)
        self.create_subscription(PoseStamped, "camera/pose", pose, EVENTS_QOS)
        self.create_subscription(
            CameraInfo, "camera/camera_info", guarded(self, "camera_info", self._on_info), SENSOR_QOS
        )
        detections = guarded(self, "detections", self._on_detections)
        self.create_subscription(DetectionArray, "detections", detections, EVENTS_QOS, callback_group=group)
        self._updates = self.create_client(ApplyGraphUpdate, "apply_graph_update")
        finalize = guarded_service(self, self._on_finalize, Trigger.Response)
        self.create_service(Trigger, "~/finalize", finalize, callback_group=group)
        self.diagnostics_publisher = DiagnosticsPublisher(self, self._diagnostics)

    def _diagnostics(self) -> list[Status]:
        waiting = len(self._not_applied)
        fused = perception_status(self.frames_fused, self.frames_skipped, self.updates_sent, waiting)
        copy = self._follower
        return [fused, follower_status(copy.version(), copy.problem(), self.frames_fused, self.frames_skipped)]

    def _keep(self, buffer: OrderedDict[int, Any], msg: Any) -> None:
        with self._lock:
            buffer[stamp_ns(msg.header)] = msg
            while len(buffer) > 30:
                buffer.popitem(last=False)

    def _on_info(self, msg: CameraInfo) -> None:
        self._info = msg

    def _match(self, buffer: OrderedDict[int, Any], stamp: int) -> Any:
        with self._lock:
            best = min(buffer, key=lambda s: abs(s - stamp), default=None)
            return buffer[best] if best is not None and abs(best - stamp) <= STAMP_TOLERANCE_NS else None

    @contextmanager
    def _graph(self) -> Iterator[SceneGraph]:
        """The follower's live copy for one frame (no snapshot per frame: the graph changes about every frame);
        its updates wait for the frame's placements. An empty graph before the first one arrives."""
        with self._follower.reading() as graph:
            yield graph if graph is not None else SceneGraph()

    def _on_detections(self, msg: DetectionArray) -> None:
        stamp = stamp_ns(msg.header)
        depth_msg, pose_msg, info = self._match(self._depth, stamp), self._match(self._poses, stamp), self._info
        if depth_msg is None or pose_msg is None or info is None:
            self.get_logger().warning("detections without a matching depth image, pose or camera info: skipped")
            self.frames_skipped += 1
            return
        k = CameraIntrinsics(info.k[0], info.k[4], info.k[2], info.k[5], info.width, info.height)
        detections = []
        for det in msg.detections:
            mask = image_to_array(det.mask).astype(bool) if det.mask.width else None
            box = tuple(int(v) for v in det.box) if mask is None else None
            feature = np.asarray(det.feature, dtype=np.float64) if len(det.feature) else None
            detections.append(Detection(det.label, float(det.score), mask, box, feature))  # type: ignore[arg-type]
        frame = Frame(image_to_array(depth_msg), k, pose_to_matrix(pose_msg), detections, stamp / 1e9)
        self._take_back_failed()
        with self._graph() as graph:
            update = self.mapper.process(frame, graph)
        self._send(update)
        self.frames_fused += 1

    def _take_back_failed(self) -> None:
        """Tell the mapper (only ever used from this node's exclusive group) which updates never applied."""
        while self._not_applied:
            self.mapper.not_applied(self._not_applied.popleft())

    def _send(self, update: GraphUpdate) -> None:
        if update.is_empty():
            return
        if not self._updates.service_is_ready():
            self.get_logger().warning("apply_graph_update is not available; update kept for the next frame")
            self._not_applied.append(update)
            return
        rivals = rival_servers(self, "apply_graph_update")
        if rivals:  # the map must not go to a node that is not the server (sayplan_ros/rivals.py)
            self.get_logger().error(f"{rivals}: the update is not sent; kept for the next frame")
            self._not_applied.append(update)
            return
        future = self._updates.call_async(ApplyGraphUpdate.Request(update=update_to_msg(update)))
        self.updates_sent += 1
        future.add_done_callback(lambda done: self._on_applied(done, update))

    def _on_applied(self, future: Future, update: GraphUpdate) -> None:
        exc = future.exception()
        answer = future.result() if exc is None else None
        rivals = rival_servers(self, "apply_graph_update") if answer is not None else ""
        if answer is not None and answer.success and not rivals:
            return
        why = rivals or (answer.message if answer is not None else repr(exc))
        self.get_logger().warning(
            f"graph update not applied ({why}); the next frame or finalize sends every placement again"
        )
        self._not_applied.append(update)

    def _on_finalize(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._take_back_failed()
        with self._graph() as graph:
            update = self.mapper.finish(graph)
        self._send(update)
        response.success = True
        response.message = f"{len(self.mapper.map.objects)} objects after finalize; {len(update.remove)} removed"
        return response


def main(args: list[str] | None = None) -> None:
    run_nodes("perception", lambda: [PerceptionNode()], args)
