"""Settings shared by every test: property-based tests are bounded and reproducible.

Hypothesis runs a fixed number of examples from a fixed seed (`derandomize`), so a
failure in CI reproduces locally; set HYPOTHESIS_PROFILE=explore to search further
with random seeds.

A rerun (pytest-rerunfailures) is never silent: rerun_report prints its first failure and counts it in the summary.
time_report ends the run with its wall time per test directory and its slowest files.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from rerun_report import pytest_configure, pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401  (hooks)

pytest_plugins = ["time_report"]

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
