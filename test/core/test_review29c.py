"""Hostile review of the pixel-grid outlier test, the packed voxel key (h-percep29) and the columns fast path
(h-load29).

Perception: surfaces a real depth camera sees (planes at a slant, quantized depths, invalid pixels, masks on the
border, tiny masks) go through `grid_inliers` and `ObjectMap.detection_points`; the pixel-by-pixel rule of
test_perception_grid.py is the oracle where the rule itself is in question, and "a valid surface is kept" where
the rule is. Graph load: hostile columns files load or are refused as the item-by-item reference of
test_native_columns.py decides, always with a GraphError.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import orjson
import pytest
from test_native_columns import outcome, reference_load
from test_perception_grid import dictionary_downsample, rule_inliers

from sayplan_core.graph import GraphError, graph_from_dict, loads, native_format
from sayplan_core.graph.columns import bulk_graph
from sayplan_core.graph.model import Node, SceneGraph
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


# ------------------------------------------------------------------------------------------ perception: findings
def table_top(pitch_deg: float) -> np.ndarray:
    """A horizontal surface 0.45 m below a camera pitched down by `pitch_deg` (a table top seen from standing
    height); the optical frame's y is down, so the plane's normal leans towards +y and +z."""
    t = math.radians(pitch_deg)
    return plane_depth((0.0, math.cos(t), math.sin(t)), 0.45)


@pytest.mark.parametrize("pitch", [5.0, 10.0])
def test_a_table_top_seen_at_a_shallow_angle_is_kept(pitch: float) -> None:
    """finding 1 (high, fixed): one limit for all four directions, set by the majority direction, dropped the whole
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
    """finding 1 turned (fixed): a tall mask of a corridor wall 0.45 m to the side, the camera turned 5 degrees
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
    """finding 2 (low, fixed): a thin object whose mask is one grid pixel wide (a rod or cable 1-2 pixels wide at
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
    "(test_review30p.py), so there is none",
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


# ---------------------------------------------------------------------------------------- perception: held up
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


def test_huge_depths_with_a_huge_range() -> None:
    """A plane 1e6 m away with max_depth 1e7: squares of 1e12 stay finite, the plane is kept whole."""
    depth = np.full((6, 7), 1.0e6)
    grid = pixel_grid(depth, np.ones(depth.shape, dtype=bool), K, 1, 1.0e7)
    assert grid_inliers(grid).sum() == 42


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
    """finding 3 (low, fixed): cells past int64 (1e7 m at a 1e-12 m voxel) cast to one garbage value, so distinct
    points fell into one voxel without a word; a cloud with a NaN got the wrong message. Now a ValueError."""
    with pytest.raises(ValueError, match="beyond int64 cells"):
        voxel_downsample(np.array([[1.0e7, 0.0, 0.0], [1.0e7 + 1.0, 0.0, 0.0]]), 1.0e-12)
    with pytest.raises(ValueError, match="beyond int64 cells"):
        voxel_downsample(np.array([[np.nan, 0.0, 0.0], [1.0, 0.0, 0.0]]), 0.025)


# ------------------------------------------------------------------------------------------------- graph load
def small_columns() -> dict[str, Any]:
    """floor_0 > room_0, room_1 (linked) > asset_0 > obj_0, obj_1; the agent in room_0 holding nothing."""
    graph = SceneGraph("b")
    graph.add_node(Node("floor_0", "floor"))
    for r in range(2):
        graph.add_node(Node(f"room_{r}", "room", position=(r, 1.0, 0.0)), "floor_0")
    graph.add_node(Node("asset_0", "asset", position=(1.0, 1.0, 0.5)), "room_0")
    for o in range(2):
        graph.add_node(Node(f"obj_{o}", "object", position=(o, 2.0, 0.8)), "asset_0", "ontop_of")
    graph.connect("room_0", "room_1", 2.0)
    graph.add_node(Node("agent", "agent", attributes={"location": "room_0"}))
    data: dict[str, Any] = orjson.loads(native_format.dumps(graph, layout="columns"))
    return data


def hostile_files() -> list[tuple[str, dict[str, Any]]]:
    base = small_columns()
    count = len(base["ids"])
    cases: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, **changes: Any) -> None:
        data = copy.deepcopy(base)
        data.update(changes)
        cases.append((name, data))

    for key in ("type", "child", "parent", "relation", "links", "unplaced"):
        column = base[key]
        if not column:
            continue
        for at in (0, len(column) - 1):
            for value in (True, False, -1, len(base["types"]) if key == "type" else count, 10**30, 1.0):
                changed = list(column)
                changed[at] = value
                case(f"{key}[{at}]={value!r}", **{key: changed})
    case("relation past its table", relation=[len(base["relations"])] * len(base["relation"]))
    ids = base["ids"]
    # a duplicate id, with the duplicate's placement dropped so the root count matches
    dup = list(ids)
    dup[ids.index("obj_1")] = "obj_0"
    case("duplicate id", ids=dup)
    at = base["child"].index(ids.index("obj_1"))
    case(
        "duplicate id and one placement fewer",
        ids=dup,
        child=[c for k, c in enumerate(base["child"]) if k != at],
        parent=[p for k, p in enumerate(base["parent"]) if k != at],
        relation=[r for k, r in enumerate(base["relation"]) if k != at],
    )
    # obj_0 under two parents, obj_1 with none: as many placements as before
    child = list(base["child"])
    child[at] = ids.index("obj_0")
    case("two parents and a missing one", child=child)
    parent = list(base["parent"])
    parent[at] = ids.index("room_1")
    case("two parents of different types", child=child, parent=parent, relation=[0] * len(child))
    case("position -0.0", positions=[-0.0 if v == 0.0 else v for v in base["positions"]])
    big = list(base["positions"])
    big[0:3] = [1.0e308, -1.0e308, 1.0e308]  # finite sum, magnitudes that overflow
    big[3:6] = [-1.0e308, 1.0e308, 1.0e308]
    case("magnitudes overflow, sums finite", positions=big)
    big = list(base["positions"])
    big[0:3] = [1.0e308, 1.0e308, -0.0]
    case("a sum that overflows", positions=big)
    huge = list(base["positions"])
    huge[4] = 10**400
    case("a huge int coordinate", positions=huge)
    case("an int coordinate", positions=[int(v) for v in base["positions"]])
    case("a bool coordinate", positions=[True, *base["positions"][1:]])

    class Id(str):
        """A str subclass (an API client's own string type) with a lying strip."""

        def strip(self, *args: Any) -> str:
            return "x"

    class NotId:
        def strip(self) -> str:
            return "x"

        def replace(self, *args: Any) -> str:
            return "x"

        def __len__(self) -> int:
            return 1

        def __hash__(self) -> int:
            return 1

    case("a str subclass id", ids=[Id(" "), *ids[1:]])
    case("an id with a strip method", ids=[NotId(), *ids[1:]])
    return cases


@pytest.mark.parametrize(("name", "data"), hostile_files(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_hostile_columns_file_loads_or_fails_as_in_the_reference(name: str, data: dict[str, Any]) -> None:
    """The loader and the reference agree; the bulk path alone builds nothing the reference refuses; errors are
    GraphErrors (the reference's own OverflowError on a huge int counts as a refusal)."""

    def reference(given: Any) -> SceneGraph:
        try:
            return reference_load(given)
        except OverflowError:
            raise GraphError("a coordinate too large for a float") from None

    expected = outcome(reference, data)
    assert outcome(graph_from_dict, data) == expected, name
    built = bulk_graph(copy.deepcopy(data), owned=False)
    if built is not None:
        assert outcome(lambda _: (native_format.validate(built), built)[1], None) == expected, name
    try:
        text = orjson.dumps(data).decode()
    except (TypeError, orjson.JSONEncodeError):
        return  # no JSON spelling (an object, an int past 64 bits): the dict was the file
    if any(type(node_id) is not str for node_id in data["ids"]):
        return  # JSON spells a str subclass as a plain str: another file
    assert outcome(loads, text) == expected, name


def test_magnitudes_that_overflow_are_no_reason_to_refuse_a_valid_file() -> None:
    data = small_columns()
    data["positions"][0:3] = [1.0e308, -1.0e308, 1.0e308]
    data["positions"][3:6] = [-1.0e308, 1.0e308, 1.0e308]  # each sum finite left to right (the rows test)
    graph = bulk_graph(copy.deepcopy(data), owned=False)
    assert graph is not None
    assert graph.nodes[data["ids"][1]].position == (1.0e308, -1.0e308, 1.0e308)


def test_a_huge_int_coordinate_is_a_graph_error_naming_the_node() -> None:
    """finding 4 (low, fixed): graph_from_dict raised OverflowError (float(10**400) in _parse_position), from
    both layouts; a dict from an API client is as untrusted as a file."""
    data = small_columns()
    data["positions"][4] = 10**400
    placed = [node_id for k, node_id in enumerate(data["ids"]) if k not in data["unplaced"]]
    with pytest.raises(GraphError) as caught:
        graph_from_dict(data)
    assert caught.value.node_id == placed[1]
    rows: dict[str, Any] = orjson.loads(native_format.dumps(graph_from_dict(small_columns())))
    for node in rows["nodes"]:
        if node["id"] == placed[1]:
            node["position"] = [0.0, 10**400, 0.0]
    with pytest.raises(GraphError) as caught:
        graph_from_dict(rows)
    assert caught.value.node_id == placed[1]


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
