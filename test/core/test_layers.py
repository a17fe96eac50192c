"""The layers a robot package keeps: the core imports no robot package, ROS or SDK; a robot's ROS-free half (its
skill programs, failure tables, protocol parsers) imports neither rclpy nor the robot's SDK, so it is tested and
reused without them; in sayplan_spot only the `robot` subpackage imports the Spot SDK.

Two oracles: the import statements in the source (every level, so a lazy import inside a function counts too), and
the interpreter itself, which imports the ROS-free modules in a fresh process and lists what came with them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
ROBOT_PACKAGES = ("sayplan_spot", "sayplan_franka_omron")
ROS_OR_SDK = ("rclpy", "bosdyn", "launch", "launch_ros", "ament_index_python")
#: A robot's logic without ROS or its SDK, beside its node.
ROS_FREE = {
    "sayplan_spot": ["programs", "failures"],
    "sayplan_franka_omron": ["arcl", "motions", "programs"],
}


def imported(path: Path) -> set[str]:
    """Every module an `import` or `from ... import` names anywhere in the file (absolute imports)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def offending(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(name for name in imported(path) if name.split(".")[0] in forbidden)


def is_ros_interface(name: str) -> bool:
    return name.split(".")[0].endswith(("_msgs", "_srvs", "_interfaces"))


def test_the_scan_finds_a_lazy_import_and_a_from_import(tmp_path: Path) -> None:
    """The check below can fail: an import inside a function and a from-import of a robot package are found."""
    source = tmp_path / "module.py"
    source.write_text(
        "import math\n\ndef later() -> None:\n    import rclpy.node\n    from sayplan_spot.robot import SpotRobot\n",
        encoding="utf-8",
    )
    assert offending(source, (*ROS_OR_SDK, *ROBOT_PACKAGES)) == [
        "rclpy.node",
        "sayplan_spot.robot",
        "sayplan_spot.robot.SpotRobot",
    ]


def test_the_core_imports_no_robot_package_ros_or_sdk() -> None:
    files = sorted((SRC / "sayplan_core" / "sayplan_core").rglob("*.py"))
    assert len(files) > 50, "the core's sources were not found"
    found = {
        path.relative_to(SRC).as_posix(): bad
        for path in files
        if (bad := offending(path, (*ROS_OR_SDK, *ROBOT_PACKAGES)) + sorted(filter(is_ros_interface, imported(path))))
    }
    assert found == {}


@pytest.mark.parametrize("package", ROBOT_PACKAGES)
def test_a_robots_ros_free_half_imports_neither_ros_nor_its_sdk(package: str) -> None:
    for module in ROS_FREE[package]:
        path = SRC / package / package / f"{module}.py"
        bad = offending(path, ROS_OR_SDK) + sorted(filter(is_ros_interface, imported(path)))
        own = sorted(
            n for n in imported(path) if n.startswith(f"{package}.") and n.split(".")[1] not in ROS_FREE[package]
        )
        assert (bad, own) == ([], []), f"{path.relative_to(ROOT)} imports ROS, the SDK or its package's node side"


def test_only_the_spot_robot_subpackage_imports_the_sdk() -> None:
    package = SRC / "sayplan_spot" / "sayplan_spot"
    users = {path.relative_to(package).parts[0] for path in package.rglob("*.py") if offending(path, ("bosdyn",))}
    assert users == {"robot"}


def test_importing_the_ros_free_modules_brings_in_no_ros_and_no_sdk() -> None:
    """The interpreter's own account, in a fresh process: what sys.modules holds after importing them."""
    modules = [f"{package}.{name}" for package, names in ROS_FREE.items() for name in names]
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert set(modules) <= set(loaded)
    assert [name for name in loaded if name.split(".")[0] in ROS_OR_SDK or is_ros_interface(name)] == []
