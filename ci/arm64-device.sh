#!/usr/bin/env bash
# The emulated arm64 device `local-arm64` (devices.yaml): an aarch64 Debian userland run by qemu-user on this
# machine, with the aarch64 wheels of the reference runner's dependencies. See docs/goldens.md
# ("Architectures") for why it exists.
#
#   bash ci/arm64-device.sh [setup]     build the device once (cached), install this checkout's runner on it
#   ci/arm64-device.sh runner ARGS...   the device's runner (what devices.yaml runs): probe | run JOB OUTDIR
#   ci/arm64-device.sh path             print the cached device folder
#
# Nothing aarch64 runs while it is built: `debootstrap --foreign` downloads the packages and unpacks the
# essential ones, the rest are unpacked with `dpkg-deb -x` (no maintainer scripts, no second stage, no
# binfmt_misc); pip downloads aarch64 wheels of the same skia-python and numpy versions the host has and
# installs them with --target into a folder of their own. qemu-aarch64-static -L ROOT then runs the
# userland's python3 as a plain host process.
#
# The device is cached outside the clone, in ${XDG_CACHE_HOME:-~/.cache}/zbench/arm64/<key>, the key naming
# the Debian suite and the dependency versions; a second run on the machine only installs the runner. The
# runner itself (what it imports: pytest_zbench/__init__.py, errors.py, json_types.py, protocol/, schema/,
# runner/) is copied into this clone's .zbench/arm64/runner: the device runs that copy, and refuses to start
# when it differs from the checkout.
#
# Needs debootstrap and qemu-user-static (ci/setup.sh installs both). Environment: PYTHON (the host
# interpreter whose skia-python and numpy versions are matched, default python3), ZBENCH_ARM64_SUITE (default
# bookworm), ZBENCH_ARM64_MIRROR (a Debian mirror URL; default: debootstrap's own).
set -euo pipefail
# Functions run inside $(...) too (ensure_device): without this bash turns errexit off there, and a failed
# version lookup went on with an empty cache key.
shopt -s inherit_errexit

checkout="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
suite="${ZBENCH_ARM64_SUITE:-bookworm}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/zbench/arm64"
device_dir="$checkout/.zbench/arm64"      # this clone's view of the device: a link to the cache, the runner copy
layout=1                                  # bump when the device's layout changes, so old caches are not reused
# The userland's packages: python3, the font the runner draws text with, and the libraries skia-python's
# wheel links against (libEGL, libGL through glvnd, expat). No Mesa: the gles2 backend is left out there.
packages="python3,fonts-dejavu-core,libegl1,libgl1,libexpat1"
runner_files=(pytest_zbench/__init__.py pytest_zbench/errors.py pytest_zbench/json_types.py
              pytest_zbench/protocol pytest_zbench/schema pytest_zbench/runner)

die() { echo "arm64-device: $*" >&2; exit 1; }

host_versions() {
    "$python" - <<'EOF'
from importlib.metadata import PackageNotFoundError, version
try:
    print(version("skia-python"), version("numpy"))
except PackageNotFoundError as exc:
    raise SystemExit(f"arm64-device: {exc.name} is not installed for the host interpreter; run ci/setup.sh")
EOF
}

build() {  # build the device into $1 (a fresh folder); nothing aarch64 is executed
    local target=$1 skia=$2 numpy=$3
    local root="$target/rootfs"
    command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap, or ci/setup.sh)"
    echo "arm64-device: debootstrap --foreign $suite (arm64) into $root"
    # shellcheck disable=SC2086 # the mirror is one optional argument
    debootstrap --foreign --arch=arm64 --variant=minbase --include="$packages" "$suite" "$root" \
        ${ZBENCH_ARM64_MIRROR:+"$ZBENCH_ARM64_MIRROR"} > "$target/debootstrap.log" 2>&1 \
        || { tail -20 "$target/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    # build runs on the left of `||` (ensure_device), where bash ignores errexit: every step that can fail
    # says so itself.
    echo "arm64-device: unpacking $(ls "$root"/var/cache/apt/archives/*.deb | wc -l) packages with dpkg-deb -x"
    for deb in "$root"/var/cache/apt/archives/*.deb; do
        dpkg-deb -x "$deb" "$root" || die "dpkg-deb -x $deb failed"
    done
    rm -f "$root"/var/cache/apt/archives/*.deb
    local py
    py="$(cd "$root/usr/bin" && ls python3.[0-9]* | grep -E '^python3\.[0-9]+$' | sort -V | tail -1)"
    [ -n "$py" ] || die "no python3.N in the $suite userland"
    local pyver="${py#python}" tag="cp${py#python}"
    tag="${tag/./}"
    echo "arm64-device: aarch64 wheels skia-python==$skia numpy==$numpy for $py into $target/site"
    "$python" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
        --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 \
        --python-version "$pyver" --implementation cp --abi "$tag" \
        --target "$target/site" "skia-python==$skia" "numpy==$numpy" \
        || die "pip could not install the aarch64 wheels skia-python==$skia numpy==$numpy for $py (output above)"
    [ -d "$target/site/skia" ] || [ -n "$(ls "$target/site"/skia*.so 2>/dev/null)" ] \
        || die "the aarch64 skia-python wheel left no skia module in $target/site"
    precompile "$pyver" "$root/usr/lib/$py" "$target/site"
    printf 'suite=%s\npython=%s\nskia-python=%s\nnumpy=%s\n' "$suite" "$py" "$skia" "$numpy" > "$target/READY"
}

precompile() {  # .pyc files written by the host interpreter when it is the same Python version: the bytecode
    # is the same on every architecture, and without it the emulated interpreter compiles each module it
    # imports on every start (Debian compiles them in a maintainer script, which is not run here)
    local version=$1; shift
    if [ "$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$version" ]; then
        "$python" -m compileall -q -j 0 "$@" >/dev/null || true
    fi
}

ensure_device() {  # print the cached device folder, building it first when it is missing
    local versions skia numpy key
    versions="$(host_versions)" || exit 1
    read -r skia numpy <<<"$versions"
    if [ -z "$skia" ] || [ -z "$numpy" ]; then
        die "no skia-python and numpy versions from $python (got '$versions')"
    fi
    key="$suite-skia-python-$skia-numpy-$numpy-v$layout"
    local device="$cache_root/$key"
    if [ ! -f "$device/READY" ]; then
        mkdir -p "$cache_root"
        exec 9>"$cache_root/.lock"
        flock 9  # one build at a time on this machine; a waiter finds the device built
        if [ ! -f "$device/READY" ]; then
            local started=$SECONDS tmp
            tmp="$(mktemp -d "$cache_root/.build-XXXXXX")"
            build "$tmp" "$skia" "$numpy" >&2 || { rm -rf "$tmp"; exit 1; }
            rm -rf "$device"
            mv "$tmp" "$device"
            echo "arm64-device: built $device in $((SECONDS - started)) s" >&2
        fi
        exec 9>&-
    fi
    echo "$device"
}

install_runner() {  # copy this checkout's runner onto the device (atomically: a new folder, then a rename)
    local device=$1 staging
    mkdir -p "$device_dir"
    staging="$(mktemp -d "$device_dir/.runner-XXXXXX")"
    mkdir -p "$staging/pytest_zbench"
    local file
    for file in "${runner_files[@]}"; do
        cp -R "$checkout/$file" "$staging/$file"
    done
    find "$staging" -name __pycache__ -type d -prune -exec rm -rf {} +
    precompile "$(sed -n 's/^python=python//p' "$device/READY")" "$staging"
    rm -rf "$device_dir/runner.old"
    [ -d "$device_dir/runner" ] && mv "$device_dir/runner" "$device_dir/runner.old"
    mv "$staging" "$device_dir/runner"
    rm -rf "$device_dir/runner.old"
    ln -sfn "$device" "$device_dir/device"
}

runner_is_current() {
    local copy="$device_dir/runner" file
    for file in "${runner_files[@]}"; do
        diff -rq --exclude=__pycache__ --exclude='*.pyc' "$checkout/$file" "$copy/$file" >/dev/null 2>&1 || return 1
    done
}

run_runner() {
    local device="$device_dir/device"
    [ -f "$device/READY" ] && [ -d "$device_dir/runner" ] \
        || die "the arm64 device is not set up in this clone: run bash ci/arm64-device.sh (a minute the first time)"
    runner_is_current \
        || die "the device's copy of the runner differs from this checkout's: run bash ci/arm64-device.sh to install it"
    command -v qemu-aarch64-static >/dev/null || die "qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
    local root
    root="$(cd "$device/rootfs" && pwd -P)"
    # Only the device's own folders: the runner copy, then the aarch64 wheels. -P keeps the working
    # directory off sys.path and -s the host user's site-packages; the host's PYTHONHOME must not leak in.
    unset PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE
    export PYTHONPATH="$device_dir/runner:$(cd "$device/site" && pwd -P)"
    export PYTHONDONTWRITEBYTECODE=1
    exec qemu-aarch64-static -L "$root" "$root/usr/bin/python3" -s -P -m pytest_zbench.runner "$@"
}

command="${1:-setup}"
case "$command" in
    setup)
        started=$SECONDS
        device="$(ensure_device)" || exit 1
        [ -f "$device/READY" ] || die "the device at '$device' is not built (no READY file)"
        install_runner "$device"
        echo "arm64-device: ready in $((SECONDS - started)) s: $device (runner copy in $device_dir/runner)"
        ;;
    path) ensure_device ;;
    runner) shift; run_runner "$@" ;;
    *) die "unknown command $command; use setup, path or runner" ;;
esac
