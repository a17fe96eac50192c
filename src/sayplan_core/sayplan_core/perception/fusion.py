"""Object-level fusion of RGB-D detections into a 3D map (after ConceptGraphs, Gu et al. 2024).

Each detection is back-projected to a map-frame cloud, downsampled and cleaned,
then associated with the mapped object that maximises geometric overlap (share of
its points within a voxel of the object's, via a KD-tree) plus semantic similarity
(feature cosine, or the share of the object's detections with this label). Above
the threshold it is merged in; otherwise it becomes a new object. Periodically the
map is denoised (DBSCAN), duplicates that overlap and agree are merged, and
objects seen fewer than `min_detections` times are dropped at the end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from sayplan_core.perception.geometry import (
    Box3,
    CameraIntrinsics,
    Points,
    bounds,
    grid_inliers,
    largest_cluster,
    pixel_grid,
    to_map,
    voxel_downsample,
)


@dataclass
class Detection:
    label: str
    score: float
    mask: NDArray[np.bool_] | None = None
    box: tuple[int, int, int, int] | None = None  # u0, v0, u1, v1 when there is no mask
    feature: NDArray[np.float64] | None = None

    def pixel_mask(self, height: int, width: int) -> NDArray[np.bool_]:
        if self.mask is not None:
            return self.mask
        if self.box is None:
            raise ValueError(f"detection '{self.label}' has neither a mask nor a box")
        u0, v0, u1, v1 = self.box
        mask = np.zeros((height, width), dtype=bool)
        mask[max(v0, 0) : max(v1, 0), max(u0, 0) : max(u1, 0)] = True
        return mask

    def pixel_window(self, height: int, width: int) -> tuple[int, int, NDArray[np.bool_]]:
        """The detection's pixels as (top row, left column, mask of that window), without a full-frame mask."""
        if self.mask is None and self.box is not None:
            u0, v0, u1, v1 = self.box
            v0, v1 = min(max(v0, 0), height), min(max(v1, 0), height)
            u0, u1 = min(max(u0, 0), width), min(max(u1, 0), width)
            return v0, u0, np.ones((v1 - v0, u1 - u0), dtype=bool)
        mask = self.pixel_mask(height, width)
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        if len(rows) == 0:
            return 0, 0, np.zeros((0, 0), dtype=bool)
        v0, v1, u0, u1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        return v0, u0, mask[v0:v1, u0:u1]


@dataclass
class Frame:
    depth: NDArray[np.float32]
    intrinsics: CameraIntrinsics
    pose: NDArray[np.float64]  # T_map_cam
    detections: list[Detection]
    stamp: float = 0.0


@dataclass
class FusionConfig:
    voxel: float = 0.025
    stride: int = 2
    min_points: int = 15
    max_depth: float = 8.0
    match_radius: float = 0.04  # a detection point "overlaps" an object point within this distance
    threshold: float = 1.1  # geometric overlap + semantic similarity, both in [0, 1]
    denoise_every: int = 10  # 0: no periodic pass; upkeep then only runs at finalize()
    upkeep_per_frame: int = 2  # objects denoised and merge-checked per frame, oldest touched first
    dbscan_eps: float = 0.06
    merge_overlap: float = 0.5
    min_detections: int = 2
    max_points: int = 2000
    max_pixels: int = 3000  # pixels sampled per detection: the stride grows for large masks
    overlap_sample: int = 256  # points used to estimate an overlap share (0: all); +-3% at 256


@dataclass
class MapObject:
    id: str
    points: Points
    labels: Counter[str]
    detections: int = 1
    feature: NDArray[np.float64] | None = None
    _tree: cKDTree | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.labels.most_common(1)[0][0]

    @property
    def tree(self) -> cKDTree:
        if self._tree is None:
            # rebuilt after every change and queried a few times: a quick unbalanced build pays off (same answers)
            self._tree = cKDTree(self.points, leafsize=32, balanced_tree=False, compact_nodes=False)
        return self._tree

    @property
    def box(self) -> Box3:
        return Box3.of(self.points)

    @property
    def center(self) -> NDArray[np.float64]:
        return self.box.center

    def set_points(self, points: Points) -> None:
        self.points, self._tree = points, None


def semantic_similarity(obj: MapObject, label: str, feature: NDArray[np.float64] | None) -> float:
    if feature is not None and obj.feature is not None:
        denom = float(np.linalg.norm(feature) * np.linalg.norm(obj.feature)) or 1.0
        return max(0.0, float(feature @ obj.feature) / denom)
    return obj.labels[label] / max(sum(obj.labels.values()), 1)


class ObjectMap:
    def __init__(self, config: FusionConfig | None = None) -> None:
        self.config = config or FusionConfig()
        self.objects: dict[str, MapObject] = {}
        self.frames = 0
        self._counters: Counter[str] = Counter()
        # one column per object, rows lo x, lo y, lo z, hi x, hi y, hi z: each test of all boxes on one axis reads a
        # contiguous row; columns beyond the live ones are spare room (appends do not copy)
        self._box_table = np.zeros((6, 64))
        self._boxes = self._box_table[:, :0].T  # the live boxes, one row each (a view)
        self._box_ids: list[str] = []
        self._box_row: dict[str, int] = {}
        self._dirty: dict[str, None] = {}  # touched since their last upkeep, oldest first
        self._rng = np.random.default_rng(0)  # subsamples of merged clouds over max_points

    # ------------------------------------------------------------------ per detection
    def detection_points(self, frame: Frame, detection: Detection) -> Points:
        c = self.config
        k = frame.intrinsics
        if not np.isfinite(frame.pose).all():  # localization lost: no map points from this frame (nor an error)
            return np.zeros((0, 3))
        v0, u0, window = detection.pixel_window(k.height, k.width)
        pixels = int(window.sum())
        stride = max(c.stride, int(np.ceil(np.sqrt(pixels / c.max_pixels)))) if pixels else c.stride
        depth = frame.depth[v0 : v0 + window.shape[0], u0 : u0 + window.shape[1]]
        grid = pixel_grid(depth, window, k, stride, c.max_depth, (v0, u0), frame.depth)
        # outliers (flying pixels at depth edges, speckles) go on the image grid, before back-projection; a thin
        # object's test looks at the depth around the mask
        return voxel_downsample(to_map(grid, grid_inliers(grid), frame.pose), c.voxel)

    def _candidates(self, points: Points) -> list[str]:
        """Objects whose box, grown by the match radius, overlaps the detection's box."""
        return [self._box_ids[i] for i in self._candidate_rows(points)]

    def _candidate_rows(self, points: Points) -> NDArray[np.intp]:
        """Rows of the box table whose box, grown by the match radius, overlaps the box of `points`."""
        live = len(self._box_ids)
        if not live:
            return np.zeros(0, dtype=np.intp)
        corners = bounds(points)
        lo, hi = corners[:3] - self.config.match_radius, corners[3:] + self.config.match_radius
        b = self._box_table
        hit = (b[0, :live] <= hi[0]) & (b[1, :live] <= hi[1]) & (b[2, :live] <= hi[2])
        hit &= (b[3, :live] >= lo[0]) & (b[4, :live] >= lo[1]) & (b[5, :live] >= lo[2])
        return np.flatnonzero(hit)

    def _refresh_boxes(self) -> None:
        """Rebuild the box table (after removals); single changes use _update_box."""
        self._box_ids = list(self.objects)
        self._box_row = {object_id: row for row, object_id in enumerate(self._box_ids)}
        table = np.zeros((6, max(64, 2 * len(self._box_ids))))
        for row, obj in enumerate(self.objects.values()):
            table[:, row] = bounds(obj.points)
        self._box_table, self._boxes = table, table[:, : len(self._box_ids)].T

    def _remove_box(self, object_id: str) -> None:
        """Drop one row of the box table by moving the last row into its place."""
        row = self._box_row.pop(object_id, None)
        if row is None:
            return
        last = len(self._box_ids) - 1
        if row != last:
            moved = self._box_ids[last]
            self._box_ids[row] = moved
            self._box_table[:, row] = self._box_table[:, last]
            self._box_row[moved] = row
        self._box_ids.pop()
        self._boxes = self._box_table[:, :last].T

    def _update_box(self, object_id: str) -> None:
        points = self.objects[object_id].points
        row = self._box_row.get(object_id)
        if row is None:
            row = self._box_row[object_id] = len(self._box_ids)
            self._box_ids.append(object_id)
            if row == self._box_table.shape[1]:  # full: double the room (amortized O(1) per append)
                self._box_table = np.concatenate([self._box_table, np.zeros_like(self._box_table)], axis=1)
            self._boxes = self._box_table[:, : row + 1].T
        self._box_table[:, row] = bounds(points)

    def overlap(self, points: Points, obj: MapObject) -> float:
        """Share of `points` within the match radius of the object's points (on an even subsample of large clouds)."""
        return self._near_share(self._overlap_sample(points), obj)

    def _overlap_sample(self, points: Points) -> Points:
        cap = self.config.overlap_sample
        return points[:: -(-len(points) // cap)] if cap and len(points) > cap else points

    def _near_share(self, sample: Points, obj: MapObject) -> float:
        distances, _ = obj.tree.query(sample, distance_upper_bound=self.config.match_radius)
        return float(np.isfinite(distances).mean()) if len(sample) else 0.0

    def _grown_box_inside(self, sample: Points, boxes: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Per box (a column of lo x, lo y, lo z, hi x, hi y, hi z) and sample point: is the point inside the box
        grown by the match radius?

        A point within the radius of an object's point lies in that grown box, so the share of points inside
        bounds the overlap from above (a candidate whose bound cannot win is skipped without its KD-tree query),
        and only the points inside need the query.
        """
        grow = self.config.match_radius * (1 + 1e-9) + 1e-12  # a hair wider: float rounding never cuts the bound
        lo, hi = boxes[:3, :, None] - grow, boxes[3:, :, None] + grow
        inside = (sample[:, 0] >= lo[0]) & (sample[:, 0] <= hi[0])  # axis by axis: (boxes, points) arrays
        for axis in (1, 2):
            inside &= (sample[:, axis] >= lo[axis]) & (sample[:, axis] <= hi[axis])
        return np.asarray(inside, dtype=np.bool_)

    def _overlap_reaches(self, points: Points, obj: MapObject, share: float) -> bool:
        """overlap(points, obj) >= share, without the KD-tree query (or its build) when the share of the sample
        inside the object's grown box is already under it, and querying only the points inside."""
        sample = self._overlap_sample(points)
        if len(sample) == 0:
            return share <= 0.0  # an empty sample overlaps by 0
        inside = self._grown_box_inside(sample, bounds(obj.points)[:, None])[0]
        if float(np.count_nonzero(inside)) / len(sample) < share:
            return False
        distances, _ = obj.tree.query(sample[inside], distance_upper_bound=self.config.match_radius)
        return float(np.count_nonzero(np.isfinite(distances))) / len(sample) >= share

    def associate(self, points: Points, detection: Detection) -> tuple[str | None, float]:
        """The best-scoring object at or above the threshold, and its score (None and -1 when none qualifies).

        Ties go to the first candidate in box-table order. Candidates are scored from the highest upper bound down
        (the share of the sample inside their grown box plus the similarity): once the best score so far beats
        every remaining bound, or a bound is under the threshold, the rest are skipped without their KD-tree
        query; and a query asks only for the sample points inside the grown box (the rest cannot be near).
        """
        rows = self._candidate_rows(points)
        if len(rows) == 0:
            return None, -1.0
        sample = self._overlap_sample(points)
        size = len(sample)
        if size == 0:
            return None, -1.0
        inside = self._grown_box_inside(sample, self._box_table[:, rows])
        counts = inside.sum(axis=1).tolist()
        threshold, radius = self.config.threshold, self.config.match_radius
        ids = [self._box_ids[row] for row in rows.tolist()]
        objects = [self.objects[object_id] for object_id in ids]
        similarity = [semantic_similarity(obj, detection.label, detection.feature) for obj in objects]
        # the same floats as inside[index].mean() + similarity: an integer count over the sample size
        bound = [count / size + sim for count, sim in zip(counts, similarity, strict=True)]
        best, best_score, best_index = None, -1.0, len(rows)
        for index in sorted(range(len(rows)), key=lambda i: (-bound[i], i)):
            if bound[index] < threshold or bound[index] < best_score:
                break  # neither this one nor any after it can qualify or win
            if bound[index] == best_score and index > best_index:
                continue  # at best a tie, and ties go to the earlier row
            obj = objects[index]
            distances, _ = obj.tree.query(sample[inside[index]], distance_upper_bound=radius)
            score = float(np.count_nonzero(np.isfinite(distances))) / size + similarity[index]
            if score > best_score or (score == best_score and index < best_index):
                best, best_score, best_index = ids[index], score, index
        if best is not None and best_score >= threshold:
            return best, best_score
        return None, -1.0

    def _merge_into(self, obj: MapObject, points: Points, labels: Counter[str], count: int, feature: Any) -> None:
        merged = voxel_downsample(np.vstack([obj.points, points]), self.config.voxel)
        if len(merged) > self.config.max_points:
            # a uniform random subset: the smallest of one uniform draw per point (one generator per map, so the
            # same frames give the same map; a partition is cheaper than choice(replace=False) and a new generator;
            # two equal draws in a few thousand doubles would keep one point more)
            draws = self._rng.random(len(merged))
            cut = np.partition(draws, self.config.max_points - 1)[self.config.max_points - 1]
            merged = merged[draws <= cut]  # the max_points smallest draws, in the cloud's order
        obj.set_points(merged)
        if feature is not None:
            total = obj.detections + count
            obj.feature = feature if obj.feature is None else (obj.feature * obj.detections + feature * count) / total
        obj.labels.update(labels)
        obj.detections += count

    def integrate(self, frame: Frame) -> set[str]:
        """Fuse one frame; returns the ids of objects added or changed."""
        changed: set[str] = set()
        self.frames += 1
        for detection in frame.detections:
            points = self.detection_points(frame, detection)
            if len(points) < self.config.min_points:
                continue
            object_id, _ = self.associate(points, detection)
            if object_id is None:
                self._counters[detection.label] += 1
                object_id = f"{detection.label}_{self._counters[detection.label]}"
                self.objects[object_id] = MapObject(
                    object_id, points, Counter({detection.label: 1}), 1, detection.feature
                )
            else:
                self._merge_into(self.objects[object_id], points, Counter({detection.label: 1}), 1, detection.feature)
            changed.add(object_id)
            self._dirty.pop(object_id, None)
            self._dirty[object_id] = None
            self._update_box(object_id)
        if self.config.denoise_every:
            # bounded work per frame instead of a long pause every `denoise_every` frames
            batch = [i for i in list(self._dirty)[: self.config.upkeep_per_frame]]
            changed |= self.denoise(batch)
            merged, _ = self.merge_duplicates(batch)
            changed |= merged
        return changed

    # ------------------------------------------------------------------ periodic upkeep
    def denoise(self, ids: list[str] | None = None) -> set[str]:
        """DBSCAN-clean the given objects (default: every object touched since its last upkeep)."""
        changed = set()
        targets = [i for i in (ids if ids is not None else list(self._dirty)) if i in self.objects]
        for object_id in targets:
            obj = self.objects[object_id]
            # the object's own tree: association queries it next, unchanged when nothing is cut
            cleaned = largest_cluster(obj.points, self.config.dbscan_eps, tree=obj.tree)
            if len(cleaned) != len(obj.points):
                obj.set_points(cleaned)
                changed.add(obj.id)
                self._update_box(object_id)
        return changed

    def merge_duplicates(self, ids: list[str] | None = None) -> tuple[set[str], set[str]]:
        """Merge objects that overlap and agree semantically; returns (changed, removed) ids.

        Checks the pairs involving `ids` (default: every object touched since its last upkeep),
        and marks them as kept up.
        """
        changed, removed = set(), set()
        pool = [i for i in (ids if ids is not None else list(self._dirty)) if i in self.objects]
        for object_id in pool:
            self._dirty.pop(object_id, None)
        ids = sorted(pool, key=lambda i: -self.objects[i].detections)
        for keep_id in ids:
            if keep_id in removed:
                continue
            keep = self.objects[keep_id]
            for other_id in self._candidates(keep.points):
                if other_id == keep_id or other_id in removed:
                    continue
                other = self.objects[other_id]
                agree = semantic_similarity(keep, other.label, other.feature) >= 0.5 or keep.label == other.label
                # the larger of the two overlaps must reach merge_overlap, and 0.9 when they disagree
                need = self.config.merge_overlap if agree else max(self.config.merge_overlap, 0.9)
                if self._overlap_reaches(other.points, keep, need) or self._overlap_reaches(keep.points, other, need):
                    self._merge_into(keep, other.points, other.labels, other.detections, other.feature)
                    del self.objects[other_id]
                    self._remove_box(other_id)
                    removed.add(other_id)
                    changed.add(keep_id)
            if keep_id in changed:
                self._update_box(keep_id)
        for object_id in removed:
            self._dirty.pop(object_id, None)
        return changed - removed, removed

    def prune(self) -> set[str]:
        gone = {i for i, o in self.objects.items() if o.detections < self.config.min_detections}
        for object_id in gone:
            del self.objects[object_id]
        self._refresh_boxes()
        return gone

    def finalize(self) -> set[str]:
        """Denoise, merge and prune over the whole map; returns the ids removed."""
        everything = list(self.objects)
        self.denoise(everything)
        _, removed = self.merge_duplicates(everything)
        self._dirty.clear()
        return removed | self.prune()
