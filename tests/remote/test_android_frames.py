"""The Android frame-source parsers on outputs recorded from real devices (tests/data/android, SOURCES.md) and
on the constructed ones kept where no real one was found; what is expected is read from the files by
tests/remote/android_dumps.py, which shares no code with the parsers."""

from __future__ import annotations

import pytest

from pytest_zbench.host.devices.android_frame_parsers import (
    INT64_MAX,
    FramestatsAccumulator,
    FrameStatsError,
    LatencyAccumulator,
    frame_flags,
    gfxinfo_blocks,
    gfxinfo_failure,
    layer_candidates,
    layer_names,
    parse_gfxinfo_framestats,
    parse_surfaceflinger_latency,
    present_intervals_ms,
)
from tests.remote.android_dumps import data, frame_key, gfx_rows, latency_rows, latency_windows, plausible, ring_windows

REAL_GFXINFO = ("gfxinfo-framestats-120hz-one-window.txt", "gfxinfo-framestats-settings-three-windows.txt",
                "gfxinfo-framestats-api23-aosp-docs.txt", "gfxinfo-framestats-api23-androidviewclient.txt")


@pytest.mark.parametrize("name", REAL_GFXINFO + ("constructed-gfxinfo-framestats-api24.txt",
                                                 "constructed-gfxinfo-framestats-api28-dump1.txt"))
def test_framestats_durations_are_frame_completed_minus_intended_vsync_of_unflagged_rows(name):
    text = data(name)
    rows = gfx_rows(text)
    # A row whose FrameCompleted is 0 is a frame still in flight when the dump was taken (the settings dump has
    # three), one whose FrameCompleted is 2^58 + ... a garbage timestamp (the settings dump has two).
    expected = {frame_key(r): (r["FrameCompleted"] - r["IntendedVsync"]) / 1e6 for r in rows
                if r["Flags"] == 0 and plausible(r)}
    frames = parse_gfxinfo_framestats(text)
    assert {key(f): f.total_ms for f in frames} == expected
    assert len(frames) == len(expected) > 0
    vsyncs = [f.intended_vsync_ns for f in frames]
    assert vsyncs == sorted(vsyncs)


def key(frame) -> tuple[int, int | None, int | None]:
    return frame.intended_vsync_ns, frame.get("DrawStart"), frame.get("SwapBuffers")


def test_garbage_timestamps_of_a_real_dump_are_no_frame_time():
    text = data("gfxinfo-framestats-settings-three-windows.txt")
    acc = FramestatsAccumulator()
    acc.add(text)
    garbage = [r for r in gfx_rows(text) if r["Flags"] == 0 and r["FrameCompleted"] > 0 and not plausible(r)]
    assert [key(f) for f in acc.implausible] == [frame_key(r) for r in garbage] and len(garbage) == 2
    assert all(f.frame_completed_ns > 2**58 for f in acc.implausible)
    assert all(0 < f.total_ms < 10_000 for f in acc.frames)


def test_columns_are_read_by_name_across_releases():
    old = parse_gfxinfo_framestats(data("gfxinfo-framestats-api23-aosp-docs.txt"))
    assert "OldestInputEvent" in old[0].columns and "GpuCompleted" not in old[0].columns
    assert all(f.gpu_ms is None for f in old)
    new = parse_gfxinfo_framestats(data("gfxinfo-framestats-120hz-one-window.txt"))
    assert {"FrameTimelineVsyncId", "InputEventId", "CommandSubmissionCompleted"} <= set(new[0].columns)
    assert all(f.gpu_ms is not None and 0 < f.gpu_ms < 50 for f in new)
    # The first recorded row: 314856686928950 - 314856675367713 ns.
    assert new[0].total_ms == pytest.approx(11.561237)


def test_a_real_dump_labels_each_block_with_its_window_not_the_line_above_it():
    """Android 10+ prints the window line, `Window: ...` and the window's statistics before the block: the
    line right above ---PROFILEDATA--- is a statistic (or a histogram), never the window."""
    text = data("gfxinfo-framestats-settings-three-windows.txt")
    blocks = gfxinfo_blocks(text)
    assert [b.window.rsplit("/", 1)[0] for b in blocks] == [
        "com.android.settings/com.android.settings.homepage.SettingsHomepageActivity",
        "com.android.settings/com.android.settings.SubSettings",
        "com.android.settings/com.android.settings.spa.SpaActivity"]
    assert all(b.window.split("/")[-1].startswith("android.view.ViewRootImpl@") for b in blocks)
    assert {b.process for b in blocks} == {"com.android.settings (pid 1955)"}
    assert [len(b.frames) for b in blocks] == [67, 80, 120]
    one = gfxinfo_blocks(data("gfxinfo-framestats-120hz-one-window.txt"))
    assert [b.window for b in one] == [
        "com.soundvisualization.accessibility/com.soundvisualization.accessibility.MainActivity/"
        "android.view.ViewRootImpl@73f2e63"]
    # Android 6-9: the window line right above the block
    assert gfxinfo_blocks(data("constructed-gfxinfo-framestats-api24.txt"))[0].window.endswith("ViewRootImpl@2bd7f4e")
    # a dump that names no window at all
    assert {b.window for b in gfxinfo_blocks(data("gfxinfo-framestats-api23-androidviewclient.txt"))} == {""}


def test_flagged_rows_are_dropped_and_named():
    text = data("gfxinfo-framestats-settings-three-windows.txt")
    rows = gfx_rows(text)
    completed = [r for r in rows if r["FrameCompleted"] > 0]  # three rows were still in flight
    kept = parse_gfxinfo_framestats(text, keep_flagged=True)
    assert len(kept) == len(completed) - 2 == len(rows) - 5  # and two normal ones have a garbage FrameCompleted
    flagged = [f for f in kept if f.flags]
    assert len(flagged) == sum(1 for r in completed if r["Flags"]) == 173
    assert {tuple(frame_flags(f.flags)) for f in flagged} == {
        ("window_layout_changed",), ("rt_animation",), ("rt_animation", "skipped_frame")}
    avc = parse_gfxinfo_framestats(data("gfxinfo-framestats-api23-androidviewclient.txt"), keep_flagged=True)
    assert [f.flags for f in avc] == [1, 0, 0]


def test_overlapping_dumps_count_each_frame_once_whatever_the_layout():
    text = data("gfxinfo-framestats-settings-three-windows.txt")
    dumps = ring_windows(text, 2, 60, 20)  # the 120-row block slides: [0, 60), [20, 80), [40, 100), [60, 120)
    assert len(dumps) == 4
    acc = FramestatsAccumulator()
    counts = [len(acc.add(d)) for d in dumps]
    all_rows = {frame_key(r): r for r in gfx_rows(text) if r["FrameCompleted"] > 0}  # three were still in flight
    assert sum(counts) == len(acc.all_frames) == len(all_rows) == 264
    assert counts[1:] == [20, 20, 20]
    assert {key(f) for f in acc.frames} == {k for k, r in all_rows.items() if r["Flags"] == 0 and plausible(r)}
    # The same frames again, in a dump whose text around the blocks is different (window lines gone): nothing new.
    stripped = "\n".join(line for line in dumps[-1].splitlines() if "ViewRootImpl" not in line and
                         not line.startswith("Window:"))
    assert acc.add(stripped) == [] and acc.gaps == 0


def test_a_frame_dumped_again_with_its_present_time_filled_in_is_one_frame():
    text = data("gfxinfo-framestats-120hz-one-window.txt")
    first = parse_gfxinfo_framestats(text)[0]
    later = text.replace(f",{first.get('DisplayPresentTime')},", ",1,", 1)
    acc = FramestatsAccumulator()
    acc.add(later)
    assert acc.add(text) == []
    assert len(acc.frames) == 120 and acc.frames[0].get("DisplayPresentTime") == first.get("DisplayPresentTime")


def test_frames_of_the_baseline_dump_are_never_counted():
    text = data("gfxinfo-framestats-120hz-one-window.txt")
    baseline, *later = ring_windows(text, 0, 40, 10)
    acc = FramestatsAccumulator()
    assert acc.exclude(baseline) == 40
    new = [f for d in later for f in acc.add(d)]
    assert len(new) == len(acc.frames) == 80
    baseline_keys = {frame_key(r) for r in gfx_rows(baseline)}
    assert not baseline_keys & {key(f) for f in new}


def test_a_full_ring_sharing_nothing_with_the_previous_dump_is_a_gap():
    acc = FramestatsAccumulator()
    text = data("gfxinfo-framestats-120hz-one-window.txt")
    early, late = ring_windows(text, 0, 60, 60)
    acc.add(early)
    acc.add(late)  # no overlap, but not a full ring: the ring had not wrapped, nothing was lost
    assert acc.gaps == 0
    acc2 = FramestatsAccumulator(window="BenchActivity")
    acc2.add(data("constructed-gfxinfo-framestats-api24.txt"))
    acc2.add(data("constructed-gfxinfo-framestats-api28-dump1.txt").replace("ViewRootImpl@9e47a5c",
                                                                            "ViewRootImpl@2bd7f4e"))
    assert acc2.gaps == 1  # the same window, a full ring, nothing in common: frames were lost


def test_dumps_without_frame_data_say_why():
    failure = data("gfxinfo-framestats-failure-while-dumping.txt")
    assert parse_gfxinfo_framestats(failure) == []
    assert gfxinfo_failure(failure).startswith("Failure while dumping the app: ProcessRecord{45d538c")
    assert gfxinfo_failure("No process found for: com.nothing\n") == "No process found for: com.nothing"
    assert gfxinfo_failure(data("gfxinfo-framestats-120hz-one-window.txt")) is None
    with pytest.raises(FrameStatsError, match="IntendedVsync"):
        parse_gfxinfo_framestats("---PROFILEDATA---\nFoo,Bar,\n1,2,\n---PROFILEDATA---\n")


@pytest.mark.parametrize(("name", "period", "n"), [
    ("sf-latency-blast-surfaceview.txt", 16666667, 25),
    ("sf-latency-catapult.txt", 16954612, 3),
    ("sf-latency-android8-honor9.txt", 16666666, 3),  # desired and ready are INT64_MAX: presented all the same
    ("sf-latency-android8-pixel2-zeros.txt", 16666666, 0),
    ("sf-latency-surfaceview-zeros.txt", 16666667, 0),
    ("sf-latency-unknown-layer-tecno-camon20.txt", 16666667, 0),
    ("constructed-sf-latency-api24.txt", 16666666, 89),  # 37 unused slots and 1 pending row
    ("constructed-sf-latency-api30.txt", 16666666, 126),
])
def test_surfaceflinger_latency_counts_frames_with_a_present_time(name, period, n):
    text = data(name)
    parsed = parse_surfaceflinger_latency(text)
    assert parsed.refresh_period_ns == period
    actual = [a for _, a, _ in latency_rows(text) if 0 < a < INT64_MAX]
    assert [f.actual_present_ns for f in parsed.frames] == sorted(actual) and len(actual) == n
    assert parsed.present_intervals_ms() == pytest.approx(present_intervals_ms(parsed.frames))


def test_surfaceflinger_intervals_of_a_real_game_at_24_fps_on_60_hz():
    parsed = parse_surfaceflinger_latency(data("sf-latency-blast-surfaceview.txt"))
    assert parsed.refresh_hz == pytest.approx(59.9999988)
    intervals = parsed.present_intervals_ms()
    assert len(intervals) == 24 and intervals[0] == pytest.approx((495498429195994 - 495498379510686) / 1e6)
    assert all(2.9 < i / 16.666667 < 3.1 or 1.9 < i / 16.666667 < 2.1 for i in intervals)  # 2 or 3 refreshes each


def test_surfaceflinger_interval_never_spans_a_slot_without_a_present_time():
    parsed = parse_surfaceflinger_latency(data("constructed-sf-latency-api24.txt"))
    pending = next(i for i, (_, a, _) in enumerate(latency_rows(data("constructed-sf-latency-api24.txt")))
                   if a == INT64_MAX)
    assert pending >= 0 and len(parsed.adjacent) == len(parsed.frames) - 1 - (0 if pending == 126 else 1)


def test_latency_dumps_overlapping_and_with_a_gap():
    text = data("sf-latency-blast-surfaceview.txt")
    baseline, *later = latency_windows(text, 8, 4)  # [0, 8), [4, 12), ... [16, 24)
    acc = LatencyAccumulator()
    assert acc.exclude(baseline) == 8
    for dump in later:
        acc.add(dump)
    rows = latency_rows(text)
    assert [f.actual_present_ns for f in acc.frames] == [a for _, a, _ in rows[8:24]]
    assert [ms for _, ms in acc.intervals()] == pytest.approx(
        [(b[1] - a[1]) / 1e6 for a, b in zip(rows[8:24], rows[9:24])])
    apart = LatencyAccumulator()
    first, _, third, *_ = latency_windows(text, 5, 5)  # rows 0-4 and 10-14: no interval across the hole
    apart.add(first)
    apart.add(third)
    assert len(apart.frames) == 10 and len(apart.intervals()) == 8
    with pytest.raises(FrameStatsError, match="refresh period"):
        parse_surfaceflinger_latency("Can't find service: SurfaceFlinger\n")


def test_layers_of_a_package_from_real_lists():
    assert layer_candidates(data("sf-list-android12-blast.txt"), "com.KST.CS4Like_development") == [
        "SurfaceView[com.KST.CS4Like_development/com.easy.game.GamePlayerActivity](BLAST)#0",
        "SurfaceView[com.KST.CS4Like_development/com.easy.game.GamePlayerActivity]#0",
        "com.KST.CS4Like_development/com.easy.game.GamePlayerActivity#0",
        "56d18fd com.KST.CS4Like_development/com.easy.game.GamePlayerActivity#0"]
    tecno = data("sf-list-tecno-camon20.txt")
    vlc = layer_candidates(tecno, "org.videolan.vlc")
    assert vlc[0] == "SurfaceView[org.videolan.vlc/org.videolan.vlc.gui.video.VideoPlayerActivity](BLAST)#21673"
    assert not any(name.startswith(("Background for", "Bounds for", "ActivityRecord")) for name in vlc)
    settings = layer_candidates(tecno, "com.android.settings")  # not com.android.settings.intelligence's
    assert settings == ["62bf40 com.android.settings/com.android.settings.SubSettings#21279",
                        "609866e com.android.settings/com.android.settings.Settings#21251"]
    android15 = data("sf-list-android15.txt")
    assert "54dfae7 ctrip.android.view/ctrip.android.publicproduct.home.business.activity.CtripHomeActivity#28989" \
        in layer_names(android15)
    assert layer_candidates(android15, "ctrip.android.view")[0] == \
        "ctrip.android.view/ctrip.android.publicproduct.home.business.activity.CtripHomeActivity#29149"
    assert layer_candidates(tecno, "com.absent.app") == []


def test_no_surfaceflinger_interval_spans_an_unused_slot_between_two_presented_frames():
    # Four presented frames 16.666666 ms apart, but an unused `0 0 0` slot between the second and the third:
    # the ring lost whatever was there, so 1 -> 2 and 3 -> 4 are intervals and 2 -> 3 (33.3 ms) is none.
    text = ("16666666\n"
            "900000000 1000000000 910000000\n"
            "916666666 1016666666 926666666\n"
            "0 0 0\n"
            "950000000 1050000000 960000000\n"
            "966666666 1066666666 976666666\n")
    parsed = parse_surfaceflinger_latency(text)
    assert len(parsed.frames) == 4
    assert parsed.present_intervals_ms() == pytest.approx([16.666666, 16.666666], abs=1e-9)
    acc = LatencyAccumulator()
    acc.add(text)
    assert [ms for _, ms in acc.intervals()] == pytest.approx([16.666666, 16.666666], abs=1e-9)
