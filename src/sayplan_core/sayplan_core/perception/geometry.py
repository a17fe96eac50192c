"""Point-cloud geometry for perception: back-projection, downsampling, outlier removal, clustering.

Camera convention: the optical frame (x right, y down, z forward), depth in metres,
and `T_map_cam` the 4x4 pose of the camera in the map frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

Points = NDArray[np.float64]


@dataclass(frozen=True)
class CameraIntrinsics:
    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @classmethod
    def from_fov(cls, width: int, height: int, hfov_deg: float) -> CameraIntrinsics:
        f = (width / 2) / np.tan(np.radians(hfov_deg) / 2)
        return cls(float(f), float(f), (width - 1) / 2, (height - 1) / 2, width, height)


@dataclass(frozen=True)
class PixelGrid:
    """Optical-frame coordinates of every `stride`-th pixel of an image window, flattened row by row.

    Each row carries one padding pixel at its end (never valid), so the pixels left and right of a row's ends are
    padding rather than the neighbouring row's: a neighbour in the grid is then a fixed offset in the flat arrays
    (1 right, `width` down, `width` -+ 1 diagonally), and numpy works on contiguous slices. The depth image the
    window was cut from stays at hand: the thin-object test of `grid_inliers` looks at a few pixels' neighbours
    whatever the mask says, and beyond the window.
    """

    xyz: NDArray[np.float64]  # (3, pixels); NaN where not valid, so no pair with such a pixel is ever close
    valid: NDArray[np.bool_]  # masked, with a finite depth in (0, max_depth)
    width: int  # padded row length
    gaps: tuple[float, float, float]  # the gap to the right, lower and diagonal neighbour per metre of depth
    image: NDArray[np.floating]  # the depth image around the window (the window itself when none was given)
    first: tuple[int, int]  # (row, column) in `image` of the grid's first pixel
    origin: tuple[int, int]  # (row, column) in the camera image of `image`'s first pixel
    stride: int
    max_depth: float
    k: CameraIntrinsics


def pixel_grid(
    depth: NDArray[np.floating],
    mask: NDArray[np.bool_],
    k: CameraIntrinsics,
    stride: int = 1,
    max_depth: float = 10.0,
    origin: tuple[int, int] = (0, 0),
    image: NDArray[np.floating] | None = None,
) -> PixelGrid:
    """The camera-frame grid of the masked window `depth` whose top-left pixel is `origin` (row, column).

    `image`, the whole depth image the window was cut from (`depth` is its part from row `origin[0]` and column
    `origin[1]` on), lets the thin-object test see the depth one grid step beyond the window; without it nothing
    is known there.
    """
    if depth.shape != mask.shape:
        raise ValueError(f"depth {depth.shape} and mask {mask.shape} differ in size")
    if image is not None and not (
        image.ndim == 2
        and 0 <= origin[0] <= image.shape[0] - depth.shape[0]
        and 0 <= origin[1] <= image.shape[1] - depth.shape[1]
    ):
        # the thin-object test would read the depth around other pixels than the window's
        raise ValueError(f"window {depth.shape} at {origin} is not inside the depth image {image.shape}")
    sub = depth[::stride, ::stride]
    h, w = sub.shape
    xyz = np.empty((3, h, w + 1))
    z = xyz[2]
    z[:, :w] = sub
    z[:, w] = np.nan
    valid = np.zeros((h, w + 1), dtype=bool)
    valid[:, :w] = mask[::stride, ::stride]
    with np.errstate(invalid="ignore"):  # NaN depths compare False
        valid &= (z > 0.0) & (z < max_depth)
    z[~valid] = np.nan
    u = np.arange(w + 1) * stride + origin[1]
    v = (np.arange(h) * stride + origin[0])[:, None]
    np.divide((u - k.cx) * z, k.fx, out=xyz[0])
    np.divide((v - k.cy) * z, k.fy, out=xyz[1])
    gaps = (stride / k.fx, stride / k.fy, stride * float(np.hypot(1 / k.fx, 1 / k.fy)))
    around, first, corner = (depth, (0, 0), origin) if image is None else (image, origin, (0, 0))
    return PixelGrid(xyz.reshape(3, -1), valid.ravel(), w + 1, gaps, around, first, corner, stride, max_depth, k)


def to_map(grid: PixelGrid, keep: NDArray[np.bool_], t_map_cam: NDArray[np.floating]) -> Points:
    """Map-frame points of the kept (valid) grid pixels, in row-major order."""
    cam = grid.xyz[:, keep].T
    rotation, translation = t_map_cam[:3, :3], t_map_cam[:3, 3]
    return np.asarray(cam @ rotation.T + translation, dtype=np.float64)


def backproject(
    depth: NDArray[np.floating],
    mask: NDArray[np.bool_],
    k: CameraIntrinsics,
    t_map_cam: NDArray[np.floating],
    stride: int = 1,
    max_depth: float = 10.0,
    origin: tuple[int, int] = (0, 0),
) -> Points:
    """Map-frame points of the masked pixels with a valid depth (every `stride`-th row and column).

    `depth` and `mask` may be a window of the image whose top-left pixel is `origin` (row, column):
    working on a detection's window instead of the full frame saves scanning the whole mask.
    """
    grid = pixel_grid(depth, mask, k, stride, max_depth, origin)
    return to_map(grid, grid.valid, t_map_cam)


def grid_inliers(
    grid: PixelGrid,
    min_close: int = 3,
    std_ratio: float = 2.0,
    floor: float = 1.5,
    usual: float = 3.0,
) -> NDArray[np.bool_]:
    """The valid grid pixels with at least `min_close` of their 8 grid neighbours close in 3D, or on a thin object
    standing in front of what is around it: outlier removal on the image grid, before back-projection, instead of
    a k-NN search in 3D.

    The gap between neighbours p and q counts in units of what it would be on a surface facing the camera at their
    depth, e = |P_p - P_q| / (gap * sqrt(z_p * z_q)), so one limit holds near and far. The horizontal and the
    vertical direction each have their own limit, from the detection's own right (lower) pairs: mean + `std_ratio`
    standard deviations of the usual ones (e at most `usual` times that direction's lower median, so the outliers
    sought do not widen it), at least `floor`, and `floor` for a direction with no pair. A diagonal step
    is a horizontal plus a vertical one, so a diagonal pair is close when its gap is at most the two limits' steps
    added. Per direction because a surface seen at a shallow angle (a table top from standing height) has e~1
    across the slant and e~5-10 along it, and a counter top just below the camera e~15-20 along it. No ceiling: a
    ceiling of 12 removed the flying pixels of a narrow pole mask (whose pairs across are mostly pairs across its
    depth edges) but dropped 80% of such a counter top (docs/concepts/perception_speed.md).

    Flying pixels at a depth edge (between foreground and background), a line of them along the edge, speckles and
    a mask's one-pixel slivers have fewer than 3 close neighbours; a surface's pixels, corners included, have 3+.
    A pixel with exactly 2 (on a line: a rod, a cable, one grid pixel wide) is kept when it stands out in front:
    each of its other neighbours in the depth image, masked or not and one step past the window too, has no valid
    depth or is neither nearer nor close. A flying pixel has the nearer side of its edge next to it, and a sliver
    a close neighbour outside the mask.
    """
    xyz, n = grid.xyz, len(grid.valid)
    z = xyz[2]
    close = np.zeros(n, dtype=np.int8)
    most = [0.0, 0.0]  # the largest close gap per metre of depth to the right and to the lower neighbour
    for index, offset in enumerate((1, grid.width, grid.width - 1, grid.width + 1)):
        a, b = slice(0, max(n - offset, 0)), slice(offset, n)
        d = xyz[:, a] - xyz[:, b]
        d *= d
        ratio = d[0] + d[1]
        ratio += d[2]
        ratio /= z[a] * z[b]  # (e * gap)^2; NaN when either pixel is not valid
        if index < 2:
            gap = grid.gaps[index]
            most[index] = gap * _axis_limit(ratio / (gap * gap), std_ratio, floor, usual)
            near = ratio <= most[index] ** 2
        else:  # a diagonal step: one step right (or left) and one down
            near = ratio <= (most[0] + most[1]) ** 2
        close[a] += near
        close[b] += near
    keep = close >= min_close  # an invalid pixel has no close neighbour
    if min_close > 2:
        line = np.flatnonzero(close == 2)
        if len(line):
            keep[line] = _stands_out(grid, line, most[0], most[1])
    return np.asarray(keep, dtype=np.bool_)


# the 8 neighbours' (row, column) steps, and which limit each uses: 0 horizontal, 1 vertical, 2 diagonal
_STEPS = np.array([(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)])
_STEP_LIMIT = np.array([2, 1, 2, 0, 0, 2, 1, 2])


def _stands_out(grid: PixelGrid, pixels: NDArray[np.intp], right: float, down: float) -> NDArray[np.bool_]:
    """Per grid pixel (flat index): is every neighbour that is not one of its close masked ones, read from the
    depth image whatever the mask, either without a valid depth or not nearer and not close? See `grid_inliers`."""
    rows, cols = np.divmod(pixels, grid.width)
    r = rows + _STEPS[:, 0, None]  # (8, pixels)
    c = cols + _STEPS[:, 1, None]
    s, k, image = grid.stride, grid.k, grid.image
    iy, ix = grid.first[0] + r * s, grid.first[1] + c * s  # in `image`
    inside = (iy >= 0) & (iy < image.shape[0]) & (ix >= 0) & (ix < image.shape[1])
    zq = image[iy.clip(0, image.shape[0] - 1), ix.clip(0, image.shape[1] - 1)].astype(np.float64)
    with np.errstate(invalid="ignore"):  # NaN depths compare False
        seen = inside & (zq > 0.0) & (zq < grid.max_depth)
    zq[~seen] = np.nan  # no arithmetic on zeros and infinities (nor their warnings)
    # the same arithmetic as pixel_grid and grid_inliers, so a masked neighbour is close here as it was there
    xq = np.divide((ix + grid.origin[1] - k.cx) * zq, k.fx)
    yq = np.divide((iy + grid.origin[0] - k.cy) * zq, k.fy)
    p = grid.xyz[:, pixels]
    ratio = (p[0] - xq) ** 2 + (p[1] - yq) ** 2
    ratio += (p[2] - zq) ** 2
    ratio /= p[2] * zq
    near = ratio <= _limit_squares(right, down)  # NaN (no valid depth) compares False
    # masked: inside the grid (the padding column never valid) and valid there
    masked = (r >= 0) & (r < len(grid.valid) // grid.width) & (c >= 0)
    masked &= grid.valid[(r * grid.width + c).clip(0, len(grid.valid) - 1)]
    veto = np.where(near, ~masked, zq < p[2])
    veto &= seen
    return np.asarray(~veto.any(axis=0), dtype=np.bool_)


def _limit_squares(right: float, down: float) -> NDArray[np.float64]:
    """The squared limit per step of _STEPS, as a column against (8, pixels) arrays."""
    limit = np.array([right, down, right + down])[_STEP_LIMIT]
    return np.asarray((limit**2)[:, None], dtype=np.float64)


def _axis_limit(squares: NDArray[np.float64], std_ratio: float, floor: float, usual: float) -> float:
    """The limit on e from one direction's e^2 (NaN for pairs with an invalid pixel): see `grid_inliers`."""
    e = squares[squares >= 0.0]  # NaN compares False
    if len(e) == 0:
        return floor
    np.sqrt(e, out=e)
    middle = (len(e) - 1) // 2
    median = float(np.partition(e, middle)[middle])  # the lower median
    common = e[e <= usual * median]
    mean = float(np.add.reduce(common)) / len(common)
    spread = common - mean
    # the population standard deviation (np.std's), without its Python-level wrapper
    limit = mean + std_ratio * math.sqrt(float(np.dot(spread, spread)) / len(common))
    return max(floor, limit)


def voxel_downsample(points: Points, voxel: float) -> Points:
    """One point (the mean) per occupied voxel, in the order of the voxels' (x, y, z) cells."""
    n = len(points)
    if n == 0:
        return points
    scaled = np.floor(points / voxel)
    # a NaN or a cell past +-2^62 would cast to one garbage int64 (distinct points merged without a word); within
    # that range no difference of two cells overflows
    if not (scaled.min() >= -(2.0**62) and scaled.max() < 2.0**62):
        raise ValueError(f"points not finite or beyond int64 cells of {voxel}")
    cells = scaled.astype(np.int64)
    x, y, z = cells[:, 0], cells[:, 1], cells[:, 2]
    lx, ly, lz = x.min(), y.min(), z.min()
    bx, by, bz = (int(c.max() - low).bit_length() for c, low in ((x, lx), (y, ly), (z, lz)))
    if bx + by + bz > 63:
        raise ValueError(f"cloud spans too many voxels of {voxel} for one 64-bit key; downsample in parts")
    # one int64 key per voxel (x, then y, then z): a 1-D sort instead of unique(axis=0); with the point's index in
    # the low bits when they fit, a plain sort (several times faster than argsort) gives the stable order
    index_bits = (n - 1).bit_length() if bx + by + bz + (n - 1).bit_length() <= 63 else 0
    key = (x - lx) << (by + bz + index_bits)
    key |= (y - ly) << (bz + index_bits)
    key |= (z - lz) << index_bits
    if index_bits:
        key |= np.arange(n)
        key.sort()
        order = key & ((1 << index_bits) - 1)
        key >>= index_bits
    else:
        order = np.argsort(key, kind="stable")
        key = key[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(key[1:], key[:-1], out=starts[1:])
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    voxels = int(inverse[order[-1]]) + 1
    # bincount adds each voxel's points in index order (several times faster than np.add.at)
    counts = np.bincount(inverse, minlength=voxels)
    means = np.empty((voxels, 3))
    for axis in range(3):
        means[:, axis] = np.bincount(inverse, weights=points[:, axis], minlength=voxels)
    means /= counts[:, None]
    return means


def remove_outliers(points: Points, neighbours: int = 6, std_ratio: float = 2.0) -> Points:
    """Statistical outlier removal: drop points far from their neighbours compared to the rest."""
    if len(points) <= neighbours:
        return points
    # a tree queried once is cheaper unbalanced and uncompacted (same answers, faster build)
    # leaves of 32 points: fewer node visits for a query of every point (same neighbours, ~10% faster)
    tree = cKDTree(points, leafsize=32, balanced_tree=False, compact_nodes=False)
    distances, _ = tree.query(points, k=neighbours + 1)
    mean = distances[:, 1:].mean(axis=1)
    keep = mean <= mean.mean() + std_ratio * mean.std()
    return np.asarray(points[keep], dtype=np.float64)


def dbscan_labels(points: Points, eps: float, min_samples: int = 5, tree: cKDTree | None = None) -> NDArray[np.int64]:
    """DBSCAN cluster labels (-1: noise), numbered and with border points assigned as scikit-learn does.

    Core points have at least `min_samples` points (themselves included) within `eps`; clusters are the connected
    groups of core points, numbered in the order of their lowest-index core point; a border point joins the
    lowest-numbered cluster among its core neighbours. One KD-tree pair query and a sparse connected-components pass
    replace scikit-learn's per-point neighbourhood lists, which cost several times more on clouds of a few thousand.
    `tree`, a KD-tree of `points` the caller already has, saves building one (the pairs, hence the labels, are the
    same whatever the tree's shape).
    """
    n = len(points)
    labels = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return labels
    pairs = (tree if tree is not None else cKDTree(points)).query_pairs(eps, output_type="ndarray")
    first, second = pairs[:, 0], pairs[:, 1]
    core = 1 + np.bincount(first, minlength=n) + np.bincount(second, minlength=n) >= min_samples
    if not core.any():
        return labels
    linked = core[first] & core[second]
    # the core-core links as CSR rows built by hand (one sort of row << 32 | column keys, float data as csgraph
    # wants it), and weak components of that one-way graph: the same partition as the undirected components of
    # a COO matrix, without scipy's conversion and symmetrization (about a third of the clustering's time)
    rows, columns = first[linked], second[linked]
    keys = (rows.astype(np.int64) << 32) | columns
    keys.sort()
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    graph = csr_matrix((np.ones(len(keys)), (keys & 0xFFFFFFFF).astype(np.int32), indptr), shape=(n, n))
    _, component = connected_components(graph, directed=True, connection="weak")
    core_index = np.flatnonzero(core)
    groups, first_core = np.unique(component[core_index], return_index=True)
    rank = np.zeros(int(component.max()) + 1, dtype=np.int64)
    rank[groups[np.argsort(first_core)]] = np.arange(len(groups))
    labels[core_index] = rank[component[core_index]]
    # border points: the lowest cluster number among their core neighbours
    to_second = core[first] & ~core[second]
    to_first = core[second] & ~core[first]
    border = np.concatenate([second[to_second], first[to_first]])
    if len(border):
        cluster = np.concatenate([labels[first[to_second]], labels[second[to_first]]])
        best = np.full(n, n, dtype=np.int64)
        np.minimum.at(best, border, cluster)
        labels[border] = best[border]
    return labels


def largest_cluster(points: Points, eps: float, min_samples: int = 5, tree: cKDTree | None = None) -> Points:
    """The biggest DBSCAN cluster (mask jitter and depth edges leave stray blobs); ties go to the first found."""
    if len(points) < min_samples:
        return points
    labels = dbscan_labels(points, eps, min_samples, tree)
    clustered = labels[labels >= 0]
    if len(clustered) == 0:
        return points
    biggest = np.bincount(clustered).argmax()
    return np.asarray(points[labels == biggest], dtype=np.float64)


def bounds(points: Points) -> NDArray[np.float64]:
    """(min x, min y, min z, max x, max y, max z) of a non-empty cloud.

    Six reductions of one column each: several times faster than min(axis=0) and max(axis=0) on an (N, 3) array,
    which numpy reduces along the short axis.
    """
    return np.array([points[:, 0].min(), points[:, 1].min(), points[:, 2].min(),
                     points[:, 0].max(), points[:, 1].max(), points[:, 2].max()])  # fmt: skip


@dataclass(frozen=True)
class Box3:
    """Axis-aligned bounding box."""

    lo: NDArray[np.float64]
    hi: NDArray[np.float64]

    @classmethod
    def of(cls, points: Points) -> Box3:
        corners = bounds(points)
        return cls(corners[:3], corners[3:])

    @property
    def center(self) -> NDArray[np.float64]:
        return (self.lo + self.hi) / 2

    def footprint_overlap(self, other: Box3) -> float:
        """Share of this box's x-y footprint that lies over the other's."""
        lo = np.maximum(self.lo[:2], other.lo[:2])
        hi = np.minimum(self.hi[:2], other.hi[:2])
        inter = float(np.prod(np.clip(hi - lo, 0, None)))
        area = float(np.prod(np.clip(self.hi[:2] - self.lo[:2], 1e-6, None)))
        return inter / area

    def contains(self, point: NDArray[np.float64], margin: float = 0.0) -> bool:
        return bool(np.all(point >= self.lo - margin) and np.all(point <= self.hi + margin))


def look_at(eye: NDArray[np.floating], target: NDArray[np.floating]) -> NDArray[np.float64]:
    """Camera pose (optical frame) at `eye` looking at `target`, with the map's z up."""
    forward = np.asarray(target, float) - np.asarray(eye, float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, down, forward, eye
    return pose
