"""scripts/bench_llm_body.py runs as planning_at_scale.md shows it (CI-sized) and prints one comparable line per size."""

from __future__ import annotations

import re

from bench_runs import run_bench


def test_bench_llm_body_prints_both_encoders_per_size() -> None:
    lines = run_bench("bench_llm_body.py", ["--rooms", "10", "20", "--calls", "2"]).splitlines()
    assert [line.split(" rooms")[0] for line in lines] == ["10", "20"]
    sizes = []
    for line in lines:
        found = re.search(r", ([\d.]+) MB prompt: CPU per call ([\d.]+) ms with orjson, ([\d.]+) ms through", line)
        assert found, line
        mb, fast, sdk = (float(v) for v in found.groups())
        assert fast > 0 and sdk > 0
        sizes.append(mb)
    assert sizes[1] > sizes[0]  # the prompt is the building's whole graph: twice the rooms, a larger prompt
