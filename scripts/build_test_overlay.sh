#!/usr/bin/env bash
# The test overlay: what the tests need from ROS 2 that neither PyPI nor src/ provides, built into
# test_overlay/ (never into src/ or the main install), so a robot's own packages are never shadowed.
#
# - test/overlay/<pkg>: test-only interface packages that define, field for field, the few upstream wire
#   types the fakes at the protocol boundary speak (Nav2, franka_msgs, control_msgs). A package the system
#   already provides (a ROS install with Nav2) is NOT built: the tests then use the real one.
# - ROS 2 launch: where $SAYPLAN_ROS_LAUNCH_DIR, else ../shared/ros-launch beside this clone (CI runs in a clone
#   with shared/ beside it), else beside the main clone of a git worktree, holds the Jazzy launch wheels and the
#   composition_interfaces source, they are installed into test_overlay/python and test_overlay/install, so the
#   launch test runs sayplan.launch.py for real. Without that folder the launch test skips and says why.
#   (They are not copied into this repository: the project commits no third-party builds; see docs/howto/install.md.)
#
# Usage: scripts/build_test_overlay.sh   (run by `make test`; a stamp makes a second run instant)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$here/test_overlay"
launch_dir="${SAYPLAN_ROS_LAUNCH_DIR:-$here/../shared/ros-launch}"
if [ -z "${SAYPLAN_ROS_LAUNCH_DIR:-}" ] && [ ! -d "$launch_dir/wheels" ]; then
  # a git worktree outside the main clone's folder: shared/ sits beside the main clone
  common="$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
  if [ -n "$common" ] && [ -d "$(dirname "$common")/../shared/ros-launch/wheels" ]; then
    launch_dir="$(cd "$(dirname "$common")/../shared/ros-launch" && pwd)"
  fi
fi
venv="${SAYPLAN_VENV:-$here/.venv}"
mkdir -p "$out"
touch "$out/COLCON_IGNORE"  # never part of the main workspace build

has_package() {  # provided by the system or the main workspace (not by this overlay)
  SAYPLAN_TEST_OVERLAY=0 "$here/scripts/ws_env.sh" python -c \
    "import sys; from ament_index_python.packages import get_package_prefix as p; p(sys.argv[1])" "$1" \
    >/dev/null 2>&1
}

paths=()
names=()
for dir in "$here"/test/overlay/*/; do
  [ -f "$dir/package.xml" ] || continue
  name="$(basename "$dir")"
  if has_package "$name" && [ ! -d "$out/install/$name" ]; then
    echo "test overlay: $name is provided by the system; not building the test copy"
    continue
  fi
  paths+=("$dir")
  names+=("$name")
done

if [ -d "$launch_dir/wheels" ]; then
  if [ ! -f "$out/python/.stamp" ] || [ "$launch_dir/wheels" -nt "$out/python/.stamp" ]; then
    echo "test overlay: installing ROS 2 launch from $launch_dir"
    rm -rf "$out/python"
    "$venv/bin/python" -m pip --disable-pip-version-check -q install --no-deps --target "$out/python" \
      "$launch_dir"/wheels/*.whl "osrf-pycommon==2.0.2" 2> >(grep -v "is ignored: it is neither" >&2)
    touch "$out/python/.stamp"
  fi
  if ! has_package composition_interfaces || [ -d "$out/install/composition_interfaces" ]; then
    paths+=("$launch_dir/composition_interfaces")
    names+=("composition_interfaces")
  fi
else
  echo "test overlay: no ROS 2 launch wheels at $launch_dir (nor beside the main clone; SAYPLAN_ROS_LAUNCH_DIR" \
    "names another folder); the launch tests will skip"
fi

if [ "${#names[@]}" -eq 0 ]; then
  exit 0
fi
stamp="$out/.built"
newest="$(find "${paths[@]}" -type f -newer "$stamp" 2>/dev/null | head -1 || true)"
if [ -f "$stamp" ] && [ -z "$newest" ] && [ "$(cat "$stamp")" = "${names[*]}" ]; then
  exit 0
fi
echo "test overlay: building ${names[*]}"
cd "$out"
SAYPLAN_TEST_OVERLAY=0 "$here/scripts/ws_env.sh" colcon --log-base "$out/log" build \
  --base-paths "${paths[@]}" --build-base "$out/build" --install-base "$out/install" \
  --event-handlers console_cohesion- status- \
  --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF
echo "${names[*]}" > "$stamp"
