"""The perception fast paths (issue 28) against straightforward versions written here, on generated clouds.

DBSCAN by pair query + connected components vs a textbook DBSCAN on a full distance matrix; the hand-rolled
voxel grouping vs a dictionary of voxels; association with its box-share pruning vs scoring every mapped object.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.perception.fusion import Detection, FusionConfig, MapObject, ObjectMap, semantic_similarity
from sayplan_core.perception.geometry import dbscan_labels, largest_cluster, voxel_downsample

BOUNDED = settings(max_examples=40, derandomize=True, deadline=None)


def blobs(seed: int, count: int, spread: float) -> np.ndarray:
    """A few Gaussian blobs plus uniform stragglers: clusters, borders and noise all occur."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, spread, (int(rng.integers(1, 5)), 3))
    parts = [c + rng.normal(0, rng.uniform(0.01, 0.05), (int(rng.integers(1, count)), 3)) for c in centres]
    parts.append(rng.uniform(0, spread, (int(rng.integers(0, 20)), 3)))
    return np.vstack(parts)


def textbook_dbscan(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """Seeds in index order, breadth-first growth through core points; a border point keeps its first cluster."""
    n = len(points)
    near = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2) <= eps
    core = near.sum(axis=1) >= min_samples
    labels = np.full(n, -1)
    cluster = 0
    for seed in range(n):
        if labels[seed] != -1 or not core[seed]:
            continue
        labels[seed] = cluster
        frontier = [seed]
        while frontier:
            point = frontier.pop()
            for other in np.flatnonzero(near[point]):
                if labels[other] == -1:
                    labels[other] = cluster
                    if core[other]:
                        frontier.append(int(other))
        cluster += 1
    return labels


@BOUNDED
@given(st.integers(0, 10_000), st.integers(2, 120), st.floats(0.2, 2.0), st.sampled_from([0.03, 0.06, 0.1]))
def test_dbscan_labels_match_the_textbook_algorithm(seed: int, count: int, spread: float, eps: float) -> None:
    points = blobs(seed, count, spread)
    for min_samples in (1, 3, 5):
        expected = textbook_dbscan(points, eps, min_samples)
        assert np.array_equal(dbscan_labels(points, eps, min_samples), expected)
    labels = textbook_dbscan(points, eps, 5)
    kept = largest_cluster(points, eps)
    if len(points) < 5 or (labels < 0).all():
        assert np.array_equal(kept, points)
    else:
        assert np.array_equal(kept, points[labels == np.bincount(labels[labels >= 0]).argmax()])


def dictionary_downsample(points: np.ndarray, voxel: float) -> dict[tuple[int, int, int], np.ndarray]:
    groups: dict[tuple[int, int, int], list[np.ndarray]] = {}
    for point in points:
        groups.setdefault(tuple(int(c) for c in np.floor(point / voxel)), []).append(point)  # type: ignore[arg-type]
    return {cell: np.mean(members, axis=0) for cell, members in groups.items()}


@BOUNDED
@given(st.integers(0, 10_000), st.integers(1, 400), st.floats(0.05, 5.0), st.sampled_from([0.01, 0.025, 0.1]))
def test_voxel_downsample_is_one_mean_per_occupied_voxel(seed: int, count: int, spread: float, voxel: float) -> None:
    rng = np.random.default_rng(seed)
    points = rng.uniform(-spread, spread, (count, 3))
    if seed % 3 == 0:
        points = np.vstack([points, points[: count // 2]])  # repeated points share a voxel
    expected = dictionary_downsample(points, voxel)
    got = voxel_downsample(points, voxel)
    assert len(got) == len(expected)
    want = np.array(sorted(expected.values(), key=lambda p: tuple(p)))
    assert np.allclose(np.array(sorted(got.tolist())), want, atol=1e-12)


def straightforward_associate(fmap: ObjectMap, points: np.ndarray, detection: Detection) -> tuple[str | None, float]:
    """Score every mapped object in box-table order and keep the first best; None below the threshold."""
    best, best_score = None, -1.0
    for object_id in fmap._box_ids:
        obj = fmap.objects[object_id]
        score = fmap.overlap(points, obj) + semantic_similarity(obj, detection.label, detection.feature)
        if score > best_score:
            best, best_score = object_id, score
    if best is not None and best_score >= fmap.config.threshold:
        return best, best_score
    return None, -1.0


@BOUNDED
@given(st.integers(0, 10_000), st.integers(1, 25), st.sampled_from([0, 64, 256]))
def test_association_picks_what_scoring_every_object_picks(seed: int, objects: int, sample: int) -> None:
    rng = np.random.default_rng(seed)
    fmap = ObjectMap(FusionConfig(overlap_sample=sample))
    labels = ["mug", "book", "chair"]
    for index in range(objects):
        centre = rng.uniform(0, 1.5, 3)
        cloud = voxel_downsample(centre + rng.normal(0, rng.uniform(0.02, 0.2), (int(rng.integers(20, 400)), 3)), 0.025)
        tally = Counter({str(rng.choice(labels)): int(rng.integers(1, 4)), str(rng.choice(labels)): 1})
        fmap.objects[f"o{index}"] = MapObject(f"o{index}", cloud, tally, sum(tally.values()))
    fmap._refresh_boxes()
    for _ in range(4):
        # most detections land on a mapped object (so some associate), the rest anywhere
        near = fmap.objects[f"o{int(rng.integers(objects))}"].center if rng.random() < 0.7 else rng.uniform(0, 1.5, 3)
        centre = near + rng.normal(0, 0.02, 3)
        points = voxel_downsample(centre + rng.normal(0, rng.uniform(0.02, 0.2), (300, 3)), 0.025)
        detection = Detection(str(rng.choice(labels)), 0.9)
        assert fmap.associate(points, detection) == straightforward_associate(fmap, points, detection)
