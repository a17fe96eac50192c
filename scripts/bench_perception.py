#!/usr/bin/env python3
"""Perception benchmark: fusion speed and map memory (the detector is excluded).

    scripts/ws_env.sh python scripts/bench_perception.py [--objects 1000] [--frames 30] \
        [--against main] [--write docs/measured/perception.md]

Frames are 640x480 renders of the synthetic scene with 20 detections each (its
real objects plus boxes over the rest of the image), fused into a map that already
holds `--objects` objects spread over a large building. The figure is one core's:
OpenMP/BLAS threads are pinned to one before numpy loads, and the target is on CPU
time per frame (time.process_time), which other load on a shared machine moves less
than wall time. `--against REF` also fuses the same stream with the perception code of
another git revision in the same process, frames interleaved, and prints both medians,
their ratio and both map hashes (equal hashes: the two give a bit-identical map).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: set before numpy, scipy and sklearn start their thread pools

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402

import measured_doc  # noqa: E402
import numpy as np  # noqa: E402

from sayplan_core.perception.fusion import Detection, Frame, MapObject, ObjectMap  # noqa: E402
from sayplan_core.perception.geometry import CameraIntrinsics, look_at, voxel_downsample  # noqa: E402
from sayplan_core.perception.synthetic import build_scene, render, trajectory  # noqa: E402


def premapped(count: int, rng: np.random.Generator) -> list[MapObject]:
    """Objects of ~200 points each, spread over a 60 m x 60 m floor away from the scene."""
    out = []
    for index in range(count):
        center = np.array([20 + rng.uniform(0, 60), 20 + rng.uniform(0, 60), rng.uniform(0.2, 1.5)])
        cloud = voxel_downsample(center + rng.normal(0, 0.08, (600, 3)), 0.025)
        out.append(MapObject(f"thing_{index}", cloud, Counter({"thing": 3}), 3))
    return out


def frames(count: int, rng: np.random.Generator) -> list[Frame]:
    k = CameraIntrinsics.from_fov(640, 480, 70.0)
    entities = build_scene()
    views = trajectory()
    out = []
    for index in range(count):
        eye, target = views[index % len(views)]
        r = render(entities, k, look_at(eye, target))
        detections = []
        for inst in np.unique(r.instances):
            if inst >= 0 and entities[inst].kind != "structure" and (r.instances == inst).sum() > 200:
                detections.append(Detection(entities[inst].label, 0.9, r.instances == inst))
        while len(detections) < 20:  # fill to 20 with boxes elsewhere in the image
            u, v = int(rng.integers(0, 560)), int(rng.integers(0, 400))
            detections.append(Detection("clutter", 0.5, box=(u, v, u + 80, v + 80)))
        out.append(Frame(r.depth, k, r.pose, detections[:20], float(index)))
    return out


def map_digest(fmap: ObjectMap) -> str:
    """A hash of every object's id, labels, count, feature and points: equal hashes mean a bit-identical map."""
    digest = hashlib.sha256()
    for object_id, obj in fmap.objects.items():
        digest.update(f"{object_id}|{sorted(obj.labels.items())}|{obj.detections}|".encode())
        digest.update(np.ascontiguousarray(obj.points).tobytes())
        if obj.feature is not None:
            digest.update(np.ascontiguousarray(obj.feature).tobytes())
    return digest.hexdigest()[:16]


def reference_fusion(ref: str, into: Path) -> ModuleType:
    """The fusion module of git revision `ref`, imported as its own package beside this tree's."""
    root = Path(__file__).resolve().parent.parent
    folder = "src/sayplan_core/sayplan_core/perception"
    names = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "--name-only", f"{ref}:{folder}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    package = into / "reference_perception"
    package.mkdir()
    for name in names:
        if name.endswith(".py"):
            source = subprocess.run(
                ["git", "-C", str(root), "show", f"{ref}:{folder}/{name}"], check=True, capture_output=True, text=True
            ).stdout
            (package / name).write_text(source.replace("sayplan_core.perception.", "reference_perception."))
    sys.path.insert(0, str(into))
    return importlib.import_module("reference_perception.fusion")


def side_by_side(ref: str, stream: list[Frame], objects: list[MapObject], passes: int = 3) -> list[str]:
    """Median CPU time per frame of this tree and of `ref` on the same frames, interleaved in one process."""
    with tempfile.TemporaryDirectory() as scratch:
        reference = reference_fusion(ref, Path(scratch))
        modules = {"this tree": sys.modules[ObjectMap.__module__], ref: reference}
        cpu: dict[str, list[float]] = {name: [] for name in modules}
        digests: dict[str, str] = {}
        for turn in range(passes):
            maps = {}
            for name, module in modules.items():
                fmap = module.ObjectMap()
                for obj in objects:
                    fmap.objects[obj.id] = module.MapObject(
                        obj.id, obj.points.copy(), Counter(obj.labels), obj.detections
                    )
                fmap._refresh_boxes()
                maps[name] = fmap
            for index, frame in enumerate(stream):
                order = list(modules) if (index + turn) % 2 == 0 else list(modules)[::-1]  # neither always first
                for name in order:
                    start = time.process_time()
                    maps[name].integrate(frame)
                    if index >= 2:
                        cpu[name].append(time.process_time() - start)
            digests = {name: map_digest(fmap) for name, fmap in maps.items()}
    ours, theirs = statistics.median(cpu["this tree"]), statistics.median(cpu[ref])
    same = "the same map" if digests["this tree"] == digests[ref] else "maps differ"
    return [
        f"- side by side with `{ref}` (one process, frames interleaved, {passes} passes): median CPU time per frame "
        f"{ours * 1000:.1f} ms here vs {theirs * 1000:.1f} ms, ratio {ours / theirs:.3f}; map hashes "
        f"{digests['this tree']} vs {digests[ref]} ({same})"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--against", metavar="REF", help="also time this git revision's fusion side by side")
    parser.add_argument("--write", type=Path, help="also write the figures to this Markdown file (docs/measured/)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"rendering {args.frames} frames at 640x480 ...", file=sys.stderr, flush=True)
    stream = frames(args.frames, rng)

    tracemalloc.start()
    fmap = ObjectMap()
    objects = premapped(args.objects, rng)
    for obj in objects:
        fmap.objects[obj.id] = obj
    fmap._refresh_boxes()
    _, peak_before = tracemalloc.get_traced_memory()
    point_bytes = sum(o.points.nbytes for o in fmap.objects.values())
    tracemalloc.stop()
    untouched = [MapObject(o.id, o.points.copy(), Counter(o.labels), o.detections) for o in objects]

    times, cpu = [], []
    for frame in stream:
        start, start_cpu = time.perf_counter(), time.process_time()
        fmap.integrate(frame)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    steady = times[2:] or times
    steady_cpu = cpu[2:] or cpu
    per_frame = statistics.median(steady)
    lines: list[str] = []
    lines.append(f"- frames: {len(stream)} at 640x480, 20 detections each, {args.objects} objects mapped beforehand")
    cpu_frame = statistics.median(steady_cpu)
    lines.append(
        f"- median CPU time per frame (one core): {cpu_frame * 1000:.1f} ms -> {1 / cpu_frame:.1f} frames/s "
        "(target >= 30, i.e. <= 33.3 ms)"
    )
    lines.append(f"- median wall time per frame: {per_frame * 1000:.1f} ms -> {1 / per_frame:.1f} frames/s")
    mean = statistics.fmean(steady)
    lines.append(f"- mean time per frame: {mean * 1000:.1f} ms -> {1 / mean:.1f} frames/s")
    lines.append(f"- 90th percentile: {np.percentile(steady, 90) * 1000:.1f} ms")
    lines.append(
        f"- map memory: {point_bytes / 1e6 / args.objects * 1000:.1f} MB of points per 1000 objects "
        f"({peak_before / 1e6:.1f} MB traced to build {args.objects} objects)"
    )
    lines.append(f"- objects after the run: {len(fmap.objects)}; map hash {map_digest(fmap)}")
    if args.against:
        lines += side_by_side(args.against, stream, untouched)
    print("## Perception fusion (detector excluded)\n\n" + "\n".join(lines))
    if args.write:
        measured_doc.write(args.write, "Perception fusion (detector excluded)", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
