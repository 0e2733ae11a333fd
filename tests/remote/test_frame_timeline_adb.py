"""Android 12+ FrameTimeline end to end (docs/platform-frames.md, "FrameTimeline"): the plugin on an adb
device through the real adb server; the emulated adbd's `perfetto` takes the config on stdin and writes, when
stopped, a trace built with Perfetto's own trace builder (tests/frame_timeline_traces.py)."""

from __future__ import annotations

import csv

import pytest

from pytest_zbench.host.run_record import validate_run
from tests.frame_timeline_traces import Frame, build_trace
from tests.remote.servers import adb_device_entry
from tests.remote.test_platform_frames import PACKAGE, write_device

LAYER = f"TX - {PACKAGE}/{PACKAGE}.SubSettings#0"
MS = 1_000_000


def served_frames() -> list[Frame]:
    t0 = 9_000 * MS
    return [
        Frame(11, LAYER, 777, (t0, t0 + 16 * MS), (t0, t0 + 15 * MS)),
        Frame(12, LAYER, 777, (t0 + 17 * MS, t0 + 33 * MS), (t0 + 17 * MS, t0 + 50 * MS), ("AppDeadlineMissed",),
              "Late"),
        Frame(13, LAYER, 777, (t0 + 34 * MS, t0 + 50 * MS), (t0 + 34 * MS, t0 + 60 * MS), ("BufferStuffing",),
              "Late"),
        Frame(14, "TX - com.other.app/com.other.app.Main#1", 778, (t0, t0 + 16 * MS), (t0, t0 + 40 * MS),
              ("AppDeadlineMissed",), "Late"),
    ]


@pytest.mark.acceptance
def test_frame_timeline_of_adb_launches_is_a_third_series(project, adb_server, android_dumps):
    trace = build_trace(served_frames())
    android_dumps.serve_trace(trace)
    trace_dir = android_dumps.sandbox / "perfetto-traces"
    trace_dir.mkdir(exist_ok=True)
    write_device(project, adb_server, android_dumps, package=PACKAGE, frame_timeline=str(trace_dir),
                 display={"width": 64, "height": 48, "refresh_hz": 60})
    result = project.run("--zbench-device=n7", "-k", "mini.fill.x1", "--zbench-runs=2")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []

    calls = android_dumps.perfetto_calls()
    starts = [c for c in calls if c.startswith("start ")]
    assert len(starts) == 2 and calls.count("stopped") == 2  # one trace per launch, each stopped
    # in the background, without the launch's variable: out of reach of the launch's supervision
    assert all("background=1" in c and c.endswith("launch_variable=") for c in starts)
    assert 'name: "android.surfaceflinger.frametimeline"' in android_dumps.perfetto_config()
    assert list(trace_dir.iterdir()) == []  # each trace removed from the device once read

    timeline = document["scenes"][0]["platform_frames"]["frame_timeline"]
    assert timeline["source"] == "frametimeline"
    # the other app's frame is not the package's; the stuffed frame is no miss
    assert (timeline["n"], timeline["missed"], timeline["buffer_stuffing"]) == (6, 2, 2)
    assert timeline["jank_types"] == {"AppDeadlineMissed": 2, "BufferStuffing": 2, "None": 2}
    assert timeline["metrics"]["latency_ms"]["runs"] == 2
    assert timeline["metrics"]["latency_ms"]["max"] == pytest.approx(17.0, rel=1e-6)
    assert timeline["metrics"]["stuffing_latency_ms"]["p50"] == pytest.approx(10.0, rel=1e-6)
    with open(project.results / timeline["samples_file"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["launch"], r["token"]) for r in rows] == [("0", "11"), ("0", "12"), ("0", "13"),
                                                         ("1", "11"), ("1", "12"), ("1", "13")]
    report = (project.results / "report.html").read_text()
    assert "FrameTimeline latency_ms" in report and "2 buffer-stuffed frames" in report
    kept = project.results / "n7" / "mini.fill.x1" / "launch-1" / "platform" / "frametimeline.pftrace"
    assert kept.read_bytes() == trace


def test_a_device_without_a_trace_says_so(adb_server, android_dumps, write_inventory, tmp_path):
    """Straight through Device: perfetto wrote no trace (the emulated device serves none)."""
    from pytest_zbench.host.devices import android_frame_dumps as platform_frames
    from pytest_zbench.host.devices.device import Device
    from pytest_zbench.transports import make_transport

    android_dumps.serve_trace(None)
    trace_dir = android_dumps.sandbox / "perfetto-traces"
    trace_dir.mkdir(exist_ok=True)
    spec = write_inventory({"n7": adb_device_entry(adb_server, android_dumps.serial, tmp_path / "w",
                                                   package=PACKAGE, frame_timeline=str(trace_dir),
                                                   display={"width": 64, "height": 48, "refresh_hz": 60})})["n7"]
    device = Device(spec, make_transport(spec))
    device.open()
    try:
        collection = platform_frames.start(device, tmp_path / "launch-0")
        collection.stop()
    finally:
        device.close()
    launch = collection.result
    assert launch is not None and launch.timeline is None
    assert any("the frame timeline trace could not stop" in i and "no trace file" in i
               for i in launch.timeline_issues), launch.timeline_issues
