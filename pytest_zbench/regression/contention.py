"""A busy host: a session-against-sessions verdict that the host's load, not the code, may explain
(docs/regression.md, "A busy host").

The reference runner counts, per frame, the involuntary context switches of its process (frames.csv
`preemptions`), and a launch summary carries the share of its measured frames that saw one (`preempted_share`).
Another task taking the CPU inside a frame lengthens that frame by a scheduler slice (milliseconds, against
frames of a fraction of one), and a quantile q moves once about 1 - q of the frames are hit: a p95 with 5 %
of the frames preempted, a median only with half. So a `regressed` (or `improved`) verdict on a metric is not
the code's when the slower side's preempted share exceeds the faster side's by more than half that metric's
tail: it becomes `inconclusive`, saying so and what to do. Sessions interleaved in one A/B run share their load
and are not guarded. A runner that does not count preemptions (None) leaves the verdict as it is.
Plain values; no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ..percentiles import PERCENTILES
from .gate import SceneVerdict, Verdict
from .hierarchy import launch_value

# Below this difference in preempted share (one frame in a hundred) the counts are each other's noise.
MIN_MARGIN = 0.01
# The tail mass of a metric that is not a quantile: a mean or a max moves with the first preempted frames.
NON_QUANTILE_TAIL = 0.01
# Each percentile's level as a quantile (rounded: 99.9 / 100 is not 0.999 in binary floating point).
QUANTILES = {name: round(level / 100, 6) for name, level in PERCENTILES}
# An adaptive scene's score is the change point of a fit to each step's median frame cost: it moves as a median.
METRIC_TAILS = {"adaptive.score": 0.5}


def mean_preempted_share(launches: Sequence[Any]) -> float | None:
    """The mean preempted share over the launches that report one; None when none does."""
    known = [v for v in (_share(launch) for launch in launches) if v is not None]
    return sum(known) / len(known) if known else None


def tail(metric: str) -> float:
    """The share of the frames whose lengthening moves `metric` (1 - q for a quantile q)."""
    if metric in METRIC_TAILS:
        return METRIC_TAILS[metric]
    stat = metric.rpartition(".")[2]
    return 1.0 - QUANTILES[stat] if stat in QUANTILES else NON_QUANTILE_TAIL


def margin(metric: str) -> float:
    """How much more of the slower side's frames may be preempted before `metric`'s verdict is the host's."""
    return max(tail(metric) / 2.0, MIN_MARGIN)


def guard(verdict: SceneVerdict, baseline_launches: Sequence[Any], candidate_launches: Sequence[Any]) -> SceneVerdict:
    """The scene verdict with every regressed or improved metric the host's load may explain made inconclusive,
    and a note saying how busy each side was."""
    base, cand = mean_preempted_share(baseline_launches), mean_preempted_share(candidate_launches)
    if base is None or cand is None:
        return verdict
    judged = tuple(_guarded(v, base, cand) for v in verdict.verdicts)
    if judged == verdict.verdicts:
        return verdict
    note = (f"busy host: {cand:.1%} of the candidate's measured frames were preempted (the kernel gave the CPU "
            f"to another task inside the frame) against {base:.1%} of the baseline's; the verdicts that load "
            f"can explain are inconclusive")
    return dataclasses.replace(verdict, verdicts=judged).with_notes(note)


def _guarded(v: Verdict, base: float, cand: float) -> Verdict:
    if v.verdict == "regressed":
        busier, other, side = cand, base, "candidate"
    elif v.verdict == "improved":
        busier, other, side = base, cand, "baseline"
    else:
        return v
    if busier - other <= margin(v.metric):
        return v
    reason = (f"Inconclusive, though {v.verdict} by the test: the {side} was measured on a busy host "
              f"({busier:.1%} of its frames preempted against {other:.1%}), and {v.metric} moves once about "
              f"{tail(v.metric):.1%} of the frames are hit, so the effect may be the host's load, not the code")
    advice = ("Rerun on a quiet device, or interleave both builds in one session (--zbench-ab), which shares "
              "whatever load there is between them.")
    return dataclasses.replace(v, verdict="inconclusive", reason=reason, advice=advice)


def _share(launch: Any) -> float | None:
    value = launch_value(launch, "preempted_share")
    return None if math.isnan(value) else value
