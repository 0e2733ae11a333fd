#!/usr/bin/env bash
# One leg of the device matrix (.github/workflows/zbench.yml): the scene suite on the device $ZBENCH_DEVICE,
# from the checkout in $GITHUB_WORKSPACE (else the current folder). A pull_request event runs A/B of the
# pull request's head against its merge base on the device; any other event the history gate, with the
# history kept outside the workspace ($ZBENCH_HISTORY_URL, else $ZBENCH_HISTORY_DIR/history.sqlite, else
# ~/.local/share/zbench/history.sqlite). Writes zbench-results/<device>/ (junit.xml, run.json, report.html,
# summary.md), the job summary ($GITHUB_STEP_SUMMARY) and the step outputs ($GITHUB_OUTPUT); exits with
# pytest's status. The logic is `zbench leg` (pytest_zbench/lab/leg.py); extra arguments go to pytest.
# Run by hand on a runner's machine to reproduce a leg: ZBENCH_DEVICE=pi3b bash ci/zbench-leg.sh
set -euo pipefail
cd "${GITHUB_WORKSPACE:-$(dirname "$0")/..}"
python="${ZBENCH_PYTHON:-python3}"
if [ $# -eq 0 ]; then
    exec "$python" -m pytest_zbench.cli leg
fi
exec "$python" -m pytest_zbench.cli leg -- "$@"
