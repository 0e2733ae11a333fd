"""Sustained runs (docs/sustained.md): the statistics on synthetic series, the job and clock rules on plain
values, and one short sustained session end to end on the reference runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_zbench.errors import UsageError
from pytest_zbench.host.measure.sustained import analyse, clock_offset_ns, coverage, sustained_job
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.protocol import FrameTable, Job, ProtocolError
from pytest_zbench.settings import OPTIONS, build_settings


def ar1(n: int, rho: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Autocorrelated noise, as frame times are: a slow frame tends to follow a slow frame."""
    out = np.empty(n)
    out[0] = rng.normal(0, sigma)
    shocks = rng.normal(0, sigma * np.sqrt(1 - rho**2), n)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + shocks[i]
    return out


def series(seconds: float, fps: float, level, seed: int, rho: float = 0.8, sigma: float = 0.06):
    rng = np.random.default_rng(seed)
    times = np.arange(0, seconds, 1 / fps)
    return times, level(times) * (1 + ar1(times.size, rho, sigma, rng))


def test_a_step_halfway_is_drift_with_its_ratio_and_the_time_it_settled():
    times, values = series(120, 60, lambda t: np.where(t < 60, 10.0, 13.0), seed=1)
    stats = analyse(times, values)
    assert stats.window_s == pytest.approx(24.0, abs=0.01)  # a fifth of the run, under the 30 s cap
    assert stats.ratio == pytest.approx(1.3, rel=0.03)
    assert stats.drift and 1.2 < stats.ci[0] < stats.ratio < stats.ci[1] < 1.4
    assert stats.steady_s is not None and 54 <= stats.steady_s <= 66
    assert len(stats.trajectory) <= 300 and stats.trajectory[0][0] == 0.0


def test_throttling_that_settles_reaches_steady_state_after_its_time_constant():
    times, values = series(600, 30, lambda t: 10.0 * (1 + 0.4 * (1 - np.exp(-t / 40))), seed=2)
    stats = analyse(times, values)
    assert stats.window_s == 30.0
    # Burst: the first 30 s, already warming (about 11.1 ms); sustained: the settled 14 ms.
    assert stats.drift and 1.2 < stats.ci[0] < stats.ratio < stats.ci[1] < 1.33
    # Within 3 % of the final level after about 3.5 time constants (e^-3.5 * 0.4 / 1.4 = 0.9 %, plus noise).
    assert stats.steady_s is not None and 80 <= stats.steady_s <= 200


def test_a_run_still_drifting_at_its_end_has_no_steady_state():
    times, values = series(120, 60, lambda t: 10.0 + 0.05 * t, seed=3)
    stats = analyse(times, values)
    assert stats.drift and stats.steady_s is None


def test_stationary_noise_is_not_called_drift_in_most_runs():
    # The interval covers 1 in most runs of a stationary series; the rate itself is measured by
    # bench/sustained_false_alarm.py. Twenty seeded runs: a method ignoring the autocorrelation (a plain
    # bootstrap of frames) calls drift in about half of them.
    calls = [analyse(*series(60, 60, lambda t: np.full_like(t, 10.0), seed=s)).drift for s in range(20)]
    assert sum(calls) <= 3


def test_unknown_values_are_left_out():
    times, values = series(60, 60, lambda t: np.full_like(t, 10.0), seed=4)
    values[::3] = np.nan
    stats = analyse(times, values)
    assert np.isfinite(stats.ratio) and np.isfinite(stats.ci).all()


def test_sustained_job_caps_frames_above_the_duration_and_round_trips():
    job = Job(backend="software", mode="paced", refresh_hz=60.0, warmup_frames=5, frames=30, capture=(0,),
              seed=1, scene={"id": "s", "params": {}, "width": 8, "height": 8, "features": [], "ops": []},
              complexity=tuple([1.0] * 35))
    long = sustained_job(job, 2.0)
    assert long.duration_s == 120.0 and long.frames >= 120 * 60
    assert long.complexity is not None and len(long.complexity) == long.total_frames
    assert Job.from_dict(json.loads(long.to_json())) == long
    uncapped = sustained_job(Job(**{**job.__dict__, "mode": "uncapped", "complexity": None}), 0.5)
    assert uncapped.frames >= 30 * 2000


@pytest.mark.parametrize("bad", [0, -1, True, "10", float("inf")])
def test_a_bad_duration_in_a_job_is_refused(bad):
    raw = json.loads(Job(backend="software", mode="paced", refresh_hz=60.0, warmup_frames=0, frames=1,
                         capture=(), seed=1, scene={"id": "s", "params": {}, "width": 8, "height": 8,
                                                    "features": [], "ops": []}).to_json())
    raw["duration_s"] = bad
    with pytest.raises(ProtocolError, match="duration_s"):
        Job.from_dict(raw)


def test_clock_offset_is_the_smallest_lag_of_the_progress_lines():
    host_minus_device = 5_000_000_000
    rows = [{"frame": f, "phase": "measure", "t_start_ns": 1_000_000 * 10 * f, "cpu_ms": 4.0} for f in range(10)]
    # Line "frame d done" arrives 0.3 ms to 9 ms after frame d-1 ended, on the host's clock.
    lags = {3: 9_000_000, 6: 300_000, 10: 2_000_000}
    progress = [(rows[d - 1]["t_start_ns"] + 4_000_000 + host_minus_device + lag, d) for d, lag in lags.items()]
    offset, how = clock_offset_ns(progress, FrameTable(rows=rows), 0, None)
    assert how == "progress_lines" and offset == host_minus_device + 300_000
    assert clock_offset_ns([], FrameTable(rows=rows), 7_000, 2_000) == (5_000, "process_start")
    assert clock_offset_ns([], FrameTable(rows=rows), 7_000, None) == (0, "host_clock")


def test_coverage_reports_the_widest_gap_including_the_ends():
    samples = [{"t_s": t} for t in (-1.0, 0.5, 1.5, 2.5, 4.9)]
    assert coverage(samples, 5.0, 1.0) == {"samples": 5, "first_s": -1.0, "last_s": 4.9, "max_gap_s": 2.4,
                                           "at_interval": False}
    assert coverage(samples[:4] + [{"t_s": 3.5}], 4.0, 1.0)["at_interval"] is True


def _settings(**given):
    flags = {o.name: o for o in OPTIONS}
    return build_settings(lambda option: given.get(option.name) if option in flags.values() else None,
                          __import__("pathlib").Path("."), quick=False)


def test_settings_take_minutes_and_refuse_what_cannot_be_sustained():
    settings = _settings(sustained_min="0.5", sustained_interval_s="2")
    assert (settings.sustained_min, settings.sustained_interval_s) == (0.5, 2.0)
    with pytest.raises(UsageError, match="--zbench-sustained: 0.0"):
        _settings(sustained_min="0")
    with pytest.raises(UsageError, match="--zbench-sustained-interval"):
        _settings(sustained_min="1", sustained_interval_s="-3")
    with pytest.raises(UsageError, match="cannot be combined with --zbench-ab"):
        _settings(sustained_min="1", ab="python -m other")


def test_a_short_sustained_session_end_to_end(project):
    result = project.run("--zbench-device=local", "-k", "mini.fill.x1", "--zbench-sustained=0.1",
                         "--zbench-sustained-interval=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*sustained mini.fill.x1 on local: frame_ms burst * sustained * ratio *"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = document["scenes"][0]
    assert scene["runs"] == 1 and scene["issues"] == [] and scene["history"] is None
    sustained = scene["sustained"]
    # The runner stopped at the duration (6 s from the first measured frame), not at the frame cap.
    assert sustained["ended_by"] == "duration" and sustained["frame_cap"] > 6 * 60
    assert 4.0 < sustained["measured_s"] < 6.0 and scene["measured_frames"] == sustained["measured_frames"]
    assert sustained["clock"] == "progress_lines"
    # Samples from before the first frame to past the last, never more than 1.5 intervals apart.
    cover = sustained["coverage"]
    assert cover["at_interval"] and cover["first_s"] <= 0.0 and cover["last_s"] >= sustained["measured_s"] - 1.5
    assert all("load_avg_1m" in c for c in sustained["conditions"])  # linux's probe, sampled during the launch
    frame = sustained["metrics"]["frame_ms"]
    assert frame["ci"][0] <= frame["ratio"] <= frame["ci"][1] and frame["burst_ms"] > 0
    # Cold start from the process's start, beside the first frame's own cost.
    cold = scene["cold"]["time_to_first_frame_ms"]
    assert cold["source"] == ["proc_stat"] and cold["per_launch"] == [cold["median"]]
    assert cold["median"] > scene["cold"]["first_frame_ms"]["median"]
    # The reference runner's counters, summarised per scene (their values are checked in tests/runner).
    counters = scene["metrics"]["counters"]
    assert {"cpu_record_ms", "cpu_flush_ms", "cpu_submit_ms", "state_changes", "rt_switches", "pixels_drawn",
            "alloc_bytes", "minor_faults"} <= set(counters)
    assert counters["cpu_record_ms"] + counters["cpu_flush_ms"] + counters["cpu_submit_ms"] == pytest.approx(
        scene["metrics"]["cpu_ms"]["mean"], rel=0.05)
    report = (project.results / "report.html").read_text()
    assert "sustained: frame time and temperature over time" in report
    overdraw = counters["pixels_drawn"] / (64 * 48)  # the scene's rect over the 64x48 surface
    assert "per frame (mean): draw_calls 1 · state_changes 0" in report
    assert f"(overdraw {overdraw:.2f}x the surface)" in report


def test_a_scene_file_asks_for_sustained_minutes_and_a_bad_value_names_the_key(tmp_path):
    from pytest_zbench.scenes import SceneError, load_scene_file

    path = tmp_path / "hot.yaml"
    path.write_text("family: hot\ndefaults: {sustained: 10}\nscenes:\n"
                    "  - {id: hot.a, ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: '#000000'}]}\n"
                    "  - {id: hot.b, sustained: null, ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: '#000000'}]}\n")
    assert [c.sustained_min for c in load_scene_file(path)] == [10.0, None]
    path.write_text(path.read_text().replace("sustained: null", "sustained: soon"))
    with pytest.raises(SceneError, match="sustained must be a positive number of minutes"):
        load_scene_file(path)


def test_time_to_first_frame_counts_from_the_process_start_to_the_first_frame_end(tmp_path):
    from pytest_zbench.host.devices.device import LaunchOutcome
    from pytest_zbench.host.measure.cold_start import cold_start_entry, time_to_first_frame_ms
    from pytest_zbench.protocol import RunResult

    def launch(start, rows, source="proc_stat"):
        extra = {} if start is None else {"process_start_ns": start, "process_start_source": source}
        return LaunchOutcome(index=0, exit_code=0, timed_out=False, wall_s=1.0, frames=FrameTable(rows=rows),
                             result=RunResult(extra=extra), captures={}, local_dir=tmp_path)

    first = [{"frame": 0, "phase": "warmup", "t_start_ns": 5_000_000_000, "cpu_ms": 12.5}]
    assert time_to_first_frame_ms(launch(4_000_000_000, first)) == 1012.5
    assert time_to_first_frame_ms(launch(None, first)) is None
    assert time_to_first_frame_ms(launch(6_000_000_000, first)) is None  # not this process's start
    launches = [launch(4_000_000_000, first), launch(4_500_000_000, first), launch(None, first)]
    assert cold_start_entry(launches) == {"median": 762.5, "max": 1012.5, "per_launch": [1012.5, 512.5, None],
                                          "source": ["proc_stat"]}
