"""The platform series of a scene from real dumps: per-launch summaries, the CSV beside the runner's, the
run.json section (valid against the shipped schema), jank against the refresh period."""

from __future__ import annotations

import csv

import jsonschema
import pytest

from pytest_zbench.host.devices.android_frame_dumps import dump_interval_s
from pytest_zbench.host.devices.android_frame_parsers import PlatformLaunch
from pytest_zbench.host.measure.android_frame_series import PLATFORM_COLUMNS, PlatformSeries
from pytest_zbench.host.run_record import load_schema
from tests.remote.android_dumps import data, gfx_rows, latency_rows, latency_windows, plausible, ring_windows


def collected(gfx_text: str, sf_text: str | None, layer: str | None = "SurfaceView[x/x](BLAST)#0") -> PlatformLaunch:
    launch = PlatformLaunch(package="com.android.settings", layer=layer, layer_source="inventory", interval_s=1.0)
    for dump in ring_windows(gfx_text, -1, 60, 30):
        launch.gfx.add(dump)
    if sf_text is not None:
        for dump in latency_windows(sf_text, 10, 5):
            launch.sf.add(dump)
    launch.dumps = 3
    return launch


def test_dump_interval_follows_the_refresh_rate():
    assert dump_interval_s(60.0) == pytest.approx(1.0)
    assert dump_interval_s(120.0) == pytest.approx(0.5)
    assert dump_interval_s(1e9 / 16954612) == pytest.approx(0.5 * 120 * 0.016954612)
    assert dump_interval_s(1000.0) == pytest.approx(0.1)  # never more often than every 100 ms


def test_launch_summary_csv_and_run_json_section(tmp_path):
    gfx = data("gfxinfo-framestats-settings-three-windows.txt")
    sf = data("sf-latency-blast-surfaceview.txt")
    series = PlatformSeries.beside(tmp_path / "n7" / "mini.fill.x1.frames.csv", "com.android.settings")
    assert series.path.name == "mini.fill.x1.platform.frames.csv"
    first = series.add(0, collected(gfx, sf), device_refresh_hz=60.0)
    series.add(1, collected(gfx, None, layer=None), device_refresh_hz=60.0)

    rows = [r for r in gfx_rows(gfx) if r["FrameCompleted"] > 0]
    normal = [(r["FrameCompleted"] - r["IntendedVsync"]) / 1e6 for r in rows if r["Flags"] == 0 and plausible(r)]
    period = 16.666667  # SurfaceFlinger's period in launch 0
    assert first.period_source == "surfaceflinger" and first.period_ms == pytest.approx(period)
    assert first.n == len(normal) and first.dropped_flagged == sum(1 for r in rows if r["Flags"])
    assert first.dropped_invalid == 2  # the two garbage FrameCompleted rows of the recording
    assert first.jank == sum(1 for ms in normal if ms > period + 1e-5)
    assert first.severe_jank == sum(1 for ms in normal if ms > 2 * period + 1e-5)
    presents = [a for _, a, _ in latency_rows(sf)]
    intervals = [(b - a) / 1e6 for a, b in zip(presents, presents[1:])]
    assert first.n_present == len(intervals) == 24
    assert first.present_jank == sum(1 for ms in intervals if ms > 1.5 * period)  # every frame of a 24 fps game
    assert first.present_severe_jank == sum(1 for ms in intervals if ms > 2.5 * period)
    assert first.frame_ms is not None and first.frame_ms.p50 == pytest.approx(sorted(normal)[len(normal) // 2], abs=5)

    with open(series.path, newline="") as handle:
        table = list(csv.DictReader(handle))
    assert tuple(table[0]) == PLATFORM_COLUMNS
    launch0 = [r for r in table if r["launch"] == "0"]
    gfx_csv = [r for r in launch0 if r["source"] == "gfxinfo"]
    assert len(gfx_csv) == len(rows)  # flagged and garbage ones too, without a frame_ms
    assert sorted(float(r["frame_ms"]) for r in gfx_csv if r["frame_ms"]) == pytest.approx(sorted(normal))
    assert all(r["frame_ms"] == "" for r in gfx_csv if r["flags"] != "0")
    for r in gfx_csv:
        if r["frame_ms"]:
            assert float(r["frame_ms"]) == pytest.approx((int(r["frame_completed_ns"]) - int(r["intended_vsync_ns"]))
                                                         / 1e6, abs=1e-6)
    sf_csv = [r for r in launch0 if r["source"] == "surfaceflinger"]
    assert [int(r["actual_present_ns"]) for r in sf_csv] == presents
    assert [float(r["present_interval_ms"]) for r in sf_csv if r["present_interval_ms"]] == pytest.approx(intervals)
    assert not [r for r in table if r["launch"] == "1" and r["source"] == "surfaceflinger"]

    entry = series.entry(tmp_path)
    assert entry["source"] == "gfxinfo" and entry["present_source"] == "surfaceflinger"
    assert entry["n"] == 2 * len(normal) and entry["dropped_flagged"] == 2 * first.dropped_flagged
    assert entry["samples_file"] == "n7/mini.fill.x1.platform.frames.csv"
    assert entry["per_launch"][1]["period_source"] == "device" and entry["per_launch"][1]["n_present"] == 0
    assert entry["metrics"]["frame_ms"]["runs"] == 2 and entry["metrics"]["present_interval_ms"]["runs"] == 1
    schema = load_schema()
    jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/platform_frames"}).validate(entry)


def test_a_later_series_starts_its_csv_afresh(tmp_path):
    stale = tmp_path / "s.platform.frames.csv"
    stale.write_text("launch,source\n9,stale\n")
    series = PlatformSeries(stale, "com.android.settings")
    series.add(0, collected(data("gfxinfo-framestats-120hz-one-window.txt"), None), device_refresh_hz=120.0)
    text = stale.read_text()
    assert "stale" not in text and text.startswith(",".join(PLATFORM_COLUMNS))
