"""Paired A/B rounds: B judged against A within each round (docs/regression.md, "Paired rounds").

Each round launches A and B adjacently (ABBA across rounds), so the i-th launch of A and the i-th of B share
whatever state the device was in around them. A device whose launches run in one of two speed states, in
blocks of a few launches, moves both launches of most rounds together: the within-round log ratio
d_i = y(B_i) - y(A_i) cancels the state, where comparing all A launches with all B launches does not.

The test and its interval are one computation, so a verdict and its interval never disagree:

* the Wilcoxon signed-rank statistic of each metric's d, standardized, scored on every sign flip of the rounds
  (all 2^n when n <= EXACT_ROUNDS, else FLIPS random ones), max-T over the family of metrics (each
  flip applied to every metric of a round at once, so their correlation is kept);
* the family's critical value c at a one-sided level (a statistic past it has an adjusted p at most the level)
  is inverted per metric into an interval on the shift: the Walsh averages (d_i + d_k) / 2, i <= k, ordered;
  the lower end is the m-th largest and the upper the m-th smallest, m the fewest Walsh averages above a shift
  that put its signed-rank statistic past c, N = n (n + 1) / 2 of them. Without ties "the lower end is above 0"
  is exactly "the family-adjusted p is at most the level";
* the effect is the Hodges-Lehmann estimate, the median of the Walsh averages: robust to the round whose
  state switched between its A and its B, as the signed ranks are.

Plain numpy; no I/O.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

# Whether sessions judge their A/B scenes by paired rounds. Not yet: the bench (docs/regression.md, "Paired
# rounds") has not shown the paired design's false-alarm rate under the gate's 0.5 % promise on the two-state
# device (2 of 305 identical builds), nor its power there near the target; until it has, a session judges all
# A launches against all B launches as before, and the paired test is what the bench and the tests call.
PAIRED_IN_SESSIONS = False

# `same` is an equivalence decision (it declares no change and spends no alpha): the interval it is decided on is
# one-sided SAME_LEVEL at each end, the 95 % interval, as before paired rounds; a change is decided on the interval
# at the level its direction is tested at.
SAME_LEVEL = 0.025
# Up to this many rounds every sign flip is enumerated (2^14 = 16,384 flips); past it, FLIPS random ones, more
# than 2^14 so that the smallest p-value keeps falling with every round.
EXACT_ROUNDS = 14
FLIPS = 2 ** 16 - 1


def flip_floor(rounds: int) -> float:
    """The smallest one-sided p-value the sign-flip test of n rounds can give."""
    return 0.5 ** rounds if rounds <= EXACT_ROUNDS else 1.0 / (FLIPS + 1)


def min_rounds(level: float) -> int | None:
    """The fewest rounds for which the sign-flip test can reach a one-sided `level`; None when no count can
    (a level below the random flips' floor)."""
    if level * (1 + 1e-9) < flip_floor(EXACT_ROUNDS + 1):
        return None
    n = 1
    while flip_floor(n) > level * (1 + 1e-9):
        n += 1
    return n


def _flips(n: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign vectors over n rounds: every one (exact), or the observed (all +1) and FLIPS random ones."""
    if n <= EXACT_ROUNDS:
        return _all_flips(n), True
    random = np.where(rng.random((FLIPS, n)) < 0.5, -1.0, 1.0)
    return np.vstack([np.ones((1, n)), random]), False


@functools.lru_cache(maxsize=EXACT_ROUNDS + 1)
def _all_flips(n: int) -> np.ndarray:
    """Every sign vector over n rounds, the all +1 one first (read-only: shared between calls)."""
    bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
    flips = 1.0 - 2.0 * bits
    flips.setflags(write=False)
    return flips


def _midranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their mean rank (numpy: scipy.stats costs seconds to import, see
    regression/gate.py _scipy_special)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    ranks = np.empty(values.size)
    start = 0
    for end in range(1, values.size + 1):
        if end == values.size or ordered[end] != ordered[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    return ranks


def _signed_ranks(d: np.ndarray) -> np.ndarray:
    """sign(d_i) x the mid-rank of |d_i| among the finite d (0 for a zero or missing d: no information)."""
    out = np.zeros(d.size)
    live = np.isfinite(d) & (d != 0)
    if live.any():
        out[live] = np.sign(d[live]) * _midranks(np.abs(d[live]))
    return out


@dataclass(frozen=True)
class PairedTest:
    """The paired design on n rounds x k metrics of within-round log ratios d (oriented: > 0 is worse).

    Per metric: effect (log, as measured: candidate / baseline), the marginal and family-adjusted one-sided
    p-values, and intervals at any one-sided level from the flips' max-T distribution."""

    d: np.ndarray  # rounds x metrics, as measured (not oriented)
    sign: np.ndarray  # per metric +1, or -1 for a higher-is-better one
    observed: np.ndarray  # standardized signed-rank statistic, oriented
    null_max: np.ndarray  # per flip: the largest oriented statistic over the family (sorted ascending)
    p_worse: np.ndarray
    p_better: np.ndarray
    adj_worse: np.ndarray
    adj_better: np.ndarray
    effect: np.ndarray  # Hodges-Lehmann estimates (log), as measured
    exact: bool
    flips: int

    @property
    def rounds(self) -> int:
        return self.d.shape[0]

    @property
    def min_p(self) -> float:
        return 1.0 / self.flips

    @property
    def method(self) -> str:
        k = self.d.shape[1]
        how = f"exact, all {self.flips} sign flips" if self.exact else f"{self.flips - 1} random sign flips"
        return (f"paired rounds: signed-rank max-T over {k} metric{'s' if k != 1 else ''}, {self.rounds} rounds "
                f"({how}); Hodges-Lehmann effect and its inverted interval")

    def critical(self, level: float) -> float:
        """The family's critical value at a one-sided level: a statistic past it (strictly) has a family-adjusted
        p at most `level`. It is the largest attained max-T whose tail is more probable than `level`; inf when
        even the most extreme flip is (too few rounds). The flips' distribution is symmetric, so the other
        tail's is the same."""
        values = self.null_max
        total = values.size  # random flips: the observed (all +1) row is among them
        tails = (total - np.searchsorted(values, values - 1e-9, side="left")) / total
        common = values[tails > level * (1 + 1e-9)]
        top = float(values[-1])
        edge = float(common.max())
        return math.inf if edge >= top - 1e-9 else edge

    def interval(self, j: int, level: float) -> tuple[float, float]:
        """Metric j's interval of the log shift, one-sided `level` each end, family-adjusted, as measured: the
        shifts the test at `level` does not reject. Its lower end is above 0 exactly when the adjusted p of
        "worse" is at most the level (no ties)."""
        c = self.critical(level)
        d = self.d[:, j]
        d = d[np.isfinite(d)]
        n = d.size
        if n == 0 or not math.isfinite(c):
            return -math.inf, math.inf
        walsh = np.sort((d[:, None] + d[None, :])[np.triu_indices(n)] / 2)
        total = walsh.size
        ranks = np.abs(_signed_ranks(d))
        sd = math.sqrt(float((ranks ** 2).sum()))
        if sd == 0:  # every round read the same: the interval is that value
            return float(d[0]), float(d[0])
        # rejected at a shift when W+ (the Walsh averages above it) exceeds (c sd + N) / 2: W+ >= m
        m = math.floor((c * sd + total) / 2 + 1e-7) + 1
        if m > total:
            return -math.inf, math.inf
        m = max(m, 1)
        return float(walsh[total - m]), float(walsh[m - 1])


def paired_test(d: np.ndarray, sign: np.ndarray, *, rng: np.random.Generator) -> PairedTest:
    """The sign-flip signed-rank test of rounds x metrics log ratios `d` (B over A in one round), each metric
    oriented by `sign` (+1: higher is worse)."""
    d = np.atleast_2d(np.asarray(d, dtype=float))
    n, k = d.shape
    flips, exact = _flips(n, rng)
    observed = np.zeros(k)
    z = np.zeros((flips.shape[0], k))
    effect = np.zeros(k)
    for j in range(k):
        col = d[:, j]
        signed = _signed_ranks(col * sign[j])
        sd = math.sqrt(float((signed ** 2).sum()))
        live = col[np.isfinite(col)]
        effect[j] = (float(np.median((live[:, None] + live[None, :])[np.triu_indices(live.size)] / 2))
                     if live.size else math.nan)
        if sd == 0:
            continue  # every round read the same: the metric says nothing either way
        observed[j] = signed.sum() / sd
        z[:, j] = flips @ signed / sd
    total = flips.shape[0]
    tol = 1e-9
    p_worse = (z >= observed - tol).sum(axis=0) / total
    p_better = (z <= observed + tol).sum(axis=0) / total
    top, bottom = z.max(axis=1), z.min(axis=1)
    adj_worse = np.maximum((top[:, None] >= observed[None, :] - tol).sum(axis=0) / total, p_worse)
    adj_better = np.maximum((bottom[:, None] <= observed[None, :] + tol).sum(axis=0) / total, p_better)
    return PairedTest(d, sign, observed, np.sort(top), p_worse, p_better, adj_worse, adj_better, effect, exact,
                      total)


def rounds_of(n_a: int, n_b: int) -> int:
    """Complete rounds in n_a + n_b launches run in round order: the i-th A with the i-th B."""
    return min(n_a, n_b)


__all__ = ["EXACT_ROUNDS", "FLIPS", "SAME_LEVEL", "PairedTest", "flip_floor", "min_rounds", "paired_test", "rounds_of"]
