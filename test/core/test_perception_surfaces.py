"""Which surfaces and thin objects a real depth camera sees the pixel-grid outlier test keeps (`grid_inliers`,
through `ObjectMap.detection_points` where the whole pipeline is in question), and which stray pixels it drops.

Kept: a table top seen at a shallow angle (5 and 10 degrees) or from above, a tall wall at a grazing angle, a wide
wall at a slant with depths quantized to 1 mm (16UC1) or by a stereo camera's 1/8-pixel disparity steps (each
direction has its own limit, from its own pairs: one limit set by the majority direction dropped the table top
whole); a counter top just below the camera, seen within about 5 degrees of grazing (no ceiling on the limits: a
ceiling of 12 kept 20% of it); a pole or rod one grid pixel wide in any orientation and along each border of the
image (at least 90% of what the earlier pipeline, voxels and a 3D 6-NN test, kept); a striped detection whose every
pixel has exactly 2 close neighbours, as lines. Dropped: a pair of speckles in front of the wall they are masked
with.

Documented limits kept as strict xfails: flying pixels between a pole and the wall behind it, in the pole's narrow
mask, stay (as before the thin-object test); three speckles in an L, or the middle one of three in a row, stand out
like a rod's pixels and are kept; a cable lying on a wall (1 cm in front of it) has the wall as a close neighbour
outside its mask, as a bled sliver of mask does, and is dropped whole. See docs/concepts/perception_speed.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sayplan_core.perception.fusion import Detection, Frame, FusionConfig, ObjectMap
from sayplan_core.perception.geometry import (
    CameraIntrinsics,
    backproject,
    grid_inliers,
    pixel_grid,
    remove_outliers,
    voxel_downsample,
)

K = CameraIntrinsics.from_fov(640, 480, 60.0)


def plane_depth(normal: tuple[float, float, float], distance: float) -> np.ndarray:
    """Depth (m) of the plane normal . P = distance over the whole 640x480 image; NaN where the ray misses it."""
    v, u = np.mgrid[0 : K.height, 0 : K.width].astype(float)
    den = normal[0] * (u - K.cx) / K.fx + normal[1] * (v - K.cy) / K.fy + normal[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, distance / den, np.nan)


def kept_share(depth: np.ndarray, window: tuple[slice, slice], stride: int) -> float:
    part = depth[window].astype(np.float32)
    mask = np.isfinite(part)
    grid = pixel_grid(part, mask, K, stride, 8.0, (window[0].start, window[1].start))
    return float(grid_inliers(grid).sum()) / max(int(grid.valid.sum()), 1)


def fused_points(depth: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """detection_points with the default configuration, camera at the map origin."""
    frame = Frame(depth.astype(np.float32), K, np.eye(4), [])
    return ObjectMap(FusionConfig()).detection_points(frame, Detection("thing", 0.9, mask))


def kept(depth: np.ndarray, mask: np.ndarray, k: CameraIntrinsics, stride: int, max_depth: float) -> np.ndarray:
    """grid_inliers over the mask's bounding box with the whole image around it, as a (rows, columns) array."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    v0, u0 = int(rows[0]), int(cols[0])
    window = (slice(v0, int(rows[-1]) + 1), slice(u0, int(cols[-1]) + 1))
    grid = pixel_grid(depth[window], mask[window], k, stride, max_depth, (v0, u0), depth)
    return np.asarray(grid_inliers(grid).reshape(-1, grid.width)[:, :-1])


# ---------------------------------------------------------------------------------------------------------- surfaces
def table_top(pitch_deg: float) -> np.ndarray:
    """A horizontal surface 0.45 m below a camera pitched down by `pitch_deg` (a table top seen from standing
    height); the optical frame's y is down, so the plane's normal leans towards +y and +z."""
    t = math.radians(pitch_deg)
    return plane_depth((0.0, math.cos(t), math.sin(t)), 0.45)


@pytest.mark.parametrize("pitch", [5.0, 10.0])
def test_a_table_top_seen_at_a_shallow_angle_is_kept(pitch: float) -> None:
    """One limit for all four directions, set by the majority direction, once dropped the whole
    surface (right pairs at e~1, lower pairs at e~5-11 outside 3x the median, limit 1.5, 2 close neighbours per
    pixel). Each direction now has its own limit, from its own pairs."""
    depth = table_top(pitch)
    window = (slice(240, 300), slice(100, 540))  # 2.3-5.1 m at 5 degrees, 1.6-2.6 m at 10
    assert np.isfinite(depth[window]).all() and np.nanmax(depth[window]) < 8.0
    assert kept_share(depth, window, 2) >= 0.9
    mask = np.zeros(depth.shape, dtype=bool)
    mask[window] = True
    assert len(fused_points(depth, mask)) >= FusionConfig().min_points


def test_a_table_top_seen_from_above_is_kept() -> None:
    """The same surface at a steeper view (held): the pairs of both directions are alike."""
    depth = table_top(30.0)
    assert kept_share(depth, (slice(240, 300), slice(100, 540)), 2) >= 0.99


def test_a_tall_wall_seen_at_a_grazing_angle_is_kept() -> None:
    """The table top turned by 90 degrees: a tall mask of a corridor wall 0.45 m to the side, the camera turned 5 degrees
    towards it, has its slant along the minority (horizontal) direction."""
    t = math.radians(5.0)
    depth = plane_depth((math.cos(t), 0.0, math.sin(t)), 0.45)  # the table top's geometry turned by 90 degrees
    window = (slice(20, 460), slice(320, 380))
    assert np.isfinite(depth[window]).all() and np.nanmax(depth[window]) < 8.0
    assert kept_share(depth, window, 2) >= 0.9


def test_a_wide_wall_seen_at_a_slant_is_kept() -> None:
    """Held: slant along the majority direction; and depths quantized to 1 mm (16UC1) or by a stereo camera's
    1/8-pixel disparity steps (about 8 cm at 7 m) keep the whole surface."""
    for yaw in (20.0, 60.0):
        t = math.radians(yaw)
        z = plane_depth((math.sin(t), 0.0, math.cos(t)), 5 * math.cos(t))
        disparity = np.round(K.fx * 0.05 / z * 8) / 8
        with np.errstate(divide="ignore"):  # zero disparity: an infinite depth, invalid
            stereo = K.fx * 0.05 / disparity
        for depth in (z, np.round(z * 1000) / 1000, stereo):
            assert kept_share(depth, (slice(180, 300), slice(220, 420)), 2) >= 0.98


def horizontal_surface(below: float) -> np.ndarray:
    """Depth of a horizontal plane `below` m under a level camera (optical y is down); NaN above the horizon."""
    v = np.mgrid[0 : K.height, 0 : K.width][0].astype(float)
    slope = (v - K.cy) / K.fy
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(slope > 0, below / slope, np.nan)


@pytest.mark.parametrize(("below", "near"), [(0.15, 2.0), (0.2, 3.0), (0.3, 4.0)])
def test_a_counter_top_just_below_the_camera_is_kept(below: float, near: float) -> None:
    depth = horizontal_surface(below).astype(np.float32)
    mask = (depth > near) & (depth < near + 0.6)
    mask[:, :200] = False
    mask[:, 440:] = False
    keep = kept(depth, mask, K, 2, 8.0)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    sampled = mask[rows[0] :: 2, cols[0] :: 2]
    assert keep.sum() >= 0.9 * sampled.sum()


# ------------------------------------------------------------------------------------------------------ thin objects
def rod(orientation: str) -> np.ndarray:
    """The mask of a rod 2 pixels wide (7 mm at 2 m), about 1.4 m long: one grid pixel wide at stride 2."""
    v, u = np.mgrid[0 : K.height, 0 : K.width]
    if orientation == "vertical":
        return (u >= 301) & (u <= 302) & (v >= 40) & (v < 440)
    if orientation == "horizontal":
        return (v >= 201) & (v <= 202) & (u >= 120) & (u < 520)
    offset = u - v if orientation == "diagonal" else u + v - 560
    return (offset >= 60) & (offset <= 61) & (v >= 40) & (v < 440)


@pytest.mark.parametrize("orientation", ["vertical", "horizontal", "diagonal", "anti-diagonal"])
def test_a_pole_one_grid_pixel_wide_is_kept(orientation: str) -> None:
    """A thin object whose mask is one grid pixel wide (a rod or cable 1-2 pixels wide at
    stride 2; the grid starts at the mask's first column, so 3 pixels already give 2 columns) had only 2 close
    neighbours per pixel: the whole detection was dropped, where the 3D 6-NN test before kept the line of points.
    A pixel with 2 close neighbours that stands out in front of the rest of its neighbours is now kept: the cloud
    has at least 90% of the points the earlier pipeline (all masked pixels, voxels, 6-NN removal) kept."""
    mask = rod(orientation)
    depth = np.where(mask, 2.0, 4.0)
    points = fused_points(depth, mask)
    config = FusionConfig()
    v0, u0, window = Detection("rod", 0.9, mask).pixel_window(K.height, K.width)
    cut = depth[v0 : v0 + window.shape[0], u0 : u0 + window.shape[1]]
    pixels = backproject(cut, window, K, np.eye(4), config.stride, config.max_depth, (v0, u0))
    before = remove_outliers(voxel_downsample(pixels, config.voxel))
    assert len(points) >= config.min_points
    assert len(points) >= 0.9 * len(before)
    assert np.allclose(points[:, 2], 2.0)


@pytest.mark.xfail(
    strict=True,
    reason="a narrow mask's pairs across are mostly pairs across its depth edges, so each direction's limit grows "
    "until flying pixels between a pole and the wall behind it count as close (as before the thin-object test); a "
    "ceiling of 12 on the limits removed them but dropped 80% of a counter top just below the camera "
    "(test_a_counter_top_just_below_the_camera_is_kept), so there is none",
)
def test_flying_pixels_between_the_pole_and_the_wall_go() -> None:
    """The same rod with a flying pixel on either side (depths a third and two thirds of the way to the wall) and a
    mask bled over them and a pixel of the wall: only the rod's points are fused."""
    mask = rod("vertical")
    depth = np.where(mask, 2.0, 4.0)
    depth[40:440, 300], depth[40:440, 303] = 2.7, 3.3
    grown = np.zeros(mask.shape, dtype=bool)
    grown[40:440, 298:306] = True
    points = fused_points(depth, grown)
    assert len(points) >= FusionConfig().min_points
    assert np.allclose(points[:, 2], 2.0)


@pytest.mark.parametrize("side", ["left", "right", "top", "bottom"])
def test_a_rod_along_each_border_of_the_image_is_kept(side: str) -> None:
    """The window touches the border; the image's opposite border holds a nearer depth (a wrapped index would read
    it and drop the rod)."""
    depth = np.full((K.height, K.width), 4.0)
    rod = np.zeros(depth.shape, dtype=bool)
    if side == "left":
        rod[40:440, 0:2], depth[:, -2:] = True, 1.0
    elif side == "right":
        rod[40:440, -2:], depth[:, :2] = True, 1.0
    elif side == "top":
        rod[0:2, 40:600], depth[-2:, :] = True, 1.0
    else:
        rod[-2:, 40:600], depth[:2, :] = True, 1.0
    depth[rod] = 2.0
    points = fused_points(depth, rod)
    assert len(points) >= FusionConfig().min_points
    assert np.allclose(points[:, 2], 2.0)


def test_a_striped_detection_is_kept_as_lines() -> None:
    """Every grid pixel of a detection with every other grid row without depth has exactly 2 close neighbours and
    goes through the thin-object test: each row is a line, kept. (Its cost is the bench's business, not a timed
    test's: scripts/bench_perception.py.)"""
    striped = np.full((K.height, K.width), 3.0, dtype=np.float32)
    striped[2::4, :] = np.nan
    striped[3::4, :] = np.nan
    mask = np.zeros(striped.shape, dtype=bool)
    mask[100:300, 100:400] = True
    window = (slice(100, 300), slice(100, 400))
    grid = pixel_grid(striped[window], mask[window], K, 2, 8.0, (100, 100), striped)
    assert grid_inliers(grid).sum() >= 0.95 * grid.valid.sum()  # rows with no depth between: lines, kept


# ------------------------------------------------------------------------------------------------------ stray pixels
@pytest.mark.xfail(
    strict=True,
    reason="three speckles in an L (or the middle one of three in a row), 1 m in front of the wall "
    "they are masked with, stand out as a thin object and are kept (the old 3D 6-NN test dropped them)",
)
@pytest.mark.parametrize("shape", ["L", "row"])
def test_three_speckles_in_front_of_a_wall_go(shape: str) -> None:
    depth = np.full((K.height, K.width), 3.0)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[200:280, 280:360] = True
    last = (242, 320) if shape == "L" else (240, 324)
    for i, j in ((240, 320), (240, 322), last):  # grid pixels (20, 20), (20, 21) and (21, 20) or (20, 22)
        depth[i : i + 2, j : j + 2] = 2.0
    assert not (fused_points(depth, mask)[:, 2] < 2.5).any()


def test_a_pair_of_speckles_in_front_of_a_wall_goes() -> None:
    """Held: each of a pair has one close neighbour; nor is it a thin object."""
    depth = np.full((K.height, K.width), 3.0)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[200:280, 280:360] = True
    for j in (320, 322, 340):  # a horizontal pair, and a single speckle
        depth[240:242, j : j + 2] = 2.0
    depth[250:254, 300:302] = 2.0  # a vertical pair
    points = fused_points(depth, mask)
    assert len(points) >= FusionConfig().min_points
    assert not (points[:, 2] < 2.5).any()


@pytest.mark.xfail(
    strict=True,
    reason="a cable 1 cm in front of a wall, one grid pixel wide, has the wall as a close "
    "neighbour outside its mask (as a bled sliver does) and is dropped whole",
)
def test_a_cable_lying_on_a_wall_is_kept() -> None:
    depth = np.full((K.height, K.width), 2.01)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[40:440, 301:303] = True  # 2 pixels wide: one column of the stride-2 grid
    depth[mask] = 2.0
    assert len(fused_points(depth, mask)) >= FusionConfig().min_points
