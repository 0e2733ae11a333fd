#!/usr/bin/env bash
# The suite's acceptance runs (tests marked `acceptance`): end-to-end runs of many pytest sessions with real
# launches, each 15 s or more on 2 cores: the gate over ten sessions under load, the remote devices over a real
# sshd and adb server, the lab history on PostgreSQL, the device-lab leg, goldens end to end, the emulated arm64
# device. CI (.ci/run) runs it after ci/test.sh; about 10 minutes on 2 cores. Needs ci/arm64-device.sh's device
# (ci/test.sh sets it up first).
set -uo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"

started=$SECONDS
run python3 -m pytest tests -m acceptance -n 2 -p no:cacheprovider -q -rfEs
echo "acceptance runs ran in $((SECONDS - started)) s (ci/acceptance.sh in $SECONDS s)"
