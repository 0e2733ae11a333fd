"""The statistical helpers of the gate at their edges: two levels of variance (regression/hierarchy.py), the
family adjustments (regression/multiplicity.py) and the conditions (regression/conditions.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_zbench.regression import multiplicity
from pytest_zbench.regression.conditions import (
    build_note,
    compact,
    conditions_changed,
    throttle_note,
    throttled,
)
from pytest_zbench.regression.hierarchy import (
    Session,
    SessionGroup,
    between_sessions,
    bootstrap,
    launch_value,
    median_last_axis,
    median_variance_factor,
    satterthwaite_df,
    shamos_spread,
    to_log,
    within_sessions,
)
from pytest_zbench.regression.multiplicity import max_t, permutation_max_t, splits


def one(values) -> Session:
    return Session(("m",), np.asarray(values, dtype=float).reshape(-1, 1))


# --- values -------------------------------------------------------------------------------------------------

def test_launch_value_paths_and_missing_values():
    launch = {"cpu_ms": {"p50": 2.5}, "gpu_ms": None, "jank_share": "x"}
    assert launch_value(launch, "cpu_ms.p50") == 2.5
    assert math.isnan(launch_value(launch, "gpu_ms.p50")) and math.isnan(launch_value(launch, "jank_share"))
    assert math.isnan(launch_value({"cpu_ms": {"p50": float("inf")}}, "cpu_ms.p50"))


def test_to_log_floors_zero_and_keeps_nan():
    out = to_log(np.array([0.0, -1.0, 1.0, np.nan]), offset=0.0)
    # np.log may take a vectorised kernel that differs from math.log in the last ulp: a stated tolerance
    assert out[0] == out[1] == pytest.approx(math.log(1e-9), rel=1e-12) and out[2] == 0.0 and math.isnan(out[3])
    assert to_log(np.array([0.0]), offset=0.05)[0] == pytest.approx(math.log(0.05))


def test_session_statistic_is_the_median_of_known_launches():
    s = Session.of([{"a": 1.0}, {"a": 3.0}, {"b": 1.0}, {"a": 100.0}], ["a", "b"])
    assert s.count(0) == 3 and s.stat(0) == pytest.approx(math.log(3.0))
    assert s.count(1) == 1 and s.stat(1) == 0.0
    assert math.isnan(Session.of([], ["a"]).stat(0)) and Session.of([], ["a"]).y.shape == (0, 1)


# --- within -------------------------------------------------------------------------------------------------

def test_median_variance_factor():
    assert median_variance_factor(1) == median_variance_factor(2) == 1.0
    assert median_variance_factor(3) == pytest.approx(1.344)
    assert median_variance_factor(500) == pytest.approx(math.pi / 2)
    with pytest.raises(ValueError):
        median_variance_factor(0)


def test_shamos_spread_edges():
    assert math.isnan(shamos_spread([])) and math.isnan(shamos_spread([np.array([1.0])]))
    assert shamos_spread([np.array([1.0, 1.0, 1.0])]) == 0.0  # all equal
    assert shamos_spread([np.array([0.0, 1.0])]) == pytest.approx(1.0483)  # n = 2: one pair
    rng = np.random.default_rng(1)
    groups = [rng.normal(0, 0.1, 6) for _ in range(200)]
    assert shamos_spread(groups) == pytest.approx(0.1, rel=0.05)
    wild = [np.append(rng.normal(0, 0.1, 5), 50.0) for _ in range(200)]  # one preempted launch per session
    assert shamos_spread(wild) < 0.2


def test_within_sessions_pools_residuals_of_sessions_with_two_launches():
    within = within_sessions([one([1.0]), one([1.0, 3.0]), one([2.0, 2.0, 2.0])], 1)
    assert within.df[0] == 1 + 2
    finite = within.residuals[np.isfinite(within.residuals[:, 0]), 0]
    assert sorted(finite) == pytest.approx([-math.sqrt(2), 0.0, 0.0, 0.0, math.sqrt(2)])
    assert within_sessions([], 1).residuals.shape == (0, 1)


# --- between ------------------------------------------------------------------------------------------------

def test_between_sessions_needs_two_sessions_in_a_group():
    none = between_sessions([SessionGroup((one([1.0, 1.1]),), "one")], 1)
    assert not none.known(0) and none.df[0] == 0 and none.tau2[0] == 0.0
    empty = between_sessions([], 1)
    assert not empty.known(0) and empty.deviations.shape == (0, 1)


def test_between_sessions_recovers_a_known_session_spread():
    rng = np.random.default_rng(2)
    tau, sigma = 0.10, 0.03
    # 240 groups: the estimates' own sampling spread (2.4 % for tau, 9 % for var_tau2, measured over 300 seeds)
    # is then a quarter of the tolerances, so this holds for any seed.
    groups = [SessionGroup(tuple(one(rng.normal(0, tau) + rng.normal(0, sigma, 5)) for _ in range(5)), f"g{k}")
              for k in range(240)]
    between = between_sessions(groups, 1)
    assert between.df[0] == 240 * 4 and between.sessions[0] == 1200
    assert math.sqrt(between.tau2[0]) == pytest.approx(tau, rel=0.1)
    assert np.nanstd(between.deviations[:, 0]) == pytest.approx(tau, rel=0.1)
    assert between.var_tau2[0] == pytest.approx(2 * (tau ** 2 + 1.43 * sigma ** 2 / 5) ** 2 / 960, rel=0.4)


def test_between_sessions_is_zero_when_launch_spread_explains_everything():
    rng = np.random.default_rng(3)
    groups = [SessionGroup(tuple(one(rng.normal(0, 0.05, 10)) for _ in range(4)), "g") for _ in range(40)]
    between = between_sessions(groups, 1)
    assert math.sqrt(between.tau2[0]) < 0.01
    all_equal = between_sessions([SessionGroup((one([1.0, 1.0]), one([1.0, 1.0])), "eq")], 1)
    assert all_equal.known(0) and all_equal.tau2[0] == 0.0 and np.all(all_equal.deviations == 0.0)


def test_between_sessions_groups_are_centred_on_their_own_mean():
    fast = SessionGroup((one([1.0, 1.0]), one([1.0, 1.0])), "fast scene")
    slow = SessionGroup((one([5.0, 5.0]), one([5.0, 5.0])), "slow scene")
    between = between_sessions([fast, slow], 1)
    assert between.tau2[0] == 0.0 and between.df[0] == 2 and between.sources[0] == ("fast scene", "slow scene")


# --- bootstrap ----------------------------------------------------------------------------------------------

def test_bootstrap_matches_the_model_variance():
    rng = np.random.default_rng(4)
    tau, sigma, n, s = 0.05, 0.04, 8, 5
    base = [one(rng.normal(0, tau) + rng.normal(0, sigma, n)) for _ in range(s)]
    cand = one(rng.normal(0, tau) + rng.normal(0, sigma, n))
    groups = [SessionGroup(tuple(one(rng.normal(0, tau) + rng.normal(0, sigma, n)) for _ in range(5)), "g")
              for _ in range(80)]
    between = between_sessions(groups, 1)
    reps = bootstrap(cand, base, within_sessions([*base, cand], 1), between, resamples=4000,
                     rng=np.random.default_rng(5))
    model = between.tau2[0] * (1 + 1 / s)
    assert np.var(reps.between[:, 0]) == pytest.approx(model, rel=0.15)
    launch_part = 1.47 * sigma ** 2 / n * (1 + 1 / s)
    assert np.var(reps.within[:, 0]) == pytest.approx(launch_part, rel=0.5)


def test_bootstrap_edges_single_launch_and_missing_metric():
    base = [one([1.0]), one([1.1])]
    between = between_sessions([SessionGroup(tuple(base), "g")], 1)
    reps = bootstrap(one([1.3]), base, within_sessions([*base, one([1.3])], 1), between, resamples=200,
                     rng=np.random.default_rng(6))
    assert np.all(reps.within == 0.0) and np.var(reps.between) > 0  # no launch spread known, sessions vary
    missing = bootstrap(one([]), base, within_sessions(base, 1), between, resamples=50, rng=np.random.default_rng(7))
    assert np.all(np.isnan(missing.total))


def test_satterthwaite_df():
    assert satterthwaite_df(0.0, 1.0, var_of_between=0.0, df_within=10) == pytest.approx(10)
    assert satterthwaite_df(1.0, 0.0, var_of_between=2 / 4, df_within=0) == pytest.approx(4)
    assert satterthwaite_df(0.0, 0.0, var_of_between=0.0, df_within=0) == math.inf
    assert satterthwaite_df(1e-9, 1.0, var_of_between=1e6, df_within=5) == 1.0  # never below one


# --- multiplicity -------------------------------------------------------------------------------------------

def test_max_t_single_metric_is_the_t_test():
    adj = max_t(np.array([2.5]), np.array([6.0]), np.eye(1), rng=np.random.default_rng(1))
    assert adj.p_slow[0] == pytest.approx(sps.t.sf(2.5, 6)) and adj.adj_slow[0] == adj.p_slow[0]
    assert adj.method == "one metric, no adjustment"


def test_max_t_identical_metrics_cost_nothing_independent_ones_cost_bonferroni():
    t, df = np.array([2.8, 2.8]), np.array([30.0, 30.0])
    same = max_t(t, df, np.ones((2, 2)), rng=np.random.default_rng(2))
    independent = max_t(t, df, np.eye(2), rng=np.random.default_rng(2))
    p = sps.t.sf(2.8, 30)
    assert same.adj_slow[0] == pytest.approx(p, abs=0.002)
    assert independent.adj_slow[0] == pytest.approx(1 - (1 - p) ** 2, abs=0.002)
    assert np.all(independent.adj_slow >= independent.p_slow)


def test_max_t_with_infinite_and_nan_statistics():
    adj = max_t(np.array([np.inf, -np.inf, np.nan, 1.0]), np.array([5.0, 5.0, 5.0, 5.0]), np.eye(4),
                rng=np.random.default_rng(3))
    assert list(adj.adj_slow[:3]) == [0.0, 1.0, 1.0] and list(adj.adj_fast[:3]) == [1.0, 0.0, 1.0]
    assert adj.adj_slow[3] == pytest.approx(sps.t.sf(1.0, 5), abs=0.02)


def test_max_t_holds_the_family_rate_under_the_null():
    rng = np.random.default_rng(4)
    hits = 0
    corr = np.array([[1.0, 0.8], [0.8, 1.0]])
    root = np.linalg.cholesky(corr)
    for _ in range(400):
        z = root @ rng.standard_normal(2)
        t = z / math.sqrt(rng.chisquare(8) / 8)
        hits += max_t(t, np.array([8.0, 8.0]), corr, rng=rng, draws=2000).adj_slow.min() <= 0.05
    assert hits / 400 == pytest.approx(0.05, abs=0.03)


@pytest.mark.parametrize("shape", [(50, 3, 1), (50, 3, 2), (40, 7), (30, 2, 9), (30, 2, 10)])
def test_median_last_axis_is_numpys_median(shape):
    values = np.random.default_rng(len(shape)).normal(size=shape)
    values[..., 0] = 0.5  # ties
    assert np.array_equal(median_last_axis(values), np.median(values, axis=-1))


@pytest.mark.parametrize("seed", range(4))
def test_max_t_counts_by_quantiles_what_the_t_tails_of_every_draw_count(seed):
    """min-P compares each draw's statistics with k x k t quantiles instead of taking a t tail per draw and
    metric (the gate's hot path): the counts must be those of the tails, draw for draw (same seed, same draws)."""
    from scipy import special

    g = np.random.default_rng(100 + seed)
    k = 3
    t, df = g.normal(0.0, 2.5, k), np.array([2.3, 7.0, np.inf])
    a = g.normal(size=(k, k))
    corr = np.corrcoef(a @ a.T + np.eye(k))
    adj = max_t(t, df, corr, rng=np.random.default_rng(seed), draws=4000)
    # The reference: the same draws (a first pass of 800, then 4000 when some adjusted p is below 0.1), each
    # draw's smallest one-sided p from the t distribution's tails.
    rng = np.random.default_rng(seed)
    nu = np.where(np.isfinite(df), df, 1e12)
    p_slow, p_fast = special.stdtr(nu, -t), special.stdtr(nu, t)
    values, vectors = np.linalg.eigh(corr)
    root = vectors * np.sqrt(np.clip(values, 1e-9, None))
    grid = multiplicity._U_GRID
    for draws in (800, 4000):
        z = rng.standard_normal((draws, k)) @ root.T
        u = rng.random(draws)
        scale = np.column_stack([np.interp(u, grid, np.sqrt(2 * special.gammaincinv(v / 2, grid) / v))
                                 if math.isfinite(v) else np.ones(draws) for v in df])
        cdf = special.stdtr(nu[None, :], z / scale)
        slow = np.maximum((1 + ((1 - cdf).min(axis=1)[:, None] <= p_slow[None, :]).sum(axis=0)) / (draws + 1), p_slow)
        fast = np.maximum((1 + (cdf.min(axis=1)[:, None] <= p_fast[None, :]).sum(axis=0)) / (draws + 1), p_fast)
        if min(slow.min(), fast.min()) >= 0.1:
            break
    assert adj.adj_slow == pytest.approx(slow, abs=1e-12)
    assert adj.adj_fast == pytest.approx(fast, abs=1e-12)


def test_permutation_max_t_is_exact_and_handles_ties():
    a, b = np.array([[1.0], [2.0], [3.0]]), np.array([[4.0], [5.0], [6.0]])
    adj = permutation_max_t(a, b, rng=np.random.default_rng(5))
    assert adj.p_slow[0] == pytest.approx(1 / 20) and adj.min_p == pytest.approx(1 / 20)
    assert "exact, all 20 splits" in adj.method
    reference = sps.mannwhitneyu(b[:, 0], a[:, 0], alternative="greater", method="exact").pvalue
    assert adj.p_slow[0] == pytest.approx(reference)
    ties = permutation_max_t(np.zeros((4, 1)), np.zeros((4, 1)), rng=np.random.default_rng(6))
    assert ties.p_slow[0] == 1.0 and ties.p_fast[0] == 1.0  # all equal: no evidence either way
    one_side = permutation_max_t(np.array([[1.0]]), np.array([[2.0]]), rng=np.random.default_rng(7))
    assert one_side.min_p == 0.5


def test_permutation_max_t_random_splits_when_too_many():
    index, exhaustive = splits(15, 15, rng=np.random.default_rng(8))
    assert not exhaustive and index.shape == (10_000, 15) and list(index[0]) == list(range(15, 30))
    rng = np.random.default_rng(9)
    a, b = rng.normal(0, 1, (15, 2)), rng.normal(0, 1, (15, 2)) + [3.0, 0.0]
    adj = permutation_max_t(a, b, rng=rng)
    assert adj.adj_slow[0] == pytest.approx(1 / 10_000) and adj.adj_slow[1] > 0.05
    assert "9999 random permutations" in adj.method


# --- conditions ---------------------------------------------------------------------------------------------

def test_compact_conditions_merge_before_and_after():
    raw = {"before": {"governor": "ondemand", "power": "plugged", "throttled": False, "temp_c": 50.0},
           "after": {"governor": "powersave", "power": "plugged", "throttled": True, "thermal_state": ""}}
    assert compact(raw) == {"governor": "ondemand -> powersave", "power": "plugged", "throttled": True}
    assert compact(None) == {} and compact({"governor": "", "power": "unknown"}) == {}
    assert compact({"governor": "performance"}) == {"governor": "performance"}


def test_conditions_changed_names_what_differs_and_ignores_the_unknown():
    base = [{"conditions": {"governor": "performance", "power": "plugged"}}] * 3
    cand = [{"conditions": {"governor": "powersave", "power": "plugged", "throttled": True}}, {"conditions": {}}]
    changes = conditions_changed(base, cand)
    assert [c.key for c in changes] == ["governor"]  # throttled is unknown in the baseline: not a change
    assert changes[0].describe() == "governor performance in the baseline, powersave in the candidate"
    assert changes[0].to_json() == {"key": "governor", "baseline": ["performance"], "candidate": ["powersave"]}
    assert conditions_changed(base, base) == [] and conditions_changed([], cand) == []
    assert throttled(cand[0]) and not throttled(base[0])
    assert throttle_note(base, cand).startswith("measured while the device reported throttling: 1 of 2 candidate")
    assert throttle_note(base, base) == ""


def test_build_note():
    assert "same build" in build_note("abc123", ["abc123", "abc123"]) and "the baseline's" in build_note(
        "abc123", ["abc123"])
    assert "that of 1 of the 2 baseline sessions" in build_note("abc", ["abc", "def"])
    assert build_note("abc", ["def"]) == "" and build_note("", ["abc"]) == "" and build_note("abc", []) == ""
