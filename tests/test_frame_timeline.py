"""Android 12+ FrameTimeline read from Perfetto traces built with Perfetto's own trace builder
(tests/frame_timeline_traces.py): each frame's expected against actual timeline, its jank types, buffer
stuffing as latency without a miss (docs/platform-frames.md, "FrameTimeline")."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from pytest_zbench.host.devices.android_frame_timeline import TraceError, jank_type_counts, surface_frames
from pytest_zbench.host.measure.android_frame_timeline_series import TimelineSeries, summarize_timeline_launch
from tests.frame_timeline_traces import Frame, build_trace

PACKAGE = "com.zinc.bench"
LAYER = f"TX - {PACKAGE}/{PACKAGE}.BenchActivity#0"
OTHER = "TX - com.android.systemui/com.android.systemui.Bar#3"
MS = 1_000_000


def launch_frames() -> list[Frame]:
    t0 = 5_000 * MS
    return [
        Frame(1, LAYER, 4242, (t0, t0 + 16 * MS), (t0 + MS, t0 + 12 * MS)),  # early by 4 ms, on time
        Frame(2, LAYER, 4242, (t0 + 17 * MS, t0 + 33 * MS), (t0 + 17 * MS, t0 + 45 * MS),
              ("AppDeadlineMissed",), "Late"),  # 12 ms late
        Frame(3, LAYER, 4242, (t0 + 34 * MS, t0 + 50 * MS), (t0 + 34 * MS, t0 + 58 * MS),
              ("BufferStuffing",), "Late"),  # 8 ms of latency, no miss
        Frame(4, LAYER, 4242, (t0 + 51 * MS, t0 + 67 * MS), (t0 + 52 * MS, t0 + 90 * MS),
              ("AppDeadlineMissed", "SurfaceFlingerCpuDeadlineMissed"), "Late"),  # 23 ms late, two causes
        Frame(5, LAYER, 4242, None, (t0 + 70 * MS, t0 + 80 * MS), ("PredictionError",), "Late"),  # no prediction
        Frame(6, OTHER, 900, (t0, t0 + 16 * MS), (t0, t0 + 40 * MS), ("AppDeadlineMissed",), "Late"),  # not ours
        Frame(7, LAYER, 4242, (t0 + 85 * MS, t0 + 101 * MS), (t0 + 86 * MS, 0), ended=False),  # trace stopped first
    ]


def test_expected_and_actual_timelines_of_the_package_are_paired():
    frames = surface_frames(build_trace(launch_frames()), PACKAGE)
    assert [f.token for f in frames] == [1, 2, 3, 4, 5]
    assert {f.layer for f in frames} == {LAYER} and {f.pid for f in frames} == {4242}
    assert [f.latency_ms for f in frames[:4]] == pytest.approx([-4.0, 12.0, 8.0, 23.0], rel=1e-9)
    assert frames[4].latency_ms is None and frames[4].expected_end_ns is None
    assert [f.duration_ms for f in frames] == pytest.approx([11.0, 28.0, 24.0, 38.0, 10.0], rel=1e-9)
    assert [f.missed for f in frames] == [False, True, False, True, True]
    assert [f.buffer_stuffing for f in frames] == [False, False, True, False, False]
    assert frames[3].jank_types == ["SurfaceFlingerCpuDeadlineMissed", "AppDeadlineMissed"]
    assert [f.present_type for f in frames] == ["OnTime", "Late", "Late", "Late", "Late"]
    assert jank_type_counts(frames) == {"AppDeadlineMissed": 2, "BufferStuffing": 1, "None": 1,
                                        "PredictionError": 1, "SurfaceFlingerCpuDeadlineMissed": 1}
    assert len(surface_frames(build_trace(launch_frames()))) == 6  # every app's frames without a package


def test_buffer_stuffing_is_latency_without_a_miss():
    frames = surface_frames(build_trace(launch_frames()), PACKAGE)
    summary = summarize_timeline_launch(0, frames, [])
    assert (summary["n"], summary["missed"], summary["buffer_stuffing"], summary["no_prediction"]) == (5, 3, 1, 1)
    assert summary["missed_share"] == pytest.approx(3 / 5)
    latency = np.array([-4.0, 12.0, 23.0])  # the stuffed frame's latency is kept apart
    assert summary["latency_ms"]["p50"] == pytest.approx(float(np.median(latency)), rel=1e-9)
    assert summary["latency_ms"]["max"] == pytest.approx(23.0, rel=1e-9)
    assert summary["stuffing_latency_ms"]["n"] == 1
    assert summary["stuffing_latency_ms"]["p50"] == pytest.approx(8.0, rel=1e-9)
    assert summary["present_types"] == {"Late": 4, "OnTime": 1}


def test_the_series_writes_one_row_per_frame_and_sums_launches(tmp_path):
    series = TimelineSeries.beside(tmp_path / "n7" / "scene.frames.csv")
    frames = surface_frames(build_trace(launch_frames()), PACKAGE)
    series.add(0, frames, [])
    series.add(1, frames[:2], ["a note"])
    entry = series.entry(tmp_path)
    assert entry["samples_file"] == "n7/scene.frametimeline.csv"
    assert (entry["n"], entry["missed"], entry["buffer_stuffing"]) == (7, 4, 1)
    assert entry["jank_types"]["AppDeadlineMissed"] == 3
    assert entry["metrics"]["latency_ms"]["runs"] == 2
    assert entry["per_launch"][1]["issues"] == ["a note"]
    with open(tmp_path / "n7" / "scene.frametimeline.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 7 and rows[1]["jank_types"] == "AppDeadlineMissed" and rows[4]["expected_end_ns"] == ""
    assert [float(r["latency_ms"]) for r in rows[:4]] == pytest.approx([-4.0, 12.0, 8.0, 23.0], rel=1e-9)


def test_bytes_that_are_not_a_trace_are_a_clear_error():
    with pytest.raises(TraceError, match="cut short|wire type|past the end"):
        surface_frames(b"\x0a\xff\xff\xff\x0f" + b"x" * 3)
    assert surface_frames(b"") == []
