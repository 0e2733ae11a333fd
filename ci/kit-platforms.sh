#!/usr/bin/env bash
# The runner kit (native/kit/) built for the platforms this machine cannot run (docs/native-runner.md,
# "Platforms"), warnings as errors, each through native/Makefile and kit.mk as a runner's own build would:
#   x86_64-macos, aarch64-macos   the kit and the CPU-only null engine (bench/native_kit_null_engine.c),
#                                 compiled and linked into a Mach-O executable with `zig cc` (PyPI's ziglang,
#                                 in the [test] extra), which carries macOS's libc headers and links against
#                                 its libSystem stubs; the executable's header is checked, nothing is run
#   aarch64-ios                   the kit compiled, not linked (an app links it): zig has no iOS SDK, so the
#                                 Darwin libc headers it carries are used with the iOS target, whose
#                                 availability attributes then refuse what iOS lacks
#   android                       the kit with platform_android.c compiled by this machine's gcc against
#                                 glibc's headers (the NDK is not installed here: it is libc-only C99 code)
# Outputs go to build/kit-platforms/<target>/. Zig's compile cache is kept in ~/.cache/zbench/zig (zig keys
# it by its inputs). Takes well under a minute once zig's cache is warm.
set -euo pipefail
cd "$(dirname "$0")/.."

python=python3
[ -x .venv/bin/python ] && python="$PWD/.venv/bin/python"
"$python" -c "import ziglang" 2>/dev/null \
    || { echo "kit-platforms: PyPI's ziglang is not installed (pip install -e '.[test]', or ci/setup.sh)" >&2; exit 1; }
zig="$python -m ziglang"
export ZIG_GLOBAL_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/zbench/zig"
darwin_headers="$("$python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "lib", "libc", "include", "any-darwin-any"))')"
out=build/kit-platforms
# CFLAGS from the environment: native/Makefile adds its own (-std=c99 -Wall -Wextra ...) after them.
export CFLAGS="-O2 -g -Werror"

macho() {  # $1 file, $2 the Mach-O CPU type's 4 bytes as od prints them: a 64-bit little-endian Mach-O of it
    local head
    head="$(od -An -tx4 -N8 "$1" | tr -s ' ')"
    [ "$head" = " feedfacf $2" ] || { echo "kit-platforms: $1 is not the expected Mach-O ($head)" >&2; exit 1; }
}

for target in x86_64-macos aarch64-macos; do
    make -s -C native bench OUT="$PWD/$out/$target" CC="$zig cc -target $target"
done
macho "$out/x86_64-macos/zbench-kit-null" 01000007
macho "$out/aarch64-macos/zbench-kit-null" 0100000c
make -s -C native kit-objects OUT="$PWD/$out/aarch64-ios" CC="$zig cc -target aarch64-ios -isystem $darwin_headers"
for object in "$out"/aarch64-ios/kit/*.o; do macho "$object" 0100000c; done
make -s -C native kit-objects OUT="$PWD/$out/android" KIT_PLATFORM=android
echo "kit-platforms: x86_64-macos and aarch64-macos linked, aarch64-ios and android compiled (in $out/)"
