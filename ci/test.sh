#!/usr/bin/env bash
# Runs the project's tests: the plugin's own test suite, then the scene suite on the `local` device
# (quick setting, against the committed goldens). Fails when any test fails or when no test ran.
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
echo "scene suite artifacts: $results/local"
