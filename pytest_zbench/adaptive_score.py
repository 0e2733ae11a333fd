"""The adaptive score (docs/methodology.md §10): how much a device draws within its frame budget.

Per launch: the frames of each complexity step (the first SETTLE_FRAMES after a change left out) give one
point, the median frame cost of the step; a two-segment piecewise-linear fit of max(budget, cost) against
complexity, whose first segment is flat at the budget, puts its change point where the cost leaves the
budget: that complexity is the launch's score. Across launches: the median score, with a percentile
bootstrap interval over launches (the launch is the unit, docs/methodology.md §1). Pure numpy; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .stats import BOOTSTRAP_CONFIDENCE, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_median_ci

# Frames of a step left out of its point: a frame whose complexity differs from any of the SETTLE_FRAMES
# frames before it. A frame's interval can still carry the previous step's GPU work (the reference runner
# keeps two frames in flight), and a new complexity allocates what the old one did not need.
SETTLE_FRAMES = 2
# The per-frame series the fit reads: the uncapped frame interval, the one series that holds all of a
# frame's work on every backend (docs/methodology.md §10 says why not cpu_ms, gpu_ms or paced intervals).
FRAME_COST = "present_interval_ms"
MODEL = "frame_ms = max(budget_ms, cost); fitted: budget_ms + slope_ms * max(0, complexity - score)"

# "above": no step left the budget, the score is the largest complexity measured (a lower bound);
# "below": every step was over budget, the change point is extrapolated below the measured range.
Censored = Literal["above", "below"]
_DIGITS = 6


@dataclass(frozen=True)
class StepPoint:
    """One complexity step of a launch: its complexity, the median cost of its settled frames, how many."""

    complexity: float
    frame_ms: float
    frames: int


@dataclass(frozen=True)
class LaunchPoints:
    points: tuple[StepPoint, ...]
    excluded_frames: int  # measured frames left out: just after a change, or without a cost


def step_points(rows: Iterable[Mapping[str, Any]], settle: int = SETTLE_FRAMES,
                cost: str = FRAME_COST) -> LaunchPoints:
    """The fit's points of one launch from its frames.csv rows (warmup included, in frame order).

    A measured frame is used when its complexity equals that of each of the `settle` frames before it (a
    frame missing from the rows counts as a change) and its cost is known; the used frames are grouped by
    complexity and each group's median cost is its point."""
    rows = list(rows)
    complexity_of = {row["frame"]: row.get("complexity") for row in rows}
    groups: dict[float, list[float]] = {}
    excluded = 0
    for row in rows:
        if row["phase"] != "measure":
            continue
        c, y = row.get("complexity"), row.get(cost)
        frame = row["frame"]
        settled = c is not None and all(complexity_of.get(frame - k, math.nan) == c for k in range(1, settle + 1)
                                        if frame - k >= 0)
        if c is None or not settled or y is None or not math.isfinite(y):
            excluded += 1
            continue
        groups.setdefault(float(c), []).append(float(y))
    points = tuple(StepPoint(c, float(np.median(v)), len(v)) for c, v in sorted(groups.items()))
    return LaunchPoints(points, excluded)


@dataclass(frozen=True)
class HingeFit:
    """The fitted model budget + slope * max(0, c - score) of one launch, with its inputs and residuals."""

    score: float
    slope_ms: float  # ms of frame cost per unit of complexity past the change point
    sse: float  # weighted sum of squared residuals, ms^2 x frames
    budget_ms: float
    points: tuple[StepPoint, ...]
    residuals_ms: tuple[float, ...]  # max(budget, point) - fitted, per point
    censored: Censored | None

    def predict(self, complexity: float) -> float:
        return self.budget_ms + self.slope_ms * max(0.0, complexity - self.score)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, _DIGITS), "slope_ms": round(self.slope_ms, 9), "sse": round(self.sse, _DIGITS),
            "censored": self.censored,
            "points": [[p.complexity, round(p.frame_ms, _DIGITS), p.frames] for p in self.points],
            "residuals_ms": [round(r, _DIGITS) for r in self.residuals_ms],
        }


def fit_hinge(points: Sequence[StepPoint], budget_ms: float) -> HingeFit:
    """Least squares of max(budget, frame_ms) against budget + t * max(0, c - s) over s >= 0, t >= 0, each
    point weighted by its frame count. Exact: for every split of the sorted complexities the points right
    of it are a weighted line whose root is the candidate change point, else an end of the split's interval
    is, with the slope in closed form there (Kundu and Ubhaya's two-segment regression, first segment fixed)."""
    if not (math.isfinite(budget_ms) and budget_ms > 0):
        raise ValueError(f"budget_ms must be a positive number of milliseconds, not {budget_ms!r}")
    if not points:
        raise ValueError("a fit needs at least one complexity step")
    x = np.array([p.complexity for p in points], dtype=float)
    w = np.array([p.frames for p in points], dtype=float)
    r = np.maximum(np.array([p.frame_ms for p in points], dtype=float), budget_ms) - budget_ms
    order = np.argsort(x, kind="stable")
    x, w, r = x[order], w[order], r[order]
    distinct = np.unique(x)

    def sse(s: float, t: float) -> float:
        return float(np.sum(w * (r - t * np.maximum(0.0, x - s)) ** 2))

    def slope_at(s: float) -> float:
        h = np.maximum(0.0, x - s)
        denominator = float(np.sum(w * h * h))
        return max(0.0, float(np.sum(w * r * h)) / denominator) if denominator > 0 else 0.0

    # Flat everywhere (no step over budget): the change point is at or past the largest complexity.
    best = (sse(float(x[-1]), 0.0), float(x[-1]), 0.0)
    edges = [0.0, *(float(v) for v in distinct)]
    for k in range(len(edges) - 1):
        lo, hi = edges[k], edges[k + 1]  # s in [lo, hi): every point with x >= hi is right of it
        right = x >= hi
        candidates = [(lo, slope_at(lo)), (hi, slope_at(hi))]
        if np.unique(x[right]).size >= 2:
            ww, xx, rr = w[right], x[right], r[right]
            mx, mr = np.average(xx, weights=ww), np.average(rr, weights=ww)
            t = float(np.sum(ww * (xx - mx) * (rr - mr)) / np.sum(ww * (xx - mx) ** 2))
            if t > 0:
                s = mx - mr / t  # where the line r = t * (x - s) crosses zero
                if lo <= s <= hi:
                    candidates.append((float(s), t))
        for s, t in candidates:
            value = sse(s, t)
            if value < best[0] - 1e-12 * max(1.0, best[0]):
                best = (value, s, t)
    value, score, slope = best
    censored: Censored | None = None
    if slope == 0.0 or score >= x[-1]:
        score, slope, censored = float(x[-1]), 0.0, "above"
        value = sse(score, 0.0)
    elif score < x[0]:
        censored = "below"
    fitted = budget_ms + slope * np.maximum(0.0, x - score)
    residuals = (r + budget_ms) - fitted
    sorted_points = tuple(points[i] for i in order)
    return HingeFit(score=float(score), slope_ms=float(slope), sse=float(value), budget_ms=float(budget_ms),
                    points=sorted_points, residuals_ms=tuple(float(v) for v in residuals), censored=censored)


@dataclass(frozen=True)
class ScoreSummary:
    """Across launches: the median of the per-launch scores and its bootstrap interval (None below 2)."""

    score: float
    ci: tuple[float, float] | None
    per_run_scores: tuple[float, ...]
    resamples: int
    confidence: float
    seed: int

    @property
    def relative_half_width(self) -> float | None:
        """Half the interval over the score: the precision the bench reports."""
        if self.ci is None or self.score <= 0:
            return None
        return (self.ci[1] - self.ci[0]) / 2 / self.score


def summarize_scores(scores: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                     confidence: float = BOOTSTRAP_CONFIDENCE, seed: int = BOOTSTRAP_SEED) -> ScoreSummary:
    if not scores:
        raise ValueError("no launch has a score")
    ci = bootstrap_median_ci(scores, resamples=resamples, confidence=confidence, seed=seed) if len(scores) > 1 else None
    return ScoreSummary(float(np.median(scores)), ci, tuple(float(s) for s in scores), resamples, confidence, seed)


def not_measured(section: Mapping[str, Any]) -> str | None:
    """Why run.json's `adaptive` section has no score to show, or None when it has one. No score at all (no
    complete ramp launch: the section's note says why), or a score of 0: the fit sits on its bound (score >= 0),
    every step of the ramps over budget and the cost still over it when extrapolated down to no complexity, so
    the device was never seen within its budget. Shown as 0, that read as a measured score that passed."""
    score = section.get("score")
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return str(section.get("note") or "no scored launch")
    if score <= 0:
        return str(section.get("note") or "every step was over budget: no complexity fits the frame budget")
    return None


__all__ = [
    "BOOTSTRAP_CONFIDENCE", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "FRAME_COST", "MODEL", "SETTLE_FRAMES",
    "Censored", "HingeFit", "LaunchPoints", "ScoreSummary", "StepPoint", "bootstrap_median_ci", "fit_hinge",
    "not_measured", "step_points", "summarize_scores",
]
