"""Statistics checked against independent numpy/scipy references and hand-built series."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_zbench.stats import (
    HIST_EDGES_MS,
    Distribution,
    LaunchSamples,
    distribution,
    frame_categories,
    frame_times,
    jank_counts,
    noise_floor,
    summarize_launch,
    summarize_scene,
)

BUDGET = 16.67


def lognormal(seed: int, n: int = 5000) -> np.ndarray:
    # Heavy right tail, like real frame times: most near 8 ms, a few past 100 ms.
    return np.random.default_rng(seed).lognormal(mean=np.log(8.0), sigma=0.8, size=n)


def bimodal(seed: int, n: int = 4000) -> np.ndarray:
    # Two populations (e.g. an atlas hit/miss): the mean sits where almost no frame is.
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(6.0, 0.5, n // 2), rng.normal(30.0, 2.0, n - n // 2)])


def samples(cpu, gpu=None, interval=None, *, source="timer_query", mode="paced", warmup=(), counters=None,
            partial=False) -> LaunchSamples:
    cpu = np.asarray(cpu, dtype=float)
    nan = np.full(cpu.size, np.nan)
    gpu = nan if gpu is None else gpu
    return LaunchSamples(
        cpu_ms=cpu, gpu_ms=gpu, gpu_source=source if np.isfinite(np.asarray(gpu, float)).any() else None,
        interval_ms=nan if interval is None else interval, warmup_cpu_ms=np.asarray(warmup, float),
        counters=counters or {}, mode=mode, partial=partial,
    )


def assert_json_safe(obj) -> None:
    json.dumps(obj, allow_nan=False)


# --- distribution -------------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [lognormal(1), lognormal(2, 37), bimodal(3), bimodal(4, 11)],
                         ids=["lognormal", "lognormal-small", "bimodal", "bimodal-small"])
def test_distribution_matches_numpy_and_scipy(data):
    d = distribution(data)
    assert d is not None and d.n == data.size
    ref = np.percentile(data, [50, 90, 95, 99, 99.9], method="linear")
    np.testing.assert_allclose([d.p50, d.p90, d.p95, d.p99, d.p999], ref, rtol=1e-12)
    assert d.max == data.max() and d.min == data.min()
    assert d.mean == pytest.approx(data.mean(), rel=1e-12)
    assert d.stddev == pytest.approx(np.std(data, ddof=1), rel=1e-12)
    assert d.mad == pytest.approx(sps.median_abs_deviation(data, scale=1), rel=1e-12)
    ref_hist, _ = np.histogram(data, bins=np.array(HIST_EDGES_MS))
    assert d.hist == tuple(int(c) for c in ref_hist)
    assert sum(d.hist) == d.n


def test_distribution_hand_computed():
    d = distribution([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert (d.p50, d.p90, d.min, d.max, d.mean) == (5.5, 9.1, 1, 10, 5.5)
    assert d.p999 == pytest.approx(9.991)
    assert d.mad == 2.5  # |x - 5.5| = 0.5, 0.5, 1.5, 1.5, ... → median 2.5 (unscaled)


def test_histogram_bucket_edges_are_half_open():
    # Each value sits exactly on an edge, so it belongs to the bucket that starts there.
    d = distribution([0, 4, 8, 12, 16.7, 25, 33, 50, 100, 1e6, 3.999, -0.5])
    assert d.hist == (2, 1, 1, 1, 1, 1, 1, 1, 2)
    assert d.n == 12  # a negative (garbage) time is counted in n but falls in no bucket, as in np.histogram


def test_distribution_drops_nan_none_and_inf():
    d = distribution([np.nan, 2.0, None, 4.0, np.inf, -np.inf])
    ref = distribution([2.0, 4.0])
    assert d == ref and d.n == 2 and d.mean == 3.0


@pytest.mark.parametrize("empty", [[], [np.nan, np.nan], [None], np.array([])])
def test_distribution_of_nothing_is_none(empty):
    assert distribution(empty) is None


def test_single_value_has_zero_spread():
    d = distribution([7.5])
    assert (d.n, d.stddev, d.mad, d.p50, d.p999) == (1, 0.0, 0.0, 7.5, 7.5)


def test_distribution_to_dict_rounds_and_is_json_safe():
    out = distribution(lognormal(5)).to_dict()
    assert_json_safe(out)
    assert set(out) == set(Distribution.__dataclass_fields__) | {"unreliable"}
    assert all(v == round(v, 4) for k, v in out.items() if isinstance(v, float))
    assert isinstance(out["hist"], list) and len(out["hist"]) == len(HIST_EDGES_MS) - 1


# --- launches -----------------------------------------------------------------------------------------

def test_jank_boundaries_paced():
    interval = [16.67, 16.68, 10.0, 33.34, 33.35, np.nan, 100.0]
    s = summarize_launch(samples(np.ones(7), interval=interval), BUDGET)
    # 16.67 is on budget, 16.68 is over; 33.34 is exactly 2x (jank, not severe); NaN is not a frame time.
    assert s.jank == 4  # 16.68, 33.34, 33.35, 100
    assert s.severe_jank == 2  # 33.35, 100
    assert s.jank_share == pytest.approx(4 / 6)
    assert s.longest_stall_ms == 100.0
    assert s.frame_ms.n == 6 and s.n_frames == 7


def test_slow_and_frozen_frames_use_android_vitals_boundaries():
    # 16.666667 is one 60 Hz period as a runner writes it: on time, not slow; 700 is the last slow frame.
    frames = [16.666667, 16.68, 33.4, 700.0, 700.01, 6000.0, np.nan, 8.0]
    assert frame_categories(frames, BUDGET) == (3, 2)
    assert frame_categories(frames, 8.333) == (3, 2)  # 120 Hz: a 12 ms frame is jank, not slow
    assert frame_categories([12.0], 8.333) == (0, 0)
    # A 58.98 Hz panel's one refresh (16.955 ms) is on time; two are slow.
    assert frame_categories([16.954612, 16.954612, 33.909224], 16.954612) == (1, 0)
    assert frame_categories([], BUDGET) == (0, 0)


def test_slow_frozen_and_overrun_per_launch_and_per_scene():
    first = [10.0, 20.0, 30.0, 800.0, 16.0]
    second = [12.0, 14.0, 18.0, 13.0]
    launches = [summarize_launch(samples(np.ones(len(f)), interval=f), BUDGET) for f in (first, second)]
    assert [(l.slow_frames, l.frozen_frames) for l in launches] == [(2, 1), (1, 0)]
    # The overrun is the frame time less the budget: its percentiles are numpy's of the shifted frames.
    for launch, frames in zip(launches, (first, second)):
        for name, q in (("p50", 50), ("p95", 95), ("min", 0)):
            assert getattr(launch.overrun_ms, name) == pytest.approx(np.percentile(np.array(frames) - BUDGET, q),
                                                                     abs=1e-9)
    scene = summarize_scene(launches, BUDGET).to_dict()
    assert (scene["slow_frames"], scene["frozen_frames"]) == (3, 1)
    expected_p50 = np.median([np.median(np.array(f) - BUDGET) for f in (first, second)])
    assert scene["overrun_ms"]["p50"] == pytest.approx(expected_p50, abs=1e-4)
    assert scene["overrun_ms"]["min"] == pytest.approx(10.0 - BUDGET, abs=1e-4)
    assert "hist" not in scene["overrun_ms"] and "noise_floor" not in scene["overrun_ms"]
    run = launches[0].to_dict()
    assert (run["slow_frames"], run["frozen_frames"]) == (2, 1) and run["overrun_ms"]["max"] == pytest.approx(800 - BUDGET)
    assert_json_safe(scene)


def test_paced_frame_times_are_present_intervals():
    s = samples(cpu=[5.0, 5.0], gpu=[30.0, 30.0], interval=[16.6, 16.7])
    np.testing.assert_array_equal(frame_times(s), [16.6, 16.7])
    assert summarize_launch(s, BUDGET).jank == 1


def test_uncapped_frame_times_are_the_frame_to_frame_interval():
    """Not max(cpu_ms, gpu_ms): a GPU backend's cpu_ms ends at the submit and its timer may see one tile, so
    the frame's real cost is the interval between frame ends (2.49 ms where max(cpu, gpu) read 0.13 ms)."""
    s = samples(cpu=[0.13, 0.12, 0.14, np.nan, 0.13], gpu=[0.01, 0.02, np.nan, 0.01, np.nan],
                interval=[2.49, 2.51, 20.0, 40.0, np.nan], mode="uncapped")
    np.testing.assert_array_equal(frame_times(s), [2.49, 2.51, 20.0, 40.0, np.nan])
    summary = summarize_launch(s, BUDGET)
    assert (summary.jank, summary.severe_jank, summary.longest_stall_ms) == (2, 1, 40.0)
    assert summary.jank_share == pytest.approx(2 / 4)
    assert summary.frame_ms.p50 == pytest.approx(np.median([2.49, 2.51, 20.0, 40.0]))
    assert summary.fps == pytest.approx(4 * 1000 / (2.49 + 2.51 + 20.0 + 40.0))


def test_throughput_is_only_for_uncapped_launches():
    paced = summarize_launch(samples(np.ones(3), interval=[16.67] * 3), BUDGET)
    assert paced.fps is None and paced.to_dict()["fps"] is None
    unknown = summarize_launch(samples(np.ones(2), interval=[np.nan, np.nan], mode="uncapped"), BUDGET)
    assert unknown.fps is None
    runs = [summarize_launch(samples(np.ones(4), interval=[i] * 4, mode="uncapped"), BUDGET) for i in (1.0, 2.0, 4.0)]
    assert summarize_scene(runs, BUDGET).fps == pytest.approx(500.0)  # the median launch: 2 ms a frame


def test_tail_percentiles_from_too_few_frames_are_flagged_unreliable():
    assert distribution(lognormal(1, 99)).unreliable == ["p99", "p999"]
    assert distribution(lognormal(1, 100)).unreliable == ["p999"]
    assert distribution(lognormal(1, 1000)).unreliable == []
    assert distribution(lognormal(1, 60)).to_dict()["unreliable"] == ["p99", "p999"]
    runs = [summarize_launch(samples(lognormal(s, n), interval=bimodal(s, n)), BUDGET) for s, n in ((1, 1200), (2, 150))]
    assert summarize_scene(runs, BUDGET).metrics["cpu_ms"]["unreliable"] == ["p999"]  # any launch's counts


def test_percentiles_are_numpys_linear_interpolation():
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    d = distribution(values)
    assert d.p50 == 3.0 and d.p90 == pytest.approx(4.0 + 0.6 * 6.0)  # rank (n - 1) q = 3.6
    assert d.p95 == pytest.approx(np.percentile(values, 95, method="linear"))


def test_launch_distributions_use_measured_frames_only():
    cpu, gpu, interval = lognormal(6, 600), lognormal(7, 600), bimodal(8, 600)
    s = summarize_launch(samples(cpu, gpu, interval, warmup=[500.0, 80.0, 20.0]), BUDGET)
    assert s.cpu_ms == distribution(cpu)  # warmup's 500 ms is not in it
    assert s.gpu_ms == distribution(gpu) and s.interval_ms == distribution(interval)
    assert s.frame_ms == distribution(interval)
    assert (s.first_frame_ms, s.warmup_ms) == (500.0, 600.0)
    assert s.jank == int(np.sum(interval > BUDGET)) and s.severe_jank == int(np.sum(interval > 2 * BUDGET))


def test_cold_start_without_warmup_and_with_unknown_warmup_frame():
    s = summarize_launch(samples([12.0, 3.0], interval=[16, 16]), BUDGET)
    assert (s.first_frame_ms, s.warmup_ms) == (12.0, None)
    s = summarize_launch(samples([3.0], interval=[16], warmup=[np.nan, 9.0]), BUDGET)
    assert (s.first_frame_ms, s.warmup_ms) == (None, None)  # a partial warmup sum would undercount


def test_counters_are_means_over_known_frames():
    s = summarize_launch(samples([1.0] * 4, interval=[16] * 4,
                                 counters={"draw_calls": [10, 20, np.nan, 30], "atlas_misses": [np.nan] * 4}), BUDGET)
    assert s.counters == {"draw_calls": 20.0}


def test_empty_launch():
    s = summarize_launch(samples([], interval=[], partial=True), BUDGET)
    assert s.n_frames == 0 and s.cpu_ms is None and s.frame_ms is None
    assert (s.jank, s.severe_jank, s.jank_share, s.longest_stall_ms) == (0, 0, None, None)
    out = s.to_dict()
    assert_json_safe(out)
    assert out["partial"] is True and out["jank_share"] is None


def test_launch_samples_validate_and_freeze():
    with pytest.raises(ValueError, match="one value per measured frame"):
        samples([1.0, 2.0], interval=[16.0])
    with pytest.raises(ValueError, match="mode"):
        samples([1.0], interval=[16.0], mode="vsync")
    with pytest.raises(ValueError, match="gpu_source"):
        LaunchSamples(cpu_ms=[1.0], gpu_ms=[2.0], gpu_source=None, interval_ms=[16.0], warmup_cpu_ms=[],
                      counters={}, mode="paced")
    caller = np.array([1.0, 2.0])
    s = samples(caller, interval=[16.0, 16.0])
    caller[0] = 99.0  # the launch keeps its own copy
    assert s.cpu_ms[0] == 1.0
    with pytest.raises(ValueError):
        s.cpu_ms[0] = 5.0


@pytest.mark.parametrize("budget", [0, -1, math.nan, math.inf])
def test_bad_budget(budget):
    with pytest.raises(ValueError, match="budget_ms"):
        summarize_launch(samples([1.0], interval=[16.0]), budget)


# --- scenes -------------------------------------------------------------------------------------------

def launches(n: int = 5, *, mode="paced", sources=None) -> list:
    out = []
    for i in range(n):
        cpu = lognormal(100 + i, 300) * (1 + 0.5 * i)  # distinct medians, so ordering is observable
        gpu = lognormal(200 + i, 300)
        interval = bimodal(300 + i, 300)
        source = sources[i] if sources else "timer_query"
        out.append(summarize_launch(samples(cpu, gpu, interval, source=source, mode=mode, warmup=[40.0 + i, 5.0],
                                            counters={"draw_calls": [3.0 + i] * 300}, partial=(i == 3)), BUDGET))
    return out


def test_scene_is_a_statistic_of_launch_statistics():
    runs = launches()
    scene = summarize_scene(runs, BUDGET)
    assert (scene.runs, scene.partial_runs, scene.gpu_source) == (5, 1, "timer_query")
    for name in ("cpu_ms", "gpu_ms", "interval_ms", "frame_ms"):
        m, dists = scene.metrics[name], [getattr(r, name) for r in runs]
        for stat in ("p50", "p90", "p95", "p99", "p999", "mean", "stddev", "mad"):
            assert m[stat] == np.median([getattr(d, stat) for d in dists]), (name, stat)
        assert m["max"] == max(d.max for d in dists) and m["min"] == min(d.min for d in dists)
        assert m["hist"] == list(np.sum([d.hist for d in dists], axis=0))
        assert (m["n"], m["runs"]) == (1500, 5)
    # The scene p50 is the median of medians, which is not the p50 of the pooled frames here.
    pooled = np.concatenate([lognormal(100 + i, 300) * (1 + 0.5 * i) for i in range(5)])
    assert scene.metrics["cpu_ms"]["p50"] != pytest.approx(np.median(pooled), rel=1e-6)
    assert scene.jank == sum(r.jank for r in runs) and scene.severe_jank == sum(r.severe_jank for r in runs)
    assert scene.jank_share == pytest.approx(scene.jank / 1500)
    assert scene.longest_stall_ms == max(r.longest_stall_ms for r in runs)
    assert scene.cold == {"first_frame_ms": {"median": 42.0, "max": 44.0}, "warmup_ms": {"median": 47.0, "max": 49.0}}
    assert scene.counters == {"draw_calls": 5.0}
    assert any("partial" in note and "runs 3" in note for note in scene.notes)
    assert scene.per_run[3]["partial"] is True


def test_per_run_medians_keep_launch_order():
    runs = launches()
    scene = summarize_scene(runs, BUDGET)
    assert scene.per_run_medians["cpu_ms"] == [r.cpu_ms.p50 for r in runs]
    assert scene.per_run_medians["cpu_ms"] == sorted(scene.per_run_medians["cpu_ms"])  # built increasing
    reversed_scene = summarize_scene(runs[::-1], BUDGET)
    assert reversed_scene.per_run_medians["cpu_ms"] == scene.per_run_medians["cpu_ms"][::-1]
    assert [r["cpu_ms"]["p50"] for r in scene.per_run] == [round(r.cpu_ms.p50, 4) for r in runs]


def test_gpu_sources_disagreeing_drop_gpu_metrics():
    sources = ["timer_query", "timer_query", "finish_bracket", "timer_query", "timer_query"]
    scene = summarize_scene(launches(sources=sources), BUDGET)
    assert scene.gpu_source is None
    assert "gpu_ms" not in scene.metrics and "gpu_ms" not in scene.per_run_medians
    assert "frame_ms" in scene.metrics  # paced frame times are intervals: no gpu in them
    assert any("gpu_source" in n and "finish_bracket in runs 2" in n for n in scene.notes)
    assert [r["gpu_source"] for r in scene.per_run] == sources  # each run keeps its own, labelled


def test_gpu_sources_disagreeing_in_uncapped_mode_keep_frame_ms():
    # frame_ms is the interval in both modes: no GPU source is in it.
    scene = summarize_scene(launches(2, mode="uncapped", sources=["timer_query", "cmdbuf_time"]), BUDGET)
    assert set(scene.metrics) == {"cpu_ms", "interval_ms", "frame_ms"}
    assert scene.jank == sum(r.jank for r in launches(2, mode="uncapped", sources=["timer_query", "cmdbuf_time"]))


def test_launch_without_gpu_does_not_break_the_common_source():
    runs = launches(3)
    no_gpu = summarize_launch(samples(lognormal(9, 300), interval=bimodal(10, 300)), BUDGET)
    scene = summarize_scene([runs[0], no_gpu, runs[1], runs[2]], BUDGET)
    assert scene.gpu_source == "timer_query"
    assert scene.metrics["gpu_ms"]["runs"] == 3 and scene.metrics["cpu_ms"]["runs"] == 4
    assert scene.per_run_medians["gpu_ms"][1] is None
    assert scene.metrics["gpu_ms"]["p50"] == np.median([r.gpu_ms.p50 for r in runs])


def test_noise_floor():
    medians = [10.0, 10.5, 9.8, 10.2, 12.0]
    ref = 1.4826 * sps.median_abs_deviation(medians, scale=1) / np.median(medians)
    assert noise_floor(medians) == pytest.approx(ref)
    assert noise_floor(medians + [None, np.nan]) == pytest.approx(ref)
    assert noise_floor([10.0, 10.0, 10.0]) == 0.0
    with pytest.raises(ValueError, match="at least 2"):
        noise_floor([10.0, None])
    with pytest.raises(ValueError, match="zero median"):
        noise_floor([0.0, 0.0, 1.0])
    scene = summarize_scene(launches(), BUDGET)
    assert scene.metrics["cpu_ms"]["noise_floor"] == pytest.approx(noise_floor(scene.per_run_medians["cpu_ms"]))
    assert summarize_scene(launches(1), BUDGET).metrics["cpu_ms"]["noise_floor"] is None


def test_empty_scene():
    scene = summarize_scene([], BUDGET)
    assert (scene.runs, scene.metrics, scene.per_run_medians, scene.jank) == (0, {}, {}, 0)
    assert scene.jank_share is None and scene.longest_stall_ms is None and scene.gpu_source is None
    assert scene.cold["first_frame_ms"] == {"median": None, "max": None}
    assert_json_safe(scene.to_dict())


def test_scene_rejects_mixed_modes_and_budgets():
    with pytest.raises(ValueError, match="mix modes"):
        summarize_scene(launches(1) + launches(1, mode="uncapped"), BUDGET)
    with pytest.raises(ValueError, match="summarised against"):
        summarize_scene(launches(2), 8.33)


def test_scene_to_dict_is_json_safe_and_rounded():
    runs = launches() + [summarize_launch(samples([], interval=[], partial=True), BUDGET)]
    out = summarize_scene(runs, BUDGET).to_dict()
    text = json.dumps(out, allow_nan=False)
    assert "NaN" not in text and "Infinity" not in text
    assert out["metrics"]["cpu_ms"]["p50"] == round(out["metrics"]["cpu_ms"]["p50"], 4)
    assert out["per_run"][-1]["cpu_ms"] is None and out["per_run_medians"]["cpu_ms"][-1] is None
    assert out["partial_runs"] == 2 and out["runs"] == 6


def test_a_frame_of_one_whole_period_written_to_six_decimals_is_not_jank():
    # frames.csv carries milliseconds to 6 decimals: one 60 Hz period reads 16.666667 against a budget of
    # 16.666666...; that frame made its deadline. A frame a tenth of a millisecond later did not.
    budget = 1000.0 / 60.0
    jank, severe, share, longest = jank_counts([16.666667] * 9 + [16.77], budget)
    assert (jank, severe) == (1, 0) and share == pytest.approx(0.1) and longest == 16.77
    assert jank_counts([33.333334], budget)[:2] == (1, 0)  # two whole periods: janky, not severely


def test_a_launch_share_is_rounded_once():
    """One janky frame in 30,000: 3.3e-05 in each launch's dict and in run.json's per_run, not 0.0 (per_run was
    rounded a second time to 4 digits)."""
    interval = np.full(30_000, 10.0)
    interval[7] = 40.0
    launch = summarize_launch(samples(np.ones(30_000), interval=interval, mode="uncapped"), BUDGET)
    assert launch.to_dict()["jank_share"] == pytest.approx(1 / 30_000, rel=0.02)
    (per_run,) = summarize_scene([launch], BUDGET).to_dict()["per_run"]
    assert per_run["jank_share"] == pytest.approx(1 / 30_000, rel=0.02)


def test_on_cpu_time_is_cpu_time_less_stolen_time():
    cpu = np.array([1.0, 2.0, 4.0, 3.0])
    stolen = np.array([0.0, 1.0, 5.0, np.nan])  # more than the frame: capped at it; unknown: left out
    launch = summarize_launch(samples(cpu, mode="uncapped", counters={"stolen_ms": stolen}), BUDGET)
    assert launch.oncpu_ms is not None and launch.oncpu_ms.n == 3
    assert sorted([launch.oncpu_ms.min, launch.oncpu_ms.max]) == [0.0, 1.0]
    assert launch.stolen_share == pytest.approx((0 + 1 + 4) / (1 + 2 + 4), abs=1e-12)
    assert launch.to_dict()["oncpu_ms"]["p50"] == pytest.approx(1.0, abs=1e-9)
    assert summarize_launch(samples(cpu, mode="uncapped"), BUDGET).to_dict().get("oncpu_ms") is None
