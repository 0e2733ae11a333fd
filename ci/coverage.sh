#!/usr/bin/env bash
# Runs pytest with the given arguments under coverage.py, with every Python process it starts (test sessions,
# runners, xdist workers, CLI calls: [tool.coverage.run] in pyproject.toml), one data file per process;
# combines them, prints the total and each package against its floor (ci/coverage_floors.py), and exits with
# pytest's status when a test failed, else 1 when a package is below its floor. ci/test.sh runs its test suite
# through it; the data stays in $ZBENCH_CI_RESULTS/coverage.
#
#     bash ci/coverage.sh tests -m "not acceptance" -n 2
set -uo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"
results="${ZBENCH_CI_RESULTS:-$(mktemp -d)}"
coverage_dir="$results/coverage"
mkdir -p "$coverage_dir"
export COVERAGE_FILE="$coverage_dir/.coverage"
python3 -m coverage run -m pytest "$@"
tests_rc=$?
# No test ran (5) or the run broke: nothing to measure, and the caller reports the status.
if [ $tests_rc -ne 0 ] && [ $tests_rc -ne 1 ]; then
    exit $tests_rc
fi
python3 -m coverage combine -q || exit 1
echo "coverage of pytest_zbench, subprocesses included: $(python3 -m coverage report --format=total)%"
python3 -m coverage json -q -o "$coverage_dir/coverage.json" || exit 1
python3 ci/coverage_floors.py "$coverage_dir/coverage.json"
floors_rc=$?
[ $tests_rc -eq 0 ] || exit $tests_rc
exit $floors_rc
