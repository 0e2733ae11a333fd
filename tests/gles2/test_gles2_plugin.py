"""The gles2 backend through the plugin: run.json's gpu section, per-frame gpu_ms in the per-scene CSV, the
per-scene timer counts, the timer check, and a device that forces the finish bracket (a runner without a timer
query) saying so."""

from __future__ import annotations

import csv
import json

import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.usefixtures("require_egl")


def gles2_device(name: str, env: dict[str, str] | None = None) -> str:
    return (f"  {name}:\n    transport: local\n    backend: gles2\n    device_class: llvmpipe\n"
            f"    runner: [python, -m, pytest_zbench.runner]\n    display: {{width: 64, height: 48, refresh_hz: 60}}\n"
            f"    env: {json.dumps(env or {})}\n")


def add_devices(project, *entries: str) -> None:
    path = project.root / "devices.yaml"
    path.write_text(path.read_text() + "".join(entries))


def test_gles2_device_reports_renderer_timer_source_and_per_frame_gpu_ms(project):
    add_devices(project, gles2_device("gl"))
    result = project.run("--zbench-device=gl", "-k", "mini.fill")
    result.assert_outcomes(passed=2)
    document = project.run_json()
    assert validate_run(document) == []
    gpu = document["gpu"]
    assert gpu["backend"] == "gles2" and gpu["gl_renderer"]
    assert gpu["gl_extensions_hash"].startswith("sha256:")
    assert gpu["timer_source"] in ("timer_query", "finish_bracket")
    assert gpu["timer_check"]["source"] == gpu["timer_source"]
    # llvmpipe's timer sees the heavy variant's 8x work (a 1.5x bar): a failing check here is a product fault.
    assert gpu["timer_check"]["valid"] is True, gpu["timer_check"]
    assert "timer check passed" in gpu["timer_check"]["detail"]
    for scene in document["scenes"]:
        counts = scene["gpu_timer"]
        assert counts["source"] == gpu["timer_source"] == scene["timer_source"]
        assert counts["frames_with_gpu"] + counts["invalid"] + counts["disjoint"] >= 2 * 6
        rows = list(csv.DictReader(open(project.results / scene["samples_file"])))
        assert {r["gpu_source"] for r in rows} == {gpu["timer_source"]}
        assert sum(1 for r in rows if r["gpu_ms"]) == len(rows) - counts["invalid"] - counts["disjoint"]
        assert scene["gpu_valid"] is gpu["timer_check"]["valid"]


def test_a_device_forcing_the_finish_bracket_runs_and_says_so(project):
    add_devices(project, gles2_device("gl-finish", {"ZBENCH_GPU_TIMER": "finish_bracket"}))
    result = project.run("--zbench-device=gl-finish", "-k", "mini.fill.x2")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    gpu = document["gpu"]
    assert gpu["timer_source"] == "finish_bracket" and gpu["timer_sources"] == ["finish_bracket"]
    assert gpu["timer_forced"] == "finish_bracket"
    assert gpu["timer_check"]["source"] == "finish_bracket"
    (scene,) = document["scenes"]
    assert scene["timer_source"] == scene["gpu_source"] == "finish_bracket"
    assert scene["gpu_timer"]["source"] == "finish_bracket" and scene["gpu_timer"]["frames_with_gpu"] == 12
    assert scene["metrics"]["gpu_ms"]["p50"] > 0
