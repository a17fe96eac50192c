#!/usr/bin/env bash
# `make pytest`: the test suite in two phases, each with its own summary and time per directory.
#   1. parallel: every test not marked `serial`, ROS tests included (each claims a DDS domain of its own), on
#      PYTEST_WORKERS processes (pytest-xdist, a file's tests together: module fixtures are made once);
#   2. serial: the tests marked `serial`, one at a time: they bound something in wall-clock seconds, race a timer
#      or a DDS lease, send signals or use every core (each says why where it is marked; every test under test/ros
#      not marked `ros` is serial too, test/ros/conftest.py).
# Arguments go to both phases (a path or -k that selects nothing in one phase is not an error; in both, it is:
# exit 5). Each phase selects by marker itself, so -m is refused: run `python -m pytest -m ...` for that.
# PYTEST_WORKERS=0 runs the first phase in one process too.
set -u
workers="${PYTEST_WORKERS:-2}"
case "$workers" in
    '' | *[!0-9]*)
        echo "pytest_phases: PYTEST_WORKERS must be a number of processes (0: one), got '${workers}'" >&2
        exit 4
        ;;
esac
for arg in "$@"; do
    case "$arg" in
        -m | -m*)
            echo "pytest_phases: -m is not taken (each phase selects by marker); run python -m pytest -m ... instead" >&2
            exit 4
            ;;
        -n | -n* | --numprocesses* | --dist* | no:xdist)
            echo "pytest_phases: ${arg} is not taken (the phases choose their processes: PYTEST_WORKERS)" >&2
            exit 4
            ;;
    esac
done

codes=()
phase() {
    local name=$1
    shift
    local began=$SECONDS
    python -m pytest "$@"
    local code=$?
    echo "pytest phase '${name}': $((SECONDS - began)) s wall, exit ${code}"
    codes+=("$code")
}

if [ "$workers" -gt 0 ]; then
    phase "parallel on ${workers} workers" -n "$workers" --dist loadfile -m "not serial" "$@"
else
    phase "parallel, in one process" -m "not serial" "$@"
fi
case "${codes[0]}" in
    2 | 3 | 4) exit "${codes[0]}" ;;  # interrupted, an internal error or a usage error: no second phase
esac
phase serial -m serial "$@"
for code in "${codes[@]}"; do  # the first failure's code; 5 (no test selected) only when neither phase ran one
    if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then
        exit "$code"
    fi
done
if [ "${codes[0]}" -eq 5 ] && [ "${codes[1]}" -eq 5 ]; then
    exit 5
fi
exit 0
