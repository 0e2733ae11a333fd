"""Why a scene regressed (or improved): which of its measurements moved (docs/regression.md, "Why it regressed").

The gate judges two or four metrics; the runner records many more per frame: the CPU stages, draw calls, state
changes, texture upload bytes, pixels drawn, allocations, preemptions, and GPU time and cold start beside them.
For a decided scene every one of them is compared with the same statistics the gate used for its verdict: the
caller hands in `rejudge`, the gate that decided the scene (A/B's launch bootstrap and permutation test, or the
sessions gate with its baseline sessions, spread window and pools) run again on other metrics. Each measurement
gets its effect (candidate / baseline, a ratio of medians) and its interval; the ones that moved are named
first.

Counters are often deterministic: the same scene draws the same calls in every launch. A measurement that reads
one value in every launch of a side has no spread to resample, and dividing by its zero spread would say
nothing, so it is compared exactly here and never handed to the gate: equal on both sides is "unchanged
(exact)", different is its exact ratio (interval the ratio itself), and a counter at zero on one side only is
"new" or "gone" (no ratio exists).

Plain values only: no pytest, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..protocol import COUNTER_COLUMNS, CPU_STAGE_COLUMNS, PREEMPTIONS_COLUMN, STOLEN_COLUMN
from .config import COLD_START_METRICS
from .gate import SceneVerdict, launch_values

# A measurement moved when its interval excludes 1 and its effect is at least this far from 1 (2 %): a
# practical floor, so that a tight interval around a 0.3 % change in an allocation count is not named as a
# cause. It is not the gate's bar: a cause can move by less than the scene's verdict needed.
MOVED_AT = 0.02
# The per-frame timings compared beside the counters (the gate's own metrics among them: the line names how
# far each moved, also those the gate did not decide on).
TIMING_METRICS: tuple[str, ...] = ("cpu_ms.p50", "cpu_ms.p95", "gpu_ms.p50", "gpu_ms.p95")
COUNTERS_PREFIX = "counters."

Kind = Literal["timing", "cpu_stage", "gpu", "counter", "system", "cold_start"]
# Counters of what the operating system did to the frame, not of the work it asked for: they follow the frame's
# length and the host's load (a longer frame is preempted more often), so they are context, not a cause.
SYSTEM_COUNTERS = frozenset({STOLEN_COLUMN, PREEMPTIONS_COLUMN, "minor_faults"})
# The order moved measurements are named in: a counter of the frame's work first, the cause a graphics engineer
# looks for; then what it cost (CPU stages, frame and GPU times), whose tails can move further than their cause;
# then what the system did around it, and cold start.
NAMING_ORDER: dict[str, int] = {"counter": 0, "cpu_stage": 1, "gpu": 2, "timing": 2, "system": 3, "cold_start": 4}
How = Literal["exact", "gate", "not_judged"]
# rejudge(metrics): the scene's gate, run again on these metrics, same baseline, same settings otherwise.
Rejudge = Callable[[tuple[str, ...]], SceneVerdict]


def display_name(metric: str) -> str:
    """A counter without its `counters.` prefix (`texture_upload_bytes`); other metrics as the gate names them."""
    return metric[len(COUNTERS_PREFIX):] if metric.startswith(COUNTERS_PREFIX) else metric


def kind_of(metric: str) -> Kind:
    name = display_name(metric)
    if metric.startswith(COUNTERS_PREFIX):
        return "cpu_stage" if name in CPU_STAGE_COLUMNS else "system" if name in SYSTEM_COUNTERS else "counter"
    if metric.startswith("gpu_ms"):
        return "gpu"
    return "cold_start" if metric in COLD_START_METRICS else "timing"


@dataclass(frozen=True)
class Movement:
    """One measurement compared: effect and interval as candidate / baseline ratios (None when no ratio
    exists: a side at zero, or not judged), the medians over each side's launches, and whether it moved."""

    metric: str
    kind: Kind
    how: How
    effect: float | None
    ci: tuple[float, float] | None
    moved: bool
    baseline_median: float | None
    candidate_median: float | None
    n_baseline: int
    n_candidate: int
    note: str = ""  # "unchanged (exact)", "new", "gone", why it was not judged, why it has no interval
    # Not judged because one side's cells were no numbers (dropped, with protocol issues): the why names it
    # apart, since the measurement may have moved by any amount.
    unreadable: bool = False

    @property
    def name(self) -> str:
        return display_name(self.metric)

    @property
    def size(self) -> float:
        """How far it moved, for the order: |log effect|, a counter that appeared or vanished first of all."""
        if self.effect is None:
            return math.inf if self.note in ("new", "gone") or (self.moved and self.ci is not None) else -1.0
        return abs(math.log(self.effect)) if self.effect > 0 else math.inf

    def text(self) -> str:
        """`texture_upload_bytes 2.00x (exact, 6.554e+04 -> 1.311e+05)`, `cpu_ms.p50 1.31x [1.25, 1.38]`."""
        if self.how == "not_judged":
            return f"{self.name} not judged ({self.note})"
        if self.note == "unchanged (exact)":
            return f"{self.name} unchanged (exact)"
        values = f"{_num(self.baseline_median)} -> {_num(self.candidate_median)}"
        if self.note in ("new", "gone"):
            return f"{self.name} {self.note} (exact, {values})"
        if self.effect is None:  # a side's median is zero: the ratio is meaningless, the interval's side is not
            side = "" if self.ci is None else f", interval {'above' if self.ci[0] > 1 else 'below' if self.ci[1] < 1 else 'across'} 1"
            return f"{self.name} {values} (median{side})"
        if self.how == "exact":
            return f"{self.name} {_ratio(self.effect)} (exact, {values})"
        if self.ci is None:
            return f"{self.name} {_ratio(self.effect)} (no interval: {self.note or 'not computed'})"
        return f"{self.name} {_ratio(self.effect)} [{_ratio(self.ci[0], unit=False)}, {_ratio(self.ci[1], unit=False)}]"

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "name": self.name, "kind": self.kind, "how": self.how,
                "effect": _finite(self.effect), "ci": None if self.ci is None else [_finite(x) for x in self.ci],
                "moved": self.moved, "baseline_median": _finite(self.baseline_median),
                "candidate_median": _finite(self.candidate_median), "n_baseline": self.n_baseline,
                "n_candidate": self.n_candidate, "note": self.note or None, "text": self.text()}


@dataclass(frozen=True)
class Attribution:
    """Every measurement compared, the moved ones first (largest move first), then the rest."""

    movements: tuple[Movement, ...]
    method: str = ""  # the gate's statistics the noisy measurements were compared with
    moved_at: float = MOVED_AT

    @property
    def moved(self) -> tuple[Movement, ...]:
        return tuple(m for m in self.movements if m.moved)

    @property
    def first(self) -> Movement | None:
        """The measurement that moved most, or None when none moved."""
        moved = self.moved
        return moved[0] if moved else None

    def line(self) -> str:
        """The verdict's `why:` line: what moved, largest first, then what did not."""
        moved = [m.text() for m in self.movements if m.moved]
        unreadable = [m.text() for m in self.movements if m.unreadable]
        rest = [m.text() for m in self.movements if not m.moved and not m.unreadable]
        head = "why: " + (", ".join(moved) if moved else f"no recorded measurement moved by {self.moved_at:.0%} or more")
        return (head + (f"; unreadable, so not judged: {', '.join(unreadable)}" if unreadable else "")
                + (f"; not moved: {', '.join(rest)}" if rest else ""))

    def to_json(self) -> dict[str, Any]:
        return {"moved": [m.name for m in self.moved], "moved_at": self.moved_at, "method": self.method,
                "line": self.line(), "measurements": [m.to_json() for m in self.movements]}


def candidate_metrics(baseline: Sequence[Any], candidate: Sequence[Any]) -> tuple[str, ...]:
    """What to compare: the timings, every counter a launch of either side recorded (CPU stages among them, in
    the order first seen), and cold start."""
    counters: dict[str, None] = {}
    for launch in (*baseline, *candidate):
        found = launch.get("counters") if isinstance(launch, Mapping) else getattr(launch, "counters", None)
        for name in found or {}:
            counters[COUNTERS_PREFIX + str(name)] = None
    stages = [m for m in counters if display_name(m) in CPU_STAGE_COLUMNS]
    # The protocol's own counters (draw_calls, texture_upload_bytes, complexity) before a runner's extras.
    others = sorted((m for m in counters if m not in stages), key=lambda m: display_name(m) not in COUNTER_COLUMNS)
    return (*TIMING_METRICS, *stages, *others, *COLD_START_METRICS)


def exact_movement(metric: str, base: np.ndarray, cand: np.ndarray) -> Movement | None:
    """The exact comparison of a measurement that reads one value in every launch of each side; None when
    either side has a spread (the gate's statistics compare it)."""
    if not base.size or not cand.size or np.ptp(base) != 0 or np.ptp(cand) != 0:
        return None
    b, c = float(base[0]), float(cand[0])
    fields: dict[str, Any] = dict(metric=metric, kind=kind_of(metric), how="exact", baseline_median=b,
                                  candidate_median=c, n_baseline=int(base.size), n_candidate=int(cand.size))
    if b == c:
        return Movement(effect=1.0, ci=(1.0, 1.0), moved=False, note="unchanged (exact)", **fields)
    if b == 0 or c == 0:
        return Movement(effect=None if b == 0 else 0.0, ci=None, moved=True, note="new" if b == 0 else "gone",
                        **fields)
    if b < 0 or c < 0:  # no counter is negative; a ratio of signed values would read backwards
        return Movement(effect=None, ci=None, moved=True, note="", **fields)
    ratio = c / b
    return Movement(effect=ratio, ci=(ratio, ratio), moved=abs(ratio - 1) >= MOVED_AT, **fields)


def explain(baseline: Sequence[Any], candidate: Sequence[Any], rejudge: Rejudge, *,
            metrics: Sequence[str] | None = None, moved_at: float = MOVED_AT,
            dropped: tuple[Mapping[str, int], Mapping[str, int]] = ({}, {})) -> Attribution:
    """Compare every measurement of the baseline's launches with the candidate's (LaunchSummary or to_dict()).

    Deterministic ones exactly (see the module's docstring); the others with `rejudge`, the scene's own gate
    run on them, whose per-metric effect and interval are read (its verdicts' bars are not: a measurement
    moved when its interval excludes 1 and its effect is `moved_at` or more from 1). `dropped`: per side
    (baseline, candidate), frames.csv column -> cells dropped as no number (protocol.dropped_cells); a counter
    one side recorded and the other wrote as garbage is named as unreadable, not as recorded by one side."""
    metrics = tuple(metrics) if metrics is not None else candidate_metrics(baseline, candidate)
    found: dict[str, Movement] = {}
    noisy: list[str] = []
    for metric in metrics:
        base, cand = launch_values(baseline, metric), launch_values(candidate, metric)
        if not base.size and not cand.size:
            continue  # neither side records it: nothing to say
        if not base.size or not cand.size:
            missing = 0 if base.size == 0 else 1  # the side without values
            garbage = dropped[missing].get(display_name(metric), 0)
            note = f"recorded by the {'candidate' if base.size == 0 else 'baseline'} only"
            if garbage:
                side, other = ("baseline", "candidate") if missing == 0 else ("candidate", "baseline")
                values = _median(cand if missing == 0 else base)
                note = (f"the {side} wrote {garbage} cell(s) that are no numbers, dropped (protocol issues in "
                        f"run.json); the {other}'s median is {_num(values)}")
            found[metric] = Movement(metric, kind_of(metric), "not_judged", None, None, False,
                                     _median(base), _median(cand), int(base.size), int(cand.size),
                                     note=note, unreadable=bool(garbage))
            continue
        exact = exact_movement(metric, base, cand)
        if exact is not None:
            found[metric] = exact
        else:
            noisy.append(metric)
    method = ""
    if noisy:
        verdict = rejudge(tuple(noisy))
        by_metric = verdict.by_metric()
        method = next((v.test_method for v in verdict.verdicts if v.test_method), "")
        skipped = dict(verdict.skipped)
        for metric in noisy:
            base, cand = launch_values(baseline, metric), launch_values(candidate, metric)
            judged = by_metric.get(metric)
            if judged is None:
                found[metric] = Movement(metric, kind_of(metric), "not_judged", None, None, False, _median(base),
                                         _median(cand), int(base.size), int(cand.size),
                                         note=skipped.get(metric, "the gate did not judge it"))
                continue
            found[metric] = _gate_movement(metric, judged, base, cand, moved_at)
    ordered = [found[m] for m in metrics if m in found]
    # The work the frame asked for first (counters), then what it cost (CPU stages, then frame times, then cold
    # start); in each, the largest move first, ties in the listed order (the protocol's own columns lead).
    moved = sorted((m for m in ordered if m.moved), key=lambda m: (NAMING_ORDER[m.kind], -m.size))
    rest = [m for m in ordered if not m.moved]
    return Attribution(tuple(moved + rest), method, moved_at)


def _gate_movement(metric: str, judged: Any, base: np.ndarray, cand: np.ndarray, moved_at: float) -> Movement:
    """A noisy measurement from the gate's per-metric Verdict: its effect and interval as the gate computed them
    (candidate / baseline), its medians taken over the launches here (as the gate takes them)."""
    ci = tuple(judged.ci) if judged.ci is not None else None
    b_med, c_med = _median(base), _median(cand)
    excludes_one = ci is not None and (ci[0] > 1 or ci[1] < 1)
    zero_side = b_med is not None and c_med is not None and (b_med <= 0 or c_med <= 0)
    if zero_side:  # the gate's log floor makes a ratio against zero astronomic: the medians say it better
        return Movement(metric, kind_of(metric), "gate", None, ci, excludes_one, b_med, c_med, int(base.size),
                        int(cand.size))
    effect = judged.effect
    moved = excludes_one and effect is not None and abs(effect - 1) >= moved_at
    # The gate gives no interval only when the between-session spread is unknown (a thin baseline).
    note = "" if ci is not None else "the between-session spread is unknown"
    return Movement(metric, kind_of(metric), "gate", effect, ci, moved, b_med, c_med, int(base.size),
                    int(cand.size), note=note)


def _median(values: np.ndarray) -> float | None:
    return float(np.median(values)) if values.size else None


def _ratio(value: float, *, unit: bool = True) -> str:
    if not math.isfinite(value) or value > 1000:
        text = ">1000"
    elif value < 0.001:
        text = "<0.001"
    else:
        text = f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"
    return text + ("x" if unit else "")


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.4g}"


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


__all__ = ["Attribution", "MOVED_AT", "Movement", "Rejudge", "TIMING_METRICS", "candidate_metrics", "display_name",
           "exact_movement", "explain", "kind_of"]
