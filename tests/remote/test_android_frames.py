"""The Android frame-source parsers on outputs in the formats of several releases (tests/data/android)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_zbench.host.android_frames import (
    INT64_MAX,
    FramestatsAccumulator,
    FrameStatsError,
    LatencyAccumulator,
    frame_flags,
    parse_gfxinfo_framestats,
    parse_surfaceflinger_latency,
    present_intervals_ms,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "android"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "n_frames", "first_column_extra", "has_gpu"),
    [
        ("gfxinfo-framestats-api24.txt", 118, "OldestInputEvent", False),
        ("gfxinfo-framestats-api28-dump1.txt", 119, "DequeueBufferDuration", False),
        ("gfxinfo-framestats-api31.txt", 125, "FrameTimelineVsyncId", True),
        ("gfxinfo-framestats-api34.txt", 119, "CommandSubmissionCompleted", True),
    ],
)
def test_framestats_columns_by_name_across_releases(name, n_frames, first_column_extra, has_gpu):
    frames = parse_gfxinfo_framestats(read(name))
    assert len(frames) == n_frames
    assert all(f.flags == 0 for f in frames)
    assert all(first_column_extra in f.columns for f in frames)
    vsyncs = [f.intended_vsync_ns for f in frames]
    assert vsyncs == sorted(vsyncs)
    for f in frames:
        assert 0 < f.total_ms < 100  # IntendedVsync .. FrameCompleted of a plausible frame
        assert (f.gpu_ms is not None) == has_gpu


def test_framestats_api24_flagged_rows_are_dropped_unless_asked():
    text = read("gfxinfo-framestats-api24.txt")
    kept = parse_gfxinfo_framestats(text, keep_flagged=True)
    assert len(kept) == 120
    flagged = [f for f in kept if f.flags]
    assert [frame_flags(f.flags) for f in flagged] == [["window_layout_changed"]] * 2


def test_framestats_api31_windows_sharing_a_vsync_are_both_kept_and_selectable():
    text = read("gfxinfo-framestats-api31.txt")
    frames = parse_gfxinfo_framestats(text)
    windows = {f.window for f in frames}
    assert len(windows) == 2
    assert len({f.intended_vsync_ns for f in frames}) < len(frames)  # the popup drew on the activity's vsyncs
    activity = parse_gfxinfo_framestats(text, window="ViewRootImpl@9e47a5c")
    assert len(activity) == 118 and all("BenchActivity" in f.window for f in activity)
    assert all("visibility" not in f.window for f in frames)


def test_framestats_ring_is_deduplicated_across_successive_dumps():
    acc = FramestatsAccumulator(window="BenchActivity")
    first = acc.add(read("gfxinfo-framestats-api28-dump1.txt"))
    second = acc.add(read("gfxinfo-framestats-api28-dump2.txt"))
    assert len(first) == 119
    assert len(second) == 69  # 120 rows, 50 already seen, one flagged
    again = acc.add(read("gfxinfo-framestats-api28-dump2.txt"))
    assert again == []
    assert len(acc.frames) == 188 and acc.gaps == 0
    assert min(f.intended_vsync_ns for f in second) > max(f.intended_vsync_ns for f in first)


def test_framestats_gap_between_dumps_is_counted():
    acc = FramestatsAccumulator()
    acc.add(read("gfxinfo-framestats-api24.txt"))
    acc.add(read("gfxinfo-framestats-api34.txt"))  # later in time, shares nothing
    assert acc.gaps == 1


def test_framestats_without_block_or_with_bad_header():
    assert parse_gfxinfo_framestats("No process found for: com.nothing\n") == []
    bad = "---PROFILEDATA---\nFoo,Bar,\n1,2,\n---PROFILEDATA---\n"
    with pytest.raises(FrameStatsError, match="IntendedVsync"):
        parse_gfxinfo_framestats(bad)


def test_surfaceflinger_latency_drops_empty_and_pending_rows():
    text = read("sf-latency-api24.txt")
    parsed = parse_surfaceflinger_latency(text)
    assert parsed.refresh_period_ns == 16666666
    assert parsed.refresh_hz == pytest.approx(60.0, rel=1e-6)
    rows = [line for line in text.splitlines()[1:] if line.strip()]
    assert len(rows) == 127
    assert len(parsed.frames) == 89  # 37 unused slots and 1 pending dropped
    assert all(INT64_MAX not in (f.actual_present_ns, f.frame_ready_ns) for f in parsed.frames)
    intervals = parsed.present_intervals_ms()
    assert len(intervals) == 88
    assert all(15 < i < 52 for i in intervals)


def test_surfaceflinger_latency_full_ring_and_skipped_vsync():
    parsed = parse_surfaceflinger_latency(read("sf-latency-api30.txt"))
    assert len(parsed.frames) == 126
    intervals = present_intervals_ms(parsed.frames)
    assert any(i > 30 for i in intervals)  # a skipped vsync shows as ~33 ms


def test_surfaceflinger_latency_unknown_layer_and_garbage():
    assert parse_surfaceflinger_latency(read("sf-latency-unknown-layer.txt")).frames == ()
    with pytest.raises(FrameStatsError, match="refresh period"):
        parse_surfaceflinger_latency("Can't find service: SurfaceFlinger\n")


def test_latency_accumulator_deduplicates():
    acc = LatencyAccumulator()
    text = read("sf-latency-api30.txt")
    assert len(acc.add(text)) == 126
    assert acc.add(text) == []
    assert acc.refresh_period_ns == 16666666
