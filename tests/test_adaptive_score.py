"""The adaptive score's fit and interval, against references written separately here: a brute-force change
point search, scipy's bounded least squares, and the order-statistic bounds of a median."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from pytest_zbench.adaptive_score import (
    SETTLE_FRAMES,
    StepPoint,
    bootstrap_median_ci,
    fit_hinge,
    step_points,
    summarize_scores,
)

BUDGET = 16.6667


def brute_force_change_point(x, y, w, budget, grid=20001):
    """Every change point on a fine grid, the slope in closed form for each: the least-squares one."""
    x, y, w = (np.asarray(v, dtype=float) for v in (x, y, w))
    r = np.maximum(y, budget) - budget
    best = (math.inf, None, None)
    for s in np.linspace(0, x.max(), grid):
        h = np.maximum(0, x - s)
        t = max(0.0, float(np.sum(w * r * h) / np.sum(w * h * h))) if np.any(h > 0) else 0.0
        sse = float(np.sum(w * (r - t * h) ** 2))
        if sse < best[0]:
            best = (sse, s, t)
    return best


def points(x, y, frames=5):
    return [StepPoint(float(c), float(v), frames) for c, v in zip(x, y)]


def test_a_linear_cost_is_cut_at_the_budget():
    # cost = 2 ms + 0.01 ms per element: the budget is reached at (16.6667 - 2) / 0.01 = 1466.67.
    x = np.arange(200, 3001, 200)
    fit = fit_hinge(points(x, 2 + 0.01 * x), BUDGET)
    assert fit.score == pytest.approx((BUDGET - 2) / 0.01, rel=1e-9)
    assert fit.slope_ms == pytest.approx(0.01, rel=1e-9)
    assert fit.censored is None
    assert max(abs(r) for r in fit.residuals_ms) < 1e-9
    assert fit.predict(1000) == pytest.approx(BUDGET) and fit.predict(2000) == pytest.approx(2 + 0.01 * 2000)


@pytest.mark.parametrize("seed", range(8))
def test_noisy_steps_agree_with_a_brute_force_search_and_scipy(seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.choice(np.arange(50, 4000), size=rng.integers(6, 30), replace=False))
    y = (1 + 0.007 * x) * rng.lognormal(0, 0.15, x.size)
    w = rng.integers(1, 25, x.size)
    fit = fit_hinge([StepPoint(float(a), float(b), int(c)) for a, b, c in zip(x, y, w)], BUDGET)
    sse, s, t = brute_force_change_point(x, y, w, BUDGET)
    assert fit.sse <= sse + 1e-9  # exact: never worse than any grid point
    assert fit.score == pytest.approx(s, abs=x.max() / 20000 * 2 + 1e-9)
    r = np.maximum(y, BUDGET) - BUDGET

    def residuals(params):
        return np.sqrt(w) * (r - params[1] * np.maximum(0, x - params[0]))

    ref = optimize.least_squares(residuals, x0=[fit.score, max(fit.slope_ms, 1e-6)],
                                 bounds=([0, 0], [x.max(), np.inf]))
    assert fit.sse <= float(np.sum(ref.fun ** 2)) + 1e-9
    assert fit.score == pytest.approx(ref.x[0], rel=1e-3)


def test_steps_that_never_leave_the_budget_give_a_lower_bound():
    fit = fit_hinge(points([10, 20, 40], [3.0, 5.0, 9.0]), BUDGET)
    assert fit.censored == "above" and fit.score == 40 and fit.slope_ms == 0


def test_steps_all_over_budget_give_an_extrapolated_change_point():
    x = np.array([100, 200, 300])
    fit = fit_hinge(points(x, 12 + 0.05 * x), BUDGET)
    assert fit.censored == "below"
    assert fit.score == pytest.approx((BUDGET - 12) / 0.05)


def test_step_points_leave_out_frames_just_after_a_change_and_take_medians():
    # warmup at 50 (frames 0-2), then 50 x4, 30 x4, 10 x4; a preempted frame in the 30 step
    complexity = [50] * 3 + [50] * 4 + [30] * 4 + [10] * 4
    cost = [9.0] * 7 + [99.0, 99.0, 6.0, 60.0, 5.0, 5.0, 2.0, 2.5]
    rows = [{"frame": f, "phase": "warmup" if f < 3 else "measure", "complexity": float(c),
             "present_interval_ms": y} for f, (c, y) in enumerate(zip(complexity, cost))]
    got = step_points(rows)
    assert SETTLE_FRAMES == 2
    # 50: all 4 measured frames follow 50s; 30 and 10: their first 2 frames are left out
    assert got.excluded_frames == 4
    assert [(p.complexity, p.frame_ms, p.frames) for p in got.points] == [(10.0, 2.25, 2), (30.0, 33.0, 2),
                                                                           (50.0, 9.0, 4)]


def test_a_missing_row_counts_as_a_change_and_unknown_costs_are_left_out():
    rows = [{"frame": f, "phase": "measure", "complexity": 5.0, "present_interval_ms": 1.0} for f in range(6)]
    del rows[2]  # frame 2 never arrived: frames 3 and 4 cannot be known to be settled
    rows[-1]["present_interval_ms"] = None
    got = step_points(rows)
    assert [(p.complexity, p.frames) for p in got.points] == [(5.0, 2)]  # frames 0 and 1
    assert got.excluded_frames == 3


def test_the_bootstrap_is_seeded_and_brackets_the_median():
    scores = [980, 1010, 1005, 990, 1030, 1002, 995, 1012, 970, 1001]
    first = bootstrap_median_ci(scores, seed=7)
    assert first == bootstrap_median_ci(scores, seed=7)
    lo, hi = first
    assert lo <= float(np.median(scores)) <= hi
    # the percentile interval of a median stays inside the sample and outside its central pair
    ordered = sorted(scores)
    assert ordered[0] <= lo <= ordered[4] and ordered[5] <= hi <= ordered[-1]


def test_two_launches_give_the_interval_between_them_and_one_gives_none():
    two = summarize_scores([100.0, 120.0])
    assert two.score == 110 and two.ci == pytest.approx((100.0, 120.0))
    assert two.relative_half_width == pytest.approx(10 / 110)
    one = summarize_scores([100.0])
    assert one.ci is None and one.relative_half_width is None
    with pytest.raises(ValueError):
        summarize_scores([])


def test_a_bad_budget_or_no_step_is_refused():
    with pytest.raises(ValueError, match="budget_ms"):
        fit_hinge(points([1], [1.0]), 0)
    with pytest.raises(ValueError, match="at least one"):
        fit_hinge([], BUDGET)


def exact_bootstrap_median_bounds(n: int, confidence: float) -> tuple[int, int]:
    """The order statistics (1-based) at the ends of the percentile bootstrap interval of the median of n
    distinct values (n odd), by hand: a resample's median is at most the j-th smallest value exactly when at
    least (n + 1) / 2 of its n draws are, each with probability j / n, so P = P(Binomial(n, j / n) >= (n + 1) / 2).
    The ends are the first j whose P passes (1 - confidence) / 2 and (1 + confidence) / 2."""
    def cdf(j: int) -> float:
        p = j / n
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range((n + 1) // 2, n + 1))

    tail = (1 - confidence) / 2
    cdfs = [cdf(j) for j in range(1, n + 1)]
    # the quantiles sit well inside one order statistic's mass, so a finite bootstrap lands on it too
    assert min(abs(c - q) for c in cdfs for q in (tail, 1 - tail)) > 0.005
    return (next(j for j, c in enumerate(cdfs, 1) if c > tail), next(j for j, c in enumerate(cdfs, 1) if c > 1 - tail))


def test_the_bootstrap_interval_of_a_median_is_95_percent():
    n = 17
    values = [100.0 + 7 * ((5 * k) % n) for k in range(n)]  # 100, 107, ..., 212 in a shuffled order
    ordered = sorted(values)
    lo95, hi95 = exact_bootstrap_median_bounds(n, 0.95)
    lo90, hi90 = exact_bootstrap_median_bounds(n, 0.90)
    assert (lo95, hi95) != (lo90, hi90)  # the values can tell the two levels apart
    expected = (ordered[lo95 - 1], ordered[hi95 - 1])
    for seed in range(3):  # 20,000 resamples: the ends are far (over 10 standard errors) from the next values
        assert bootstrap_median_ci(values, resamples=20_000, seed=seed) == expected
        assert summarize_scores(values, resamples=20_000, seed=seed).ci == expected
    assert bootstrap_median_ci(values) == expected  # the defaults: 2,000 resamples, seed 0
    assert summarize_scores(values).ci == expected and summarize_scores(values).confidence == 0.95
