#!/usr/bin/env bash
# The native runner devices of devices.yaml: zbench-gles2 (native/, docs/native-runner.md) built from one
# Makefile for this machine (`local-native`) and cross-compiled for 32-bit ARM (`local-armhf-native`) and
# aarch64 (`local-arm64-native`), the ARM builds run by qemu-user on Debian's Mesa (llvmpipe) of their
# architecture.
#
#   bash ci/native-devices.sh [setup]          build all three (the ARM sysroots once, cached)
#   ci/native-devices.sh runner ARCH ARGS...   the runner of ARCH (armhf or arm64): probe | run JOB OUTDIR
#   ci/native-devices.sh sysroot ARCH          print the cached sysroot of ARCH
#
# Nothing ARM runs while the sysroots are built: `debootstrap --foreign` downloads the target's Mesa packages
# and unpacks the essential ones, the rest are unpacked with `dpkg-deb -x` (no maintainer scripts), as
# ci/arm64-device.sh does. The cross compilers are Debian's gcc-arm-linux-gnueabihf and gcc-aarch64-linux-gnu;
# the EGL and GLES2 headers are this machine's (libegl-dev, libgles-dev: architecture-independent), the
# libraries linked against are the sysroot's. Sysroots are cached in ${XDG_CACHE_HOME:-~/.cache}/zbench/native;
# the binaries are written to build/native/<arch>/ in this clone.
#
# Needs debootstrap, qemu-user-static, gcc-arm-linux-gnueabihf, gcc-aarch64-linux-gnu, libegl-dev and
# libgles-dev (ci/setup.sh installs them). Environment: ZBENCH_NATIVE_SUITE (default bookworm),
# ZBENCH_NATIVE_MIRROR (a Debian mirror URL; default: debootstrap's own), ZBENCH_NATIVE_ARCHES (default
# "host armhf arm64"), ZBENCH_NATIVE_GALLIUM (the Mesa driver of the ARM runners, default softpipe).
set -euo pipefail

checkout="$(cd "$(dirname "$0")/.." && pwd)"
suite="${ZBENCH_NATIVE_SUITE:-bookworm}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/zbench/native"
layout=2   # bump when a sysroot's layout changes, so old caches are not reused
# What the runners need at run time: glvnd's libEGL and libGLESv2 and Mesa's EGL driver with llvmpipe;
# FreeType and the DejaVu font for text; Cairo for the Cairo runner (runners/cairo), with what it links.
packages="libegl1,libegl-mesa0,libgles2,libgl1-mesa-dri,libgbm1,libfreetype6,fonts-dejavu-core,libcairo2"

die() { echo "native-devices: $*" >&2; exit 1; }

triplet() { case $1 in armhf) echo arm-linux-gnueabihf ;; arm64) echo aarch64-linux-gnu ;; *) die "unknown ARCH $1 (armhf or arm64)" ;; esac; }
qemu() { case $1 in armhf) echo qemu-arm-static ;; arm64) echo qemu-aarch64-static ;; esac; }

build_sysroot() {  # $1 arch, $2 a fresh folder; nothing of the target is executed
    local arch=$1 target=$2
    command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap, or ci/setup.sh)"
    echo "native-devices: debootstrap --foreign $suite ($arch) with $packages into $target/rootfs"
    # shellcheck disable=SC2086 # the mirror is one optional argument
    debootstrap --foreign --arch="$arch" --variant=minbase --include="$packages" "$suite" "$target/rootfs" \
        ${ZBENCH_NATIVE_MIRROR:+"$ZBENCH_NATIVE_MIRROR"} > "$target/debootstrap.log" 2>&1 \
        || { tail -20 "$target/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    local deb
    for deb in "$target"/rootfs/var/cache/apt/archives/*.deb; do
        dpkg-deb -x "$deb" "$target/rootfs"
    done
    rm -f "$target"/rootfs/var/cache/apt/archives/*.deb
    [ -e "$target/rootfs/usr/lib/$(triplet "$arch")/libEGL.so.1" ] || die "no libEGL.so.1 in the $arch sysroot"
    printf 'suite=%s\narch=%s\npackages=%s\n' "$suite" "$arch" "$packages" > "$target/READY"
}

sysroot() {  # print the cached sysroot of $1, building it first when it is missing
    local arch=$1 dir="$cache_root/$suite-$1-v$layout"
    if [ ! -f "$dir/READY" ]; then
        mkdir -p "$cache_root"
        exec 9>"$cache_root/.lock-$arch"
        flock 9  # one build at a time; a waiter finds it built
        if [ ! -f "$dir/READY" ]; then
            local started=$SECONDS tmp
            tmp="$(mktemp -d "$cache_root/.build-XXXXXX")"
            build_sysroot "$arch" "$tmp" >&2 || { rm -rf "$tmp"; exit 1; }
            rm -rf "$dir"
            mv "$tmp" "$dir"
            echo "native-devices: $arch sysroot built in $((SECONDS - started)) s" >&2
        fi
        exec 9>&-
    fi
    echo "$dir/rootfs"
}

setup() {
    local arch
    for arch in ${ZBENCH_NATIVE_ARCHES:-host armhf arm64}; do
        if [ "$arch" = host ]; then
            make -s -C "$checkout/native" ARCH=host
        else
            command -v "$(triplet "$arch")-gcc" >/dev/null \
                || die "$(triplet "$arch")-gcc is not installed (apt-get install gcc-$(triplet "$arch"), or ci/setup.sh)"
            make -s -C "$checkout/native" ARCH="$arch" SYSROOT="$(sysroot "$arch")"
        fi
        echo "native-devices: build/native/$arch/zbench-gles2"
    done
}

runner() {  # the ARCH build under qemu-user, on the sysroot's Mesa
    local arch=$1; shift
    local root lib binary="$checkout/build/native/$arch/zbench-gles2"
    root="$cache_root/$suite-$arch-v$layout/rootfs"
    if [ ! -f "$root/../READY" ] || [ ! -x "$binary" ]; then
        die "the $arch runner is not built: run bash ci/native-devices.sh"
    fi
    lib="$root/usr/lib/$(triplet "$arch")"
    # qemu-user's -L makes the target's dynamic linker and every absolute path it opens resolve inside the
    # sysroot first; Mesa's drivers and glvnd's vendor files are named explicitly all the same.
    # Mesa's softpipe, not llvmpipe: llvmpipe's JIT-compiled shaders run under qemu-arm drew wrong pixels
    # (textures sampled at one texel, clips misplaced; the aarch64 build drew right), and its rasteriser threads
    # finish a frame after glFlush returned, leaving cpu_ms under 1 % of an emulated frame. softpipe draws in
    # the calling thread with no JIT: the same pixels on both architectures.
    exec env LIBGL_DRIVERS_PATH="$lib/dri" __EGL_VENDOR_LIBRARY_DIRS="$root/usr/share/glvnd/egl_vendor.d" \
        GALLIUM_DRIVER="${ZBENCH_NATIVE_GALLIUM:-softpipe}" "$(qemu "$arch")" -L "$root" "$binary" "$@"
}

case "${1:-setup}" in
    setup) setup ;;
    runner) [ $# -ge 2 ] || die "usage: $0 runner ARCH probe | run JOB OUTDIR"; shift; runner "$@" ;;
    sysroot) [ $# -eq 2 ] || die "usage: $0 sysroot ARCH"; sysroot "$2" ;;
    *) die "usage: $0 [setup] | runner ARCH ARGS... | sysroot ARCH" ;;
esac
