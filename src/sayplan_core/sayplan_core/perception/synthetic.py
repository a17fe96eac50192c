"""A deterministic synthetic RGB-D stream for testing perception end to end.

Two rooms (kitchen, office) with a table, an open-front cabinet, a desk and a
two-plank shelf; small boxes and cylinders stand on them and inside the cabinet.
A vectorised ray caster renders depth (with noise growing with range), colour
and an instance buffer; the "detector" turns the instance buffer into detections
with label noise, missed detections and mask jitter. Same seed, same stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sayplan_core.perception.detector import SyntheticDetector
from sayplan_core.perception.fusion import Frame
from sayplan_core.perception.geometry import CameraIntrinsics, look_at


@dataclass(frozen=True)
class Part:
    """A box (lo, hi) or, when radius > 0, a vertical cylinder (center in lo[:2], z from lo[2] to hi[2])."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    radius: float = 0.0


@dataclass
class Entity:
    id: str
    label: str
    kind: str  # asset | object | structure
    room: str
    parts: list[Part]
    parent: str = ""
    relation: str = ""
    color: tuple[int, int, int] = (128, 128, 128)

    @property
    def center(self) -> NDArray[np.float64]:
        lo = np.min([self._lo(p) for p in self.parts], axis=0)
        hi = np.max([self._hi(p) for p in self.parts], axis=0)
        return np.asarray((lo + hi) / 2, dtype=np.float64)

    @staticmethod
    def _lo(p: Part) -> NDArray[np.float64]:
        if p.radius:
            return np.array([p.lo[0] - p.radius, p.lo[1] - p.radius, p.lo[2]])
        return np.array(p.lo, float)

    @staticmethod
    def _hi(p: Part) -> NDArray[np.float64]:
        if p.radius:
            return np.array([p.lo[0] + p.radius, p.lo[1] + p.radius, p.hi[2]])
        return np.array(p.hi, float)


ROOM_REGIONS = {"kitchen": ((0.0, 0.0), (5.0, 5.0)), "office": ((5.0, 0.0), (10.0, 5.0))}
CONFUSIONS = {"mug": "cup", "bowl": "plate", "book": "box", "bottle": "can", "jar": "bottle", "cereal": "box"}


def _box(x0: float, y0: float, z0: float, x1: float, y1: float, z1: float) -> Part:
    return Part((x0, y0, z0), (x1, y1, z1))


def _cyl(x: float, y: float, z0: float, height: float, radius: float) -> Part:
    return Part((x, y, z0), (x, y, z0 + height), radius)


def build_scene() -> list[Entity]:
    rng_colors = np.random.default_rng(7)

    def colour() -> tuple[int, int, int]:
        r, g, b = (int(c) for c in rng_colors.integers(40, 230, 3))
        return (r, g, b)

    walls = [
        Entity("floor", "floor", "structure", "", [_box(-0.1, -0.1, -0.05, 10.1, 5.1, 0.0)]),
        Entity("walls", "wall", "structure", "", [
            _box(-0.1, -0.1, 0.0, 10.1, 0.0, 2.6), _box(-0.1, 5.0, 0.0, 10.1, 5.1, 2.6),
            _box(-0.1, -0.1, 0.0, 0.0, 5.1, 2.6), _box(10.0, -0.1, 0.0, 10.1, 5.1, 2.6),
            _box(4.95, -0.1, 0.0, 5.05, 2.0, 2.6), _box(4.95, 3.0, 0.0, 5.05, 5.1, 2.6),
        ]),
    ]  # fmt: skip
    assets = [
        Entity("table_1", "table", "asset", "kitchen", [_box(1.0, 1.0, 0.0, 2.2, 2.0, 0.75)]),
        Entity("cabinet_1", "cabinet", "asset", "kitchen", [
            _box(3.5, 4.75, 0.0, 4.5, 4.8, 1.0), _box(3.5, 4.2, 0.0, 3.55, 4.8, 1.0), _box(4.45, 4.2, 0.0, 4.5, 4.8, 1.0),
            _box(3.5, 4.2, 0.96, 4.5, 4.8, 1.0), _box(3.5, 4.2, 0.0, 4.5, 4.8, 0.05), _box(3.5, 4.2, 0.48, 4.5, 4.8, 0.52),
        ]),
        Entity("desk_1", "desk", "asset", "office", [_box(6.0, 1.0, 0.0, 7.4, 1.8, 0.74)]),
        Entity("shelf_1", "shelf", "asset", "office", [
            _box(8.5, 4.3, 0.37, 9.5, 4.7, 0.40), _box(8.5, 4.3, 0.87, 9.5, 4.7, 0.90),
            _box(8.5, 4.3, 0.0, 8.53, 4.7, 0.9), _box(9.47, 4.3, 0.0, 9.5, 4.7, 0.9),
        ]),
    ]  # fmt: skip
    objects = [
        Entity("mug_1", "mug", "object", "kitchen", [_cyl(1.3, 1.3, 0.75, 0.10, 0.045)], "table_1", "ontop_of"),
        Entity("bowl_1", "bowl", "object", "kitchen", [_cyl(1.8, 1.6, 0.75, 0.07, 0.09)], "table_1", "ontop_of"),
        Entity("book_1", "book", "object", "kitchen", [_box(1.5, 1.7, 0.75, 1.75, 1.88, 0.79)], "table_1", "ontop_of"),
        Entity("cereal_1", "cereal", "object", "kitchen", [_box(3.7, 4.45, 0.05, 3.9, 4.6, 0.35)], "cabinet_1", "inside_of"),
        Entity("jar_1", "jar", "object", "kitchen", [_cyl(4.2, 4.5, 0.52, 0.15, 0.06)], "cabinet_1", "inside_of"),
        Entity("bottle_1", "bottle", "object", "office", [_cyl(6.4, 1.3, 0.74, 0.25, 0.04)], "desk_1", "ontop_of"),
        Entity("laptop_1", "laptop", "object", "office", [_box(6.8, 1.2, 0.74, 7.15, 1.45, 0.76)], "desk_1", "ontop_of"),
        Entity("box_1", "box", "object", "office", [_box(8.7, 4.4, 0.40, 8.95, 4.6, 0.55)], "shelf_1", "ontop_of"),
        Entity("can_1", "can", "object", "office", [_cyl(9.2, 4.5, 0.90, 0.12, 0.035)], "shelf_1", "ontop_of"),
    ]  # fmt: skip
    for entity in assets + objects:
        entity.color = colour()
    walls[0].color, walls[1].color = (90, 90, 90), (200, 200, 190)
    return walls + assets + objects


def trajectory() -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """(eye, target) pairs: each room seen from several sides, the cabinet and shelf from the front."""
    views = []
    for eye, target in [
        ((0.4, 0.4, 1.6), (1.6, 1.5, 0.75)), ((2.8, 0.5, 1.6), (1.6, 1.5, 0.75)), ((2.6, 2.8, 1.5), (1.6, 1.5, 0.75)),
        ((0.6, 2.6, 1.5), (1.6, 1.5, 0.75)), ((1.5, 0.3, 1.2), (1.6, 1.6, 0.8)),
        ((4.0, 2.6, 1.1), (4.0, 4.5, 0.4)), ((3.4, 2.9, 1.3), (4.0, 4.5, 0.5)), ((4.6, 3.0, 0.9), (4.0, 4.5, 0.3)),
        ((5.6, 0.4, 1.6), (6.7, 1.4, 0.75)), ((7.9, 0.6, 1.6), (6.7, 1.4, 0.75)), ((7.5, 2.8, 1.5), (6.7, 1.4, 0.75)),
        ((6.0, 2.6, 1.4), (6.7, 1.4, 0.8)),
        ((9.0, 2.4, 1.2), (9.0, 4.5, 0.6)), ((8.2, 2.8, 1.4), (9.0, 4.5, 0.5)), ((9.8, 2.9, 1.0), (9.0, 4.5, 0.6)),
    ]:  # fmt: skip
        views.append((np.array(eye, float), np.array(target, float)))
    return views


def _intersect(origin: NDArray[np.float64], dirs: NDArray[np.float64], part: Part) -> NDArray[np.float64]:
    """Ray parameter t of the first hit (inf where the ray misses); rays are origin + t * dir."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if part.radius == 0.0:
            lo, hi = np.array(part.lo), np.array(part.hi)
            t1, t2 = (lo - origin) / dirs, (hi - origin) / dirs
            tmin = np.nanmax(np.minimum(t1, t2), axis=1)
            tmax = np.nanmin(np.maximum(t1, t2), axis=1)
            hit = (tmax >= tmin) & (tmin > 1e-6)
            return np.where(hit, tmin, np.inf)
        cx, cy, z0, z1, r = part.lo[0], part.lo[1], part.lo[2], part.hi[2], part.radius
        ox, oy = origin[0] - cx, origin[1] - cy
        a = dirs[:, 0] ** 2 + dirs[:, 1] ** 2
        b = 2 * (ox * dirs[:, 0] + oy * dirs[:, 1])
        c = ox**2 + oy**2 - r**2
        disc = b**2 - 4 * a * c
        t_side = (-b - np.sqrt(np.where(disc >= 0, disc, np.nan))) / (2 * a)
        z_side = origin[2] + t_side * dirs[:, 2]
        side_ok = (disc >= 0) & (t_side > 1e-6) & (z_side >= z0) & (z_side <= z1)
        t_top = (z1 - origin[2]) / dirs[:, 2]
        xt, yt = ox + t_top * dirs[:, 0], oy + t_top * dirs[:, 1]
        top_ok = (t_top > 1e-6) & (xt**2 + yt**2 <= r**2)
        return np.minimum(np.where(side_ok, t_side, np.inf), np.where(top_ok, t_top, np.inf))


@dataclass
class RenderedFrame:
    depth: NDArray[np.float32]
    color: NDArray[np.uint8]
    instances: NDArray[np.int32]  # index into the entity list, -1 for nothing
    pose: NDArray[np.float64]


def render(entities: list[Entity], k: CameraIntrinsics, pose: NDArray[np.float64]) -> RenderedFrame:
    v, u = np.mgrid[0 : k.height, 0 : k.width]
    cam = np.stack(((u - k.cx) / k.fx, (v - k.cy) / k.fy, np.ones_like(u, dtype=float)), axis=-1).reshape(-1, 3)
    dirs = cam @ pose[:3, :3].T  # t along these rays is the optical-frame depth
    origin = pose[:3, 3]
    best = np.full(len(dirs), np.inf)
    owner = np.full(len(dirs), -1, dtype=np.int32)
    for index, entity in enumerate(entities):
        for part in entity.parts:
            t = _intersect(origin, dirs, part)
            closer = t < best
            best[closer], owner[closer] = t[closer], index
    depth = np.where(np.isfinite(best), best, 0.0).reshape(k.height, k.width).astype(np.float32)
    palette = np.array([e.color for e in entities] + [(0, 0, 0)], dtype=np.uint8)
    color = palette[owner].reshape(k.height, k.width, 3)
    return RenderedFrame(depth, color, owner.reshape(k.height, k.width), pose)


@dataclass
class SyntheticConfig:
    width: int = 320
    height: int = 240
    hfov_deg: float = 70.0
    depth_noise: float = 0.002  # metres of noise at 1 m; grows with the square of the range
    label_noise: float = 0.1
    miss_rate: float = 0.1
    jitter: int = 2  # pixels of random mask erosion / dilation
    min_pixels: int = 60
    seed: int = 0


@dataclass
class SyntheticStream:
    entities: list[Entity]
    intrinsics: CameraIntrinsics
    frames: list[Frame] = field(default_factory=list)
    colors: list[NDArray[np.uint8]] = field(default_factory=list)

    def ground_truth(self) -> list[Entity]:
        return [e for e in self.entities if e.kind in ("asset", "object")]


def make_stream(config: SyntheticConfig | None = None) -> SyntheticStream:
    config = config or SyntheticConfig()
    rng = np.random.default_rng(config.seed)
    entities = build_scene()
    k = CameraIntrinsics.from_fov(config.width, config.height, config.hfov_deg)
    stream = SyntheticStream(entities, k)
    detector = SyntheticDetector(
        [e.label for e in entities],
        [e.kind != "structure" for e in entities],
        rng,
        CONFUSIONS,
        config.label_noise,
        config.miss_rate,
        config.jitter,
        config.min_pixels,
    )
    for index, (eye, target) in enumerate(trajectory()):
        pose = look_at(eye, target)
        frame = render(entities, k, pose)
        depth = frame.depth.copy()
        valid = depth > 0
        depth[valid] += rng.normal(0.0, 1.0, valid.sum()).astype(np.float32) * config.depth_noise * depth[valid] ** 2
        color = np.clip(frame.color.astype(int) + rng.integers(-8, 9, frame.color.shape), 0, 255).astype(np.uint8)
        detections = detector.detect_instances(frame.instances)
        stream.frames.append(Frame(depth, k, pose, detections, stamp=float(index)))
        stream.colors.append(color)
    return stream
