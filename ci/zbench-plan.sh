#!/usr/bin/env bash
# The planning job of .github/workflows/zbench.yml: writes the device matrix to $GITHUB_OUTPUT (matrix=,
# legs=) from devices.yaml. $ZBENCH_PLAN_DEVICES (comma separated) and $ZBENCH_PLAN_LABEL select legs,
# $ZBENCH_KEYWORD is the -k expression of every leg. Until $ZBENCH_LAB is "true" (a repository variable,
# set once the lab's self-hosted runners are registered) only the legs on GitHub-hosted runners are
# planned: a job for a label no runner carries would wait in the queue for a day and then fail.
set -euo pipefail
cd "${GITHUB_WORKSPACE:-$(dirname "$0")/..}"
python="${ZBENCH_PYTHON:-python3}"
args=(--github-output)
[ -z "${ZBENCH_PLAN_DEVICES:-}" ] || args+=(--device "$ZBENCH_PLAN_DEVICES")
[ -z "${ZBENCH_PLAN_LABEL:-}" ] || args+=(--label "$ZBENCH_PLAN_LABEL")
[ -z "${ZBENCH_KEYWORD:-}" ] || args+=(-k "$ZBENCH_KEYWORD")
[ "${ZBENCH_LAB:-}" = "true" ] || args+=(--hosted-only)
exec "$python" -m pytest_zbench.cli matrix "${args[@]}"
