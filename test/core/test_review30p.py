"""Hostile review of the thin-object test and the limits' ceiling of the pixel-grid outlier test (h-percep30).

Findings:

1. (medium, fixed by removing the ceiling) The ceiling of 12 on each direction's limit dropped most of a horizontal
   surface seen just above its plane: a counter top 0.15 m below the camera at 2.0-2.6 m (rays about 4 degrees
   from grazing, e~15 along the columns) kept 20% of its pixels, where the rule before (a1a255d) kept 100%; 0.2 m
   below at 3.0-3.6 m kept 33%. Its pixels had only their 2 neighbours along the row close, and the row below
   (nearer) vetoed them as a thin object. A band of flying pixels is such a surface to a test of a pixel's
   neighbours, so the ceiling went: flying pixels in a pole's narrow mask stay, as before the thin-object test
   (test_review29c.py holds that as an expected failure).
2. (low, xfail) Three speckles in an L (each with the other two as its close neighbours) in front of the wall they
   are masked with stand out like a rod's pixels and are all kept, and so is the middle one of three in a row: a
   point 1 m in front of the wall is fused. A 2x2 clump was already kept by the rule before this change; the old
   3D 6-NN test dropped both. A pair goes (held); a one-pixel stripe of wrong depth across a detection stays, as
   it did with the 3D 6-NN test (not a new leak).
3. (low, xfail) A thin object lying on a surface (a cable 1 cm in front of a wall, one grid pixel wide) has a close
   neighbour outside its mask, as a sliver of mask bled over the wall does, and is dropped whole.
4. (low, fixed) `pixel_grid` took an `image` whose shape does not hold the window at `origin` (a wrong origin, a
   negative one, a 3-channel image) without a word; the thin-object test then read the depth of other pixels.
   It now raises ValueError.

Held (passing tests below): windows at the image's corners and edges, strides 1-4, masks of 1-3 pixels, a trap of
nearer depth on the image's far row and column that a wrapped negative index would read, against the rule written
pixel by pixel (`rule_inliers` of test_perception_grid.py, which reads the image through its own bounds checks);
float16 / float64 / uint16 (millimetres) / Fortran-ordered / strided views of the image give the same answer as
float32 (so do negative-stride views and a 100-megapixel zero-stride broadcast, read only around the window);
all-NaN, zero, infinite and negative images keep nothing and warn nothing; rods along each border of the
image through `ObjectMap.detection_points`; a striped detection whose every pixel has exactly 2 close neighbours
costs no more than a flat one of the same size (no performance cliff).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_perception_grid import rule_inliers

from sayplan_core.perception.fusion import Detection, Frame, FusionConfig, ObjectMap
from sayplan_core.perception.geometry import CameraIntrinsics, grid_inliers, pixel_grid

K = CameraIntrinsics.from_fov(640, 480, 60.0)
BOUNDED = settings(max_examples=200, derandomize=True, deadline=None)


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


# ------------------------------------------------------------------------------------------------------ findings
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


@pytest.mark.xfail(
    strict=True,
    reason="finding 2 (low): three speckles in an L (or the middle one of three in a row), 1 m in front of the wall "
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
    reason="finding 3 (low): a cable 1 cm in front of a wall, one grid pixel wide, has the wall as a close "
    "neighbour outside its mask (as a bled sliver does) and is dropped whole",
)
def test_a_cable_lying_on_a_wall_is_kept() -> None:
    depth = np.full((K.height, K.width), 2.01)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[40:440, 301:303] = True  # 2 pixels wide: one column of the stride-2 grid
    depth[mask] = 2.0
    assert len(fused_points(depth, mask)) >= FusionConfig().min_points


def test_a_window_not_inside_the_image_is_refused() -> None:
    """finding 4 (low, fixed): the window must lie inside `image` at `origin`, or the thin-object test reads the
    depth around other pixels."""
    image = np.full((48, 64), 2.0, dtype=np.float32)
    window, mask = image[:10, :10], np.ones((10, 10), dtype=bool)
    for origin in ((40, 0), (0, 60), (-1, 0), (0, -3), (39, 55)):
        with pytest.raises(ValueError, match="not inside"):
            pixel_grid(window, mask, K, 2, 8.0, origin, image)
    with pytest.raises(ValueError, match="not inside"):
        pixel_grid(window, mask, K, 2, 8.0, (0, 0), image[:, :, None])
    for origin in ((38, 54), (0, 0), (38, 0), (0, 54)):  # touching the far edges is fine
        pixel_grid(window, mask, K, 2, 8.0, origin, image)


# ---------------------------------------------------------------------------------------------------------- held
@BOUNDED
@given(
    st.integers(0, 10_000),
    st.sampled_from(["top-left", "top-right", "bottom-left", "bottom-right"]),
    st.integers(1, 4),
    st.integers(1, 9),
    st.integers(1, 9),
    st.sampled_from(["tiny", "line", "ragged"]),
)
def test_windows_at_the_image_corners_follow_the_written_rule(
    seed: int, corner: str, stride: int, height: int, width: int, kind: str
) -> None:
    """Windows touching a corner of the image (the neighbours one grid step beyond are outside it), masks of 1-3
    pixels, lines and ragged masks; the far row and column of the image hold a depth nearer than anything, which a
    negative index wrapping around would read as a nearer neighbour and veto a thin object with."""
    rng = np.random.default_rng(seed)
    k = CameraIntrinsics(float(rng.uniform(20, 60)), float(rng.uniform(20, 60)), 10.0, 8.0, 20, 16)
    image = (rng.uniform(1.0, 4.0) + rng.normal(0.0, 0.01, (16, 20))).astype(np.float32)
    top = 0 if corner.startswith("top") else 16 - height
    left = 0 if corner.endswith("left") else 20 - width
    window = (slice(top, top + height), slice(left, left + width))
    mask = np.zeros((height, width), dtype=bool)
    if kind == "tiny":
        for _ in range(int(rng.integers(1, 4))):
            mask[int(rng.integers(0, height)), int(rng.integers(0, width))] = True
    elif kind == "line":
        if rng.random() < 0.5:
            mask[int(rng.integers(0, height)) // stride * stride, :] = True
        else:
            mask[:, int(rng.integers(0, width)) // stride * stride] = True
    else:
        mask = rng.random((height, width)) < 0.6
    part = image[window]
    front = rng.random()
    if front < 0.6:
        part[mask] = rng.uniform(0.5, 1.0)  # the masked pixels stand in front
    elif front < 0.8:
        part[mask] += rng.normal(0.0, 0.02)  # a sliver of the background
    part[rng.random(part.shape) < 0.05] = np.nan
    # the far rows and columns (outside the window) nearer than anything: a wrapped read of row or column -stride
    far_rows = np.arange(16)[(np.arange(16) < top) | (np.arange(16) >= top + height)]
    far_cols = np.arange(20)[(np.arange(20) < left) | (np.arange(20) >= left + width)]
    image[far_rows[-4:] if top == 0 else far_rows[:4], :] = 0.3
    image[:, far_cols[-4:] if left == 0 else far_cols[:4]] = 0.3
    expected, margin = rule_inliers(image[window], mask, k, stride, 8.0, (top, left), image)
    assume(margin > 1e-9)
    grid = pixel_grid(image[window], mask, k, stride, 8.0, (top, left), image)
    keep = grid_inliers(grid).reshape(-1, grid.width)
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(keep), strict=True)} == expected


def rod_scene(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rods one grid pixel wide in front of a noisy wall with holes and flying pixels, in millimetres."""
    rng = np.random.default_rng(seed)
    depth = np.round(rng.uniform(2500, 3500) + rng.normal(0, 5, (K.height, K.width)))
    mask = np.zeros(depth.shape, dtype=bool)
    mask[100:300, 200:202] = True
    mask[250:252, 100:400] = True
    depth[mask] = 2000
    depth[100:300, 202] = 2600  # flying pixels beside the vertical rod
    depth[rng.random(depth.shape) < 0.03] = 0
    mask[90:310, 195:210] |= rng.random((220, 15)) < 0.5
    return depth, mask


@pytest.mark.parametrize("seed", range(4))
def test_dtypes_and_memory_layouts_of_the_image_give_the_same_answer(seed: int) -> None:
    """16UC1 millimetres (uint16, max_depth in mm), float64 and float32 of the same millimetres, float16 (its values
    cast to float32 as the reference), a Fortran-ordered copy and a strided view of a larger array all keep the
    same pixels."""
    depth, mask = rod_scene(seed)
    reference = kept(depth.astype(np.float32), mask, K, 2, 8000.0)
    assert reference.any()
    wide = np.zeros((K.height, 2 * K.width), dtype=np.float32)
    wide[:, ::2] = depth
    for image in (depth.astype(np.uint16), depth.astype(np.float64), np.asfortranarray(depth.astype(np.float32))):
        assert np.array_equal(kept(image, mask, K, 2, 8000.0), reference)
    assert np.array_equal(kept(wide[:, ::2], mask, K, 2, 8000.0), reference)
    flipped = depth.astype(np.float32)[::-1, ::-1][::-1, ::-1]  # negative strides twice: a view, not a copy
    assert np.array_equal(kept(flipped, mask, K, 2, 8000.0), reference)
    metres = (depth / 1000).astype(np.float16)
    assert np.array_equal(kept(metres, mask, K, 2, 8.0), kept(metres.astype(np.float32), mask, K, 2, 8.0))


@pytest.mark.parametrize("value", [np.nan, 0.0, np.inf, -np.inf, -2.0, 9.0])
@pytest.mark.parametrize("stride", [1, 2, 3, 4])
def test_images_without_a_valid_depth_keep_nothing_and_warn_nothing(value: float, stride: int) -> None:
    depth = np.full((K.height, K.width), value, dtype=np.float32)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[0:60, 0:3] = True  # a thin window at the corner
    mask[470:480, 600:640] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not kept(depth, mask, K, stride, 8.0).any()
        assert len(fused_points(depth, mask)) == 0
    # a rod in front of that: kept (no valid depth around it vetoes nothing)
    depth[100:300, 300:302] = 2.0
    rod = np.zeros(depth.shape, dtype=bool)
    rod[100:300, 300:302] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(fused_points(depth, rod)) >= FusionConfig().min_points


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


def test_a_small_window_in_a_very_large_image_reads_only_around_it() -> None:
    """A 100-megapixel image (a zero-stride, read-only broadcast: no memory, no copy possible in time) with a rod's
    window in a corner: the same answer as the rod in a 640x480 image, and no pass over the whole image."""
    small = np.full((K.height, K.width), 4.0, dtype=np.float32)
    rod = np.zeros(small.shape, dtype=bool)
    rod[0:200, 0:2] = True
    small[rod] = 2.0
    window = (slice(0, 200), slice(0, 2))
    reference = grid_inliers(pixel_grid(small[window], rod[window], K, 2, 8.0, (0, 0), small))
    huge = np.broadcast_to(np.float32(4.0), (10_000, 10_000))
    start = time.perf_counter()
    grid = pixel_grid(small[window], rod[window], K, 2, 8.0, (0, 0), huge)
    assert np.array_equal(grid_inliers(grid), reference)
    assert time.perf_counter() - start < 0.5
    assert reference.sum() == 98  # all but the rod's two ends
