"""Change points in a scene's history: where did the per-run medians step, and at which build?

E-divisive with means (Matteson & James 2014, "A nonparametric approach for multiple change point analysis
of multivariate data"), implemented here rather than taken from `ruptures` because it comes with its own
significance test: a step is kept only when a permutation test says a split that good is unlikely in a
series without one, so a flat noisy series yields no change points without a penalty to tune. Bisection is
hierarchical: find the best split of any current segment, test it, repeat until a split is not significant.

The series is taken in logs, so a step is a ratio and 4 ms -> 5 ms counts as much as 8 ms -> 10 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .history import SeriesPoint


@dataclass(frozen=True)
class ChangePoint:
    """A step at series index `index` (the first point after it); magnitude = median after / before."""

    index: int
    magnitude: float
    p_value: float
    build_hash: str | None = None
    run_id: str | None = None
    started_utc: str | None = None

    def describe(self) -> str:
        build = f" at build {self.build_hash[:10]}" if self.build_hash else ""
        when = f" ({self.started_utc[:10]})" if self.started_utc else ""
        return (f"step x{self.magnitude:.3f} ({self.magnitude - 1:+.1%}){build}{when}, run #{self.index}, "
                f"p={self.p_value:.3g}")


def _block_sums(prefix: np.ndarray, a: np.ndarray | int, b: np.ndarray | int, c: np.ndarray | int,
                d: np.ndarray | int) -> np.ndarray:
    """Sum of distances over rows [a, b) x columns [c, d) from a 2-D prefix sum (vectorised over arrays)."""
    return prefix[b, d] - prefix[a, d] - prefix[b, c] + prefix[a, c]


def _best_split(prefix: np.ndarray, start: int, end: int, min_size: int) -> tuple[float, int]:
    """The split tau of [start, end) maximising the scaled energy statistic Q, and Q."""
    taus = np.arange(start + min_size, end - min_size + 1)
    if taus.size == 0:
        return -np.inf, -1
    m = (taus - start).astype(float)
    n = (end - taus).astype(float)
    within_left = _block_sums(prefix, start, taus, start, taus)  # ordered pairs, so twice each pair
    within_right = _block_sums(prefix, taus, end, taus, end)
    between = _block_sums(prefix, start, taus, taus, end)
    energy = 2 * between / (m * n) - within_left / (m * (m - 1)) - within_right / (n * (n - 1))
    q = m * n / (m + n) * energy
    best = int(np.argmax(q))
    return float(q[best]), int(taus[best])


def _prefix(x: np.ndarray) -> np.ndarray:
    distances = np.abs(x[:, None] - x[None, :])
    prefix = np.zeros((x.size + 1, x.size + 1))
    prefix[1:, 1:] = distances.cumsum(axis=0).cumsum(axis=1)
    return prefix


def _best_over(prefix: np.ndarray, bounds: Sequence[int], min_size: int) -> tuple[float, int]:
    candidates = [_best_split(prefix, s, e, min_size) for s, e in zip(bounds, bounds[1:])]
    return max(candidates, key=lambda qt: qt[0])


def e_divisive(values: Sequence[float], *, min_size: int = 3, sig_level: float = 0.05, permutations: int = 199,
               seed: int = 0, max_points: int | None = None) -> list[tuple[int, float]]:
    """Significant change points of a 1-D series as (index of the first point after the step, p-value),
    sorted by index. Each candidate split is tested by permuting points within the current segments."""
    if min_size < 2:
        raise ValueError("min_size must be at least 2 (a segment needs a within-segment distance)")
    x = np.asarray(values, dtype=float)
    if x.size < 2 * min_size or not np.isfinite(x).all():
        return []
    rng = np.random.default_rng(seed)
    prefix = _prefix(x)
    bounds = [0, x.size]
    found: list[tuple[int, float]] = []
    while max_points is None or len(found) < max_points:
        q, tau = _best_over(prefix, bounds, min_size)
        if tau < 0:
            break
        exceed = 0
        give_up = sig_level * (permutations + 1) - 1  # past this many, p > sig_level whatever follows
        for _ in range(permutations):
            shuffled = x.copy()
            for s, e in zip(bounds, bounds[1:]):
                shuffled[s:e] = rng.permutation(shuffled[s:e])
            if _best_over(_prefix(shuffled), bounds, min_size)[0] >= q:
                exceed += 1
                if exceed > give_up:
                    break
        p = (exceed + 1) / (permutations + 1)
        if p > sig_level:
            break
        found.append((tau, p))
        bounds = sorted([*bounds, tau])
    return sorted(found)


def change_points(points: Sequence[SeriesPoint | float | None], *, min_size: int = 3, sig_level: float = 0.05,
                  permutations: int = 199, seed: int = 0) -> list[ChangePoint]:
    """Change points of a history series (SeriesPoint list, oldest first) or of plain positive values.

    Points without a value are skipped; indices refer to the series as given. The magnitude compares the
    medians of the segments on either side of each step (up to the neighbouring steps)."""
    raw = [p.value if isinstance(p, SeriesPoint) else p for p in points]
    keep = [i for i, v in enumerate(raw) if v is not None and np.isfinite(v) and v > 0]
    values = np.array([raw[i] for i in keep], dtype=float)
    steps = e_divisive(np.log(values), min_size=min_size, sig_level=sig_level, permutations=permutations,
                       seed=seed) if values.size else []
    edges = [0, *[tau for tau, _ in steps], values.size]
    out = []
    for k, (tau, p) in enumerate(steps):
        before, after = values[edges[k]:tau], values[tau:edges[k + 2]]
        index = keep[tau]
        point = points[index]
        meta = (point.build_hash, point.run_id, point.started_utc) if isinstance(point, SeriesPoint) else (None,) * 3
        out.append(ChangePoint(index, float(np.median(after) / np.median(before)), p, *meta))
    return out


# The latest run is flagged when it sits this many robust standard deviations from the earlier runs' median (in
# logs) and beyond LATEST_MIN_STEP: the change-point test needs min_size runs after a step, so a step in the
# newest run is invisible to it (docs/regression.md, "History").
LATEST_Z = 4.0
LATEST_MIN_STEP = 0.15
LATEST_MIN_EARLIER = 4


@dataclass(frozen=True)
class LatestOutlier:
    """The newest run against the runs before it: its ratio to their median and the robust z of its log."""

    ratio: float
    z: float
    earlier: int


def latest_outside(points: Sequence[SeriesPoint | float | None]) -> LatestOutlier | None:
    """The newest known value when it lies outside the earlier values' spread (LATEST_Z robust sds, 1.4826 x the
    MAD of the logs, and more than LATEST_MIN_STEP away), else None; None too with fewer than
    LATEST_MIN_EARLIER earlier values or a value at or below 0."""
    values = [v for v in (p.value if isinstance(p, SeriesPoint) else p for p in points) if v is not None]
    if len(values) < LATEST_MIN_EARLIER + 1 or min(values) <= 0:
        return None
    logs = np.log(np.asarray(values, dtype=float))
    earlier, latest = logs[:-1], float(logs[-1])
    centre = float(np.median(earlier))
    scale = 1.4826 * float(np.median(np.abs(earlier - centre)))
    step = latest - centre
    if abs(step) <= np.log1p(LATEST_MIN_STEP):
        return None
    z = step / scale if scale > 0 else float(np.copysign(np.inf, step))
    return LatestOutlier(float(np.exp(step)), z, earlier.size) if abs(z) > LATEST_Z else None
