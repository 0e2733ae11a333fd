"""The gate on synthetic sessions and launches with known shifts: verdicts, their agreement with the interval,
thin baselines, the family of metrics, A/B, and every edge (n = 0, 1, 2, ties, all-equal)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_zbench.regression.gate import (
    BaselineSession,
    GateConfig,
    SceneVerdict,
    SessionPool,
    Verdict,
    judge,
    judge_interleaved,
    launch_values,
    min_launches_per_side,
)
from pytest_zbench.stats import LaunchSamples, summarize_launch


def launch_dict(p50: float, *, p95: float | None = None, jank: float = 0.0, gpu: float | None = None,
                source: str | None = None) -> dict:
    return {"cpu_ms": {"p50": p50, "p95": p95 if p95 is not None else p50 * 1.4},
            "gpu_ms": None if gpu is None else {"p50": gpu, "p95": gpu * 1.2},
            "gpu_source": source, "jank_share": jank}


def session(level: float, n: int, rng: np.random.Generator, *, spread: float = 0.02,
            offset: float = 0.0) -> list[dict]:
    """n launches of one session: a session offset (log) common to all, then each launch's own spread."""
    values = level * np.exp(offset + rng.normal(0.0, spread, n))
    return [launch_dict(float(v)) for v in values]


def history(level: float, sessions: int, n: int, *, tau: float = 0.02, spread: float = 0.02,
            seed: int = 0) -> list[list[dict]]:
    rng = np.random.default_rng(seed)
    return [session(level, n, rng, spread=spread, offset=rng.normal(0.0, tau)) for _ in range(sessions)]


P50 = GateConfig(metrics=("cpu_ms.p50",))


def test_same_build_is_same_or_inconclusive_with_an_interval_about_its_effect():
    """Any seed: a 15 % bar is more than 6 standard errors away at these spreads. (That the interval covers
    no-change at its level is a rate: test_the_interval_covers_the_true_effect_at_its_level_across_sessions.)"""
    base = history(8.0, 5, 8, seed=1)
    cand = session(8.0, 8, np.random.default_rng(2))
    v = judge(base, cand, P50).by_metric()["cpu_ms.p50"]
    assert v.verdict in ("same", "inconclusive")
    assert v.ci[0] < v.effect < v.ci[1] and 0.85 < v.effect < 1.15
    assert v.mode == "sessions" and v.n_sessions == 5 and v.n_baseline == 40 and v.n_candidate == 8


def test_thirty_percent_slower_against_five_sessions_regresses_and_the_interval_agrees():
    base = history(8.0, 5, 8, seed=3)
    cand = session(8.0 * 1.3, 8, np.random.default_rng(4))
    v = judge(base, cand, P50, baseline_description="5 runs of build abc").by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed" and v.failed
    assert v.effect == pytest.approx(1.30, abs=0.05)
    assert 1.0 < v.ci[0] <= v.effect <= v.ci[1]
    assert v.p <= 0.01 and v.p_marginal <= v.p
    assert v.between_df == 4 and v.between_sessions_used == 5
    text = v.message()
    for part in ("cpu_ms.p50 REGRESSED", f"effect {v.effect:.3f}x", f"{v.ci[0]:.3f}x..{v.ci[1]:.3f}x",
                 "hierarchical bootstrap, 2000 resamples", "between-session spread", "within-session launch spread",
                 "8 launches vs 5 baseline session(s) (40 launches)", "bar +15.0%", "baseline: 5 runs of build abc"):
        assert part in text


def test_improvement_is_improved_with_an_interval_below_one():
    base = history(8.0, 5, 6, seed=5)
    v = judge(base, session(8.0 * 0.7, 6, np.random.default_rng(6)), P50).by_metric()["cpu_ms.p50"]
    assert v.verdict == "improved" and v.ci[1] < 1.0
    assert v.p_improved <= 0.01
    assert "IMPROVED" in v.message() and "candidate faster" in v.message()


def test_a_session_offset_as_large_as_the_effect_is_not_a_regression():
    """Five quiet sessions and five loaded ones (+25 %): a candidate session 25 % slower is what this device
    does between sessions, not a regression, although every one of its launches is slower."""
    rng = np.random.default_rng(7)
    base = [session(8.0, 6, rng, offset=math.log(1.25) * (i % 2)) for i in range(10)]
    cand = session(8.0 * 1.25, 6, rng)
    v = judge(base[:5], cand, P50, older=base[5:]).by_metric()["cpu_ms.p50"]
    assert v.effect > 1.1 and v.verdict != "regressed", v.message()
    assert v.ci[0] < 1.0
    assert v.between_session > 0.05 and v.between_sessions_used == 10


def test_one_baseline_session_is_inconclusive_with_the_advice():
    base = history(8.0, 1, 5, seed=8)
    v = judge(base, session(8.0 * 1.5, 5, np.random.default_rng(9)), P50).by_metric()["cpu_ms.p50"]
    assert v.verdict == "inconclusive" and v.ci is None and v.p is None
    assert v.effect == pytest.approx(1.5, abs=0.15)
    assert "one baseline session" in v.reason and "between-session spread cannot be estimated" in v.reason
    for advice in ("more sessions", "zbench calibrate --sessions 3", "--zbench-ab"):
        assert advice in v.advice
    assert "INCONCLUSIVE" in v.message() and v.advice in v.message()


def test_a_calibration_gives_one_session_its_between_session_spread():
    rng = np.random.default_rng(10)
    aa = SessionPool("4 A/A calibration sessions", [session(8.0, 6, rng, offset=rng.normal(0, 0.01)) for _ in range(4)])
    base = [session(8.0, 6, rng)]
    v = judge(base, session(8.0 * 1.4, 6, rng), P50, pool=[aa]).by_metric()["cpu_ms.p50"]
    # Not thin any more: an interval, a test, and the A/A sessions' 3 degrees of freedom. Whether a 40 %
    # slowdown then reaches alpha depends on the draw (3 df are few): that is power, measured in bench/.
    assert v.ci is not None and v.p is not None and v.verdict in ("regressed", "inconclusive"), v.message()
    assert v.ci[0] > 1.0
    assert v.between_df == 3 and "4 A/A calibration sessions" in v.between_sources


@pytest.mark.parametrize("n_candidate", [1, 2, 3])
@pytest.mark.parametrize("sessions", [1, 2, 5, 50])
def test_any_launch_count_against_any_baseline_gets_a_verdict_with_its_reason(n_candidate, sessions):
    base = history(8.0, sessions, 3, seed=sessions)
    cand = session(8.0 * 1.3, n_candidate, np.random.default_rng(11))
    scene = judge(base, cand)
    assert scene.verdict in ("same", "regressed", "improved", "inconclusive")
    for v in scene.verdicts:
        assert v.n_candidate == n_candidate and v.n_sessions == sessions
        if v.verdict == "inconclusive":
            assert v.reason
        if v.verdict == "regressed":
            assert v.ci[0] > 1.0
    if sessions == 1:
        assert scene.verdict == "inconclusive"


def test_single_launch_sessions_use_the_session_statistics_alone():
    rng = np.random.default_rng(12)
    base = [session(8.0, 1, rng, offset=rng.normal(0, 0.01)) for _ in range(8)]
    v = judge(base, session(8.0 * 1.5, 1, rng), P50).by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed", v.message()
    assert v.within_session is None  # no session has two launches


def test_all_equal_launches_everywhere_are_same():
    """Identical sessions show no spread, but the between-session floor (2 %) stands for the spread they did
    not show: the interval is the floor's, about 1 at 2 df, not the point (1.0, 1.0)."""
    base = [[launch_dict(8.0)] * 4 for _ in range(3)]
    v = judge(base, [launch_dict(8.0)] * 4, P50).by_metric()["cpu_ms.p50"]
    assert v.verdict == "same" and v.effect == 1.0
    assert 1 / 1.15 < v.ci[0] < 1.0 < v.ci[1] < 1.15 and v.between_measured == 0.0
    off = judge(base, [launch_dict(8.0)] * 4, GateConfig(metrics=("cpu_ms.p50",), between_floor=0.0))
    assert off.by_metric()["cpu_ms.p50"].ci == (1.0, 1.0)


def test_jank_shares_all_zero_are_same_and_a_constant_jank_is_a_regression():
    zeros = [[launch_dict(8.0, jank=0.0)] * 5 for _ in range(3)]
    jank = GateConfig(metrics=("jank_share",))
    same = judge(zeros, [launch_dict(8.0, jank=0.0)] * 5, jank).by_metric()["jank_share"]
    assert same.verdict == "same" and same.effect == 1.0
    worse = judge(zeros, [launch_dict(8.0, jank=j) for j in (0.08, 0.10, 0.09, 0.12, 0.07)], jank)
    v = worse.by_metric()["jank_share"]
    assert v.verdict == "regressed"
    assert v.effect == pytest.approx((0.09 + 0.05) / 0.05)


def test_zero_values_are_read_as_below_the_clock_not_a_crash():
    base = [[launch_dict(0.0)] * 3 for _ in range(3)]
    v = judge(base, [launch_dict(1.0)] * 3, P50).by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed" and v.effect > 1e6


def test_no_values_on_a_side_is_not_judged():
    scene = judge([[{"cpu_ms": None, "jank_share": None}]] * 3, [launch_dict(8.0)] * 3, P50)
    assert scene.verdicts == () and dict(scene.skipped)["cpu_ms.p50"].startswith("no launch has it")
    assert scene.verdict == "inconclusive"
    assert judge([], [launch_dict(8.0)], P50).verdict == "inconclusive"
    assert judge(history(8.0, 3, 3), [], P50).verdicts == ()


def test_verdicts_are_seeded():
    base, cand = history(8.0, 4, 5, seed=13), session(8.7, 5, np.random.default_rng(14))
    assert judge(base, cand) == judge(base, cand)
    other = judge(base, cand, GateConfig(seed=1))
    assert other.by_metric()["cpu_ms.p50"].ci != judge(base, cand).by_metric()["cpu_ms.p50"].ci


def test_the_interval_covers_the_true_effect_at_its_level_across_sessions():
    """Sessions with a 5 % offset: the candidate's own offset is part of its uncertainty, so a 95 % interval
    of a 20 % slowdown covers 1.2 in about 95 % of sessions (a launch-level interval covers far less)."""
    hits, trials = 0, 120
    for seed in range(trials):
        rng = np.random.default_rng(1000 + seed)
        base = [session(8.0, 5, rng, offset=rng.normal(0, 0.05)) for _ in range(5)]
        cand = session(8.0 * 1.2, 5, rng, offset=rng.normal(0, 0.05))
        v = judge(base, cand, GateConfig(metrics=("cpu_ms.p50",), seed=seed)).by_metric()["cpu_ms.p50"]
        hits += v.ci[0] <= 1.2 <= v.ci[1]
    assert 0.88 <= hits / trials <= 1.0


def test_the_family_is_tested_together_and_each_metric_keeps_its_own_p():
    rng = np.random.default_rng(15)
    base = [[launch_dict(8.0 * math.exp(e), p95=12.0 * math.exp(e + rng.normal(0, 0.01))) for e in
             rng.normal(0, 0.02, 6) + rng.normal(0, 0.01)] for _ in range(5)]
    tail = [launch_dict(8.0 * math.exp(e), p95=18.0 * math.exp(e)) for e in rng.normal(0, 0.02, 6)]
    scene = judge(base, tail)
    p50, p95 = scene.by_metric()["cpu_ms.p50"], scene.by_metric()["cpu_ms.p95"]
    assert p95.verdict == "regressed" and p50.verdict in ("same", "inconclusive")
    assert scene.verdict == "regressed" and scene.regressed
    assert p95.p >= p95.p_marginal and "min-P over 2 metrics" in p95.adjustment
    assert scene.message().splitlines()[0] == "scene verdict: regressed"
    assert judge(base, tail, P50).verdict != "regressed"


def test_scene_verdict_combination_order():
    def v(outcome: str) -> Verdict:
        return Verdict(metric=outcome, verdict=outcome, effect=1.0, ci=(1.0, 1.0), p=0.5, p_improved=0.5,  # type: ignore[arg-type]
                       threshold=0.15, n_baseline=5, n_candidate=5, baseline="")
    assert SceneVerdict((v("same"), v("improved"))).verdict == "improved"
    assert SceneVerdict((v("improved"), v("inconclusive"))).verdict == "inconclusive"
    assert SceneVerdict((v("inconclusive"), v("regressed"), v("same"))).verdict == "regressed"
    assert SceneVerdict(()).verdict == "inconclusive"
    noted = SceneVerdict((v("same"),)).with_notes("same build: abc", "")
    assert noted.message().splitlines()[:2] == ["scene verdict: same", "same build: abc"]


def test_gpu_metrics_need_one_valid_equal_source():
    def sessions(gpu: float, source: str | None) -> list[list[dict]]:
        rng = np.random.default_rng(16)
        return [[launch_dict(8.0 + rng.normal(0, 0.01), gpu=None if source is None else gpu + rng.normal(0, 0.01),
                             source=source) for _ in range(5)] for _ in range(3)]
    base = sessions(4.0, "timer_query")
    mixed = judge(base, sessions(6.0, "finish_bracket")[0])
    assert {m for m, _ in mixed.skipped} == {"gpu_ms.p50", "gpu_ms.p95"}
    assert "gpu_source differs" in dict(mixed.skipped)["gpu_ms.p50"]
    assert "no gpu_ms on the candidate" in dict(judge(base, sessions(0, None)[0]).skipped)["gpu_ms.p50"]
    untrusted = [dict(launch, gpu_valid=False) for launch in sessions(6.0, "timer_query")[0]]
    assert "failed the timer check" in dict(judge(base, untrusted).skipped)["gpu_ms.p50"]
    judged = judge(base, sessions(6.0, "timer_query")[0]).by_metric()
    assert judged["gpu_ms.p50"].verdict == "regressed" and judged["cpu_ms.p50"].verdict != "regressed"


def test_judge_accepts_launch_summaries_from_stats_and_baseline_sessions():
    def summary(scale: float, seed: int):
        rng = np.random.default_rng(seed)
        cpu = rng.lognormal(math.log(6.0 * scale), 0.2, 300)
        samples = LaunchSamples(cpu_ms=cpu, gpu_ms=np.full(300, np.nan), gpu_source=None,
                                interval_ms=np.full(300, 16.67), warmup_cpu_ms=[], counters={}, mode="uncapped")
        return summarize_launch(samples, 16.67)

    base = [BaselineSession([summary(1.0, 10 * k + s) for s in range(5)], label=f"run{k}", build="b")
            for k in range(4)]
    cand = [summary(1.35, 100 + s) for s in range(5)]
    assert list(launch_values(base[0].launches, "cpu_ms.p50")) == [s.cpu_ms.p50 for s in base[0].launches]
    v = judge(base, cand).by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed" and v.effect == pytest.approx(1.35, abs=0.06)


def test_launches_missing_a_metric_are_dropped_not_zeroed():
    base = [[launch_dict(8.0 + i * 0.01) for i in range(5)] + [{"cpu_ms": None, "jank_share": None}]] * 2
    assert judge(base, base[0]).by_metric()["cpu_ms.p50"].n_baseline == 10


# --- A/B: launches of one session ---------------------------------------------------------------------------

def ab_launches(level: float, n: int, seed: int, spread: float = 0.03) -> list[dict]:
    return [launch_dict(float(v)) for v in level * np.exp(np.random.default_rng(seed).normal(0, spread, n))]


def test_ab_ten_percent_slower_with_ten_launches_regresses_at_the_ab_threshold():
    v = judge_interleaved(ab_launches(8.0, 10, 1), ab_launches(8.8, 10, 2), GateConfig(threshold=0.05),
                          baseline_description="A, 10 launches interleaved").by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed" and v.mode == "interleaved"
    assert 1.0 < v.ci[0] <= v.effect <= v.ci[1]
    assert "permutation max-T of rank sums over 2 metrics" in v.test_method
    assert "10 vs 10 launches" in v.message() and "launch bootstrap" in v.message()


def test_ab_same_runner_is_flagged_at_most_at_the_scenes_alpha():
    """300 A/A comparisons of 6 + 6 launches: the scene's false-alarm rate is at most alpha (1 %), so more
    than 7 (P = 1.2 % at a true 1 %) would mean the test does not hold its level."""
    flagged = sum(judge_interleaved(ab_launches(8.0, 6, seed), ab_launches(8.0, 6, 1000 + seed),
                                    GateConfig(threshold=0.05, seed=seed)).verdict in ("regressed", "improved")
                  for seed in range(300))
    assert flagged <= 7


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ab_too_few_launches_for_alpha_is_inconclusive_with_the_count_needed(n):
    v = judge_interleaved(ab_launches(8.0, n, 3), ab_launches(12.0, n, 4)).by_metric()["cpu_ms.p50"]
    assert v.verdict == "inconclusive" and "Too few launches" in v.reason
    assert "At least 5 launches per side" in v.advice and v.more_launches == 5 - n


def test_ab_with_uneven_sides_and_ties():
    a = [launch_dict(8.0, jank=0.0)] * 6
    b = [launch_dict(8.0, jank=j) for j in (0.0, 0.2, 0.25, 0.2, 0.3, 0.22, 0.2)]
    scene = judge_interleaved(a, b, GateConfig(metrics=("cpu_ms.p50", "jank_share")))
    assert scene.by_metric()["cpu_ms.p50"].verdict == "same"
    assert scene.by_metric()["jank_share"].verdict == "regressed"


def test_min_launches_per_side():
    assert min_launches_per_side(0.05) == 3  # 1/20
    assert min_launches_per_side(0.01) == 5  # 4 vs 4 bottoms out at 1/70 > 0.01, 5 vs 5 at 1/252


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="alpha"):
        GateConfig(alpha=1.5)
    with pytest.raises(ValueError, match="at least one metric"):
        GateConfig(metrics=())
    assert GateConfig().alpha == 0.01 and GateConfig().threshold == 0.15
    assert "jank_share" not in GateConfig().metrics  # a threshold count: gated in A/B, not against sessions


# --- higher is better: an adaptive scene's score ---------------------------------------------------------------

SCORE = GateConfig(metrics=("adaptive.score",))


def score_launch(score: float | None) -> dict:
    """An adaptive scene's launch as its summary reads: a ramp with its score, or a search (no score)."""
    return {"adaptive": {"role": "search"}} if score is None else {"adaptive": {"role": "ramp", "score": score}}


def scores(sessions: list[list[dict]], *, invert: bool = False) -> list[list[dict]]:
    """The same sessions as scores (cpu_ms.p50 read as a score), or as frame times 1 / score (invert)."""
    return [[score_launch(1 / launch["cpu_ms"]["p50"] if invert else launch["cpu_ms"]["p50"]) for launch in s]
            for s in sessions]


def test_a_score_that_drops_is_regressed_by_the_same_rules_as_a_slowdown():
    base = scores(history(1200.0, 5, 6, seed=11))
    (cand,) = scores([session(1200.0 / 1.3, 6, np.random.default_rng(12))])
    v = judge(base, cand, SCORE, baseline_description="5 runs of build abc").by_metric()["adaptive.score"]
    assert v.verdict == "regressed" and v.failed
    assert v.effect == pytest.approx(1 / 1.3, abs=0.03)  # candidate / baseline, as for every metric
    assert v.ci[0] <= v.effect <= v.ci[1] < 1 and v.p <= 0.01 and v.p_improved > 0.5
    message = v.message()
    # A short first line with the direction, the detail indented below it.
    first, detail = message.split("\n", 1)
    assert first.startswith("adaptive.score REGRESSED: 0.7") and "higher is better" in first and len(first) < 120
    assert detail.startswith("  candidate ")
    assert "for candidate lower" in message and f"({v.effect - 1:+.1%})" in message and "bar +15.0%" in message
    # A score is judged exactly as the frame time 1 / score would be: the same p, the effect turned over.
    as_time = GateConfig(metrics=("cpu_ms.p50",))
    mirror_base = [[launch_dict(1 / l["adaptive"]["score"]) for l in s] for s in base]
    mirror = judge(mirror_base, [launch_dict(1 / l["adaptive"]["score"]) for l in cand],
                   as_time).by_metric()["cpu_ms.p50"]
    assert mirror.verdict == "regressed" and v.p == pytest.approx(mirror.p)
    assert v.effect == pytest.approx(1 / mirror.effect) and v.ci[1] == pytest.approx(1 / mirror.ci[0])


def test_a_score_that_rises_is_improved_and_a_steady_one_is_not_judged_worse():
    base = scores(history(1200.0, 5, 6, seed=13))
    (up,) = scores([session(1200.0 * 1.4, 6, np.random.default_rng(14))])
    v = judge(base, up, SCORE).by_metric()["adaptive.score"]
    assert v.verdict == "improved" and v.effect > 1.3 and v.ci[0] > 1 and v.p_improved <= 0.01
    assert "for candidate higher" in v.message()
    (steady,) = scores([session(1200.0, 6, np.random.default_rng(16))])
    assert judge(base, steady, SCORE).by_metric()["adaptive.score"].verdict in ("same", "inconclusive")


def test_ab_a_score_that_drops_regresses_and_one_inside_the_bar_does_not():
    a = [score_launch(1000.0 * math.exp(r)) for r in np.linspace(-0.01, 0.01, 8)]
    lower = [score_launch(800.0 * math.exp(r)) for r in np.linspace(-0.01, 0.01, 8)]
    v = judge_interleaved(a, lower, SCORE).by_metric()["adaptive.score"]
    assert v.verdict == "regressed" and v.p == pytest.approx(1 / math.comb(16, 8))  # exact: the one extreme split
    # 10 % fewer elements is a frame-time slowdown of 1.11x, under the 15 % bar: clearly there, not a regression
    small = [score_launch(900.0 * math.exp(r)) for r in np.linspace(-0.01, 0.01, 8)]
    v = judge_interleaved(a, small, SCORE).by_metric()["adaptive.score"]
    assert v.verdict == "same" and v.p_marginal <= 0.01


def test_judge_reads_the_score_from_launch_summaries_and_skips_search_launches():
    base = [[score_launch(None), *s] for s in scores(history(500.0, 4, 5, seed=19))]
    cand = [score_launch(None), *scores([session(300.0, 5, np.random.default_rng(20))])[0]]
    verdict = judge(base, cand, SCORE)
    (v,) = verdict.verdicts
    assert verdict.regressed and (v.n_baseline, v.n_candidate, v.n_sessions) == (20, 5, 4)


def test_an_adaptive_scene_is_judged_on_its_score_and_a_fixed_one_on_the_rest():
    from pytest_zbench.regression.config import (
        AB_GATING_METRICS,
        ADAPTIVE_GATING_METRICS,
        GATE_METRIC,
        GATING_METRICS,
        scene_metrics,
    )

    assert GATE_METRIC.fullmatch("adaptive.score") and ADAPTIVE_GATING_METRICS == ("adaptive.score",)
    for defaults in (GATING_METRICS, AB_GATING_METRICS):
        assert scene_metrics(defaults, adaptive=True) == ("adaptive.score",)
        assert scene_metrics(defaults, adaptive=False) == defaults
    assert scene_metrics(("cpu_ms.p50", "adaptive.score"), adaptive=False) == ("cpu_ms.p50",)
    assert scene_metrics(("adaptive.score",), adaptive=False) == ()  # not gated
    assert GateConfig.higher_is_better("adaptive.score") and not GateConfig.higher_is_better("cpu_ms.p50")


# --- the significance level and the family correction, pinned ---------------------------------------------------
# Deterministic launches (no random data): only the gate's own seeded draws vary. The turn at alpha holds for any
# seed; the family test's two sides sit about 3 standard errors of the min-P simulation from alpha (gate seeds
# 0-13 tried: family p 0.0116-0.0178 against own p 0.0068-0.0081).

RESIDUALS = np.linspace(-0.03, 0.03, 6)


def fixed_session(offset: float, *, anti_p95: bool = False) -> list[dict]:
    """Six launches of 8 ms x exp(offset + a fixed spread). anti_p95: p95 = 100 / p50, a second metric exactly
    anti-correlated with the first (whatever makes p50 slower makes it faster)."""
    values = [8.0 * math.exp(offset + r) for r in RESIDUALS]
    return [launch_dict(v, p95=100.0 / v if anti_p95 else None) for v in values]


SESSION_OFFSETS = (-0.05, -0.025, 0.0, 0.025, 0.05)


def ab_fixed(factor: float, *, anti_p95: bool = False) -> list[dict]:
    """Six A/B launches of one session, 8 ms x factor x a fixed spread (see fixed_session for anti_p95)."""
    values = [8.0 * factor * math.exp(r) for r in np.linspace(-0.05, 0.05, 6)]
    return [launch_dict(v, p95=100.0 / v if anti_p95 else None) for v in values]


def test_the_scenes_alpha_is_one_percent_each_direction_half_and_the_verdict_turns_exactly_at_the_adjusted_p():
    assert GateConfig().alpha == 0.01 and GateConfig().alpha_per_direction == 0.005
    base = [fixed_session(o) for o in SESSION_OFFSETS]
    for seed in (0, 1):
        v = judge(base, fixed_session(0.25), GateConfig(seed=seed)).by_metric()["cpu_ms.p50"]
        assert v.verdict == "regressed" and v.alpha == 0.01 and 0 < v.p <= 0.005
        assert v.ci[0] > 1.0 and v.effect > 1.15  # so alpha alone decides below
        just_below = judge(base, fixed_session(0.25), GateConfig(seed=seed, alpha=2 * v.p / 1.02)).by_metric()
        just_above = judge(base, fixed_session(0.25), GateConfig(seed=seed, alpha=2 * v.p * 1.02)).by_metric()
        assert just_below["cpu_ms.p50"].p == v.p == just_above["cpu_ms.p50"].p  # alpha does not move p
        assert just_below["cpu_ms.p50"].verdict == "inconclusive" and just_above["cpu_ms.p50"].verdict == "regressed"
    a, b = ab_fixed(1.0), ab_fixed(1.08)
    v = judge_interleaved(a, b, GateConfig(threshold=0.05)).by_metric()["cpu_ms.p50"]
    assert v.p == pytest.approx(7 / 924)  # exact: 7 of the 924 splits, past the 0.005 of one direction
    assert v.verdict == "inconclusive" and "vs 0.005, alpha / 2 for each direction" in v.reason
    above = judge_interleaved(a, b, GateConfig(threshold=0.05, alpha=2 * v.p * 1.02)).by_metric()["cpu_ms.p50"]
    assert above.verdict == "regressed"


def test_the_family_correction_charges_for_independent_information_only():
    """Two gated metrics: exactly correlated they are one question (no charge); exactly anti-correlated, either
    can be the extreme one, and min-P charges double (what Bonferroni would charge for two). Here that decides
    the verdict: an effect whose own p is below the level is not regressed when the family's is above it (a
    scene alpha of 2 % here: 1 % for each direction)."""
    same = [fixed_session(o) for o in SESSION_OFFSETS]
    anti = [fixed_session(o, anti_p95=True) for o in SESSION_OFFSETS]
    for seed in (0, 1):
        config = GateConfig(seed=seed, alpha=0.02)
        one_question = judge(same, fixed_session(0.18), config).by_metric()["cpu_ms.p50"]
        two_questions = judge(anti, fixed_session(0.18, anti_p95=True), config).by_metric()["cpu_ms.p50"]
        assert one_question.p_marginal == pytest.approx(two_questions.p_marginal)  # the same p50 data
        assert one_question.p_marginal < 0.009 and one_question.p == pytest.approx(one_question.p_marginal, rel=0.3)
        assert one_question.verdict == "regressed"
        assert two_questions.p == pytest.approx(2 * two_questions.p_marginal, rel=0.25) and two_questions.p > 0.01
        assert two_questions.verdict == "inconclusive" and "min-P over 2 metrics" in two_questions.adjustment
    # A/B, exact (all 924 splits): the anti-correlated pair's max-T is |z|, so exactly twice the one-sided p.
    ab = GateConfig(threshold=0.05, alpha=0.02)
    plain = judge_interleaved(ab_fixed(1.0), ab_fixed(1.08), ab).by_metric()["cpu_ms.p50"]
    paired = judge_interleaved(ab_fixed(1.0, anti_p95=True), ab_fixed(1.08, anti_p95=True),
                               ab).by_metric()["cpu_ms.p50"]
    assert plain.p == plain.p_marginal == pytest.approx(7 / 924) and plain.verdict == "regressed"
    assert paired.p == pytest.approx(14 / 924) and paired.verdict == "inconclusive"
