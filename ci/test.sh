#!/usr/bin/env bash
# Runs the project's checks: the type checker and the linter (configured in pyproject.toml), the linters of the
# GitHub workflow, the plugin's own test suite, then the scene suite on the `local` device and on `local-gles2`
# (Skia on headless EGL GLES2, Mesa llvmpipe in CI; quick setting, against the committed goldens; about 2 minutes
# on 2 cores). Fails when a check finds anything, when any test fails or when no test ran.
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

run python3 -m mypy
run python3 -m ruff check .

results="${ZBENCH_CI_RESULTS:-$(mktemp -d)}"
echo "scene suite artifacts will be in $results"
# The device-lab workflow: actionlint (with shellcheck on its run: scripts), GitHub's workflow JSON Schema,
# and shellcheck on the scripts its jobs call.
run actionlint .github/workflows/zbench.yml
run check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/zbench.yml
run shellcheck ci/zbench-leg.sh ci/zbench-plan.sh ci/zbench-setup.sh
run python3 -m pytest tests -n 2 -p no:cacheprovider -q -rfEs
# The scene suite is a smoke test here (quick setting, a shared machine): it records into a history of its
# own, so no earlier run on this machine becomes its baseline.
for device in local local-gles2; do
    run python3 -m pytest --zbench-device="$device" --zbench-quick -n 2 -p no:cacheprovider -q -rfEs \
        --zbench-results="$results/$device" --junitxml="$results/$device/junit.xml" \
        --zbench-history="$results/history.sqlite"
done
