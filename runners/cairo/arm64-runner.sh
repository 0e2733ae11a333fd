#!/usr/bin/env bash
# zbench-cairo for aarch64, the runner of `local-arm64-cairo` (devices.yaml):
#   runners/cairo/arm64-runner.sh build             cross-build it against the cached arm64 sysroot's Cairo
#   runners/cairo/arm64-runner.sh runner ARGS...    run it under qemu-user: probe | run JOB OUTDIR
# The sysroot is ci/native-devices.sh's (Debian's libcairo2, libfreetype6 and fonts-dejavu-core beside Mesa),
# built once and cached under ~/.cache/zbench/native; nothing of the target runs while it is made.
set -euo pipefail

checkout="$(cd "$(dirname "$0")/../.." && pwd)"
binary="$checkout/build/runners/cairo/arm64/zbench-cairo"

die() { echo "arm64-runner: $*" >&2; exit 1; }

case "${1:-}" in
    build)
        command -v aarch64-linux-gnu-gcc >/dev/null \
            || die "aarch64-linux-gnu-gcc is not installed (apt-get install gcc-aarch64-linux-gnu, or ci/setup.sh)"
        make -s -C "$checkout/runners/cairo" ARCH=arm64 SYSROOT="$("$checkout/ci/native-devices.sh" sysroot arm64)"
        echo "arm64-runner: $binary"
        ;;
    runner)
        shift
        [ -x "$binary" ] || die "the arm64 Cairo runner is not built: run runners/cairo/arm64-runner.sh build"
        root="$("$checkout/ci/native-devices.sh" sysroot arm64)"
        # qemu-user's -L makes the target's dynamic linker, its libraries and the font path resolve inside the
        # sysroot first.
        exec qemu-aarch64-static -L "$root" "$binary" "$@"
        ;;
    *) die "usage: $0 build | runner probe | runner run JOB OUTDIR" ;;
esac
