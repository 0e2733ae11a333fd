#!/usr/bin/env bash
# The end-to-end runs: the suite's acceptance tests (tests marked `acceptance`: many pytest sessions with real
# launches each, 15 s or more on 2 cores: the gate over ten sessions under load, the remote devices over a real
# sshd and adb server, the lab history on PostgreSQL, the device-lab leg, goldens end to end, the emulated arm64
# device), the transport and harness overhead benches (small; they print ratios and targets), then the
# scene suite on the `local` device and on `local-gles2` (Skia on headless EGL GLES2, Mesa
# llvmpipe in CI; quick setting with one launch, against the committed goldens), then a selection of scenes on
# `local-arm64`, the reference runner on an emulated aarch64 userland (ci/arm64-device.sh, which ci/test.sh
# sets up) against the committed aarch64 goldens and the x86_64 reference set. CI (.ci/run) runs it after
# ci/test.sh. Fails when any test fails or when no test ran.
set -uo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"

started=$SECONDS
# --durations: where the tier's time goes is printed with it, the first thing to read when CI grows slow.
run python3 -m pytest tests -m "acceptance and not exclusive" -n 2 -p no:cacheprovider -q -rfEs --durations=12
# vm-arm64, the device that is its own machine (docs/vm-device.md; its image is cached by ci/test.sh): booted
# once here, the kit's aarch64 runner deployed onto it and its golden scenes checked, then left running for the
# exclusive phase, whose tests/vm cut its power and bring it back; powered off when this script ends.
started=$SECONDS
trap 'bash ci/vm-device.sh stop >/dev/null 2>&1 || true' EXIT
run bash ci/vm-device.sh start
run python3 -m pytest_zbench.cli deploy --device vm-arm64 build/native/arm64/zbench-gles2
run python3 -m pytest --zbench-device=vm-arm64 --zbench-goldens-only -p no:cacheprovider -q -rfEs \
    -k "(fill.alpha.x1 or image.downscale or clip.rect) and not adaptive and not largeimage"
echo "vm-arm64 booted, deployed and its goldens checked in $((SECONDS - started)) s"
# The runs whose verdict is a speed measured here, one at a time: beside another measuring test, a "quiet"
# session is loaded by a test it does not control (tests/conftest.py, marker `exclusive`).
run python3 -m pytest tests -m "acceptance and exclusive" -p no:cacheprovider -q -rfEs --durations=13
bash ci/vm-device.sh stop
echo "acceptance runs ran in $((SECONDS - started)) s"

# The overhead benches, small: each prints its ratios beside their targets (README, "Benchmarks"). A missed
# target is not a failure on a shared machine (benches, not timed tests); a bench that cannot run is.
started=$SECONDS
run python3 bench/bench_transport_overhead.py --scene -n 5
run python3 bench/bench_harness_overhead.py --runs 2
echo "overhead benches ran in $((SECONDS - started)) s"

results="${ZBENCH_CI_RESULTS:-$(mktemp -d)}"
echo "scene suite artifacts will be in $results"
# The scene suite is a smoke test here (quick setting with one launch per scene, a shared machine): every
# scene measured and its goldens compared; it records into a history of its own, so no earlier run on this
# machine becomes its baseline (and one launch against none is no verdict to wait for).
started=$SECONDS
for device in local local-gles2; do
    run python3 -m pytest --zbench-device="$device" --zbench-quick --zbench-runs=1 -n 2 -p no:cacheprovider -q -rfEs \
        --zbench-results="$results/$device" --junitxml="$results/$device/junit.xml" \
        --zbench-history="$results/history.sqlite"
done
echo "local and local-gles2 scenes ran in $((SECONDS - started)) s"
# On the emulated arm64 device, a selection that covers each way aarch64 raster output differs from x86_64
# (blend rounding, glyphs, anti-aliased rounded edges, texture filtering) and one that does not; 1 launch of
# 2 warmup and 10 measured frames: goldens need no more, and emulation is 5-40x slower. Not the adaptive
# variants: their search and ramps take minutes under emulation, and they draw what their fixed-load
# siblings draw (their aarch64 goldens are committed for a real arm64 device).
arm_scenes="(fill.alpha.x2 or fill.opaque.x2 or text.labels or rrect.grid or clip.rrect or texture.once.s256) and not adaptive"
started=$SECONDS
run python3 -m pytest --zbench-device=local-arm64 --zbench-quick --zbench-runs=1 --zbench-frames=10 \
    --zbench-warmup=2 -n 2 -p no:cacheprovider -q -rfEs -k "$arm_scenes" \
    --zbench-results="$results/local-arm64" --junitxml="$results/local-arm64/junit.xml" \
    --zbench-history="$results/history.sqlite"
echo "local-arm64 scenes ran in $((SECONDS - started)) s"
# The native runner (zbench-gles2, native/): every scene it draws on local-native against
# goldens/gles2/native-llvmpipe (selected by name: under CI a scene skipped for a feature the probe lacks would
# fail), and under qemu-user on the armhf and arm64 builds a selection of one scene per feature, against their
# goldens/gles2/native-softpipe-* and the software reference under each scene's cross-backend tolerance; 1
# launch of a few frames: goldens need no more, and emulation is slow.
native_drawn="(blending or clip or drawcalls or fill or geometry or image or texture or layer.direct) and not video"
# and one scene of each family it draws since it draws the corpus (text, shapes, blurs, layers, shader, video)
native_drawn="$native_drawn or text.paragraph or text.glyphs or textcjk.lines4 or textscroll.lines8 or rrect.large or border.grid.w4"
native_drawn="$native_drawn or gradients.radial or dirtyrect.share25 or shadow.blur2 or backdrop.blur8 or layer.nested"
native_drawn="$native_drawn or shader.l2.f16.dependent or texture.video.p360 or scroll.list.steady or idle.pulse"
started=$SECONDS
run python3 -m pytest --zbench-device=local-native --zbench-quick --zbench-runs=1 -n 2 -p no:cacheprovider -q -rfEs \
    -k "$native_drawn" \
    --zbench-results="$results/local-native" --junitxml="$results/local-native/junit.xml" \
    --zbench-history="$results/history.sqlite"
native_scenes="(clip.rect or geometry.tris.n2 or drawcalls.batch.one or image.downscale or fill.alpha.x1) and not adaptive"
# and text (FreeType and DejaVu from the sysroot), of the families it draws since it draws the corpus
native_scenes="($native_scenes or text.paragraph) and not adaptive"
for device in local-armhf-native local-arm64-native; do
    run python3 -m pytest --zbench-device="$device" --zbench-quick --zbench-runs=1 --zbench-frames=4 \
        --zbench-warmup=1 -n 2 -p no:cacheprovider -q -rfEs -k "$native_scenes" \
        --zbench-results="$results/$device" --junitxml="$results/$device/junit.xml" \
        --zbench-history="$results/history.sqlite"
done
echo "native devices' scenes ran in $((SECONDS - started)) s"
# The Cairo runner (runners/cairo/, built by ci/test.sh): the whole corpus on local-cairo against
# goldens/cairo/cairo-pixman-x86_64 and the software reference under each scene's cairo cross-backend tolerance,
# but the scenes needing an op it does not draw (shader, tap_target, etc2_image: docs/native-runner.md, "Cairo"),
# which under CI would fail as skipped.
started=$SECONDS
run python3 -m pytest --zbench-device=local-cairo --zbench-quick --zbench-runs=1 -n 2 -p no:cacheprovider -q -rfEs \
    -k "not (shader or input.tap or etc2)" \
    --zbench-results="$results/local-cairo" --junitxml="$results/local-cairo/junit.xml" \
    --zbench-history="$results/history.sqlite"
echo "local-cairo scenes ran in $((SECONDS - started)) s"
# The Qt 6 runner (runners/qt/, ci/test.sh builds it): the whole corpus on its raster and gles2 devices against
# goldens/raster/qt-raster and goldens/gles2/qt-llvmpipe, quick setting, one launch; selected by name, because
# under CI a scene skipped for a feature the probe lacks fails: video and tap_target (not drawn), mipmapped
# images, and on gles2 drawcalls.state.blends (multiply and screen) and geometry (mesh; docs/native-runner.md,
# "Porting an engine"). The etc2 scenes skip as not supported, in CI too.
qt_drawn="not (texture.video or input.tap or texture.every_frame.mip)"
started=$SECONDS
for device in local-qt-raster local-qt-gles2; do
    selection="$qt_drawn"
    [ "$device" = local-qt-gles2 ] && selection="$qt_drawn and not (drawcalls.state.blends or geometry)"
    run python3 -m pytest --zbench-device="$device" --zbench-quick --zbench-runs=1 -n 2 -p no:cacheprovider -q -rfEs \
        -k "$selection" \
        --zbench-results="$results/$device" --junitxml="$results/$device/junit.xml" \
        --zbench-history="$results/history.sqlite"
done
echo "Qt devices' scenes ran in $((SECONDS - started)) s"
echo "ci/acceptance.sh ran in $SECONDS s"
