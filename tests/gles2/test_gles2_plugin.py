"""The gles2 backend through the plugin: run.json's gpu section, per-frame gpu_ms in the per-scene CSV, the
per-scene timer counts, the timer check, and a device that forces the finish bracket (a runner without a timer
query) saying so."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.host.verdicts.isolation import MIN_ELASTICITY

pytestmark = pytest.mark.usefixtures("require_egl")
REPO = Path(__file__).resolve().parents[2]


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


def gles2_display(name: str, width: int, height: int, env: dict[str, str] | None = None) -> str:
    return gles2_device(name, env).replace("{width: 64, height: 48, refresh_hz: 60}",
                                           f"{{width: {width}, height: {height}, refresh_hz: 60}}")


@pytest.mark.acceptance
def test_llvmpipes_timer_query_fails_coverage_and_its_gpu_ms_is_neither_shown_nor_gated(project, tmp_path):
    """llvmpipe's TIME_ELAPSED sees about one tile of the frame: it scales with the work (the timer check's
    ratio passes) but covers next to none of what a finish bracket sees of the light variant."""
    add_devices(project, gles2_display("gl-big", 640, 384))
    history = f"--zbench-history={tmp_path / 'h.sqlite'}"
    for _ in range(2):  # the second is gated: its gpu_ms metrics are named as not judged
        result = project.run("--zbench-device=gl-big", "-k", "mini.fill.x1", "--zbench-mode=uncapped", history)
        result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    check = document["gpu"]["timer_check"]
    assert check["source"] == "timer_query", "llvmpipe offers a timer query"
    coverage = check["coverage"]
    assert coverage["checked"] and coverage["valid"] is False and check["valid"] is False
    assert coverage["light"]["share"] < coverage["min_share"] == 0.25
    assert "timer_query coverage failed" in check["detail"] and "light:" in check["detail"]
    (scene,) = document["scenes"]
    assert scene["gpu_valid"] is False and all(run["gpu_valid"] is False for run in scene["per_run"])
    skipped = {n["metric"]: n["reason"] for n in scene["regression"]["not_judged"]}
    assert "failed the timer check" in skipped["gpu_ms.p50"] and "failed the timer check" in skipped["gpu_ms.p95"]
    result.stdout.fnmatch_lines(["mini.fill.x1*untrusted*",
                                 "*gpu_ms of gl-big not shown: its GPU time source failed the timer check*",
                                 "*coverage failed*"])


def test_a_forced_finish_bracket_is_trusted(project):
    add_devices(project, gles2_display("gl-finish-big", 640, 384, {"ZBENCH_GPU_TIMER": "finish_bracket"}))
    project.run("--zbench-device=gl-finish-big", "-k", "mini.fill.x1").assert_outcomes(passed=1)
    document = project.run_json()
    check = document["gpu"]["timer_check"]
    assert check["source"] == "finish_bracket" and "coverage" not in check
    assert check["valid"] is True, check["detail"]
    (scene,) = document["scenes"]
    assert scene["gpu_valid"] is True and scene["metrics"]["gpu_ms"]["p50"] > 0


def test_uncapped_frame_time_is_the_wall_clock_frame_interval(project):
    """On a GPU backend cpu_ms ends at the submit, and llvmpipe's timer sees one tile: the frame time of an
    uncapped launch is the interval between frame ends, which the frames' own start times must agree with."""
    add_devices(project, gles2_display("gl-wall", 640, 384))
    project.run("--zbench-device=gl-wall", "-k", "mini.fill.x2", "--zbench-mode=uncapped", "--zbench-frames=100",
                "--zbench-runs=2").assert_outcomes(passed=1)
    document = project.run_json()
    (scene,) = document["scenes"]
    rows = [r for r in csv.DictReader(open(project.results / scene["samples_file"])) if r["phase"] == "measure"]
    for run, launch in zip(scene["per_run"], sorted({r["launch"] for r in rows})):
        mine = [r for r in rows if r["launch"] == launch]
        starts = [int(r["t_start_ns"]) for r in mine]
        intervals = [float(r["present_interval_ms"]) for r in mine]
        assert run["frame_ms"]["mean"] == pytest.approx(float(np.mean(intervals)), rel=1e-3)  # rounded to 4 digits
        # Frame i's interval runs from frame i - 1's end to its own, less the runner's counting walk between
        # them, which the pacer leaves out; frame i + 1 starts after frame i ends. So the intervals of frames
        # 1 .. n - 2 span at most the starts from 0 to n - 1 (exactly; 1 us for the CSV's rounding), and at least
        # the starts from 1 to n - 2 less the walks left out. A preempted walk or row write moves that lower
        # bound by milliseconds on a busy host (2 % of 40 frames once in CI), so it holds with 10 % to spare over
        # 100 frames; an interval that held only the CPU part (a tenth of it here) fails it.
        inner_ms = float(np.sum(intervals[1:-1]))
        assert inner_ms <= (starts[-1] - starts[0]) / 1e6 + 1e-3 * len(starts)
        assert inner_ms >= 0.9 * (starts[-2] - starts[1]) / 1e6
        assert run["frame_ms"]["p50"] >= run["cpu_ms"]["p50"]  # the interval holds the CPU part and more
        assert run["fps"] == pytest.approx(1000 / run["frame_ms"]["mean"], rel=0.01)
    assert scene["metrics"]["fps"] == pytest.approx(float(np.median([run["fps"] for run in scene["per_run"]])))


@pytest.mark.acceptance
def test_on_llvmpipe_opaque_overdraw_does_not_scale_and_translucent_overdraw_does(project):
    """llvmpipe drops a tile's earlier commands when an opaque draw covers it, so a layer of fill.opaque costs
    its binning only, while each layer of fill.alpha is blended. The corpus' own fill family on the
    local-gles2 device (800x480, finish bracket: llvmpipe's timer query sees one tile and fails the timer check,
    test above). The opaque sweep's cost may still rise in rank order (its binning), so it is the elasticity
    that flags it: the layers account for a small share of the 8-layer case's cost (docs/scenes.md, Isolation;
    measured -0.2 to 0.4 against 0.9 to 1.1 translucent, bench/bench_isolation_rates.py)."""
    add_devices(project, gles2_display("gl-fill", 800, 480, {"ZBENCH_GPU_TIMER": "finish_bracket"}))
    project.write_scene("fill.yaml", (REPO / "scenes" / "fill.yaml").read_text(encoding="utf-8"))
    result = project.run("--zbench-device=gl-fill", "-k", "fill.opaque.x or fill.alpha.x", "--zbench-mode=uncapped",
                         "--zbench-frames=20", "--zbench-warmup=3", "--zbench-runs=4")
    result.assert_outcomes(passed=8)
    document = project.run_json()
    assert validate_run(document) == []
    verdicts = {i["family"]: i for i in document["isolation"]}
    opaque, alpha = verdicts["fill.opaque.x{layers}"], verdicts["fill.alpha.x{layers}"]
    assert opaque["metric"] == alpha["metric"] == "gpu_ms" and opaque["launches"] == alpha["launches"] == 16
    assert alpha["verdict"] == "scales", alpha
    assert opaque["verdict"] == "not_scaling" and opaque["elasticity"] < MIN_ELASTICITY, opaque
    output = result.stdout.str()
    # One line for the corpus analyses (their own lines are in the report, run.json and under -v)
    assert "analysis: 1 sweep(s) do not scale (fill.opaque.x{layers})" in output
    assert "isolation: fill.alpha" not in output
