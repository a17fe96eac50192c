"""Whether ROS 2 launch can run here, decided once for every test that needs it.

`test/launch/` is on the test path (pyproject `pythonpath = ["test"]`), so a bare `import launch` can find that
folder as an empty namespace package where no real `launch` is installed; only a module with a file counts.
"""

from __future__ import annotations

import importlib.util

import pytest

LAUNCH_MODULES = ("launch", "launch_ros", "launch_testing")


def _real_module(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin not in (None, "namespace")


HAVE_LAUNCH = all(_real_module(m) for m in LAUNCH_MODULES)
NO_LAUNCH = (
    "ROS 2 launch is not importable: there is no ROS install and no ../shared/ros-launch folder for the test "
    "overlay (scripts/build_test_overlay.sh); the launch file was not run"
)
needs_launch = pytest.mark.skipif(not HAVE_LAUNCH, reason=NO_LAUNCH)
