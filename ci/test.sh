#!/usr/bin/env bash
# Runs the project's tests: the plugin's own test suite, then the scene suite on the `local` device and on
# `local-gles2` (Skia on headless EGL GLES2, Mesa llvmpipe in CI; quick setting, against the committed goldens;
# about 2 minutes on 2 cores). Fails when any test fails or when no test ran.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1

run() {
    echo "+ $*"
    "$@"
    local rc=$?
    if [ $rc -eq 5 ]; then
        echo "error: no tests were collected by: $*" >&2
        exit 1
    fi
    [ $rc -eq 0 ] || exit $rc
}

results="${ZBENCH_CI_RESULTS:-$(mktemp -d)}"
run python3 -m pytest tests -n 2 -p no:cacheprovider -q -rfEs
run python3 -m pytest --zbench-device=local --zbench-quick -n 2 -p no:cacheprovider -q -rfEs \
    --zbench-results="$results/local" --junitxml="$results/local/junit.xml"
run python3 -m pytest --zbench-device=local-gles2 --zbench-quick -n 2 -p no:cacheprovider -q -rfEs \
    --zbench-results="$results/local-gles2" --junitxml="$results/local-gles2/junit.xml"
echo "scene suite artifacts: $results/local, $results/local-gles2"
