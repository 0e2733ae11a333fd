"""The runner as the host sees it: a subprocess speaking runner protocol v1 (docs/runner-protocol.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_zbench.protocol import (
    capture_name,
    parse_probe_output,
    parse_progress,
    read_frames_csv,
    read_result_json,
)

REPO = Path(__file__).resolve().parents[2]

# One op of every drawing kind plus every container, with animation, so the frame index shows in the pixels.
ALL_OPS = [
    {"op": "rect", "x": 0, "y": 0, "w": 12, "h": 12, "color": "#FF0000"},
    {"op": "rrect", "x": 14, "y": 0, "w": 12, "h": 12, "radius": 3, "color": "#00FF0080"},
    {"op": "border", "x": 28, "y": 0, "w": 12, "h": 12, "radius": 2, "width": 2, "color": "#0000FF"},
    {"op": "linear_gradient", "x": 0, "y": 14, "w": 12, "h": 8, "x0": 0, "y0": 0, "x1": 12, "y1": 0,
     "stops": [[0, "#000000"], [1, "#FF8000"]]},
    {"op": "radial_gradient", "x": 14, "y": 14, "w": 8, "h": 8, "cx": 18, "cy": 18, "r": 4,
     "stops": [[0, "#FF00FF"], [1, "#00FFFF"]]},
    {"op": "shadow", "x": 26, "y": 16, "w": 6, "h": 6, "radius": 1, "blur": 4, "dx": 1, "dy": 1, "color": "#00000080"},
    {"op": "backdrop_blur", "x": 0, "y": 8, "w": 16, "h": 8, "blur": 3},
    {"op": "text", "x": 34, "y": 30, "size": 8, "color": "#000000", "text": "{frame}"},
    {"op": "image", "x": 40, "y": 14, "w": 8, "h": 8, "tex_w": 8, "tex_h": 8, "pattern": "noise", "seed": 7,
     "upload": "once", "filter": "linear"},
    {"op": "image", "x": 40, "y": 0, "w": 8, "h": 6, "tex_w": 16, "tex_h": 16, "pattern": "checker", "seed": 0,
     "upload": "decode", "filter": "mipmap", "alpha": "unpremul"},
    {"op": "mesh", "x": 28, "y": 24, "w": 8, "h": 8, "columns": 2, "rows": 2, "color": "#00FF00", "alt_color": "#0000FF"},
    {"op": "rect_batch", "count": 4, "columns": 2, "dx": 3, "dy": 3, "x": 36, "y": 24, "w": 2, "h": 2,
     "color": "#FF00FF"},
    {"op": "shader", "x": 42, "y": 22, "w": 6, "h": 4, "loops": 3, "fetches": 2},
    {"op": "video", "x": 42, "y": 26, "w": 6, "h": 6, "tex_w": 6, "tex_h": 6, "seed": 1},
    {"op": "rect", "x": 20, "y": 20, "w": 6, "h": 6, "color": "#FF000080", "blend": "multiply"},
    {"op": "clip", "shape": {"kind": "rect", "x": 0, "y": 24, "w": 10, "h": 8},
     "ops": [{"op": "path", "points": [[0, 24], [16, 24], [0, 32]], "closed": True, "color": "#804000"}]},
    {"op": "layer", "opacity": 0.5, "ops": [
        {"op": "group", "dx": {"anim": "linear", "from": 0, "to": 10, "period": 10}, "dy": 0, "ops": [
            {"op": "repeat", "count": 2, "dx": 3, "dy": 0, "ops": [
                {"op": "rect", "x": 12, "y": 26, "w": 2, "h": 2, "color": "#000000"}]}]}]},
]
W, H = 48, 32


@pytest.fixture(scope="module")
def paced(launch, make_job):
    """Two launches of the same paced job: determinism is checked between them."""
    job = make_job(ALL_OPS, width=W, height=H, mode="paced", refresh_hz=120.0, warmup=2, frames=6,
                   capture=(0, 5, 1000))
    return job, launch(job), launch(job)


def _doc_ops() -> set[str]:
    text = (REPO / "docs" / "display-list.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([a-z][a-z0-9_]*)` \|", text, flags=re.MULTILINE))


def test_probe_lists_software_with_every_documented_op(start_runner):
    proc = start_runner("probe")
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    probe = parse_probe_output(stdout)
    assert probe.runner_name == "zbench-reference" and probe.runner_version
    software = probe.backends["software"]
    assert len(_doc_ops()) == 20
    assert software.features == _doc_ops()
    assert software.timer_sources == ("none",)
    assert software.info["gl_renderer"] == "Skia raster" and software.info["max_texture_size"] == 0


def test_paced_run_writes_every_frame_with_phases(paced):
    job, first, _ = paced
    assert first.returncode == 0, first.stderr
    table = read_frames_csv(first.outdir / "frames.csv")
    assert table.issues == []
    assert [r["frame"] for r in table.rows] == list(range(8))
    assert table.count("warmup") == 2 and table.count("measure") == 6
    assert [r["phase"] for r in table.rows[:3]] == ["warmup", "warmup", "measure"]
    for row in table.rows:
        assert row["gpu_source"] == "none" and row["gpu_ms"] is None
        assert row["cpu_ms"] > 0
        assert row["draw_calls"] == 18  # 15 top-level drawing ops + the clipped path + 2 repeated rects
        # upload=once in frame 0; the decoded image and the video's three planes (6x6, 3x3, 3x3) in every frame
        assert row["texture_upload_bytes"] == (8 * 8 * 4 if row["frame"] == 0 else 0) + 16 * 16 * 4 + 36 + 9 + 9


def test_paced_intervals_are_whole_vsync_periods(paced):
    _, first, _ = paced
    table = read_frames_csv(first.outdir / "frames.csv")
    period = 1000.0 / 120.0
    starts = [r["t_start_ns"] for r in table.rows]
    for row in table.rows:
        periods = row["present_interval_ms"] / period
        assert periods >= 1 - 1e-6 and abs(periods - round(periods)) < 1e-4, row
    # Each frame waits for the vsync where the previous one presented, on the ideal schedule from frame 0.
    presented = 0.0
    for row, start in zip(table.rows[:-1], starts[1:]):
        presented += row["present_interval_ms"]
        assert (start - starts[0]) / 1e6 >= presented - 0.01


def test_result_json(paced):
    _, first, _ = paced
    result = read_result_json(first.outdir / "result.json")
    assert result.issues == []
    assert (result.backend, result.timer_source, result.present_source) == ("software", "none", "simulated_vsync")
    assert result.gpu["gl_renderer"] == "Skia raster"
    assert result.extra["frames_rendered"] == 8
    # Eight frames at 120 Hz take at least 8 periods of wall time.
    assert result.extra["wall_ms"] >= 8 * 1000 / 120


def test_progress_lines(paced):
    _, first, _ = paced
    progress = [p for p in map(parse_progress, first.stdout.splitlines()) if p is not None]
    assert progress and progress[-1] == (8, 8)


def test_captures_are_rgba_of_scene_size_and_byte_identical_across_launches(paced):
    job, first, second = paced
    for frame in (0, 5, 1000):  # 1000 is past the run's end: captures render any frame index
        path = first.outdir / capture_name(frame)
        with Image.open(path) as image:
            assert image.mode == "RGBA" and image.size == (W, H)
        assert path.read_bytes() == (second.outdir / capture_name(frame)).read_bytes()


def test_animated_scene_capture_differs_between_frames(paced):
    _, first, _ = paced
    f0 = np.asarray(Image.open(first.outdir / capture_name(0)))
    f5 = np.asarray(Image.open(first.outdir / capture_name(5)))
    assert (f0 != f5).any()
    assert (f0[..., 3] == 255).all()  # cleared to opaque white, so every pixel is opaque


def test_uncapped_complexity_and_every_frame_uploads(launch, make_job):
    ops = [
        {"op": "repeat", "count": "complexity", "dx": 2, "dy": 2, "columns": 4,
         "ops": [{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": "#000000"}]},
        {"op": "image", "x": 0, "y": 0, "w": 8, "h": 8, "tex_w": 4, "tex_h": 2, "pattern": "checker", "seed": 0,
         "upload": "every_frame", "filter": "nearest"},
    ]
    complexity = (1.0, 3.0, 10.0, 2.4)
    run = launch(make_job(ops, warmup=1, frames=3, complexity=complexity))
    assert run.returncode == 0, run.stderr
    table = read_frames_csv(run.outdir / "frames.csv")
    assert table.issues == []
    assert [r["complexity"] for r in table.rows] == list(complexity)
    assert [r["draw_calls"] for r in table.rows] == [1 + 1, 3 + 1, 10 + 1, 2 + 1]
    assert [r["texture_upload_bytes"] for r in table.rows] == [4 * 2 * 4] * 4
    assert all(r["present_interval_ms"] > 0 for r in table.rows)
    result = read_result_json(run.outdir / "result.json")
    assert result.present_source == "frame_delta"
    # The reference runner's counters (docs/runner-protocol.md): the stages add up to cpu_ms (within 5 %),
    # and the counting walk follows the complexity: one 1x1 pixel and a save/translate/restore per repetition,
    # plus the 8x8 image whose every_frame upload copies its 4x2 RGBA pixels.
    for row in table.rows:
        stages = row["cpu_record_ms"] + row["cpu_flush_ms"] + row["cpu_submit_ms"]
        assert stages == pytest.approx(row["cpu_ms"], rel=0.05)
    repetitions = [1, 3, 10, 2]
    assert [r["pixels_drawn"] for r in table.rows] == [n + 64 for n in repetitions]
    assert [r["state_changes"] for r in table.rows] == [3 * n for n in repetitions]
    assert [r["rt_switches"] for r in table.rows] == [0] * 4
    assert [r["alloc_bytes"] for r in table.rows] == [4 * 2 * 4] * 4
    assert all(r["minor_faults"] >= 0 for r in table.rows)
    # Cold start counts from the process's start, on the frames' clock (a wrong clock would be off by hours):
    # before the first frame, by at least the runner's own import time.
    start_ns = result.extra["process_start_ns"]
    assert result.extra["process_start_source"] == "proc_stat"
    assert 0.05e9 < table.rows[0]["t_start_ns"] - start_ns < 60e9


def test_a_mesh_whose_rows_are_the_complexity_draws_each_frames_count_and_captures_at_its_own(launch, make_job):
    mesh = {"op": "mesh", "x": 0, "y": 0, "w": 16, "h": 16, "columns": 4, "rows": "complexity", "color": "#000000",
            "alt_color": "#3366CC"}
    complexity = (2.0, 8.0, 2.0, 5.0)
    run = launch(make_job([mesh], warmup=1, frames=3, complexity=complexity, capture=(0, 1, 2)))
    assert run.returncode == 0, run.stderr
    table = read_frames_csv(run.outdir / "frames.csv")
    assert [r["complexity"] for r in table.rows] == list(complexity)
    assert [r["draw_calls"] for r in table.rows] == [1] * 4  # one vertex draw whatever its triangle count
    captures = [np.asarray(Image.open(run.outdir / capture_name(f))) for f in (0, 1, 2)]
    assert (captures[0] == captures[2]).all() and (captures[0] != captures[1]).any()  # the same count, the same image
    job = make_job([{**mesh, "rows": 4, "columns": "complexity"}], complexity=complexity).to_dict()
    refused = launch(json.dumps(job))
    assert refused.returncode == 2 and "key 'columns': 'complexity' is taken only by" in refused.stderr


@pytest.mark.parametrize("ops, expected", [
    ([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": "#000000"},
      {"op": "group", "dx": 0, "dy": 0, "ops": [{"op": "rect", "x": 0, "y": 0, "h": 1, "color": "#000000"}]}],
     "ops[1].ops[0] key 'w'"),
    ([{"op": "sparkle", "x": 0}], "ops[0]: unknown op 'sparkle'"),
    ([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": "red"}], "ops[0] key 'color'"),
])
def test_bad_display_list_exits_2_naming_the_op(launch, make_job, ops, expected):
    run = launch(make_job(ops, features=["rect"]))
    assert run.returncode == 2
    assert expected in run.stderr


def test_bad_job_file_exits_2(launch, make_job):
    run = launch('{"protocol": 1, "backend": "software"}')
    assert run.returncode == 2
    assert "missing key" in run.stderr and not (run.outdir / "result.json").exists()
    job = make_job([]).to_dict()
    job["complexity"] = [1, None, 2, 3]
    run = launch(json.dumps(job))
    assert run.returncode == 2 and "complexity holds None" in run.stderr


def test_feature_the_backend_lacks_is_skipped_with_exit_3(launch, make_job):
    run = launch(make_job([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": "#000000"}],
                          features=["rect", "hologram"]))
    assert run.returncode == 3
    issues = read_result_json(run.outdir / "result.json").issues
    assert [i.kind for i in issues] == ["feature_skipped"] and "hologram" in issues[0].detail


def test_sigterm_mid_run_keeps_frames_and_reports_partial(start_runner, make_job, tmp_path):
    job = make_job([{"op": "rect", "x": 0, "y": 0, "w": 8, "h": 8, "color": "#000000"}], mode="paced",
                   refresh_hz=60.0, warmup=2, frames=600)
    (tmp_path / "job.json").write_text(job.to_json(), encoding="utf-8")
    outdir = tmp_path / "out"
    outdir.mkdir()
    proc = start_runner("run", str(tmp_path / "job.json"), str(outdir))
    try:
        for line in proc.stdout:  # progress arrives about four times a second
            progress = parse_progress(line)
            if progress is not None and progress[0] >= 5:
                break
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    table = read_frames_csv(outdir / "frames.csv")
    assert table.issues == [] and 5 <= len(table.rows) < 602
    result = read_result_json(outdir / "result.json")
    partial = [i for i in result.issues if i.kind == "partial"]
    assert len(partial) == 1 and "SIGTERM" in partial[0].detail
    assert result.extra["frames_rendered"] == len(table.rows)


def test_cpu_burn_is_inside_every_frames_cpu_time(launch, make_job):
    # The burn busy-waits 20 ms of the clock inside the timed section, so no frame can read less whatever the
    # machine's load; how close the added time comes to 20 ms is bench/bench_timing_accuracy.py's to print.
    job = make_job([{"op": "rect", "x": 0, "y": 0, "w": 8, "h": 8, "color": "#000000"}], warmup=1, frames=4)
    burnt = launch(job, "--cpu-burn-ms", "20")
    assert burnt.returncode == 0, burnt.stderr
    cpu = read_frames_csv(burnt.outdir / "frames.csv").column("cpu_ms")
    assert len(cpu) == 4 and min(cpu) >= 20.0, cpu  # the measured frames
    assert json.loads((burnt.outdir / "result.json").read_text())["cpu_burn_ms"] == 20.0


def test_frames_the_kernel_preempts_are_counted(launch, make_job):
    """A CPU hog on the runner's own CPU: the kernel shares it by time slices of at most about 12 ms (Linux's
    scheduling period with two runnable tasks), and the hog never sleeps, so a frame busy for 30 ms of wall time
    sees an involuntary switch (the `preemptions` column, which the gate reads) whatever slice the kernel picks.
    Shorter frames would make the count a rate that depends on the slice (2 ms frames: 28-40 %)."""
    cpu = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        os.sched_setaffinity(0, {cpu})  # inherited by the runner
        run = launch(make_job([{"op": "rect", "x": 0, "y": 0, "w": 4, "h": 4, "color": "#000000"}], warmup=1,
                              frames=20), "--cpu-burn-ms", "30")
    finally:
        os.sched_setaffinity(0, mine)
        hog.kill()
        hog.wait()
    assert run.returncode == 0, run.stderr
    table = read_frames_csv(run.outdir / "frames.csv")
    counts = [r["preemptions"] for r in table.rows if r["phase"] == "measure"]
    assert all(c >= 0 and c == int(c) for c in counts), counts
    assert sum(c > 0 for c in counts) >= 0.9 * len(counts), counts


def test_cjk_text_without_a_cjk_font_fails_the_launch_naming_the_font(launch, make_job, monkeypatch, tmp_path):
    monkeypatch.setenv("ZBENCH_CJK_FONT", str(tmp_path / "no-such-font.ttc"))
    run = launch(make_job([{"op": "text", "x": 1, "y": 20, "size": 12, "color": "#000000", "text": "中文",
                            "font": "cjk"}]))
    assert run.returncode == 1
    assert "CJK font not found" in run.stderr and "fonts-wqy-zenhei" in run.stderr
    issues = read_result_json(run.outdir / "result.json").issues
    assert [i.kind for i in issues] == ["error"] and "no-such-font.ttc" in issues[0].detail
