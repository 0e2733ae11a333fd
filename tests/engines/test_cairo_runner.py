"""zbench-cairo, the Cairo runner on the C kit (runners/cairo/, docs/native-runner.md "Porting an engine"), end to
end: built here from runners/cairo/Makefile against Debian's Cairo and FreeType, checked by the conformance kit,
its scenes' golden tests run in pytest sessions, fed bad input, and a build whose rects are one level off in red
failing its golden test. The arm64 build runs under qemu-user when runners/cairo/arm64-runner.sh built it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from parts import build_lock, require

from pytest_zbench.conformance import ORDER, check_runner
from pytest_zbench.inventory import load_inventory
from pytest_zbench.protocol import parse_probe_output, read_result_json

REPO = Path(__file__).resolve().parents[2]
FEATURES = {"rect", "rrect", "border", "linear_gradient", "radial_gradient", "shadow", "backdrop_blur", "text",
            "image", "mesh", "rect_batch", "video", "path", "clip", "layer", "group", "repeat"}
NOT_DRAWN = {"shader", "etc2_image", "tap_target"}  # docs/native-runner.md, "Cairo": why
DISPLAY = {"width": 800, "height": 480, "refresh_hz": 60}
# One scene of each family the runner draws (the whole corpus runs in ci/acceptance.sh).
SELECTION = ("(fill.alpha.x2 or blending.premul or border.grid.w4 or clip.path or drawcalls.batch.one or "
             "geometry.tris.n2 or gradients.radial or idle.pulse or image.downscale or layer.nested or "
             "rrect.grid or scroll.list.steady or shadow.blur8 or text.labels or textscroll.lines16 or "
             "texture.video.p180 or backdrop.blur8 or dirtyrect.share25) and not adaptive")


def build(out: Path, *extra_cflags: str) -> Path:
    require(shutil.which("make") is not None and shutil.which("cc") is not None, "make and a C compiler")
    require(Path("/usr/include/cairo/cairo.h").is_file(), "Cairo's headers (libcairo2-dev)")
    args = [f"OUT={out}"] + ([f"EXTRA_CFLAGS={' '.join(extra_cflags)}"] if extra_cflags else [])
    with build_lock("cairo"):
        done = subprocess.run(["make", "-s", "-C", str(REPO / "runners" / "cairo"), *args],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr  # -Wall -Wextra stay clean
    return out / "zbench-cairo"


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("cairo"))


def inventory(tmp_path: Path, devices: dict[str, list[str]], device_class: str = "cairo-pixman-x86_64") -> Path:
    text = "devices:\n" + "".join(
        f"  {name}:\n    transport: local\n    backend: cairo\n    device_class: {device_class}\n"
        f"    runner: {json.dumps(argv)}\n    display: {json.dumps(DISPLAY)}\n    timeout_s: 900\n"
        for name, argv in devices.items())
    path = tmp_path / "devices.yaml"
    path.write_text(text)
    return path


def golden_session(device_yaml: Path, tmp_path: Path, select: str) -> subprocess.CompletedProcess[str]:
    """The golden tests of the selected scenes on `local-cairo` as this inventory defines it, one frame each."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--zbench-device=local-cairo",
         f"--zbench-devices={device_yaml}", "--zbench-goldens-only", "--zbench-baseline=none",
         f"--zbench-results={tmp_path / 'results'}", "-k", select],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def test_the_probe_lists_what_cairo_draws_no_gpu_timer_and_its_libraries(runner):
    done = subprocess.run([str(runner), "probe"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    probe = parse_probe_output(done.stdout)
    cairo = probe.backends["cairo"]
    assert cairo.features == FEATURES
    assert list(cairo.timer_sources) == ["none"]
    assert probe.machine is not None and probe.machine.libraries["cairo"].count(".") == 2
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert probe.build is not None and probe.build.id == head


def _job(tmp_path: Path, ops: list[dict[str, object]], features: list[str]) -> Path:
    job = {"protocol": 1, "backend": "cairo", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 1,
           "frames": 2, "capture": [1], "seed": 1, "complexity": None,
           "scene": {"id": "t", "params": {}, "width": 64, "height": 48, "features": features, "ops": ops}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def _run(runner: Path, job: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    return subprocess.run([str(runner), "run", str(job), str(out)], capture_output=True, text=True, timeout=120), out


@pytest.mark.parametrize(("op", "key"), [
    ({"op": "rrect", "x": 1, "y": 1, "w": 30, "h": 20, "radius": "big", "color": "#3366CC"}, "ops[0].radius"),
    ({"op": "linear_gradient", "x": 1, "y": 1, "w": 30, "h": 20, "x0": 0, "y0": 0, "x1": 9, "y1": 0,
      "stops": [[0, "#zz0000"]]}, "ops[0].stops"),
    ({"op": "text", "x": 1, "y": 20, "size": 12, "color": "#000000", "text": 5}, "ops[0].text"),
    ({"op": "layer", "opacity": 0.5, "ops": [{"op": "rect", "x": 1, "y": 1, "w": 2, "color": "#000000"}]},
     "ops[0].ops[0].h"),
])
def test_a_bad_op_is_refused_with_exit_2_naming_its_path_and_key(runner, tmp_path, op, key):
    done, out = _run(runner, _job(tmp_path, [op], [str(op["op"])]), tmp_path)
    assert done.returncode == 2, done.stderr
    assert key in done.stderr
    assert not list(out.iterdir())  # refused before anything was drawn


@pytest.mark.parametrize("missing", sorted(NOT_DRAWN))
def test_an_op_cairo_cannot_draw_is_feature_skipped_with_exit_3(runner, tmp_path, missing):
    done, out = _run(runner, _job(tmp_path, [{"op": "rect", "x": 1, "y": 1, "w": 2, "h": 2, "color": "#000000"}],
                                  ["rect", missing]), tmp_path)
    assert done.returncode == 3, done.stderr
    result = read_result_json(out / "result.json")
    assert [i.kind for i in result.issues] == ["feature_skipped"] and missing in result.issues[0].detail
    assert not list(out.glob("capture-*.png"))


@pytest.mark.acceptance
def test_check_runner_passes_every_check_of_its_features(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outdir.confined watches the current folder
    spec = load_inventory(inventory(tmp_path, {"dut": [str(runner)]})).get("dut")
    report = check_runner(spec, scenes_dir=REPO / "scenes", goldens_dir=REPO / "goldens", keep=tmp_path / "keep")
    got = {r.name: r.status for r in report.results}
    assert report.passed, "\n".join(report.lines())
    assert {n for n, s in got.items() if s == "pass"} >= {f"feature.{f}" for f in FEATURES} | {
        "capture.reference", "capture.determinism", "complexity", "signal.sigterm", "pacing.paced",
        "pacing.uncapped", "job.malformed", "job.unknown_feature"}
    assert {n for n, s in got.items() if s == "n/a"} == {f"feature.{f}" for f in NOT_DRAWN}
    assert set(got) == set(ORDER)


@pytest.mark.acceptance
def test_the_golden_tests_of_a_scene_of_each_family_pass_on_local_cairo(runner, tmp_path):
    """Against goldens/cairo/cairo-pixman-x86_64 (exact) and the software reference under each scene's
    cross-backend tolerance."""
    done = golden_session(inventory(tmp_path, {"local-cairo": [str(runner)]}), tmp_path, SELECTION)
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, tail + done.stderr[-2000:]
    assert re.search(r"^18 passed\b", tail, re.M) and "failed" not in tail and "skipped" not in tail, tail


@pytest.mark.acceptance
def test_a_rect_one_level_off_in_red_fails_its_golden_test(tmp_path):
    """A build whose rects are drawn one level redder (ZBENCH_CAIRO_RECT_RED_SHIFT) draws fill.opaque.x1's
    pixels one level off: its own golden (exact) fails, naming the scene; the unshifted build passes it."""
    shifted = build(tmp_path / "shifted", "-DZBENCH_CAIRO_RECT_RED_SHIFT=1")
    done = golden_session(inventory(tmp_path, {"local-cairo": [str(shifted)]}), tmp_path, "fill.opaque.x1")
    tail = "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 1, tail
    assert "1 failed" in tail and "fill.opaque.x1" in tail and "exact" in done.stdout, tail
    # the pixels differ by exactly one level: within every cross-backend bound, caught by the own golden alone
    assert "cairo/cairo-pixman-x86_64" in done.stdout, tail


@pytest.mark.acceptance
def test_the_arm64_build_passes_check_runner_under_qemu(tmp_path, monkeypatch):
    wrapper = REPO / "runners" / "cairo" / "arm64-runner.sh"
    require((REPO / "build" / "runners" / "cairo" / "arm64" / "zbench-cairo").is_file(),
            "the arm64 Cairo runner (runners/cairo/arm64-runner.sh build)")
    monkeypatch.chdir(tmp_path)
    spec = load_inventory(inventory(tmp_path, {"dut": [str(wrapper), "runner"]}, "cairo-pixman-arm64")).get("dut")
    report = check_runner(spec, scenes_dir=REPO / "scenes", goldens_dir=REPO / "goldens", keep=tmp_path / "keep")
    assert report.passed, "\n".join(report.lines())
    got = {r.name: r.status for r in report.results}
    assert all(got[f"feature.{f}"] == "pass" for f in FEATURES)
