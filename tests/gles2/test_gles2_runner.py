"""The gles2 backend through the runner's command line, as the host uses it: probe, run, forced time sources."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import skia
from gles2_support import RECT, make_job, probe_runner, run_runner

from pytest_zbench.protocol import GPU_SOURCES, read_frames_csv, read_result_json

pytestmark = pytest.mark.usefixtures("require_egl")


@pytest.fixture(scope="module")
def probe():
    code, payload, stderr = probe_runner()
    assert code == 0, stderr
    return payload


def test_probe_lists_gles2_on_llvmpipe_with_its_capabilities(probe):
    assert "software" in probe["backends"]
    gles2 = probe["backends"]["gles2"]
    assert "llvmpipe" in gles2["gl_renderer"]
    assert gles2["gl_version"].startswith("OpenGL ES") and "GLSL ES" in gles2["glsl_version"]
    assert gles2["max_texture_size"] >= 2048
    assert "rect" in gles2["features"]
    names = gles2["gl_extensions"]
    assert names == sorted(names) and len(names) > 10
    assert gles2["gl_extensions_hash"] == "sha256:" + hashlib.sha256(" ".join(names).encode()).hexdigest()
    assert set(gles2["timer_sources"]) <= set(GPU_SOURCES)
    if "GL_EXT_disjoint_timer_query" in names:
        assert gles2["timer_query_extension"] == "GL_EXT_disjoint_timer_query"
        assert gles2["timer_query_bits"] >= 30  # the extension guarantees at least 30 bits
        assert gles2["timer_sources"][0] == gles2["timer_source"] == "timer_query"
    else:
        assert "timer_query" not in gles2["timer_sources"]


def test_probe_without_egl_still_answers_with_software_only():
    code, payload, stderr = probe_runner(ZBENCH_EGL_LIBRARY="/nonexistent/libEGL.so.1")
    assert code == 0
    assert list(payload["backends"]) == ["software"]
    assert "gles2" in stderr and "no EGL library could be loaded" in stderr


def test_a_forced_source_is_the_only_one_the_probe_offers():
    code, payload, _ = probe_runner(ZBENCH_GPU_TIMER="finish_bracket")
    assert code == 0
    gles2 = payload["backends"]["gles2"]
    assert gles2["timer_sources"] == ["finish_bracket"] and gles2["timer_forced"] == "finish_bracket"
    # What the context could do is still reported truthfully.
    assert "timer_query_extension" in gles2


def test_a_rect_scene_renders_with_gpu_time_from_one_source(tmp_path, probe):
    launch = run_runner(tmp_path, make_job([RECT], warmup=2, frames=8, capture=(3,)))
    assert launch.returncode == 0, launch.stderr
    result = launch.result()
    expected = probe["backends"]["gles2"]["timer_source"]
    assert result["backend"] == "gles2" and result["timer_source"] == expected
    gpu = result["gpu"]
    assert "llvmpipe" in gpu["gl_renderer"] and gpu["gl_extensions_hash"].startswith("sha256:")
    table = read_frames_csv(launch.outdir / "frames.csv")
    assert not table.issues
    assert len(table.rows) == 10
    assert {row["gpu_source"] for row in table.rows} == {expected}  # never two sources in one run
    assert all(row["gl_error"] is False for row in table.rows)
    invalid_frames = {i["frame"] for i in result["issues"] if i["kind"] == "timer_invalid"}
    for row in table.rows:
        # Every frame has a GPU time, or says why not: a disjoint flag or a timer_invalid issue.
        assert row["gpu_ms"] is not None or row["disjoint"] or row["frame"] in invalid_frames, row
        assert row["gpu_ms"] is None or 0 < row["gpu_ms"] < 1000
    if expected == "timer_query":
        assert all(row["disjoint"] is not None for row in table.rows)
    assert gpu["timer_stats"]["timer_invalid"] == len(invalid_frames)


def test_capture_matches_the_software_backend(tmp_path):
    ops = [{"op": "rect", "x": 0, "y": 0, "w": 16, "h": 24, "color": "#3366CC"}, RECT]
    captures = {}
    for backend in ("gles2", "software"):
        work = tmp_path / backend
        work.mkdir()
        launch = run_runner(work, make_job(ops, backend=backend, warmup=0, frames=1, capture=(0,)))
        assert launch.returncode == 0, launch.stderr
        image = skia.Image.open(str(launch.outdir / "capture-0.png"))
        captures[backend] = image.toarray(colorType=skia.kRGBA_8888_ColorType, alphaType=skia.kUnpremul_AlphaType)
    gpu, cpu = captures["gles2"].astype(int), captures["software"].astype(int)
    assert gpu.shape == cpu.shape == (24, 32, 4)
    assert np.abs(gpu - cpu).max() <= 2
    assert tuple(captures["gles2"][12, 8]) == (0x33, 0x66, 0xCC, 0xFF)


@pytest.mark.parametrize("source", ["finish_bracket", "readback", "none"])
def test_a_forced_source_is_used_for_every_frame_and_said_in_result_json(tmp_path, source):
    launch = run_runner(tmp_path, make_job([RECT], warmup=1, frames=4), ZBENCH_GPU_TIMER=source)
    assert launch.returncode == 0, launch.stderr
    result = read_result_json(launch.outdir / "result.json")
    assert result.timer_source == source
    assert result.gpu["timer_forced"] == source and result.gpu["timer_sources"] == [source]
    table = read_frames_csv(launch.outdir / "frames.csv")
    assert {row["gpu_source"] for row in table.rows} == {source}
    if source == "none":
        assert all(row["gpu_ms"] is None for row in table.rows)
    else:
        # A bracket from the frame's start to its completion contains the CPU part of the frame.
        assert all(row["gpu_ms"] is not None and row["gpu_ms"] >= row["cpu_ms"] for row in table.rows)
        assert all(row["disjoint"] is None for row in table.rows)  # these sources cannot tell


def test_an_unknown_forced_source_fails_the_run_and_says_why(tmp_path):
    launch = run_runner(tmp_path, make_job([RECT], warmup=0, frames=1), ZBENCH_GPU_TIMER="vsync")
    assert launch.returncode != 0
    assert "ZBENCH_GPU_TIMER='vsync' is not one of" in launch.stderr
