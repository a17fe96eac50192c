"""Outlier removal on the depth image's pixel grid and voxel downsampling (issue 28) against their definitions.

`grid_inliers` is checked against the rule written out pixel by pixel (dictionaries and loops, no shifted arrays),
on small random depth images with holes, spikes and masks; a depth edge with flying pixels between the foreground
and the background must lose every flying pixel and keep the surfaces. A thin object one grid pixel wide (a rod,
a cable) is kept in any orientation, and the flying pixels between it and the wall behind it go. `voxel_downsample`
is checked against a dictionary of voxels, in both of its sorting paths, including the order of its output.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy import ndimage
from scipy.spatial import cKDTree

from sayplan_core.perception.fusion import Detection, Frame, FusionConfig, MapObject, ObjectMap
from sayplan_core.perception.geometry import (
    CameraIntrinsics,
    dbscan_labels,
    grid_inliers,
    largest_cluster,
    pixel_grid,
    voxel_downsample,
)

BOUNDED = settings(max_examples=60, derandomize=True, deadline=None)

Pixel = tuple[int, int]


def rule_inliers(
    depth: np.ndarray,
    mask: np.ndarray,
    k: CameraIntrinsics,
    stride: int,
    max_depth: float,
    origin: Pixel,
    image: np.ndarray | None = None,
) -> tuple[set[Pixel], float]:
    """The kept grid pixels by the written rule, and how close any decision came to its limit (relative).

    `image`: the whole depth image the window `depth` was cut from at `origin`; without it nothing is seen beyond
    the window.
    """
    at = (0, 0) if image is None else origin  # the window's first pixel in `image`
    seen_image = depth if image is None else image

    def seen(p: Pixel) -> np.ndarray | None:
        """The 3D point of grid pixel p whatever the mask (None: outside the image or no valid depth there)."""
        row, col = at[0] + p[0] * stride, at[1] + p[1] * stride
        if not (0 <= row < seen_image.shape[0] and 0 <= col < seen_image.shape[1]):
            return None
        d = float(seen_image[row, col])
        if not (math.isfinite(d) and 0.0 < d < max_depth):
            return None
        u, v = origin[1] + p[1] * stride, origin[0] + p[0] * stride
        return np.array([(u - k.cx) * d / k.fx, (v - k.cy) * d / k.fy, d])

    # the valid pixels: masked, with a valid depth
    points: dict[Pixel, np.ndarray] = {}
    for i in range(len(range(0, depth.shape[0], stride))):
        for j in range(len(range(0, depth.shape[1], stride))):
            point = seen((i, j))
            if mask[i * stride, j * stride] and point is not None:
                points[(i, j)] = point

    def e(p: Pixel, q: Pixel) -> float:
        """The 3D gap over the gap of a camera-facing surface at their depth."""
        di, dj = q[0] - p[0], q[1] - p[1]
        gap = stride * math.hypot(dj / k.fx, di / k.fy)
        return float(np.linalg.norm(points[p] - points[q])) / (gap * math.sqrt(points[p][2] * points[q][2]))

    # a limit on e per axis (right, down), from that axis's own pairs, within [1.5, 12]; 1.5 for an axis with no pair
    limits: dict[Pixel, float] = {}
    margin = math.inf
    for step in ((0, 1), (1, 0)):
        pairs = [e(p, q) for p in points if (q := (p[0] + step[0], p[1] + step[1])) in points]
        limits[step] = 1.5
        if pairs:
            median = sorted(pairs)[(len(pairs) - 1) // 2]
            common = [x for x in pairs if x <= 3.0 * median]
            limits[step] = max(1.5, statistics.fmean(common) + 2.0 * statistics.pstdev(common))
            if median > 0:
                margin = min([margin] + [abs(x - 3.0 * median) / (3.0 * median) for x in pairs])
    # in metres per metre of depth: one step right, one step down, and a diagonal step as one of each
    right, down = stride * limits[(0, 1)] / k.fx, stride * limits[(1, 0)] / k.fy
    kept = set()
    for p in points:
        close = 0  # masked neighbours within the limit
        stands_out = True  # every other neighbour with a valid depth, masked or not, is not nearer and not close
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                q = (p[0] + di, p[1] + dj)
                other = seen(q)
                if q == p or other is None:
                    continue
                most = right if di == 0 else down if dj == 0 else right + down
                gap = float(np.linalg.norm(points[p] - other)) / math.sqrt(points[p][2] * other[2])
                margin = min(margin, abs(gap - most) / most)
                if gap <= most and q in points:
                    close += 1
                elif gap <= most or other[2] < points[p][2]:
                    stands_out = False
        # a surface's pixel, or one on a line one grid pixel wide standing out in front of what is around it
        if close >= 3 or (close == 2 and stands_out):
            kept.add(p)
    return kept, margin


def kept_pixels(depth: np.ndarray, mask: np.ndarray, k: CameraIntrinsics, stride: int, max_depth: float) -> set[Pixel]:
    grid = pixel_grid(depth, mask, k, stride, max_depth, (5, 7))
    rows = grid.valid.reshape(-1, grid.width)
    keep = grid_inliers(grid).reshape(rows.shape)
    assert not keep[:, -1].any()  # the padding column is never kept
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(keep), strict=True)}


@BOUNDED
@given(
    st.integers(0, 10_000),
    st.integers(1, 11),
    st.integers(1, 11),
    st.sampled_from([1, 2, 3]),
    st.floats(0.0, 0.3),
    st.floats(0.0, 0.2),
)
def test_grid_inliers_follow_the_written_rule(
    seed: int, height: int, width: int, stride: int, holes: float, spikes: float
) -> None:
    rng = np.random.default_rng(seed)
    k = CameraIntrinsics(float(rng.uniform(20, 60)), float(rng.uniform(20, 60)), 8.0, 6.0, 24, 18)
    v, u = np.mgrid[0:height, 0:width]
    # a tilted plane with noise, holes (0 and NaN), spikes in front and behind, a ragged mask
    depth = rng.uniform(0.5, 4.0) + rng.uniform(-0.05, 0.05) * u + rng.uniform(-0.05, 0.05) * v
    depth = depth + rng.normal(0.0, rng.uniform(0.0, 0.02), depth.shape)
    spike = rng.random(depth.shape) < spikes
    depth[spike] = rng.uniform(0.2, 7.0, int(spike.sum()))
    depth[rng.random(depth.shape) < holes / 2] = 0.0
    depth[rng.random(depth.shape) < holes / 2] = np.nan
    mask = rng.random(depth.shape) > rng.uniform(0.0, 0.3)
    depth = depth.astype(np.float32)
    expected, margin = rule_inliers(depth, mask, k, stride, 5.0, (5, 7))
    assume(margin > 1e-9)  # no pair within rounding of the limit
    assert kept_pixels(depth, mask, k, stride, 5.0) == expected


@BOUNDED
@given(
    st.integers(0, 10_000),
    st.integers(6, 14),
    st.integers(6, 14),
    st.sampled_from([1, 2, 3]),
    st.integers(1, 4),
    st.booleans(),
)
def test_grid_inliers_follow_the_written_rule_around_thin_lines(
    seed: int, height: int, width: int, stride: int, lines: int, around: bool
) -> None:
    """Thin lines (digital lines in any direction, one pixel wide) in front of or behind a noisy background with
    holes, flying pixels beside them and a ragged mask over lines, their neighbours and some background; the window
    cut from a larger image whose depth (beyond the window too) the thin-object test reads, or alone."""
    rng = np.random.default_rng(seed)
    k = CameraIntrinsics(float(rng.uniform(20, 60)), float(rng.uniform(20, 60)), 12.0, 10.0, 30, 24)
    big = rng.uniform(1.0, 4.0) + rng.normal(0.0, rng.uniform(0.0, 0.02), (24, 30))
    drawn = np.zeros(big.shape, dtype=bool)
    for _ in range(lines):
        start = (int(rng.integers(0, 24)), int(rng.integers(0, 30)))
        for i, j in grid_line(float(rng.uniform(0, 2 * math.pi)), int(rng.integers(2, 20))):
            at = (start[0] + i * stride, start[1] + j * stride)
            if 0 <= at[0] < 24 and 0 <= at[1] < 30:
                drawn[at] = True
        big[drawn] = rng.uniform(0.5, 5.0)
    beside = ndimage.binary_dilation(drawn, iterations=stride) & ~drawn
    flying = beside & (rng.random(big.shape) < 0.5)
    big[flying] = rng.uniform(0.5, 5.0, int(flying.sum()))
    big[rng.random(big.shape) < 0.05] = 0.0
    big[rng.random(big.shape) < 0.05] = np.nan
    mask = (drawn | beside | (rng.random(big.shape) < 0.3)) & (rng.random(big.shape) > 0.1)
    top, left = int(rng.integers(0, 24 - height + 1)), int(rng.integers(0, 30 - width + 1))
    window = (slice(top, top + height), slice(left, left + width))
    big = big.astype(np.float32)
    image = big if around else None
    expected, margin = rule_inliers(big[window], mask[window], k, stride, 4.5, (top, left), image)
    assume(margin > 1e-9)
    grid = pixel_grid(big[window], mask[window], k, stride, 4.5, (top, left), image)
    keep = grid_inliers(grid).reshape(-1, grid.width)
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(keep), strict=True)} == expected


def depth_edge(phase: int) -> tuple[np.ndarray, np.ndarray, CameraIntrinsics, np.ndarray]:
    """A table edge 1 m away in front of a wall 3 m away, with flying pixels along the edge and a few speckles.

    Returns depth, the detection's mask (the foreground grown past the edge, as a ragged mask is), the
    intrinsics and which pixels are wrong. A time-of-flight or stereo camera mixes foreground and background at an
    edge into depths in between: here a band two pixels wide, each column at its own depth along the whole edge
    (a line of mutually close points, which a few nearest neighbours in 3D would keep). `phase` moves the edge by a
    pixel, so a grid of every second pixel meets either column of the band.
    """
    rng = np.random.default_rng(11 + phase)
    k = CameraIntrinsics.from_fov(80, 60, 70.0)
    depth = np.full((60, 80), 3.0)
    edge = 40 + phase
    depth[:, :edge] = 1.0
    depth += rng.normal(0.0, 0.002, depth.shape) * depth**2
    wrong = np.zeros(depth.shape, dtype=bool)
    wrong[:, edge : edge + 2] = True
    depth[:, edge] = 1.6 + rng.normal(0.0, 0.005, 60)
    depth[:, edge + 1] = 2.4 + rng.normal(0.0, 0.005, 60)
    speckles = (rng.integers(5, 55, 6), rng.integers(5, 35, 6))  # lone wrong depths inside the surface
    depth[speckles] = rng.uniform(1.3, 2.7, 6)
    wrong[speckles] = True
    mask = np.zeros(depth.shape, dtype=bool)
    mask[:, : edge + 4] = True
    return depth.astype(np.float32), mask, k, wrong


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("phase", [0, 1])
def test_flying_pixels_at_a_depth_edge_are_removed(stride: int, phase: int) -> None:
    depth, mask, k, wrong = depth_edge(phase)
    grid = pixel_grid(depth, mask, k, stride, 8.0)
    keep = grid_inliers(grid).reshape(-1, grid.width)[:, :-1]
    sampled = (slice(None, None, stride), slice(None, None, stride))
    assert wrong[sampled].any(axis=0).sum() >= 1  # the grid does meet the band
    assert not (keep & wrong[sampled]).any()
    surface = mask[sampled] & ~wrong[sampled] & (depth[sampled] < 1.5)
    assert (keep & surface).sum() >= 0.95 * surface.sum()  # the surface stays, edges and corners included


@BOUNDED
@given(
    st.integers(0, 10_000),
    st.floats(50.0, 90.0),
    st.sampled_from([1, 2]),
    st.floats(0.0, 75.0),
    st.floats(0.0, 2 * math.pi),
    st.integers(12, 80),
    st.integers(12, 80),
    st.floats(0.0, 0.3),
)
# the slant along the minority direction of a wide or tall window: one limit for all directions kept none of it
@example(seed=1, hfov=60.0, stride=1, tilt=75.0, turn=math.pi / 2, height=12, width=80, noise=0.0)
@example(seed=1, hfov=60.0, stride=2, tilt=75.0, turn=0.0, height=80, width=12, noise=0.1)
def test_a_plane_within_75_degrees_of_facing_the_camera_is_kept(
    seed: int, hfov: float, stride: int, tilt: float, turn: float, height: int, width: int, noise: float
) -> None:
    """A plane turned `tilt` degrees from facing the camera (about any axis across the line of sight), seen in a
    window anywhere in a 640x480 image, with depth noise of up to 0.3 of a pixel's footprint: 90%+ of it is kept
    whichever direction its slant runs along the grid."""
    rng = np.random.default_rng(seed)
    k = CameraIntrinsics.from_fov(640, 480, hfov)
    top, left = int(rng.integers(0, 480 - height)), int(rng.integers(0, 640 - width))
    ray = np.array([(left + width / 2 - k.cx) / k.fx, (top + height / 2 - k.cy) / k.fy, 1.0])
    ray /= np.linalg.norm(ray)
    sideways = np.array([1.0, 0.0, 0.0]) - ray[0] * ray  # the image's x, made square to the ray
    sideways /= np.linalg.norm(sideways)
    # turn 0: the depth changes along the image's rows (a wall to the side); pi/2: along its columns (a table top)
    across = math.cos(turn) * sideways + math.sin(turn) * np.cross(ray, sideways)
    normal = math.cos(math.radians(tilt)) * ray + math.sin(math.radians(tilt)) * across
    distance = float(rng.uniform(0.5, 4.0)) * float(normal @ ray)  # the window's centre 0.5-4 m along its ray
    v, u = np.mgrid[top : top + height, left : left + width].astype(float)
    den = normal[0] * (u - k.cx) / k.fx + normal[1] * (v - k.cy) / k.fy + normal[2]
    assume(bool((den > 0).all()))
    depth = distance / den
    assume(bool(depth.max() < 20.0))
    depth = depth + rng.normal(0.0, 1.0, depth.shape) * noise * depth / k.fx
    grid = pixel_grid(depth.astype(np.float32), np.ones(depth.shape, dtype=bool), k, stride, 20.0, (top, left))
    assert grid_inliers(grid).sum() >= 0.9 * grid.valid.sum()


@BOUNDED
@given(
    st.integers(0, 10_000),
    st.floats(0.5, 3.0),
    st.floats(0.5, 4.0),
    st.integers(1, 3),
    st.sampled_from([1, 2]),
    st.booleans(),
    st.integers(0, 1),
)
def test_flying_pixels_at_any_depth_edge_are_all_removed(
    seed: int, near: float, step: float, band: int, stride: int, turned: bool, phase: int
) -> None:
    """A surface `near` m away in front of one `step` m further, a band of 1-3 grid columns of flying pixels
    between them (depths spread evenly over 15-85% of the way, as a camera mixes the two), along a vertical or
    (turned) horizontal edge, depth noise of a fifth of a pixel's footprint: no flying pixel is kept, 95%+ of the
    foreground surface is. (Flying pixels two grid columns wide at one depth would be a thin surface: not tried.)"""
    rng = np.random.default_rng(seed)
    k = CameraIntrinsics.from_fov(640, 480, 70.0)
    rows, cols = (80, 60) if turned else (60, 80)  # along the edge, across it
    depth = np.full((rows, cols), near + step)
    edge = 2 * int(rng.integers(16, 24)) + phase
    depth[:, :edge] = near
    wrong = np.zeros(depth.shape, dtype=bool)
    width = band * stride
    wrong[:, edge : edge + width] = True
    shares = np.linspace(0.15, 0.85, width) if width > 1 else np.array([0.5])
    for column, share in enumerate(shares + rng.normal(0.0, 0.01, width)):
        depth[:, edge + column] = near + share * step
    depth += rng.normal(0.0, 0.2, depth.shape) * depth / k.fx
    speckles = (rng.integers(2, rows - 2, 6), rng.integers(2, edge - 2, 6))  # lone wrong depths in the surface
    depth[speckles] = near + rng.uniform(0.3, 0.7, 6) * step
    wrong[speckles] = True
    mask = np.zeros(depth.shape, dtype=bool)
    mask[:, : edge + width + 2 * stride] = True
    origin = (200, 280)
    if turned:
        depth, mask, wrong = depth.T, mask.T, wrong.T
    grid = pixel_grid(depth.astype(np.float32), mask, k, stride, 10.0, origin)
    keep = grid_inliers(grid).reshape(-1, grid.width)[:, :-1]
    sampled = (slice(None, None, stride), slice(None, None, stride))
    assert wrong[sampled].any()
    assert not (keep & wrong[sampled]).any()
    surface = mask[sampled] & ~wrong[sampled] & (depth[sampled] < near + 0.1)
    assert (keep & surface).sum() >= 0.95 * surface.sum()


def test_fused_points_of_a_depth_edge_have_no_flying_pixels() -> None:
    """Through ObjectMap: a camera at the map origin, so a point's z is its depth."""
    depth, mask, k, _ = depth_edge(0)
    config = FusionConfig(voxel=0.005, stride=1, min_points=5)
    points = ObjectMap(config).detection_points(Frame(depth, k, np.eye(4), []), Detection("table", 0.9, mask))
    assert len(points) > 1000
    assert not ((points[:, 2] > 1.1) & (points[:, 2] < 2.9)).any()


def dictionary_downsample(points: np.ndarray, voxel: float) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """(cell, mean) per occupied voxel, in the cells' (x, y, z) order."""
    groups: dict[tuple[int, ...], list[np.ndarray]] = {}
    for point in points:
        groups.setdefault(tuple(int(c) for c in np.floor(point / voxel)), []).append(point)
    return [(cell, np.mean(groups[cell], axis=0)) for cell in sorted(groups)]


@BOUNDED
@given(st.integers(0, 10_000), st.integers(1, 300), st.sampled_from([0.01, 0.025, 0.1]), st.booleans())
def test_voxel_downsample_is_the_mean_per_voxel_in_cell_order(seed: int, count: int, voxel: float, wide: bool) -> None:
    rng = np.random.default_rng(seed)
    # wide clouds leave no room for the point index in the 64-bit key: the argsort path
    spread = 2.0e4 * voxel if wide else rng.uniform(0.05, 3.0)
    points = rng.uniform(-spread, spread, (count, 3))
    points = np.vstack([points, points[: count // 3] + rng.normal(0.0, voxel / 10, (count // 3, 3))])
    expected = dictionary_downsample(points, voxel)
    got = voxel_downsample(points, voxel)
    assert got.shape == (len(expected), 3)
    assert np.allclose(got, np.array([mean for _, mean in expected]), rtol=0.0, atol=1e-9 * max(spread, 1.0))


def test_voxel_downsample_refuses_a_cloud_too_wide_for_one_key() -> None:
    with pytest.raises(ValueError, match="downsample in parts"):
        voxel_downsample(np.array([[0.0, 0.0, 0.0], [1e5, 1e5, 1e5]]), 0.001)


@pytest.mark.parametrize(
    ("offset", "voxel"), [(-1.0e6, 0.025), (1.0e9, 0.025), (-3.0e3, 1.0e-6), (0.0, 1.0e-9), (-1.0e15, 1.0)]
)
def test_voxel_keys_far_from_the_origin_and_tiny_voxels(offset: float, voxel: float) -> None:
    rng = np.random.default_rng(5)
    points = offset + rng.uniform(0.0, 40 * voxel, (200, 3))
    points = np.vstack([points, points[:50] + voxel / 10])
    expected = dictionary_downsample(points, voxel)
    got = voxel_downsample(points, voxel)
    assert np.allclose(got, np.array([mean for _, mean in expected]), rtol=1e-12, atol=0.0)


def test_voxel_cells_beyond_int64_are_refused_not_merged() -> None:
    """Cells past int64 (1e7 m at a 1e-12 m voxel) cast to one garbage value, so distinct
    points once fell into one voxel without a word; a cloud with a NaN got the wrong message. Now a ValueError."""
    with pytest.raises(ValueError, match="beyond int64 cells"):
        voxel_downsample(np.array([[1.0e7, 0.0, 0.0], [1.0e7 + 1.0, 0.0, 0.0]]), 1.0e-12)
    with pytest.raises(ValueError, match="beyond int64 cells"):
        voxel_downsample(np.array([[np.nan, 0.0, 0.0], [1.0, 0.0, 0.0]]), 0.025)


@BOUNDED
@given(st.integers(0, 10_000), st.integers(2, 300), st.sampled_from([0.03, 0.06, 0.1]))
def test_dbscan_labels_do_not_depend_on_the_tree_passed_in(seed: int, count: int, eps: float) -> None:
    """Denoising hands DBSCAN the object's own (unbalanced, 32-point-leaf) KD-tree instead of a new one."""
    rng = np.random.default_rng(seed)
    points = np.vstack([rng.normal(c, 0.03, (count, 3)) for c in rng.uniform(0, 0.5, (3, 3))])
    quick = cKDTree(points, leafsize=32, balanced_tree=False, compact_nodes=False)
    assert np.array_equal(dbscan_labels(points, eps, 5, quick), dbscan_labels(points, eps, 5))
    assert np.array_equal(largest_cluster(points, eps, tree=quick), largest_cluster(points, eps))


@BOUNDED
@given(st.integers(0, 10_000), st.sampled_from([0, 64, 256]))
def test_merge_check_with_box_bounds_decides_as_the_full_overlap(seed: int, sample: int) -> None:
    """merge_duplicates asks whether an overlap reaches a share, skipping the KD-tree when the box cannot."""
    rng = np.random.default_rng(seed)
    fmap = ObjectMap(FusionConfig(overlap_sample=sample))
    clouds = []
    for _ in range(4):
        centre = rng.uniform(0, 0.6, 3)
        clouds.append(voxel_downsample(centre + rng.normal(0, rng.uniform(0.02, 0.2), (300, 3)), 0.025))
    for index, cloud in enumerate(clouds):
        fmap.objects[f"o{index}"] = MapObject(f"o{index}", cloud, Counter({"mug": 1}), 1)
    for points in clouds:
        for obj in fmap.objects.values():
            overlap = fmap.overlap(points, obj)
            for share in (0.0, 0.1, 0.5, 0.9, overlap, overlap + 1e-12, 1.0):
                assert fmap._overlap_reaches(points, obj, share) == (overlap >= share)


# ------------------------------------------------------------------------------ thin objects one grid pixel wide
THIN = CameraIntrinsics(554.0, 554.0, 119.5, 119.5, 240, 240)  # a 640x480, 60-degree camera's focal length


def grid_line(angle: float, length: int) -> list[Pixel]:
    """An 8-connected digital line (Bresenham) of `length` steps at `angle` (radians, 0: along a row), from the
    origin: each pixel but the ends has exactly its two neighbours on the line."""
    di, dj = round(length * math.sin(angle)), round(length * math.cos(angle))
    steps = max(abs(di), abs(dj), 1)
    return [(round(t * di / steps), round(t * dj / steps)) for t in range(steps + 1)]


def blocks(shape: tuple[int, int], line: list[Pixel], stride: int, top: int, left: int) -> np.ndarray:
    """The image pixels of the grid pixels `line` (each a stride x stride block) placed at (top, left)."""
    out = np.zeros(shape, dtype=bool)
    for i, j in line:
        out[top + i * stride : top + (i + 1) * stride, left + j * stride : left + (j + 1) * stride] = True
    return out


def kept_in_image(depth: np.ndarray, mask: np.ndarray, k: CameraIntrinsics, stride: int) -> np.ndarray:
    """grid_inliers through the detection's window (the mask's bounding box) with the whole image around it, as
    ObjectMap.detection_points runs it; the answer as an image-sized mask of the kept pixels."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    v0, u0 = int(rows[0]), int(cols[0])
    window = (slice(v0, int(rows[-1]) + 1), slice(u0, int(cols[-1]) + 1))
    grid = pixel_grid(depth[window], mask[window], k, stride, 8.0, (v0, u0), depth)
    keep = grid_inliers(grid).reshape(-1, grid.width)[:, :-1]
    out = np.zeros(depth.shape, dtype=bool)
    out[window][::stride, ::stride] = keep
    return out


@BOUNDED
@given(
    st.floats(0.0, math.pi),
    st.integers(6, 60),
    st.sampled_from([1, 2, 3]),
    st.floats(0.5, 4.0),
    st.sampled_from(["wall", "nothing"]),
    st.floats(0.3, 3.0),
)
@example(angle=math.pi / 2, length=40, stride=2, near=2.0, behind="wall", step=2.0)  # a pole
@example(angle=0.0, length=40, stride=2, near=2.0, behind="wall", step=2.0)  # a cable
@example(angle=math.pi / 4, length=40, stride=2, near=2.0, behind="wall", step=2.0)
@example(angle=3 * math.pi / 4, length=40, stride=2, near=2.0, behind="nothing", step=2.0)
def test_a_line_one_grid_pixel_wide_is_kept_in_any_orientation(
    angle: float, length: int, stride: int, near: float, behind: str, step: float
) -> None:
    """A rod or cable whose mask is one grid pixel wide, standing in front of a wall or of
    nothing (no valid depth): every pixel of it but its two ends is kept, whatever its orientation."""
    k = THIN
    line = grid_line(angle, length)
    top, left = 30 - stride * min(i for i, _ in line), 30 - stride * min(j for _, j in line)
    depth = np.full((k.height, k.width), near + step if behind == "wall" else 0.0)
    rod = blocks(depth.shape, line, stride, top, left)
    depth[rod] = near
    keep = kept_in_image(depth.astype(np.float32), rod, k, stride)
    for i, j in line[1:-1]:
        assert keep[top + i * stride, left + j * stride]


def four_ring(pixels: list[Pixel]) -> list[Pixel]:
    """The grid pixels next to `pixels` across a side (not a corner), outside them: a band one grid pixel wide."""
    inside = set(pixels)
    return sorted({(i + di, j + dj) for i, j in pixels for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1))} - inside)


def pole_scene(
    orientation: str, stride: int, near: float, step: float, shares: tuple[float, float], bleed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A pole one grid pixel wide `near` m away in front of a wall `step` m further, with a band of flying pixels
    one grid pixel wide between them on either side (at `shares` of the way to the wall), and a mask over the pole,
    the flying pixels and `bleed` grid pixels of the wall. Returns depth, mask and the middle part (away from
    the pole's ends) of the pole, the flying pixels and the wall."""
    angle = {"vertical": math.pi / 2, "horizontal": 0.0, "diagonal": math.pi / 4, "anti-diagonal": 3 * math.pi / 4}
    line = grid_line(angle[orientation], 60 // stride)
    top, left = 40 - stride * min(i for i, _ in line), 40 - stride * min(j for _, j in line)
    depth = np.full((THIN.height, THIN.width), near + step)
    pole = blocks(depth.shape, line, stride, top, left)
    ring = blocks(depth.shape, four_ring(line), stride, top, left)
    v, u = np.mgrid[0 : THIN.height, 0 : THIN.width]
    (i0, j0), (i1, j1) = line[0], line[-1]
    side = (u - left - j0 * stride) * (i1 - i0) - (v - top - i0 * stride) * (j1 - j0) > 0
    depth[ring & side] = near + shares[0] * step
    depth[ring & ~side] = near + shares[1] * step
    depth[pole] = near
    mask = pole | ring
    if bleed:
        mask |= blocks(depth.shape, four_ring(line + four_ring(line)), stride, top, left)
    middle = ndimage.binary_dilation(blocks(depth.shape, line[4:-4], stride, top, left), iterations=3 * stride)
    wall = mask & ~pole & ~ring
    return depth.astype(np.float32), mask, pole & middle, ring & middle, wall & middle


@BOUNDED
@given(
    st.sampled_from(["vertical", "horizontal", "diagonal", "anti-diagonal"]),
    st.sampled_from([1, 2]),
    st.floats(0.5, 3.0),
    st.floats(0.5, 3.0),
    st.floats(0.2, 0.8),
    st.floats(0.2, 0.8),
    st.integers(0, 1),
)
def test_a_thin_pole_with_flying_pixels_and_the_wall_in_its_mask_is_kept(
    orientation: str, stride: int, near: float, step: float, first: float, second: float, bleed: int
) -> None:
    """The pole is kept whole, with flying pixels between it and the wall and a sliver of the wall one grid pixel
    wide in the mask. Whether those flying pixels go is not asserted: in a mask this narrow the pairs across are
    mostly pairs across depth edges, so the limits grow until they count as close (they stay, as they did before
    the thin-object test; test_perception_surfaces.py holds it as an expected failure). Flying pixels at alike depths on
    both sides of a diagonal pole touch diagonally across it (a surface behind the pole) and are not tried."""
    k = THIN
    gaps = [first, 1.0 - first, second, 1.0 - second]
    if orientation in ("diagonal", "anti-diagonal"):
        gaps.append(abs(first - second))
    # the smallest depth jump in camera-facing steps (the diagonal limit is the two axes' added: 24 at most)
    assume(min(gaps) * step * k.fx / (stride * (near + step)) > 30.0)
    depth, mask, pole, flying, wall = pole_scene(orientation, stride, near, step, (first, second), bleed)
    keep = kept_in_image(depth, mask, k, stride)
    sampled = np.zeros(depth.shape, dtype=bool)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    sampled[rows[0] :: stride, cols[0] :: stride] = True
    assert (flying & sampled).any()
    del wall  # kept or not, see the docstring
    assert (keep & pole).sum() == (pole & sampled).sum()
