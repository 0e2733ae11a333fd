"""Isolation checks (docs/scenes.md, "Isolation"): does a sweep's cost rise with the swept dimension?

A scene isolates one cost only if measuring more of it costs more. For every sweep with a numeric dimension
(`fill.opaque.x{layers}` over layers 1, 2, 4, 8) the host ranks every launch's median cost against the
dimension's value (Spearman's rho over launches, not over case medians, so that two cases of two launches
still tell noise from a trend) and asks for three things: a rank correlation of at least RHO_THRESHOLD, a
rise from the smallest case to the largest that a timer can tell from nothing (MIN_RISE_MS and MIN_RISE_SHARE),
and an elasticity of at least MIN_ELASTICITY: the dimension must account for a fair share of the largest case's
cost, not only move it. A sweep that fails any does not scale on that device: its scenes measure something
else, and the likely cause says what: culled (the swept work costs nothing measurable at all), bound
elsewhere (the other clock scales instead), cached (only the first frame scales), fixed cost (the swept work
adds too little to a cost that does not move with it).

Plain values in and out: run.json scene entries in, run.json `isolation` entries out.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

# Stated thresholds (docs/scenes.md quotes them with the figures bench/isolation_rates.py measured).
RHO_THRESHOLD = 0.6
# A rise smaller than this is not told from timer resolution and noise: the largest case's median cost must
# exceed the smallest case's by MIN_RISE_MS and by MIN_RISE_SHARE of it.
MIN_RISE_MS = 0.05
MIN_RISE_SHARE = 0.10
# The share of the largest case's cost the dimension accounts for, at least: the slope of a straight line
# through every launch's cost against the dimension (Theil-Sen: the median of the slopes between launches, so
# one slowed launch does not make or break it), times the largest value, over that case's median cost. 1 is a
# cost all made of the swept work, 0 a cost it does not move. A rank rule alone passes a sweep whose work is
# culled while its draws still cost their setup (llvmpipe's opaque overdraw: each layer's binning, a tenth of
# what a blended layer costs), or whose frame costs far more than what it sweeps. docs/scenes.md quotes the
# rates bench/bench_isolation_rates.py measured at this threshold.
MIN_ELASTICITY = 0.5
# The other clock rising names the sweep bound elsewhere only when it rises by this much: more than issuing a
# few more draws costs the CPU (opaque overdraw culled on the GPU still costs ~0.1 ms of CPU at 8 layers).
MIN_BOUND_RISE_MS = 0.25
# At least this many launches in all, over at least two values of the dimension, or the check is inconclusive.
MIN_POINTS = 4

Verdict = Literal["scales", "not_scaling", "inconclusive"]
LikelyCause = Literal["culled", "bound_elsewhere", "cached", "fixed_cost"]
CostMetric = Literal["gpu_ms", "cpu_ms"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Isolation:
    """One run.json `isolation` entry: one sweep dimension of one family on one device."""

    family: str  # the sweep's id template, other swept params filled in: "texture.once.s{size}"
    device: str
    dimension: str
    metric: CostMetric | None
    values: tuple[float, ...]  # the dimension's values, smallest first
    medians_ms: tuple[float | None, ...]  # the median cost of each value, across its launches
    launches: int
    rho: float | None
    rise_ms: float | None
    elasticity: float | None  # the share of the largest case's cost the dimension accounts for (MIN_ELASTICITY)
    verdict: Verdict
    likely_cause: LikelyCause | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["values"], out["medians_ms"] = list(self.values), list(self.medians_ms)
        return out


def check_isolation(scenes: Iterable[Mapping[str, Any]]) -> list[Isolation]:
    """Every sweep dimension of the given run.json scene entries, per device, in order of device and family."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for entry in scenes:
        for dimension in _numeric_dimensions(entry):
            family = _family(entry, dimension)
            if family is not None:
                groups.setdefault((entry["device"], family, dimension), []).append(entry)
    return [_judge(device, family, dimension, entries)
            for (device, family, dimension), entries in sorted(groups.items())
            if len({float(e["params"][dimension]) for e in entries}) >= 2]


def terminal_lines(checks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The terminal's lines, from run.json's `isolation` section (computed once, when run.json was
    assembled): one per sweep that does not scale (the ones that do are in run.json)."""
    lines = []
    for i in checks:
        if i["verdict"] == "not_scaling":
            cause = f", likely {i['likely_cause'].replace('_', ' ')}" if i["likely_cause"] else ""
            lines.append(f"isolation: {i['family']} on {i['device']} does not scale with {i['dimension']}"
                         f"{cause}: {i['reason']}")
    return lines


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation with average ranks for ties; None when either side is constant."""
    if len(x) != len(y) or len(x) < 2:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda k: values[k])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in order[start:end + 1]:
            ranks[k] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _numeric_dimensions(entry: Mapping[str, Any]) -> list[str]:
    """The swept params that are quantities (numbers, not names such as an upload policy)."""
    if entry.get("skipped") or not entry.get("sweep"):
        return []
    return [name for name, value in (entry.get("params") or {}).items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)]


def _family(entry: Mapping[str, Any], dimension: str) -> str | None:
    """The sweep's template with every other swept param filled in, so that `{upload} x {size}` is judged as one
    size sweep per upload policy. None when the dimension is not in the template (a param that moves with it)."""
    template: str = entry["sweep"]
    if "{" + dimension + "}" not in template:
        return None
    params = entry["params"]
    return _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1) == dimension else str(params.get(m.group(1))),
                            template)


def cost_metric(entries: Sequence[Mapping[str, Any]]) -> CostMetric:
    """The clock that times the work: the GPU's when every case has a trusted GPU source, else the CPU's (which
    proves a GPU-backed sweep scales when it rises, and proves nothing when it does not)."""
    return "gpu_ms" if all(e.get("gpu_valid") is True for e in entries) else "cpu_ms"


def launch_costs(entry: Mapping[str, Any], metric: str) -> list[float]:
    """A scene entry's per-launch median cost on `metric`, for every complete launch (the differential pairs
    read them too)."""
    costs = []
    for run in entry.get("per_run") or []:
        summary = run.get(metric) if isinstance(run, Mapping) else None
        value = summary.get("p50") if isinstance(summary, Mapping) else None
        if not run.get("partial") and isinstance(value, (int, float)):
            costs.append(float(value))
    return costs


def _points(entries: Sequence[Mapping[str, Any]], dimension: str, metric: str) -> list[tuple[float, float]]:
    """(dimension value, one launch's median) for every complete launch."""
    return [(float(entry["params"][dimension]), cost) for entry in entries for cost in launch_costs(entry, metric)]


def _first_frames(entries: Sequence[Mapping[str, Any]], dimension: str) -> list[tuple[float, float]]:
    points = []
    for entry in entries:
        for run in entry.get("per_run") or []:
            value = run.get("first_frame_ms")
            if isinstance(value, (int, float)):
                points.append((float(entry["params"][dimension]), float(value)))
    return points


def theil_sen_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The median of the slopes between every two points at different x; None without two such points."""
    slopes = [(y2 - y1) / (x2 - x1) for k, (x1, y1) in enumerate(points) for x2, y2 in points[k + 1:] if x2 != x1]
    return statistics.median(slopes) if slopes else None


@dataclass(frozen=True)
class _Trend:
    rho: float | None
    rise_ms: float | None
    elasticity: float | None
    values: tuple[float, ...]
    medians: tuple[float | None, ...]

    @property
    def ranks_up(self) -> bool:
        """Rises in rank by more than timer resolution and noise: the cost moves with the dimension."""
        return (self.rho is not None and self.rho >= RHO_THRESHOLD and self.rise_ms is not None
                and self.rise_ms >= MIN_RISE_MS and self.rise_ms >= MIN_RISE_SHARE * (self.medians[0] or 0.0))

    @property
    def strong(self) -> bool:
        """The dimension accounts for at least MIN_ELASTICITY of the largest case's cost."""
        return self.elasticity is not None and self.elasticity >= MIN_ELASTICITY

    @property
    def rises(self) -> bool:
        return self.ranks_up and self.strong

    @property
    def top_ms(self) -> float:
        return max((m for m in self.medians if m is not None), default=0.0)


def _trend(points: Sequence[tuple[float, float]]) -> _Trend:
    values = tuple(sorted({x for x, _ in points}))
    medians = tuple(statistics.median([y for x, y in points if x == v]) if any(x == v for x, _ in points)
                    else None for v in values)
    rho = spearman([x for x, _ in points], [y for _, y in points])
    first, last = medians[0] if medians else None, medians[-1] if medians else None
    rise = last - first if first is not None and last is not None else None
    slope = theil_sen_slope(points)
    elasticity = (slope * values[-1] / last if slope is not None and last is not None and last > 0
                  and values[-1] > 0 else None)
    return _Trend(rho, rise, elasticity, values, medians)


def _judge(device: str, family: str, dimension: str, entries: Sequence[Mapping[str, Any]]) -> Isolation:
    metric = cost_metric(entries)
    points = _points(entries, dimension, metric)
    trend = _trend(points)

    few = len(points) < MIN_POINTS or len({x for x, _ in points}) < 2

    def result(verdict: Verdict, cause: LikelyCause | None, reason: str) -> Isolation:
        rho = None if trend.rho is None or few else round(trend.rho, 3)
        rise = None if trend.rise_ms is None else round(trend.rise_ms, 4)
        elasticity = None if trend.elasticity is None or few else round(trend.elasticity, 3)
        medians = tuple(None if m is None else round(m, 4) for m in trend.medians)
        return Isolation(family, device, dimension, metric, trend.values, medians, len(points), rho, rise,
                         elasticity, verdict, cause, reason)

    if few:
        return result("inconclusive", None, f"{len(points)} complete launches over {len(trend.values)} values of "
                                            f"{dimension}; at least {MIN_POINTS} over 2 values are needed")
    rho_text = "undefined (constant cost)" if trend.rho is None else f"{trend.rho:.2f}"
    elasticity_text = "undefined" if trend.elasticity is None else f"{trend.elasticity:.2f}"
    described = (f"{metric} rho {rho_text} (threshold {RHO_THRESHOLD}), elasticity {elasticity_text} (threshold "
                 f"{MIN_ELASTICITY}), median {_ms(trend.medians[0])} at {dimension}={_num(trend.values[0])} to "
                 f"{_ms(trend.medians[-1])} at {_num(trend.values[-1])}")
    if trend.rises:
        return result("scales", None, described)
    if metric == "cpu_ms" and any(e.get("gpu_valid") is False for e in entries):
        return result("inconclusive", None, f"{described}; the GPU time source failed the timer check, and cpu_ms "
                                            "sees only the CPU's side of a GPU's work: a CPU cost that does not "
                                            "rise says nothing of the GPU's (docs/gpu-timing.md, the timer check)")
    if trend.rho is None or trend.rho < RHO_THRESHOLD:
        described += f"; rho below {RHO_THRESHOLD}"
    elif not trend.ranks_up:
        described += (f"; a rise of {_ms(trend.rise_ms)} is below {MIN_RISE_MS} ms or {MIN_RISE_SHARE:.0%} of "
                      f"the smallest case")
    if not trend.strong:
        described += (f"; {dimension} accounts for {_share(trend.elasticity)} of the largest case's cost, under "
                      f"{MIN_ELASTICITY:.0%}")
    other: CostMetric = "cpu_ms" if metric == "gpu_ms" else "gpu_ms"
    other_points = _points(entries, dimension, other) if other == "cpu_ms" or all(
        e.get("gpu_valid") is True for e in entries) else []
    other_trend = _trend(other_points) if other_points else None
    if other_trend is not None and other_trend.ranks_up and (other_trend.rise_ms or 0.0) >= MIN_BOUND_RISE_MS:
        return result("not_scaling", "bound_elsewhere", f"{described}; {other} rises instead, by "
                                                        f"{_ms(other_trend.rise_ms)}")
    if trend.top_ms < MIN_RISE_MS:
        return result("not_scaling", "culled", f"{described}; the swept work costs nothing measurable")
    if not trend.ranks_up and _trend(_first_frames(entries, dimension)).ranks_up:
        return result("not_scaling", "cached", f"{described}; only the first frame's time rises")
    if not trend.strong:
        return result("not_scaling", "fixed_cost", f"{described}: the swept work is culled or fast-pathed there, "
                                                   f"or a cost that does not move with it dwarfs it")
    return result("not_scaling", None, described)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} ms"


def _share(value: float | None) -> str:
    return "an undefined share" if value is None else f"{value:.0%}"


def _num(value: float) -> str:
    return f"{value:g}"
