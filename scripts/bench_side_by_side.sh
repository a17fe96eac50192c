#!/bin/bash
# The graph-load, graph-update and planning-overhead benches of two commits, run in turn (A B, B A, A B per round)
# so a change of machine load hits both alike: each tree runs its own scripts on its own sources.
#   scripts/bench_side_by_side.sh BASE_COMMIT [HEAD_COMMIT] [ROUNDS]   (outputs and a summary in /tmp/side_by_side)
# Compare the medians each bench prints: issue 40 compared fc254e3^ with ef4b8db this way (3 rounds).
set -euo pipefail
base=${1:?usage: $0 BASE_COMMIT [HEAD_COMMIT] [ROUNDS]}; head=${2:-HEAD}; rounds=${3:-3}
repo=$(cd "$(dirname "$0")/.." && pwd); out=/tmp/side_by_side
rm -rf "$out"; mkdir -p "$out/A" "$out/B"
git -C "$repo" archive "$head" src scripts | tar -x -C "$out/A"
git -C "$repo" archive "$base" src scripts | tar -x -C "$out/B"
run() {  # label bench args...
  local label=$1 bench=$2; shift 2
  local tree="$out/$label"
  "$repo/scripts/ws_env.sh" bash -c "export PYTHONPATH=$tree/src/sayplan_core:$tree/src/sayplan_ros:\$PYTHONPATH; \
    cd $tree && exec python scripts/$bench.py $*" > "$out/$bench.$label.$i.log" 2>&1
  echo "$bench $label $i rc=$? load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.log"
}
for i in $(seq 1 "$rounds"); do
  for l in A B; do run $l bench_graph_load --sizes 10000 100000 --repeat 3; done
  for l in B A; do run $l bench_graph_updates --sizes 0,1000,10000 --repeats 2; done
  for l in A B; do run $l bench_planning_overhead --sizes 10 100 --repeats 2 --latency 0.05; done
done
