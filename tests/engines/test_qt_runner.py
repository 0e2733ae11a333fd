"""The Qt 6 runner (runners/qt/, docs/native-runner.md "Porting an engine"): QPainter on the C runner kit,
built here from its Makefile (incremental: ci/test.sh builds it first), run headless on this machine (the raster
backend on a QImage, the gles2 one on Mesa through a real EGL context), checked by the conformance kit and by
golden tests of the corpus, and fed a variant one colour level off that its golden test must catch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from parts import build_lock, require

from pytest_zbench.conformance import check_runner
from pytest_zbench.inventory import load_inventory
from pytest_zbench.protocol import read_frames_csv, read_result_json

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "runners" / "qt" / "host"
BACKENDS = {"raster": "zbench-qt-raster", "gles2": "zbench-qt-gles2"}
DEVICE = {"raster": ("local-qt-raster", "qt-raster"), "gles2": ("local-qt-gles2", "qt-llvmpipe")}
DRAWN = {"rect", "rrect", "border", "linear_gradient", "radial_gradient", "shadow", "backdrop_blur", "text", "image",
         "mesh", "rect_batch", "shader", "path", "clip", "layer", "group", "repeat"}
# gles2 leaves mesh out: its target is multisampled and a mesh is drawn without anti-aliasing (runners/qt/gles2.cpp).
DRAWN_BY = {"raster": DRAWN, "gles2": DRAWN - {"mesh"}}
DISPLAY = {"width": 800, "height": 480, "refresh_hz": 60}
# The variant of the colour test: every rect's red one level off (runners/qt/qt_scene.cpp ZQT_RECT_RED_DELTA).
VARIANT = "red1"


def make(*args: str) -> None:
    require(shutil.which("make") is not None and shutil.which("g++") is not None, "make and g++")
    qt = subprocess.run(["pkg-config", "--exists", "Qt6Gui", "Qt6OpenGL"], capture_output=True)
    require(qt.returncode == 0, "Qt 6 (qt6-base-dev, libqt6opengl6-dev)")
    with build_lock("qt"):
        done = subprocess.run(["make", "-s", "-j2", "-C", str(REPO / "runners" / "qt"), *args],
                              capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr  # -Wall -Wextra stay clean, C and C++


@pytest.fixture(scope="module")
def qt_runners() -> dict[str, Path]:
    make()
    return {backend: OUT / name for backend, name in BACKENDS.items()}


def inventory(tmp_path: Path, backend: str, binary: Path) -> Path:
    name, device_class = DEVICE[backend]
    env = "    env: {ZBENCH_GPU_TIMER: finish_bracket}\n" if backend == "gles2" else ""
    path = tmp_path / "devices.yaml"
    path.write_text(f"devices:\n  {name}:\n    transport: local\n    backend: {backend}\n"
                    f"    device_class: {device_class}\n    runner: {json.dumps([str(binary)])}\n{env}"
                    f"    display: {json.dumps(DISPLAY)}\n    timeout_s: 600\n")
    return path


def job(tmp_path: Path, backend: str, ops: list[dict[str, object]], features: list[str], **changes: object) -> Path:
    document: dict[str, object] = {
        "protocol": 1, "backend": backend, "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 1,
        "frames": 3, "capture": [2], "seed": 1, "complexity": None,
        "scene": {"id": "t", "params": {}, "width": 64, "height": 48, "features": features, "ops": ops}}
    document.update(changes)
    path = tmp_path / "job" / "job.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def run(binary: Path, job_path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    done = subprocess.run([str(binary), "run", str(job_path), str(out)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ZBENCH_GPU_TIMER": "none"})
    return done, out


def pixels(png: Path) -> list[tuple[int, int, int, int]]:
    import numpy as np
    import skia

    image = np.asarray(skia.Image.open(str(png)).convert(alphaType=skia.kUnpremul_AlphaType,
                                                          colorType=skia.kRGBA_8888_ColorType))
    return [tuple(int(c) for c in p) for p in image.reshape(-1, 4)]


def test_the_devices_are_in_the_inventory_with_their_own_golden_sets():
    devices = load_inventory(REPO / "devices.yaml")
    for backend, (name, device_class) in DEVICE.items():
        device = devices.get(name)
        assert (device.backend, device.device_class) == (backend, device_class)
        assert list(device.runner) == [f"build/runners/qt/host/{BACKENDS[backend]}"]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_probe_lists_the_backend_its_features_and_the_engine_build(qt_runners, backend):
    done = subprocess.run([str(qt_runners[backend]), "probe"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    entry = probe["backends"][backend]
    assert set(entry["features"]) == DRAWN_BY[backend]
    assert probe["runner"]["name"] == BACKENDS[backend]
    assert probe["machine"]["libraries"]["qt"].startswith("6.")
    assert probe["toolchain"]["compiler"].startswith("g++ ") and "-std=c++17" in probe["toolchain"]["flags"]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert probe["build"]["id"] == head
    if backend == "gles2":
        assert entry["gl_renderer"] and "finish_bracket" in entry["timer_sources"]
    else:
        assert entry["timer_sources"] == ["none"]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_run_draws_the_rect_exactly_and_writes_every_frame(qt_runners, backend, tmp_path):
    ops = [{"op": "rect", "x": 8, "y": 8, "w": 32, "h": 16, "color": "#3366CC"},
           {"op": "text", "x": 4, "y": 44, "size": 12, "color": "#000000", "text": "Qt {frame}"}]
    done, out = run(qt_runners[backend], job(tmp_path, backend, ops, ["rect", "text"]), tmp_path)
    assert done.returncode == 0, done.stderr
    frames = read_frames_csv(out / "frames.csv")
    assert [r["frame"] for r in frames.rows] == [0, 1, 2, 3] and not frames.issues  # 1 warmup + 3
    assert all(r["draw_calls"] == 2 for r in frames.rows)
    result = read_result_json(out / "result.json")
    assert result.issues == []  # DejaVu Sans found: no font_fallback
    image = pixels(out / "capture-2.png")
    assert image[12 * 64 + 20] == (0x33, 0x66, 0xCC, 255)  # inside the rect, exact
    assert image[2 * 64 + 2] == (255, 255, 255, 255)  # outside: the white clear
    assert any(p[0] < 128 for p in image[32 * 64:])  # the text's glyphs below it


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_an_op_qt_does_not_draw_is_skipped_with_exit_3_naming_it(qt_runners, backend, tmp_path):
    ops = [{"op": "video", "x": 0, "y": 0, "w": 32, "h": 32, "tex_w": 16, "tex_h": 16, "seed": 1}]
    done, out = run(qt_runners[backend], job(tmp_path, backend, ops, ["video"]), tmp_path)
    assert done.returncode == 3, done.stderr
    result = read_result_json(out / "result.json")
    assert [(i.kind, "video" in i.detail) for i in result.issues] == [("feature_skipped", True)]
    assert not (out / "frames.csv").exists()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_bad_op_is_refused_with_exit_2_naming_its_path_and_key(qt_runners, backend, tmp_path):
    ops = [{"op": "repeat", "count": 2, "dx": 1, "dy": 0,
            "ops": [{"op": "rrect", "x": 1, "y": 1, "w": 8, "h": 8, "radius": 2, "color": "blue"}]}]
    done, out = run(qt_runners[backend], job(tmp_path, backend, ops, ["repeat", "rrect"]), tmp_path)
    assert done.returncode == 2, done.stderr
    assert "ops[0].ops[0].color" in done.stderr
    assert not (out / "frames.csv").exists()


@pytest.mark.acceptance
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_check_runner_passes_every_check_of_its_features(qt_runners, backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outdir.confined watches the current folder
    name = DEVICE[backend][0]
    spec = load_inventory(inventory(tmp_path, backend, qt_runners[backend])).get(name)
    report = check_runner(spec, scenes_dir=REPO / "scenes", goldens_dir=REPO / "goldens", keep=tmp_path / "keep")
    assert report.passed, "\n".join(report.lines())
    got = {r.name: r.status for r in report.results}
    assert {n.split(".", 1)[1] for n, s in got.items() if n.startswith("feature.") and s == "pass"} == DRAWN_BY[backend]
    assert got["capture.reference"] == "pass" and got["complexity"] == "pass"


def golden_session(tmp_path: Path, backend: str, binary: Path, scene: str) -> subprocess.CompletedProcess[str]:
    name = DEVICE[backend][0]
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--zbench-device={name}",
         f"--zbench-devices={inventory(tmp_path, backend, binary)}", "--zbench-goldens-only",
         "--zbench-baseline=none", f"--zbench-results={tmp_path / 'results'}", "-k", f"golden[{scene}-{name}]"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.acceptance
def test_a_rect_colour_one_level_off_fails_its_golden_test(qt_runners, tmp_path):
    """The raster goldens are exact (golden/tolerance.py DEFAULTS): the committed runner passes fill.opaque.x1's
    golden test, a build whose rects' red is one level off fails it. (gles2 goldens allow a GPU's 2 levels.)"""
    backend = "raster"
    make(f"VARIANT={VARIANT}", "EXTRA_CXXFLAGS=-DZQT_RECT_RED_DELTA=1")
    variant = OUT / f"{BACKENDS[backend]}-{VARIANT}"
    passed = golden_session(tmp_path / "same", backend, qt_runners[backend], "fill.opaque.x1")
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout[-3000:] + passed.stderr[-2000:]
    failed = golden_session(tmp_path / "off", backend, variant, "fill.opaque.x1")
    assert failed.returncode == 1 and "1 failed" in failed.stdout, failed.stdout[-3000:]
    assert "exact" in failed.stdout, failed.stdout[-3000:]
