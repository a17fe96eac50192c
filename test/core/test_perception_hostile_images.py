"""The pixel-grid outlier test and the fusion on what a depth camera or a caller can hand them: invalid depths
(16UC1 zeros, NaN, +-inf, negative, beyond range) kept nowhere and warning nothing; masks on the image's border and
windows at its corners (the neighbours beyond are outside the image; a nearer depth on the far row and column, which
a wrapped negative index would read, vetoes nothing), strides 1-4, masks of 1-3 pixels, empty and flat masks,
against the rule written pixel by pixel (`rule_inliers` of test_perception_grid.py); huge depths with a huge range;
the image as float16, float64, uint16 millimetres, Fortran-ordered or a strided view, all giving the float32 answer;
a small window in a 100-megapixel zero-stride image read only around it; a window that does not lie inside the
image at its origin refused (ValueError), else the thin-object test would read the depth of other pixels; a
detection of nothing or of a few corner pixels and a frame with a NaN pose (localization lost) adding nothing.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_perception_grid import rule_inliers
from test_perception_surfaces import K, fused_points, kept, table_top

from sayplan_core.perception.fusion import Detection, Frame, FusionConfig, ObjectMap
from sayplan_core.perception.geometry import CameraIntrinsics, grid_inliers, pixel_grid

BOUNDED = settings(max_examples=200, derandomize=True, deadline=None)


# ---------------------------------------------------------------------------------------------------- invalid depths
def test_invalid_depths_are_never_kept_and_raise_no_warning() -> None:
    """16UC1 zeros, NaN, +-inf, negative and beyond-range depths in a camera-facing patch: only the valid pixels
    may be kept, those around the holes are (they keep 3+ close neighbours), and numpy warns about nothing."""
    rng = np.random.default_rng(3)
    depth = np.full((40, 50), 2.0, dtype=np.float32)
    bad = rng.random(depth.shape) < 0.1
    depth[bad] = rng.choice(np.array([0.0, np.nan, np.inf, -np.inf, -1.0, 9.0, 65.535], dtype=np.float32), bad.sum())
    mask = np.ones(depth.shape, dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid = pixel_grid(depth, mask, K, 1, 8.0, (200, 300))
        keep = grid_inliers(grid).reshape(-1, grid.width)[:, :-1]
    assert not (keep & bad).any()
    expected, _ = rule_inliers(depth, mask, K, 1, 8.0, (200, 300))
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(keep), strict=True)} == expected
    assert keep.sum() >= 0.85 * (~bad).sum()


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


def test_huge_depths_with_a_huge_range() -> None:
    """A plane 1e6 m away with max_depth 1e7: squares of 1e12 stay finite, the plane is kept whole."""
    depth = np.full((6, 7), 1.0e6)
    grid = pixel_grid(depth, np.ones(depth.shape, dtype=bool), K, 1, 1.0e7)
    assert grid_inliers(grid).sum() == 42


# --------------------------------------------------------------------------------------------- windows at the border
@pytest.mark.parametrize("stride", [1, 2, 3])
@pytest.mark.parametrize("corner", ["top-left", "bottom-right"])
def test_a_mask_on_the_image_border_follows_the_rule(stride: int, corner: str) -> None:
    """A window cut at the image's edge (odd sizes no stride divides) against the pixel-by-pixel rule."""
    rng = np.random.default_rng(stride)
    rows, cols = (slice(0, 37), slice(0, 29)) if corner == "top-left" else (slice(443, 480), slice(611, 640))
    depth = (table_top(30.0) + rng.normal(0.0, 0.003, (K.height, K.width)))[rows, cols].astype(np.float32)
    mask = rng.random(depth.shape) > 0.05
    origin = (rows.start, cols.start)
    expected, margin = rule_inliers(depth, mask, K, stride, 8.0, origin)
    assert margin > 1e-9
    grid = pixel_grid(depth, mask, K, stride, 8.0, origin)
    keep = grid_inliers(grid).reshape(-1, grid.width)
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(keep), strict=True)} == expected
    assert len(expected) >= 0.8 * grid.valid.sum()


def test_tiny_empty_and_flat_masks() -> None:
    """1-3 pixels: nothing to vouch for them, nothing kept, no error; an all-equal 3x3 patch (std 0): all kept,
    corners included; an empty mask or a mask with no valid depth: nothing, no error."""
    depth = np.full((5, 5), 3.0, dtype=np.float32)
    for cells in ([(2, 2)], [(2, 2), (2, 3)], [(2, 2), (2, 3), (3, 2)], []):
        mask = np.zeros(depth.shape, dtype=bool)
        for cell in cells:
            mask[cell] = True
        assert not grid_inliers(pixel_grid(depth, mask, K)).any()
    flat = np.ones((3, 3), dtype=bool)
    assert grid_inliers(pixel_grid(depth[:3, :3], flat, K)).sum() == 9
    assert not grid_inliers(pixel_grid(np.zeros((3, 3), dtype=np.float32), flat, K)).any()
    assert len(fused_points(np.zeros((K.height, K.width)), np.ones((K.height, K.width), dtype=bool))) == 0


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


def test_a_window_not_inside_the_image_is_refused() -> None:
    """The window must lie inside `image` at `origin`, or the thin-object test reads the
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


# ----------------------------------------------------------------------------------------------------- image layouts
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


@pytest.mark.serial  # a bound in wall-clock seconds: run alone
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


# --------------------------------------------------------------------------------------------- detections and frames
@pytest.mark.parametrize("cells", [[], [(0, 0)], [(479, 639)], [(479, 638), (479, 639), (478, 639)]])
def test_a_detection_of_nothing_or_of_a_few_corner_pixels_gives_no_points(cells: list[tuple[int, int]]) -> None:
    """Through ObjectMap: an empty mask and 1-3 pixels at the image's corners give an empty cloud, no error."""
    mask = np.zeros((K.height, K.width), dtype=bool)
    for cell in cells:
        mask[cell] = True
    points = fused_points(np.full((K.height, K.width), 2.0), mask)
    assert points.shape == (0, 3)


def test_a_frame_with_a_nan_pose_adds_nothing_and_raises_nothing() -> None:
    """Localization lost (a NaN pose): the frame's detections add no object. Before the voxel fix above an all-NaN
    cloud fell into one NaN voxel (under min_points, skipped); the fix refuses NaN points, so the frame is now
    skipped before back-projection rather than with a ValueError that would end the perception node."""
    depth = np.full((K.height, K.width), 2.0, dtype=np.float32)
    mask = np.zeros(depth.shape, dtype=bool)
    mask[100:200, 100:200] = True
    for bad in (np.nan, np.inf):
        pose = np.eye(4)
        pose[0, 3] = bad
        world = ObjectMap(FusionConfig())
        assert world.integrate(Frame(depth, K, pose, [Detection("box", 0.9, mask)])) == set()
        assert not world.objects
    world = ObjectMap(FusionConfig())
    assert len(world.integrate(Frame(depth, K, np.eye(4), [Detection("box", 0.9, mask)]))) == 1
