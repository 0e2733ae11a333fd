#!/usr/bin/env bash
# Builds the Qt 6 runner (runners/qt/, docs/native-runner.md "Porting an engine"): zbench-qt-raster and
# zbench-qt-gles2 in build/runners/qt/host/. Qt's headers make each C++ file cost tens of seconds of CPU, so the
# objects are cached under ~/.cache/zbench/qt/, keyed by the sources they are built from, Qt's version and the
# compilers': a CI run whose engine sources did not change only recompiles the build identity (the commit) and
# links. Usage: bash ci/qt-runner.sh [make arguments, e.g. bench]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

key=$( { cat runners/qt/*.cpp runners/qt/*.h runners/qt/Makefile native/kit/kit.mk native/kit/*.c native/kit/*.h \
             native/gles2/noise.c native/gles2/noise.h
         pkg-config --modversion Qt6Gui Qt6OpenGL; g++ -dumpfullversion; gcc -dumpfullversion; } | sha256sum | cut -c1-16)
cache="${ZBENCH_CACHE:-$HOME/.cache/zbench}/qt/$key"
out=build/runners/qt/host
if [ -d "$cache/obj" ] && [ ! -d "$out/obj" ]; then
    mkdir -p "$out"
    cp -a "$cache/obj" "$out/"
    # Restored objects are newer than the sources they were built from: make keeps them.
    find "$out/obj" -name '*.o' -exec touch {} +
    echo "Qt runner objects restored from $cache"
fi
make -s -j2 -C runners/qt all "$@"
mkdir -p "$cache"
rm -rf "$cache/obj.tmp"
cp -a "$out/obj" "$cache/obj.tmp"
rm -rf "$cache/obj"
mv "$cache/obj.tmp" "$cache/obj"
