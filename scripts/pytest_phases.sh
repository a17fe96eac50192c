#!/usr/bin/env bash
# `make pytest`: the test suite in two phases, each with its own summary and time per directory.
#   1. parallel: the tests that neither start ROS nodes nor bound anything in wall-clock seconds, on
#      PYTEST_WORKERS processes (pytest-xdist, a file's tests together: module fixtures are made once);
#   2. serial: the ROS tests (markers `ros`) and the ones marked `serial`, one at a time, as before.
# Arguments go to both phases (a path or -k that selects nothing in one phase is not an error).
# PYTEST_WORKERS=0 runs the first phase in one process too.
set -u
workers="${PYTEST_WORKERS:-2}"
status=0

phase() {
    local name=$1
    shift
    local began=$SECONDS
    python -m pytest "$@"
    local code=$?
    echo "pytest phase '${name}': $((SECONDS - began)) s wall, exit ${code}"
    if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then  # 5: this phase selected no test
        status=$code
    fi
}

if [ "$workers" -gt 0 ]; then
    phase "parallel on ${workers} workers" -n "$workers" --dist loadfile -m "not ros and not serial" "$@"
else
    phase "parallel, in one process" -m "not ros and not serial" "$@"
fi
phase serial -m "ros or serial" "$@"
exit "$status"
