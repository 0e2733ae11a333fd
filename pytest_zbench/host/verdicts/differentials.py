"""Differential pairs (docs/scenes.md, "Differential pairs"): a scene with a feature minus the scene of the same
file that draws the same without it, per device, as the feature's cost with a bootstrap interval over launches.

The launch is the unit (docs/methodology.md §1): each side's launches give their median costs, the feature's
cost is the difference of the two sides' medians, and its interval resamples each side's launches on its own
(stats.bootstrap_difference_ci). The clock is the one the isolation check uses: gpu_ms when both scenes have a
trusted GPU time source, else cpu_ms.

Plain values in and out: run.json scene entries (with their `differential`) in, run.json `differentials` out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ...stats import BOOTSTRAP_CONFIDENCE, bootstrap_difference_ci
from .isolation import CostMetric, cost_metric, launch_costs

# Fewer complete launches a side and there is no interval: the difference of two single launches is noise.
MIN_LAUNCHES = 2
DIGITS = 4

DifferentialVerdict = Literal["costs", "saves", "no_difference", "inconclusive"]


@dataclass(frozen=True)
class DifferentialCost:
    """One run.json `differentials` entry: a pair on one device."""

    scene: str  # the scene with the feature
    minus: str  # the scene without it
    feature: str
    device: str
    metric: CostMetric | None
    with_ms: float | None  # the median over launches of the scene's per-launch median cost
    without_ms: float | None
    cost_ms: float | None  # with_ms - without_ms
    ci_low_ms: float | None
    ci_high_ms: float | None
    confidence: float
    launches: tuple[int, int]  # complete launches of each side
    verdict: DifferentialVerdict
    reason: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["launches"] = list(self.launches)
        return out


def differential_costs(scenes: Iterable[Mapping[str, Any]]) -> list[DifferentialCost]:
    """Every pair whose two scenes were measured on a device, in order of device and scene."""
    entries = [e for e in scenes if not e.get("skipped")]
    by_key = {(e["device"], e["id"]): e for e in entries}
    found = []
    for entry in sorted(entries, key=lambda e: (e["device"], e["id"])):
        spec = entry.get("differential")
        if not isinstance(spec, Mapping):
            continue
        base = by_key.get((entry["device"], spec["minus"]))
        if base is not None:
            found.append(_judge(entry, base, spec["feature"]))
    return found


def terminal_lines(pairs: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per pair of run.json's `differentials` section (computed once, when run.json was
    assembled): the feature's cost with its interval, or why there is none."""
    return [f"differential: {d['scene']} - {d['minus']} on {d['device']}: {d['feature']}: {describe(d)}"
            for d in pairs]


def describe(d: Mapping[str, Any]) -> str:
    """The cost of a `differentials` entry in words: "+1.23 ms [0.95, 1.51] cpu_ms (costs)"."""
    if d["cost_ms"] is None:
        return str(d["reason"])
    low, high = d["ci_low_ms"], d["ci_high_ms"]
    interval = f" [{low:+.3g}, {high:+.3g}]" if low is not None and high is not None else ""
    return f"{d['cost_ms']:+.3g} ms{interval} {d['metric']} ({str(d['verdict']).replace('_', ' ')}; {d['reason']})"


def _judge(entry: Mapping[str, Any], base: Mapping[str, Any], feature: str) -> DifferentialCost:
    metric = cost_metric((entry, base))
    with_costs, without_costs = launch_costs(entry, metric), launch_costs(base, metric)

    def result(verdict: DifferentialVerdict, reason: str, cost: float | None = None,
               ci: tuple[float, float] | None = None) -> DifferentialCost:
        return DifferentialCost(
            entry["id"], base["id"], feature, entry["device"], metric if with_costs and without_costs else None,
            _median(with_costs), _median(without_costs), None if cost is None else round(cost, DIGITS),
            None if ci is None else round(ci[0], DIGITS), None if ci is None else round(ci[1], DIGITS),
            BOOTSTRAP_CONFIDENCE, (len(with_costs), len(without_costs)), verdict, reason)

    if not with_costs or not without_costs:
        return result("inconclusive", f"no complete launch of {entry['id'] if not with_costs else base['id']}")
    without = statistics.median(without_costs)
    cost = statistics.median(with_costs) - without
    if min(len(with_costs), len(without_costs)) < MIN_LAUNCHES:
        return result("inconclusive", f"{len(with_costs)} and {len(without_costs)} complete launches; an interval "
                                      f"needs at least {MIN_LAUNCHES} a side (--zbench-runs)", cost)
    ci = bootstrap_difference_ci(with_costs, without_costs)
    if ci[0] > 0:
        verdict: DifferentialVerdict = "costs"
    elif ci[1] < 0:
        verdict = "saves"
    else:
        verdict = "no_difference"
    share = f"{cost / without:+.0%} over {base['id']}" if without > 0 else f"over {base['id']}"
    return result(verdict, f"{BOOTSTRAP_CONFIDENCE:.0%} interval over launches, {share}", cost, ci)


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), DIGITS) if values else None
