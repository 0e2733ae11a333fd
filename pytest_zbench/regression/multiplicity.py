"""The family of gated metrics, tested together: what is controlled is the scene's false-alarm rate, not each
metric's (docs/regression.md, "Several metrics, one verdict").

Both tests are single-step max-T (min-P): a metric's adjusted p is the chance, with no change anywhere, that
the most extreme of all the metrics' statistics is at least as extreme as this metric's. It controls the family-wise rate like Bonferroni
does, but uses the metrics' correlation: p50 and p95 of one series move together, and testing them as if
independent (Bonferroni, Holm) would spend the alpha twice on what is nearly one question.

* `max_t`: for the history gate's t statistics: correlated t statistics (their correlation taken from the
  joint hierarchical bootstrap, each with its own degrees of freedom), simulated (seeded);
* `permutation_max_t`: for A/B (launches of two runners interleaved in one session): the launches' A/B labels
  permuted, every permutation scored on all metrics at once (standardized rank sums, so ties and all-zero jank
  shares are handled exactly); exact when every split can be enumerated.

Plain numpy; no I/O.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

MAX_T_DRAWS = 10_000
_U_GRID = np.concatenate([np.logspace(-12, -2, 120, endpoint=False), np.linspace(0.01, 0.99, 99),
                          1 - np.logspace(-2, -12, 120)[1:]])
EXHAUSTIVE_SPLITS = 20_000
PERMUTATIONS = 9_999


@dataclass(frozen=True)
class Adjusted:
    """Per metric: one-sided p-values (candidate slower, candidate faster), marginal and family-adjusted."""

    p_slow: np.ndarray
    p_fast: np.ndarray
    adj_slow: np.ndarray
    adj_fast: np.ndarray
    method: str
    min_p: float = 0.0  # the smallest p the test can give at these sizes (permutations: 1 / splits)


def max_t(t: np.ndarray, df: np.ndarray, corr: np.ndarray, *, rng: np.random.Generator,
          draws: int = MAX_T_DRAWS) -> Adjusted:
    """Adjusted one-sided p-values of t statistics t[j] with df[j] degrees of freedom and correlation `corr`
    under no change: single-step min-P, P(the smallest marginal p of all metrics <= this metric's p).

    Simulated: correlated normal numerators (corr), and one uniform per draw for every metric's chi-square
    denominator (their variance estimates come from the same sessions, so they err together; with equal df this
    is the multivariate t). Infinite statistics (a metric whose launches and sessions all read the same, then
    differed) have p 0 or 1 and stay out of the simulation; so do NaN ones (p 1)."""
    t = np.asarray(t, dtype=float)
    df = np.broadcast_to(np.asarray(df, dtype=float), t.shape)
    m = t.size
    from scipy import special  # here, not at import, and not scipy.stats: see regression/gate.py _scipy_special

    p_slow = np.where(np.isnan(t), 1.0, special.stdtr(df, -t))  # the t distribution's upper tail
    p_fast = np.where(np.isnan(t), 1.0, special.stdtr(df, t))
    adj_slow, adj_fast = p_slow.copy(), p_fast.copy()
    live = np.isfinite(t)
    k = int(live.sum())
    if k > 1:
        # sqrt(chi2(nu) / nu) on _U_GRID per metric, once for both passes (dense in both tails, where the t's
        # heavy tails come from).
        grids = [np.sqrt(2 * special.gammaincinv(v / 2, _U_GRID) / v) if math.isfinite(v) else None
                 for v in df[live]]
        # A first pass of a fifth of the draws; the full count only when a metric's adjusted p could be near
        # alpha-like values (below 0.1), where the decision needs its precision.
        adj_slow, adj_fast = _min_p(df, corr, live, p_slow, p_fast, grids, rng=rng, draws=max(draws // 5, 100))
        if min(adj_slow.min(), adj_fast.min()) < 0.1:
            adj_slow, adj_fast = _min_p(df, corr, live, p_slow, p_fast, grids, rng=rng, draws=draws)
    method = (f"min-P over {m} metrics (correlated draws)" if k > 1 else
              "one metric, no adjustment" if m == 1 else f"min-P over {m} metrics")
    return Adjusted(p_slow, p_fast, adj_slow, adj_fast, method)


def _min_p(df: np.ndarray, corr: np.ndarray, live: np.ndarray, p_slow: np.ndarray, p_fast: np.ndarray,
           grids: list[np.ndarray | None], *, rng: np.random.Generator, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """One simulation of the min-P adjustment with `draws` draws (see max_t); grids[i]: live metric i's
    sqrt(chi2(nu) / nu) on _U_GRID (None for an infinite nu)."""
    from scipy import special  # here, not at import: see regression/gate.py _scipy_special

    adj_slow, adj_fast = p_slow.copy(), p_fast.copy()
    k = int(live.sum())
    sub = np.asarray(corr, dtype=float)[np.ix_(live, live)]
    sub = np.where(np.isfinite(sub), sub, 0.0)
    np.fill_diagonal(sub, 1.0)
    # The nearest valid correlation: eigenvalues clipped at a small positive floor (a bootstrap estimate of
    # two nearly identical metrics can be numerically singular).
    values, vectors = np.linalg.eigh((sub + sub.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 1e-9, None))
    z = rng.standard_normal((draws, k)) @ root.T
    nu = np.where(np.isfinite(df[live]), df[live], 1e12)
    u = rng.random(draws)
    # One uniform per draw for every metric's chi-square (comonotone): sqrt(chi2(nu) / nu) at quantile u.
    scale = np.column_stack([np.interp(u, _U_GRID, grid) if grid is not None else np.ones(draws) for grid in grids])
    sims = z / np.maximum(scale, 1e-300)
    live_slow, live_fast = p_slow[live], p_fast[live]
    # A draw's smallest p is at most metric i's p when some metric j's statistic passes j's quantile at that p:
    # k x k t quantiles instead of a t tail per draw and metric (the same counts, at a fraction of the cost).
    slow_edge = -special.stdtrit(nu[:, None], live_slow[None, :])  # [j, i]: upper tail of j at p_slow[i]
    fast_edge = special.stdtrit(nu[:, None], live_fast[None, :])
    hits_slow = (sims[:, :, None] >= slow_edge[None, :, :]).any(axis=1)
    hits_fast = (sims[:, :, None] <= fast_edge[None, :, :]).any(axis=1)
    adj_slow[live] = (1 + hits_slow.sum(axis=0)) / (draws + 1)
    adj_fast[live] = (1 + hits_fast.sum(axis=0)) / (draws + 1)
    adj_slow[live] = np.maximum(adj_slow[live], live_slow)
    adj_fast[live] = np.maximum(adj_fast[live], live_fast)
    return adj_slow, adj_fast


def _ranks(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Mid-ranks of one metric over all launches (NaN launches placed at the middle: no information) and the
    tie correction of the rank-sum variance."""
    from scipy import stats as sps  # here, not at import: see regression/gate.py _scipy_special

    filled = np.where(np.isfinite(values), values, np.nanmedian(values) if np.isfinite(values).any() else 0.0)
    ranks = sps.rankdata(filled)
    _, counts = np.unique(filled, return_counts=True)
    n = filled.size
    tie = float((counts ** 3 - counts).sum()) / (n ** 3 - n) if n > 1 else 1.0
    return ranks, tie


def splits(n_a: int, n_b: int, *, rng: np.random.Generator, limit: int = EXHAUSTIVE_SPLITS,
           permutations: int = PERMUTATIONS) -> tuple[np.ndarray, bool]:
    """Index sets of the B side over n_a + n_b launches (B launches last in the observed order): every split
    when there are at most `limit`, else the observed one and `permutations` random ones. (splits, exhaustive)"""
    n = n_a + n_b
    total = math.comb(n, n_b)
    if total <= limit:
        return np.array(list(itertools.combinations(range(n), n_b)), dtype=int).reshape(total, n_b), True
    observed = np.arange(n_a, n)[None, :]
    random = np.argsort(rng.random((permutations, n)), axis=1)[:, :n_b]
    return np.vstack([observed, random]), False


def permutation_max_t(a: np.ndarray, b: np.ndarray, *, rng: np.random.Generator) -> Adjusted:
    """One-sided p-values of B slower / faster than A for every metric (columns of a and b: launches x
    metrics), marginal and max-T adjusted over the metrics, by permuting the launches' labels."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    n_a, n_b, m = a.shape[0], b.shape[0], a.shape[1]
    pooled = np.vstack([a, b])
    n = n_a + n_b
    index, exhaustive = splits(n_a, n_b, rng=rng)
    z = np.zeros((index.shape[0], m))
    observed = np.zeros(m)
    for j in range(m):
        ranks, tie = _ranks(pooled[:, j])
        variance = n_a * n_b * (n + 1) / 12 * (1 - tie)
        if variance <= 0:
            continue  # every launch reads the same: the metric says nothing either way
        mean = n_b * (n + 1) / 2
        z[:, j] = (ranks[index].sum(axis=1) - mean) / math.sqrt(variance)
        observed[j] = (ranks[n_a:].sum() - mean) / math.sqrt(variance)
    total = index.shape[0]
    tol = 1e-9  # rank sums are multiples of 0.5: equal statistics must compare equal

    def count(hits: np.ndarray) -> np.ndarray:
        # Exhaustive: the observed split is among the splits. Random: it is row 0, counted once as itself.
        return hits.sum(axis=0) / total if exhaustive else (hits[1:].sum(axis=0) + 1) / total

    p_slow = count(z >= observed - tol)
    p_fast = count(z <= observed + tol)
    top, bottom = z.max(axis=1), z.min(axis=1)
    adj_slow = np.maximum(count(top[:, None] >= observed[None, :] - tol), p_slow)
    adj_fast = np.maximum(count(bottom[:, None] <= observed[None, :] + tol), p_fast)
    how = (f"exact, all {total} splits" if exhaustive else f"{total - 1} random permutations")
    method = f"permutation max-T of rank sums over {m} metric{'s' if m != 1 else ''} ({how})"
    return Adjusted(p_slow, p_fast, adj_slow, adj_fast, method, min_p=1 / math.comb(n, n_b))


__all__ = ["Adjusted", "EXHAUSTIVE_SPLITS", "MAX_T_DRAWS", "PERMUTATIONS", "max_t", "permutation_max_t", "splits"]
