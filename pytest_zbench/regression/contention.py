"""A busy host: a session-against-sessions verdict that the host's load, not the code, may explain
(docs/regression.md, "A busy host").

The measure is stolen time, not preempted frames. A frame that takes longer is preempted more often on the same
host (fill.alpha.x8: 1.7 % of frames without a 3 ms burn, 25 % with it), so the share of preempted frames rises
with every CPU regression and would excuse each one. What load does to a frame is the time other tasks took
inside it: the runner's `stolen_ms` (the frame's wall time less its thread's CPU time). Each launch summary
carries the on-CPU time of its frames (`oncpu_ms`, cpu_ms less stolen_ms) and the stolen share of its cpu_ms.

The rule, for a `regressed` (or `improved`) metric whose slower side lost more of its frame time to other tasks
(by more than MIN_STOLEN_MARGIN of cpu_ms):

* a cpu_ms statistic is judged again on on-CPU time (`oncpu_ms.<stat>`, the same gate, sessions, bar and alpha):
  the verdict stands when the on-CPU verdict is the same, and becomes `inconclusive` otherwise. So an effect
  larger than the stolen time can explain is never excused;
* any other metric (no on-CPU twin) becomes `inconclusive`: what the stolen time did to it is not measured.

Without stolen_ms on both sides (a runner that cannot know it, a history recorded before the column), the
earlier rule on the preempted share stands, with its known fault.

Stolen time misses the load that does not take the frame's CPU: another task on another core slows a frame
through shared caches, memory bandwidth and clocks (in CI a same-build session beside another measuring test read
41 % slower than its three quiet baseline sessions, and was `regressed`). So a second rule reads each launch's
co-run load (`corun_load`: the CPUs other tasks kept busy while its runner ran, from the runner's /proc/stat
reading, result.json host_load). For a `regressed` (or `improved`) metric whose slower side ran beside more of it
(by more than MIN_CORUN_MARGIN CPUs), the verdict stands when the interval's near end is past what that load can
explain, a slowdown of at most 1 + MAX_CORUN_SLOWDOWN x the extra load (capped at one CPU), and becomes
`inconclusive` otherwise. A 25x slowdown never talks its way out; a 1.4x one beside a busy core does.

Sessions interleaved in one A/B run share their load and are not guarded. Plain values; no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ..percentiles import PERCENTILES
from .config import GateConfig
from .gate import SceneVerdict, Verdict
from .hierarchy import launch_value

# Below this difference in stolen share (one hundredth of cpu_ms) the two sides' load is each other's noise.
MIN_STOLEN_MARGIN = 0.01
# The series whose per-frame values have an on-CPU twin in the launch summary.
ON_CPU_SERIES = {"cpu_ms": "oncpu_ms"}

# Below this difference in mean co-run load (CPUs) the two sides' load is each other's noise: /proc/stat counts in
# clock ticks of 10 ms per CPU, so over a runner's run of about a second a launch reads its load to about 0.05 CPU.
MIN_CORUN_MARGIN = 0.25
# The largest slowdown one CPU of other tasks can cause a frame that keeps its own CPU, per CPU of extra load: a
# task sharing the frame's core (an SMT sibling) leaves it about half the core's throughput, so at most 2x; on
# other cores shared caches, memory bandwidth and a shared clock cost less (41 % measured in CI, docs/regression.md).
# The extra load counts up to one CPU: the frame's thread runs on one core, and one co-runner on it is the worst.
MAX_CORUN_SLOWDOWN = 1.0
MAX_CORUN_CPUS = 1.0

# The earlier rule, for launches without stolen_ms: below this difference in preempted share the counts are noise.
MIN_MARGIN = 0.01
# The tail mass of a metric that is not a quantile: a mean or a max moves with the first preempted frames.
NON_QUANTILE_TAIL = 0.01
# Each percentile's level as a quantile (rounded: 99.9 / 100 is not 0.999 in binary floating point).
QUANTILES = {name: round(level / 100, 6) for name, level in PERCENTILES}
# An adaptive scene's score is the change point of a fit to each step's median frame cost: it moves as a median.
METRIC_TAILS = {"adaptive.score": 0.5}


def on_cpu_metric(metric: str) -> str | None:
    """The metric's on-CPU twin ("cpu_ms.p95" -> "oncpu_ms.p95"), None when it has none."""
    series, dot, stat = metric.partition(".")
    twin = ON_CPU_SERIES.get(series)
    return f"{twin}.{stat}" if twin and dot else None


def mean_stolen_share(launches: Sequence[Any]) -> float | None:
    """The mean stolen share over the launches that report one; None when none does."""
    return _mean(launches, "stolen_share")


def mean_preempted_share(launches: Sequence[Any]) -> float | None:
    """The mean preempted share over the launches that report one; None when none does."""
    return _mean(launches, "preempted_share")


def twins_to_judge(verdict: SceneVerdict) -> tuple[str, ...]:
    """The on-CPU metrics the guard needs judged: the twins of the regressed or improved metrics."""
    twins = (on_cpu_metric(v.metric) for v in verdict.verdicts if v.verdict in ("regressed", "improved"))
    return tuple(dict.fromkeys(t for t in twins if t))


def tail(metric: str) -> float:
    """The share of the frames whose lengthening moves `metric` (1 - q for a quantile q)."""
    if metric in METRIC_TAILS:
        return METRIC_TAILS[metric]
    stat = metric.rpartition(".")[2]
    return 1.0 - QUANTILES[stat] if stat in QUANTILES else NON_QUANTILE_TAIL


def margin(metric: str) -> float:
    """The earlier rule: how much more of the slower side's frames may be preempted before `metric`'s verdict is
    the host's."""
    return max(tail(metric) / 2.0, MIN_MARGIN)


def guard(verdict: SceneVerdict, baseline_launches: Sequence[Any], candidate_launches: Sequence[Any],
          on_cpu: SceneVerdict | None = None) -> SceneVerdict:
    """The scene verdict with every regressed or improved metric the host's load may explain made inconclusive,
    and a note saying how busy each side was. `on_cpu`: the same gate's verdict on the twins (twins_to_judge)."""
    return _guard_corun(_guard_stolen(verdict, baseline_launches, candidate_launches, on_cpu),
                        baseline_launches, candidate_launches)


def _guard_stolen(verdict: SceneVerdict, baseline_launches: Sequence[Any], candidate_launches: Sequence[Any],
                  on_cpu: SceneVerdict | None) -> SceneVerdict:
    """The stolen-time rule (or, without stolen_ms on both sides, the earlier preempted-share rule)."""
    base, cand = mean_stolen_share(baseline_launches), mean_stolen_share(candidate_launches)
    if base is None or cand is None:
        return _guard_preempted(verdict, baseline_launches, candidate_launches)
    twins = on_cpu.by_metric() if on_cpu is not None else {}
    judged = tuple(_guarded(v, base, cand, twins) for v in verdict.verdicts)
    if judged == verdict.verdicts:
        return verdict
    excused = [v.metric for v, w in zip(verdict.verdicts, judged) if w.verdict != v.verdict]
    kept = [w.metric for v, w in zip(verdict.verdicts, judged) if w.reason != v.reason and w.verdict == v.verdict]
    note = (f"busy host: other tasks took {cand:.1%} of the candidate's frame time (stolen_ms) against "
            f"{base:.1%} of the baseline's; "
            + (f"inconclusive with it taken out: {', '.join(excused)}" if excused else "")
            + ("; " if excused and kept else "")
            + (f"holding on on-CPU time: {', '.join(kept)}" if kept else ""))
    return dataclasses.replace(verdict, verdicts=judged).with_notes(note)


def mean_corun_load(launches: Sequence[Any]) -> float | None:
    """The mean co-run load (CPUs busy with other tasks) over the launches that report one; None when none does."""
    return _mean(launches, "corun_load")


def corun_explains(extra_cpus: float) -> float:
    """The largest slowdown (a ratio) that `extra_cpus` more CPUs of other tasks can cause a frame."""
    return 1.0 + MAX_CORUN_SLOWDOWN * min(max(extra_cpus, 0.0), MAX_CORUN_CPUS)


def _guard_corun(verdict: SceneVerdict, baseline_launches: Sequence[Any],
                 candidate_launches: Sequence[Any]) -> SceneVerdict:
    """The co-run rule: a regressed or improved metric whose slower side ran beside more load on other CPUs stands
    only when its interval's near end is past the slowdown that load can explain."""
    base, cand = mean_corun_load(baseline_launches), mean_corun_load(candidate_launches)
    if base is None or cand is None:
        return verdict
    judged = tuple(_guarded_corun(v, base, cand) for v in verdict.verdicts)
    if judged == verdict.verdicts:
        return verdict
    excused = [v.metric for v, w in zip(verdict.verdicts, judged) if w.verdict != v.verdict]
    kept = [w.metric for v, w in zip(verdict.verdicts, judged) if w.reason != v.reason and w.verdict == v.verdict]
    note = (f"busy host: other tasks kept {cand:.2f} CPUs busy beside the candidate's frames against {base:.2f} "
            "beside the baseline's (co-run load); "
            + (f"inconclusive as within what that load explains: {', '.join(excused)}" if excused else "")
            + ("; " if excused and kept else "")
            + (f"past what it explains: {', '.join(kept)}" if kept else ""))
    return dataclasses.replace(verdict, verdicts=judged).with_notes(note)


def _guarded_corun(v: Verdict, base: float, cand: float) -> Verdict:
    sides = _slower_side(v, base, cand)
    if sides is None or sides[0] - sides[1] <= MIN_CORUN_MARGIN:
        return v
    busier, other, side = sides
    explains = corun_explains(busier - other)
    near = _slower_by_at_least(v)
    loaded = (f"other tasks kept {busier:.2f} CPUs busy beside the {side}'s frames against {other:.2f}, which can "
              f"slow a frame by up to {explains:.2f}x (shared caches, memory bandwidth, clocks; stolen time does "
              "not show it)")
    if near is not None and near > explains:
        reason = (f"{v.verdict.capitalize()} beyond the co-run load: {loaded}, and the interval's near end "
                  f"({near:.3f}x slower) is past that")
        return dataclasses.replace(v, reason=(v.reason + " " if v.reason else "") + reason)
    reason = (f"Inconclusive, though {v.verdict} by the test: {loaded}, and the {side} is slower by "
              + (f"at least {near:.3f}x" if near is not None else "an unknown amount") + ", which that load can explain")
    advice = ("Rerun on a quiet device, or interleave both builds in one session (--zbench-ab), which shares "
              "whatever load there is between them.")
    return dataclasses.replace(v, verdict="inconclusive", reason=reason, advice=advice)


def _slower_by_at_least(v: Verdict) -> float | None:
    """The near end of the interval as the slower side's ratio (> 1): how much slower, at least, the side a
    regressed (the candidate) or improved (the baseline) verdict calls slower is; None without an interval. For a
    higher-is-better metric (an adaptive score) "slower" reads "worse"."""
    if v.ci is None or v.ci[0] <= 0 or v.ci[1] <= 0:
        return None
    low, high = v.ci
    worse_low, worse_high = (1 / high, 1 / low) if GateConfig.higher_is_better(v.metric) else (low, high)
    return worse_low if v.verdict == "regressed" else 1 / worse_high


def _slower_side(v: Verdict, base: float, cand: float) -> tuple[float, float, str] | None:
    """The load of the side a regressed (the candidate) or improved (the baseline) verdict calls slower, the
    other side's, and the slower side's name; None for a verdict that names no slower side."""
    if v.verdict == "regressed":
        return cand, base, "candidate"
    if v.verdict == "improved":
        return base, cand, "baseline"
    return None


def _guarded(v: Verdict, base: float, cand: float, twins: dict[str, Verdict]) -> Verdict:
    sides = _slower_side(v, base, cand)
    if sides is None or sides[0] - sides[1] <= MIN_STOLEN_MARGIN:
        return v
    busier, other, side = sides
    loaded = (f"the {side}'s frames lost {busier:.1%} of their time to other tasks (stolen_ms) against "
              f"{other:.1%}")
    name = on_cpu_metric(v.metric)
    twin = twins.get(name) if name else None
    if twin is not None and twin.verdict == v.verdict:
        reason = (f"{v.verdict.capitalize()} on on-CPU time too ({name} {_effect(twin)}): {loaded}, and the effect "
                  f"is larger than that stolen time explains")
        return dataclasses.replace(v, reason=(v.reason + " " if v.reason else "") + reason)
    if twin is not None:
        why = (f"with the stolen time taken out the effect is {_effect(twin)} ({name} {twin.verdict}), so the "
               f"host's load explains it")
    else:
        why = f"{v.metric} has no on-CPU twin, so what the stolen time did to it is not measured"
    reason = f"Inconclusive, though {v.verdict} by the test: {loaded}; {why}"
    advice = ("Rerun on a quiet device, or interleave both builds in one session (--zbench-ab), which shares "
              "whatever load there is between them.")
    return dataclasses.replace(v, verdict="inconclusive", reason=reason, advice=advice)


def _effect(v: Verdict) -> str:
    if v.effect is None:
        return "unknown"
    ci = f", 95 % CI {v.ci[0]:.3g}x..{v.ci[1]:.3g}x" if v.ci is not None else ""
    return f"{v.effect:.3g}x{ci}"


def _guard_preempted(verdict: SceneVerdict, baseline_launches: Sequence[Any],
                     candidate_launches: Sequence[Any]) -> SceneVerdict:
    """The earlier rule, for launches without stolen_ms: the preempted share against the metric's tail."""
    base, cand = mean_preempted_share(baseline_launches), mean_preempted_share(candidate_launches)
    if base is None or cand is None:
        return verdict
    judged = tuple(_guarded_preempted(v, base, cand) for v in verdict.verdicts)
    if judged == verdict.verdicts:
        return verdict
    note = (f"busy host: {cand:.1%} of the candidate's measured frames were preempted (the kernel gave the CPU "
            f"to another task inside the frame) against {base:.1%} of the baseline's; no stolen_ms on both sides, "
            f"so the verdicts that load can explain are inconclusive")
    return dataclasses.replace(verdict, verdicts=judged).with_notes(note)


def _guarded_preempted(v: Verdict, base: float, cand: float) -> Verdict:
    sides = _slower_side(v, base, cand)
    if sides is None or sides[0] - sides[1] <= margin(v.metric):
        return v
    busier, other, side = sides
    reason = (f"Inconclusive, though {v.verdict} by the test: the {side} was measured on a busy host "
              f"({busier:.1%} of its frames preempted against {other:.1%}), and {v.metric} moves once about "
              f"{tail(v.metric):.1%} of the frames are hit, so the effect may be the host's load, not the code")
    advice = ("Rerun on a quiet device, or interleave both builds in one session (--zbench-ab), which shares "
              "whatever load there is between them.")
    return dataclasses.replace(v, verdict="inconclusive", reason=reason, advice=advice)


def _mean(launches: Sequence[Any], key: str) -> float | None:
    known = [v for v in (launch_value(launch, key) for launch in launches) if not math.isnan(v)]
    return sum(known) / len(known) if known else None
