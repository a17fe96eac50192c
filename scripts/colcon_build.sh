#!/usr/bin/env bash
# colcon build of the workspace against the venv prefix (see bootstrap_venv.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SAYPLAN_VENV:-$here/.venv}"
cd "$here"
exec "$here/scripts/ws_env.sh" colcon --log-base log build --base-paths src \
  --symlink-install \
  --event-handlers console_cohesion- status- \
  --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF
