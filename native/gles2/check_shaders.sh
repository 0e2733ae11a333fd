#!/usr/bin/env bash
# Validates every shader zbench-gles2 compiles as GLSL ES 1.00 with glslangValidator (Debian glslang-tools):
# the build's own shader_dump writes them (each kind clipped and not, at the device's precision and at
# mediump), so what is checked is the text the runner hands the driver. Exits 1 naming each shader that fails.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
command -v glslangValidator >/dev/null || { echo "check_shaders: glslangValidator is missing (apt-get install glslang-tools)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
make -s -C "$here" shaders OUT="$out/bin"
mkdir "$out/glsl"
"$out/bin/zbench-gles2-shaders" "$out/glsl"
failed=0
checked=0
for shader in "$out"/glsl/*; do
    checked=$((checked + 1))
    # The file's `#version 100` line makes glslang check it as GLSL ES 1.00; the extension names the stage.
    if ! log="$(glslangValidator "$shader" 2>&1)"; then
        echo "check_shaders: $(basename "$shader") is not valid GLSL ES 1.00:" >&2
        echo "$log" >&2
        failed=1
    fi
    if [[ "$shader" == *.frag ]] && grep -q 'highp' "$shader" && ! grep -q 'GL_FRAGMENT_PRECISION_HIGH' "$shader"; then
        echo "check_shaders: $(basename "$shader") uses highp without the GL_FRAGMENT_PRECISION_HIGH #ifdef" >&2
        failed=1
    fi
done
[ "$checked" -gt 0 ] || { echo "check_shaders: no shaders were written" >&2; exit 1; }
echo "check_shaders: $checked shaders validated as GLSL ES 1.00"
exit "$failed"
