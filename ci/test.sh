#!/usr/bin/env bash
# Runs the project's checks: the type checker and the linter (configured in pyproject.toml), the linters of the
# GitHub workflow, and the plugin's own test suite but its acceptance runs, under coverage with the processes
# it starts, each package against its floor (ci/coverage.sh). The acceptance runs and the scene suites on the
# local devices are ci/acceptance.sh; CI (.ci/run) runs both. Fails when a check finds anything, when any test
# fails, when no test ran or when a package's coverage is below its floor.
set -uo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"

run python3 -m mypy
run python3 -m ruff check .
# The device-lab workflow: actionlint (with shellcheck on its run: scripts), GitHub's workflow JSON Schema,
# and shellcheck on the scripts its jobs call.
run actionlint .github/workflows/zbench.yml .github/workflows/zbench-engine.yml .github/workflows/release.yml
run check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/zbench.yml .github/workflows/zbench-engine.yml \
    .github/workflows/release.yml
run shellcheck -x ci/zbench-leg.sh ci/zbench-plan.sh ci/zbench-setup.sh ci/release.sh
# The emulated arm64 device first: a test of the suite runs on it (tests/test_arm64_device.py, an acceptance
# run) and so does ci/acceptance.sh's scene selection; built once per machine, then cached.
started=$SECONDS
run bash ci/arm64-device.sh
echo "arm64 device set up in $((SECONDS - started)) s"
# The native runner (native/) for this machine, armhf and arm64, and the ARM sysroots with Debian's Mesa
# (cached): tests/native and ci/acceptance.sh run on them.
started=$SECONDS
run bash ci/native-devices.sh
echo "native devices set up in $((SECONDS - started)) s"
# The runner kit's own C tests (native/kit/tests): this machine's build under ASan and UBSan, and static armhf and
# aarch64 builds under qemu-user (about 10 s). Then the readers of the protocol's files fuzzed for a bounded time
# each: the kit's job reader with libFuzzer, the host's frames.csv and result.json readers with Hypothesis
# (ci/fuzz.sh, 10 s each: ci/test.sh keeps within its 15 minutes; longer runs by hand, e.g. ci/fuzz.sh 180).
started=$SECONDS
run make -s -C native check
run bash ci/fuzz.sh 10
echo "kit tests and fuzzing ran in $((SECONDS - started)) s"
# The runner kit for the platforms nothing here runs: macOS (linked) and iOS (compiled) with zig cc, Android's
# platform layer compiled; warnings are errors (docs/native-runner.md, "Platforms").
started=$SECONDS
run bash ci/kit-platforms.sh
echo "kit platforms built in $((SECONDS - started)) s"
# The Cairo runner (runners/cairo/) for this machine and, against the arm64 sysroot just prepared, for aarch64:
# tests/engines and ci/acceptance.sh run on them (local-cairo, local-arm64-cairo).
started=$SECONDS
run make -s -C runners/cairo
run bash runners/cairo/arm64-runner.sh build
echo "Cairo runners built in $((SECONDS - started)) s"
# The Qt 6 runner (runners/qt/): its objects cached by their sources (ci/qt-runner.sh); tests/engines and
# ci/acceptance.sh run it.
started=$SECONDS
run bash ci/qt-runner.sh
echo "Qt runner built in $((SECONDS - started)) s"
# zbench-gles2's shaders, every variant it compiles, validated as GLSL ES 1.00 by glslangValidator (seconds).
run bash native/gles2/check_shaders.sh
# The device that is its own machine (vm-arm64): its system image, built once per machine and cached (a few
# minutes the first time); ci/acceptance.sh's exclusive phase boots it once for tests/vm.
started=$SECONDS
run bash ci/vm-device.sh setup
echo "vm-arm64 image set up in $((SECONDS - started)) s"
# The test suite but its acceptance runs: the checks a change needs within minutes.
started=$SECONDS
run bash ci/coverage.sh tests -m "not acceptance" -n 2 -p no:cacheprovider -q -rfEs
echo "test suite ran in $((SECONDS - started)) s"
echo "ci/test.sh ran in $SECONDS s"
