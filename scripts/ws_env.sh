#!/usr/bin/env bash
# Run a command inside the workspace environment: the venv as ROS prefix plus the
# colcon install space. Usage: scripts/ws_env.sh <command> [args...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SAYPLAN_VENV:-$here/.venv}"

if [ ! -f "$venv/setup.bash" ]; then
  echo "ws_env: $venv is not set up; run 'make build' (or scripts/bootstrap_venv.sh) first" >&2
  exit 1
fi
# shellcheck disable=SC1091
source "$venv/setup.bash"
# Keep DDS discovery on loopback: tests and the demo never leave this machine.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
if [ -f "$here/install/setup.bash" ]; then
  # colcon's setup scripts read unset variables.
  set +u
  # shellcheck disable=SC1091
  source "$here/install/setup.bash"
  set -u
  # ament_python puts console scripts in lib/<pkg> (for `ros2 run`); expose the CLI too.
  export PATH="$here/install/sayplan_core/lib/sayplan_core:$here/install/sayplan_ros/lib/sayplan_ros:$PATH"
fi
# The test overlay (scripts/build_test_overlay.sh) is for tests only: SAYPLAN_TEST_OVERLAY=1 adds it.
if [ "${SAYPLAN_TEST_OVERLAY:-0}" = "1" ]; then
  if [ -f "$here/test_overlay/install/local_setup.bash" ]; then
    # local_setup: this prefix only (its parents, the venv and install/, are already sourced above)
    set +u
    # shellcheck disable=SC1091
    source "$here/test_overlay/install/local_setup.bash"
    set -u
  fi
  if [ -d "$here/test_overlay/python" ]; then
    export PYTHONPATH="$here/test_overlay/python${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
exec "$@"
