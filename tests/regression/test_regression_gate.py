"""The gate on synthetic launches with known shifts, and its statistics against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_zbench.regression.gate import (
    GateConfig,
    SceneVerdict,
    Verdict,
    bootstrap_ratio_ci,
    compare_launches,
    judge,
    launch_values,
    mann_whitney,
    min_launches_per_side,
    min_p_value,
)
from pytest_zbench.stats import LaunchSamples, noise_floor, summarize_launch


def launches(level: float, n: int, *, spread: float = 0.03, seed: int = 0) -> np.ndarray:
    """Per-launch medians: lognormal around `level` with a relative spread, as launches of one build vary."""
    return level * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def launch_dict(p50: float, *, p95: float | None = None, jank: float = 0.0, gpu: float | None = None,
                source: str | None = None) -> dict:
    return {"cpu_ms": {"p50": p50, "p95": p95 if p95 is not None else p50 * 1.4},
            "gpu_ms": None if gpu is None else {"p50": gpu, "p95": gpu * 1.2},
            "gpu_source": source, "jank_share": jank}


def test_same_build_is_same():
    v = compare_launches(launches(8.0, 5, seed=1), launches(8.0, 5, seed=2), "cpu_ms.p50")
    assert v.verdict == "same"
    assert v.effect == pytest.approx(1.0, abs=0.05)
    assert v.ci[0] < 1.0 < v.ci[1]
    assert 1 / (1 + v.bar) < v.ci[0] and v.ci[1] < 1 + v.bar


def test_thirty_percent_slower_with_five_launches_regresses():
    base, cand = launches(8.0, 5, seed=3), launches(8.0 * 1.3, 5, seed=4)
    v = compare_launches(base, cand, "cpu_ms.p50", baseline_description="5 launches of build abc123")
    assert v.verdict == "regressed" and v.failed
    assert v.effect == pytest.approx(1.30, abs=0.04)
    assert v.ci[0] < 1.30 < v.ci[1]
    assert v.ci[0] <= v.effect <= v.ci[1]
    assert v.p <= 0.05 and v.test_method == "exact"
    assert (v.n_baseline, v.n_candidate) == (5, 5)
    assert v.effect == pytest.approx(np.median(cand) / np.median(base))


def test_improvement_is_reported_as_improved():
    v = compare_launches(launches(8.0, 6, seed=5), launches(8.0 * 0.7, 6, seed=6), "cpu_ms.p50")
    assert v.verdict == "improved"
    assert v.effect == pytest.approx(0.70, abs=0.04)
    assert v.p_improved <= 0.05
    assert "IMPROVED" in v.message() and "candidate faster" in v.message()


def test_two_launches_per_side_can_never_reach_alpha():
    v = compare_launches(launches(8.0, 2, seed=7), launches(8.0 * 1.5, 2, seed=8), "cpu_ms.p50")
    assert v.verdict == "inconclusive"
    assert v.p == pytest.approx(1 / 6)  # complete separation, the best 2 vs 2 can do
    assert v.more_launches == 1
    assert "at least 3 launches per side" in v.message() and "1 more" in v.message()


def test_interval_straddling_the_bar_is_inconclusive_with_advice():
    # A true 15 % slowdown sits on the bar: the interval must reach past it either way.
    v = compare_launches(launches(8.0, 5, spread=0.04, seed=9), launches(8.0 * 1.14, 5, spread=0.04, seed=10),
                         "cpu_ms.p50")
    assert v.verdict == "inconclusive"
    assert v.ci[0] < 1 + v.bar < v.ci[1]
    assert v.more_launches is not None and v.more_launches > 0
    assert f"{v.more_launches} more launches per side" in v.message() or "more than" in v.message()


def test_noise_floor_raises_the_bar():
    base, cand = launches(8.0, 30, spread=0.10, seed=11), launches(8.0 * 1.2, 30, spread=0.10, seed=12)
    noisy = compare_launches(base, cand, "cpu_ms.p50")
    assert noisy.noise_floor == pytest.approx(noise_floor(base))
    assert noisy.bar == pytest.approx(3 * noisy.noise_floor) and noisy.bar > 0.2
    assert noisy.p <= 0.05  # the shift is real and significant...
    assert noisy.verdict != "regressed"  # ...but within what this device's noise allows
    calibrated = compare_launches(base, cand, "cpu_ms.p50", noise_floor=0.02)
    assert calibrated.bar == pytest.approx(0.15) and calibrated.noise_source == "calibration"
    assert calibrated.verdict == "regressed"
    assert "noise floor 2.0% (calibration)" in calibrated.message()


def test_message_names_effect_interval_p_noise_floor_and_baseline():
    v = compare_launches(launches(8.0, 5, seed=3), launches(8.0 * 1.3, 5, seed=4), "cpu_ms.p50",
                         baseline_description="5 runs of fill.alpha.x4 on pi3b/gles2")
    text = v.message()
    for part in ("cpu_ms.p50 REGRESSED", f"effect {v.effect:.3f}x", f"{v.ci[0]:.3f}x..{v.ci[1]:.3f}x",
                 f"p={v.p:.4g}", "noise floor", "bar +15.0%", "baseline: 5 runs of fill.alpha.x4 on pi3b/gles2"):
        assert part in text


@pytest.mark.parametrize("n_base,n_cand,shift", [(5, 5, 1.3), (4, 7, 1.05), (8, 8, 1.0), (3, 3, 2.0)])
def test_p_values_match_scipy_exact(n_base, n_cand, shift):
    base, cand = launches(8.0, n_base, seed=n_base), launches(8.0 * shift, n_cand, seed=100 + n_cand)
    slower, faster, method = mann_whitney(base, cand)
    assert method == "exact"
    assert slower == pytest.approx(sps.mannwhitneyu(cand, base, alternative="greater", method="exact").pvalue)
    assert faster == pytest.approx(sps.mannwhitneyu(cand, base, alternative="less", method="exact").pvalue)
    assert compare_launches(base, cand, "cpu_ms.p50").p == pytest.approx(slower)


def test_p_values_with_ties_use_an_exact_permutation_test():
    base, cand = np.array([0.0, 0.0, 0.0, 0.01, 0.0]), np.array([0.02, 0.0, 0.03, 0.01, 0.02])
    slower, _, method = mann_whitney(base, cand)
    assert method == "exact permutation (ties)"
    reference = sps.mannwhitneyu(cand, base, alternative="greater",
                                 method=sps.PermutationMethod(n_resamples=9999, rng=0)).pvalue
    assert slower == pytest.approx(reference)


def test_large_tied_samples_use_the_tie_corrected_normal_approximation():
    rng = np.random.default_rng(13)
    base, cand = np.round(rng.normal(8, 1, 40), 1), np.round(rng.normal(8.5, 1, 40), 1)
    slower, _, method = mann_whitney(base, cand)
    assert method == "normal approximation"
    assert slower == pytest.approx(sps.mannwhitneyu(cand, base, alternative="greater",
                                                    method="asymptotic").pvalue)


def test_min_p_value_matches_the_exact_test_at_complete_separation():
    for n_b, n_c in [(2, 2), (3, 3), (2, 5), (5, 5)]:
        best = sps.mannwhitneyu(np.arange(n_c) + 100.0, np.arange(n_b), alternative="greater", method="exact")
        assert min_p_value(n_b, n_c) == pytest.approx(best.pvalue)
    assert min_launches_per_side(0.05) == 3  # 1/20 = 0.05
    assert min_launches_per_side(0.01) == 5  # 4 vs 4 bottoms out at 1/70 > 0.01, 5 vs 5 at 1/252
    assert min_launches_per_side(0.05, n_baseline=10) == 2  # 1/66 with 10 vs 2


def test_bootstrap_interval_coverage_is_near_nominal():
    true_ratio, hits, trials = 1.2, 0, 200
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        base = rng.lognormal(math.log(8.0), 0.05, 10)
        cand = rng.lognormal(math.log(8.0 * true_ratio), 0.05, 10)
        lo, hi = bootstrap_ratio_ci(base, cand, resamples=1000, seed=seed)
        hits += lo <= true_ratio <= hi
    assert 0.88 <= hits / trials <= 0.995


def test_bootstrap_is_seeded():
    base, cand = launches(8.0, 6, seed=1), launches(9.0, 6, seed=2)
    assert bootstrap_ratio_ci(base, cand, seed=4) == bootstrap_ratio_ci(base, cand, seed=4)


def test_jank_share_zeros_form_a_ratio():
    zeros = [0.0] * 6
    same = compare_launches(zeros, zeros, "jank_share")
    assert same.verdict == "same" and same.effect == 1.0
    worse = compare_launches(zeros, [0.08, 0.10, 0.09, 0.12, 0.07, 0.11], "jank_share")
    assert worse.verdict == "regressed"
    assert worse.effect == pytest.approx((0.095 + 0.05) / 0.05)


def test_zero_baseline_without_offset_is_inconclusive():
    v = compare_launches([0.0, 0.0, 0.0], [1.0, 1.1, 1.2], "cpu_ms.p50")
    assert v.verdict == "inconclusive" and "zero" in v.reason


def test_gpu_metrics_need_one_valid_equal_source():
    base = [launch_dict(8.0 + i * 0.01, gpu=4.0, source="timer_query") for i in range(5)]
    other = [launch_dict(8.0 + i * 0.01, gpu=6.0, source="finish_bracket") for i in range(5)]
    none = [launch_dict(8.0 + i * 0.01) for i in range(5)]
    mixed = judge(base, other)
    assert {m for m, _ in mixed.skipped} == {"gpu_ms.p50", "gpu_ms.p95"}
    assert "gpu_source differs" in dict(mixed.skipped)["gpu_ms.p50"]
    assert "gpu_ms.p50" not in mixed.by_metric()
    assert "no gpu_ms on the candidate" in dict(judge(base, none).skipped)["gpu_ms.p50"]
    bogus = [launch_dict(8.0, gpu=4.0, source="none") for _ in range(5)]
    assert "not a GPU measurement" in dict(judge(bogus, bogus).skipped)["gpu_ms.p50"]
    slower_gpu = [launch_dict(8.0 + i * 0.01, gpu=6.0 + i * 0.01, source="timer_query") for i in range(5)]
    judged = judge(base, slower_gpu).by_metric()
    assert judged["gpu_ms.p50"].verdict == "regressed"
    assert judged["cpu_ms.p50"].verdict == "same"


def test_scene_verdict_regresses_when_any_gating_metric_does():
    base = [launch_dict(8.0 + i * 0.02, p95=12.0 + i * 0.02) for i in range(6)]
    tail_worse = [launch_dict(8.0 + i * 0.02, p95=18.0 + i * 0.02) for i in range(6)]
    scene = judge(base, tail_worse)
    assert scene.by_metric()["cpu_ms.p50"].verdict == "same"
    assert scene.by_metric()["cpu_ms.p95"].verdict == "regressed"
    assert scene.verdict == "regressed" and scene.regressed
    assert scene.message().splitlines()[0] == "scene verdict: regressed"
    only_p50 = judge(base, tail_worse, GateConfig(metrics=("cpu_ms.p50",)))
    assert only_p50.verdict == "same"


def test_scene_verdict_combination_order():
    def v(outcome: str) -> Verdict:
        return Verdict(metric=outcome, verdict=outcome, effect=1.0, ci=(1.0, 1.0), p=0.5, p_improved=0.5,  # type: ignore[arg-type]
                       noise_floor=None, threshold=0.15, bar=0.15, n_baseline=5, n_candidate=5, baseline="")
    assert SceneVerdict((v("same"), v("improved"))).verdict == "improved"
    assert SceneVerdict((v("improved"), v("inconclusive"))).verdict == "inconclusive"
    assert SceneVerdict((v("inconclusive"), v("regressed"), v("same"))).verdict == "regressed"
    assert SceneVerdict(()).verdict == "inconclusive"


def test_judge_accepts_launch_summaries_from_stats():
    def summary(scale: float, seed: int):
        rng = np.random.default_rng(seed)
        cpu = rng.lognormal(math.log(6.0 * scale), 0.2, 300)
        samples = LaunchSamples(cpu_ms=cpu, gpu_ms=np.full(300, np.nan), gpu_source=None,
                                interval_ms=np.full(300, 16.67), warmup_cpu_ms=[], counters={}, mode="uncapped")
        return summarize_launch(samples, 16.67)

    base = [summary(1.0, s) for s in range(5)]
    cand = [summary(1.35, 10 + s) for s in range(5)]
    assert list(launch_values(base, "cpu_ms.p50")) == [s.cpu_ms.p50 for s in base]
    scene = judge(base, cand)
    assert scene.by_metric()["cpu_ms.p50"].verdict == "regressed"
    assert scene.by_metric()["cpu_ms.p50"].effect == pytest.approx(1.35, abs=0.05)
    assert judge([s.to_dict() for s in base], cand).by_metric()["cpu_ms.p50"].verdict == "regressed"


def test_launches_missing_a_metric_are_dropped_not_zeroed():
    base = [launch_dict(8.0 + i * 0.01) for i in range(5)] + [{"cpu_ms": None, "jank_share": None}]
    v = judge(base, base).by_metric()["cpu_ms.p50"]
    assert v.n_baseline == 5


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="alpha"):
        GateConfig(alpha=1.5)
    with pytest.raises(ValueError, match="at least one metric"):
        GateConfig(metrics=())


# --- higher is better: an adaptive scene's score ---------------------------------------------------------------


def test_a_score_that_drops_is_regressed_with_the_same_rules_and_message():
    base, cand = launches(1200.0, 5, seed=11), launches(1200.0 / 1.3, 5, seed=12)
    v = compare_launches(base, cand, "adaptive.score", baseline_description="5 launches of build abc123")
    assert v.verdict == "regressed" and v.failed
    assert v.effect == pytest.approx(1 / 1.3, abs=0.03)  # candidate / baseline, as for every metric
    assert v.ci[0] <= v.effect <= v.ci[1] < 1 / (1 + v.bar)
    # p is "candidate worse": here the lower tail of Mann-Whitney
    assert v.p == pytest.approx(sps.mannwhitneyu(cand, base, alternative="less", method="exact").pvalue)
    assert v.p <= 0.05 and v.p_improved > 0.5
    message = v.message()
    assert message.startswith("adaptive.score REGRESSED: candidate ")
    assert "one-sided, candidate lower" in message and f"({v.effect - 1:+.1%})" in message
    assert "bar +15.0% = max(threshold 15%" in message


def test_a_score_that_rises_is_improved_and_a_steady_one_same():
    up = compare_launches(launches(1200.0, 6, seed=13), launches(1200.0 * 1.4, 6, seed=14), "adaptive.score")
    assert up.verdict == "improved" and up.effect > 1.3
    assert "candidate higher" in up.message()
    same = compare_launches(launches(1200.0, 6, seed=15), launches(1200.0, 6, seed=16), "adaptive.score")
    assert same.verdict == "same"


def test_a_small_drop_inside_the_bar_is_not_a_regression():
    # 10 % fewer elements is a frame-time slowdown of 1.11x, under the 15 % bar
    v = compare_launches(launches(1000.0, 8, seed=17, spread=0.01), launches(900.0, 8, seed=18, spread=0.01),
                         "adaptive.score")
    assert v.verdict == "same" and v.p <= 0.05


def test_judge_reads_the_score_from_launch_summaries_and_skips_search_launches():
    def launch(score):
        return {"adaptive": {"role": "ramp", "score": score}} if score else {"adaptive": {"role": "search"}}

    base = [launch(None)] + [launch(s) for s in launches(500.0, 5, seed=19)]
    cand = [launch(None)] + [launch(s) for s in launches(300.0, 5, seed=20)]
    verdict = judge(base, cand, GateConfig(metrics=("adaptive.score",)))
    (v,) = verdict.verdicts
    assert verdict.regressed and (v.n_baseline, v.n_candidate) == (5, 5)


def test_an_adaptive_scene_is_judged_on_its_score_and_a_fixed_one_on_the_rest():
    from pytest_zbench.regression.config import ADAPTIVE_GATING_METRICS, GATE_METRIC, GATING_METRICS, scene_metrics

    assert GATE_METRIC.fullmatch("adaptive.score") and ADAPTIVE_GATING_METRICS == ("adaptive.score",)
    assert scene_metrics(GATING_METRICS, adaptive=True) == ("adaptive.score",)
    assert scene_metrics(GATING_METRICS, adaptive=False) == GATING_METRICS
    assert scene_metrics(("cpu_ms.p50", "adaptive.score"), adaptive=False) == ("cpu_ms.p50",)
    assert scene_metrics(("adaptive.score",), adaptive=False) == ()  # not gated
    assert GateConfig.higher_is_better("adaptive.score") and not GateConfig.higher_is_better("cpu_ms.p50")
