#!/usr/bin/env bash
# The test suite under coverage.py with every Python process it starts (test sessions, runners, xdist workers,
# CLI calls: [tool.coverage.run] in pyproject.toml), one data file per process, combined; then each package
# against its floor (ci/coverage_floors.py). Run after ci/setup.sh; the data stays in $ZBENCH_CI_RESULTS/coverage.
set -euo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"
results="${ZBENCH_CI_RESULTS:-$(mktemp -d)}"
coverage_dir="$results/coverage"
mkdir -p "$coverage_dir"
export COVERAGE_FILE="$coverage_dir/.coverage"
python3 -m coverage run -m pytest tests -n 2 -p no:cacheprovider -q -rfEs
python3 -m coverage combine -q
echo "coverage of pytest_zbench, subprocesses included: $(python3 -m coverage report --format=total)%"
python3 -m coverage json -q -o "$coverage_dir/coverage.json"
python3 ci/coverage_floors.py "$coverage_dir/coverage.json"
