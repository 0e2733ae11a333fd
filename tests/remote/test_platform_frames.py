"""Android's own frame timing end to end (docs/platform-frames.md): the plugin on an adb device through the real
adb server, the emulated adbd printing outputs recorded on real devices as successive, overlapping dumps;
what each launch must count is worked out from the files the device printed (its dumpsys log) by
tests/remote/android_dumps.py, never by the parsers under test."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest
import yaml

from pytest_zbench.host.run_record import validate_run
from tests.remote.android_dumps import data, frame_key, gfx_rows, latency_rows, latency_windows, plausible, ring_windows
from tests.remote.servers import adb_device_entry

PACKAGE = "com.android.settings"
LAYER = "62bf40 com.android.settings/com.android.settings.SubSettings#21279"  # from sf-list-tecno-camon20.txt
CATAPULT_PERIOD_NS = 16954612  # sf-latency-catapult.txt: a 58.98 Hz panel


def write_device(project, adb_server, adbd, **entry) -> None:
    devices = yaml.safe_load((project.root / "devices.yaml").read_text())["devices"]
    devices["n7"] = adb_device_entry(adb_server, adbd.serial, project.root / "adb-device", **entry)
    (project.root / "devices.yaml").write_text(yaml.safe_dump({"devices": devices}))


def launches_of(calls: list[tuple[str, list[str]]]) -> list[list[tuple[str, list[str]]]]:
    """The device's dumpsys calls cut into launches: each starts with the baseline `framestats reset`."""
    launches: list[list[tuple[str, list[str]]]] = []
    for args, served in calls:
        if args == f"gfxinfo {PACKAGE} framestats reset":
            launches.append([])
        if launches:
            launches[-1].append((args, served))
    return launches


def served(launch, kind: str, outputs: dict[str, str]) -> list[str]:
    return [outputs[name] for _, names in launch for name in names if name.startswith(kind + "/")]


def csv_rows(project, scene) -> list[dict[str, str]]:
    with open(project.results / scene["platform_frames"]["samples_file"], newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.acceptance
def test_platform_frames_of_adb_launches_equal_the_recorded_rows(project, adb_server, android_dumps):
    gfx = ring_windows(data("gfxinfo-framestats-settings-three-windows.txt"), 2, 60, 20)  # 4 overlapping dumps
    sf = latency_windows(data("sf-latency-blast-surfaceview.txt"), 12, 4)  # 4 overlapping dumps
    android_dumps.serve_dumps(gfxinfo=gfx, sf_latency=sf, sf_refresh=data("sf-latency-catapult.txt"))
    outputs = {**{f"gfxinfo/{i:03d}.txt": t for i, t in enumerate(gfx, 1)},
               **{f"sf-latency/{i:03d}.txt": t for i, t in enumerate(sf, 1)}}
    write_device(project, adb_server, android_dumps, package=PACKAGE)  # no display: the device tells its rate
    # 90 paced frames at 58.98 Hz: 1.5 s of rendering, so at least one dump falls inside each launch
    result = project.run("--zbench-device=n7", "-k", "mini.fill.x1", "--zbench-frames=90")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []

    # The budget is the measured refresh period: SurfaceFlinger's, the inventory has no display.
    display = document["devices"]["n7"]["display"]
    assert display["refresh_source"] == "surfaceflinger" and display["refresh_warning"] is None
    assert display["refresh_hz"] == pytest.approx(1e9 / CATAPULT_PERIOD_NS)
    scene = document["scenes"][0]
    assert scene["budget_ms"] == pytest.approx(CATAPULT_PERIOD_NS / 1e6, abs=1e-4)
    job = json.loads((project.results / "n7" / "mini.fill.x1" / "launch-0" / "job.json").read_text())
    assert job["refresh_hz"] == pytest.approx(1e9 / CATAPULT_PERIOD_NS)

    launches = launches_of(android_dumps.dumpsys_calls())
    assert len(launches) == 2
    platform = scene["platform_frames"]
    assert (platform["source"], platform["present_source"], platform["package"]) == (
        "gfxinfo", "surfaceflinger", PACKAGE)
    assert platform["layers"] == [LAYER]
    table = csv_rows(project, scene)
    overlapping = 0
    total_normal = total_flagged = slow_total = 0
    for k, launch in enumerate(launches):
        baseline, *later = served(launch, "gfxinfo", outputs)
        overlapping += len(later) >= 2
        before = {frame_key(r) for r in gfx_rows(baseline)}
        expected = {frame_key(r): r for text in later for r in gfx_rows(text)
                    if frame_key(r) not in before and r["FrameCompleted"] > 0}
        normal = {key: r for key, r in expected.items() if r["Flags"] == 0 and plausible(r)}
        flagged = [r for r in expected.values() if r["Flags"] != 0]
        rows = [r for r in table if r["launch"] == str(k) and r["source"] == "gfxinfo"]
        keys = [(int(r["intended_vsync_ns"]), int(r["frame_completed_ns"])) for r in rows]
        assert not [key for key, n in Counter(keys).items() if n > 1], "a frame was counted twice"
        durations = {(int(r["intended_vsync_ns"]), int(r["frame_completed_ns"])): float(r["frame_ms"])
                     for r in rows if r["frame_ms"]}
        assert durations == pytest.approx({(r["IntendedVsync"], r["FrameCompleted"]):
                                           (r["FrameCompleted"] - r["IntendedVsync"]) / 1e6 for r in normal.values()})
        assert len(rows) == len(expected)  # flagged rows kept in the CSV, without a frame_ms
        summary = platform["per_launch"][k]
        assert (summary["n"], summary["dropped_flagged"]) == (len(normal), len(flagged)) and summary["n"] > 0
        assert summary["period_source"] == "surfaceflinger" and summary["baseline_frames"] == 67 + 80 + 60
        # Android vitals' slow (16.667-700 ms) and frozen (over 700 ms) frames and the overrun against the period,
        # from the printed rows' own timestamps.
        frame_ms = [(r["FrameCompleted"] - r["IntendedVsync"]) / 1e6 for r in normal.values()]
        period_ms = summary["period_ms"]  # the launch's own SurfaceFlinger dumps' period
        slow_from = max(1000 / 60, period_ms) + 1e-5
        assert summary["slow_frames"] == sum(slow_from < f <= 700 + 1e-5 for f in frame_ms)
        assert summary["frozen_frames"] == sum(f > 700 + 1e-5 for f in frame_ms)
        slow_total += summary["slow_frames"]
        for name, q in (("p50", 50), ("p95", 95), ("max", 100)):
            assert summary["overrun_ms"][name] == pytest.approx(np.percentile(frame_ms, q) - period_ms, abs=1e-3)
        total_normal += len(normal)
        total_flagged += len(flagged)

        # SurfaceFlinger: each present once, intervals only between frames next to each other in one dump
        sf_baseline, *sf_later = served(launch, "sf-latency", outputs)
        old = {a for _, a, _ in latency_rows(sf_baseline)}
        presents = sorted({a for text in sf_later for _, a, _ in latency_rows(text)} - old)
        intervals = {b[1]: (b[1] - a[1]) / 1e6 for text in sf_later for a, b in zip(latency_rows(text),
                                                                                     latency_rows(text)[1:])
                     if a[1] not in old}
        sf_rows = [r for r in table if r["launch"] == str(k) and r["source"] == "surfaceflinger"]
        assert [int(r["actual_present_ns"]) for r in sf_rows] == presents
        assert {int(r["actual_present_ns"]): float(r["present_interval_ms"]) for r in sf_rows
                if r["present_interval_ms"]} == pytest.approx(intervals)
        assert summary["n_present"] == len(intervals)
        # every raw dump is kept beside the launch's files
        kept = sorted((project.results / "n7" / "mini.fill.x1" / f"launch-{k}" / "platform").iterdir())
        assert len([p for p in kept if p.name.endswith("-gfxinfo.txt")]) == len(later) + 1, [p.name for p in kept]
    assert overlapping >= 1, "no launch saw two overlapping dumps"
    assert (platform["n"], platform["dropped_flagged"]) == (total_normal, total_flagged)
    assert platform["metrics"]["frame_ms"]["runs"] == 2 and platform["metrics"]["present_interval_ms"]["n"] > 0
    assert platform["metrics"]["slow_frames"] == slow_total > 0, "the recorded frames have slow ones to count"
    assert platform["metrics"]["overrun_ms"]["p50"] == pytest.approx(
        np.median([s["overrun_ms"]["p50"] for s in platform["per_launch"]]), abs=1e-3)

    # The runner's own series is untouched: its CSV, its present source.
    assert scene["present_source"] == "simulated_vsync"
    runner_csv = list(csv.DictReader(open(project.results / scene["samples_file"])))
    assert len(runner_csv) == 2 * (2 + 90) and "frame_completed_ns" not in runner_csv[0]
    assert "Platform frames" in (project.results / "report.html").read_text()


@pytest.mark.acceptance
def test_a_declared_refresh_rate_the_device_contradicts_is_a_warning(project, adb_server, android_dumps):
    android_dumps.serve_dumps(sf_refresh=data("sf-latency-catapult.txt"))
    write_device(project, adb_server, android_dumps, display={"width": 64, "height": 48, "refresh_hz": 62})
    result = project.run("--zbench-device=n7", "-k", "mini.fill.x1", "--zbench-runs=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*warning: device n7*declares display refresh_hz 62, but surfaceflinger reports "
                                 "58.98 Hz (+5.1%)*"])
    document = project.run_json()
    display = document["devices"]["n7"]["display"]
    assert display["refresh_hz"] == 62 and display["refresh_source"] == "inventory"
    assert display["measured_refresh_hz"] == pytest.approx(58.981, abs=1e-3)
    assert "declares display refresh_hz 62" in display["refresh_warning"]
    assert document["scenes"][0]["budget_ms"] == pytest.approx(1000 / 62, abs=1e-4)
    assert document["scenes"][0]["platform_frames"] is None  # no package: nothing collected
    assert not [c for c in android_dumps.dumpsys_calls() if c[0].startswith("gfxinfo")]

    write_device(project, adb_server, android_dumps, display={"width": 64, "height": 48, "refresh_hz": 60})
    quiet = project.run("--zbench-device=n7", "-k", "mini.fill.x1", "--zbench-runs=1")
    quiet.assert_outcomes(passed=1)
    assert "refresh_hz 60" not in quiet.stdout.str()  # 1.7 % off: within what a panel's real rate may be
    assert project.run_json()["devices"]["n7"]["display"]["refresh_warning"] is None


def test_an_app_that_is_not_running_is_said_so_and_the_scene_still_measured(project, adb_server, android_dumps):
    android_dumps.serve_dumps(gfxinfo=[f"No process found for: {PACKAGE}\n"],
                              sf_list=data("sf-list-android12-blast.txt"))
    write_device(project, adb_server, android_dumps, package=PACKAGE, display={"width": 64, "height": 48})
    result = project.run("--zbench-device=n7", "-k", "mini.fill.x1", "--zbench-runs=1")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    platform = document["scenes"][0]["platform_frames"]
    assert platform["n"] == 0 and platform["present_source"] is None and platform["layers"] == []
    details = [i["detail"] for i in platform["issues"]]
    assert any(f"no frame data in any dump of the launch: No process found for: {PACKAGE}" in d for d in details)
    assert any(f"no SurfaceFlinger layer of {PACKAGE}" in d for d in details)
    assert document["devices"]["n7"]["display"]["refresh_source"] == "surfaceflinger"  # the display gave no rate


def test_what_a_launch_could_not_read_is_said(adb_server, android_dumps, write_inventory, tmp_path):
    """Straight through Device and the real adb server: an app whose dumps hold no frame (the recorded dump
    without its PROFILEDATA block), and an inventory layer SurfaceFlinger does not know."""
    from pytest_zbench.host.devices import android_frame_dumps as platform_frames
    from pytest_zbench.host.devices.device import Device
    from pytest_zbench.transports import make_transport

    recorded = data("gfxinfo-framestats-120hz-one-window.txt")
    android_dumps.serve_dumps(gfxinfo=[recorded[:recorded.index("---PROFILEDATA---")]])
    spec = write_inventory({"n7": adb_device_entry(adb_server, android_dumps.serial, tmp_path / "w",
                                                   package=PACKAGE, layer="SurfaceView[com.absent/.Main](BLAST)#0",
                                                   display={"width": 64, "height": 48, "refresh_hz": 60})})["n7"]
    device = Device(spec, make_transport(spec))
    device.open()
    try:
        collection = platform_frames.start(device, tmp_path / "launch-0")
        collection.stop()
        collection.stop()  # idempotent
    finally:
        device.close()
    launch = collection.result
    assert launch is not None and launch.dumps == 1 and launch.layer_source == "inventory"
    assert launch.gfx.all_frames == [] and launch.sf.frames == []
    assert launch.refresh_period_ns == 16666667  # an unknown layer still prints the period
    assert any("HWUI recorded no frame of com.android.settings" in i for i in launch.issues)
    assert any("layer 'SurfaceView[com.absent/.Main](BLAST)#0' presented no frame" in i for i in launch.issues)
    calls = [args for args, _ in android_dumps.dumpsys_calls()]
    latency = "SurfaceFlinger --latency SurfaceView[com.absent/.Main](BLAST)#0"
    assert calls == ["SurfaceFlinger --latency",  # the refresh rate, when the device was opened
                     f"gfxinfo {PACKAGE} framestats reset", latency, f"gfxinfo {PACKAGE} framestats", latency]
