"""The detector seam: anything that turns a colour (and depth) image into Detections.

Open-vocabulary detectors (Grounding DINO + SAM, YOLO-World, ...) run outside this
package, usually as their own node publishing `detections`; an in-process detector
implements this protocol. `SyntheticDetector` is the reference implementation used
by the synthetic stream: it reads the renderer's instance buffer and adds the
errors real detectors make (label confusions, misses, ragged masks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from scipy import ndimage

from sayplan_core.perception.fusion import Detection


class Detector(Protocol):
    def detect(self, color: NDArray[np.uint8], depth: NDArray[np.float32] | None = None) -> list[Detection]: ...


class SyntheticDetector:
    """Detections from an instance buffer (index per pixel, -1 for nothing), with realistic noise."""

    def __init__(
        self,
        labels: Sequence[str],
        detectable: Sequence[bool],
        rng: np.random.Generator,
        confusions: Mapping[str, str],
        label_noise: float = 0.1,
        miss_rate: float = 0.1,
        jitter: int = 2,
        min_pixels: int = 60,
    ) -> None:
        self.labels, self.detectable, self.rng, self.confusions = labels, detectable, rng, confusions
        self.label_noise, self.miss_rate, self.jitter, self.min_pixels = label_noise, miss_rate, jitter, min_pixels

    def detect_instances(self, instances: NDArray[np.int32]) -> list[Detection]:
        detections = []
        for inst in np.unique(instances):
            if inst < 0 or not self.detectable[inst]:
                continue
            mask = instances == inst
            if mask.sum() < self.min_pixels or self.rng.random() < self.miss_rate:
                continue
            steps = int(self.rng.integers(-self.jitter, self.jitter + 1))
            if steps > 0:
                mask = ndimage.binary_dilation(mask, iterations=steps)
            elif steps < 0:
                mask = ndimage.binary_erosion(mask, iterations=-steps)
            label = self.labels[inst]
            if label in self.confusions and self.rng.random() < self.label_noise:
                label = self.confusions[label]
            detections.append(Detection(label, float(self.rng.uniform(0.5, 0.99)), mask))
        return detections
