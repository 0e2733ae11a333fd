"""The regression gate: is the candidate slower than the baseline, launch for launch?

Inputs are per-launch statistics (one value per runner launch: its p50 cpu_ms, its jank share, ...). Frames
inside a launch are correlated, so the launch is the unit of inference and frames are never pooled into a
test (docs/methodology.md §1, §6). For each metric:

* effect = median(candidate launches) / median(baseline launches): > 1 is slower for the lower-is-better
  metrics, < 1 is worse for the higher-is-better ones (config.HIGHER_IS_BETTER: an adaptive scene's score);
* bar = max(threshold, k x noise floor), the noise floor being the relative robust spread of the baseline's
  launches, or a calibrated one from A/A launches when the caller has it;
* regressed when the effect is worse than the bar (effect > 1 + bar, or < 1 / (1 + bar) when higher is
  better) AND a one-sided Mann-Whitney U over launches ("candidate worse") gives p <= alpha; improved
  symmetrically (past the other bar, the other tail significant);
* inconclusive when too few launches exist for the test ever to reach alpha, or when the bootstrap interval
  of the effect reaches past a bar without the verdict being established; otherwise same.

Plain values only: no pytest, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

from ..protocol import MEASURED_GPU_SOURCES
from ..stats import noise_floor as relative_noise_floor
from .config import GATING_METRICS, GateConfig

Outcome = Literal["same", "regressed", "improved", "inconclusive"]

# Above these sizes the exact / permutation null distributions stop being cheap; the normal approximation
# (tie-corrected) is accurate there anyway.
_EXACT_MAX_PAIRS = 10_000
_PERMUTATION_MAX_LAUNCHES = 40
_PERMUTATIONS = 9_999


@dataclass(frozen=True)
class Verdict:
    """The gate's judgement of one metric. Ratios (effect, ci, bar + 1) are candidate / baseline."""

    metric: str
    verdict: Outcome
    effect: float | None
    ci: tuple[float, float] | None
    p: float | None  # one-sided Mann-Whitney p for "candidate worse" (slower; a lower score if higher is better)
    p_improved: float | None  # one-sided p for "candidate better"
    noise_floor: float | None
    threshold: float
    bar: float  # the change for the worse that counts: max(threshold, k_noise x noise_floor)
    n_baseline: int
    n_candidate: int
    baseline: str
    baseline_median: float | None = None
    candidate_median: float | None = None
    noise_source: str = "baseline launches"
    k_noise: float = 3.0
    alpha: float = 0.05
    confidence: float = 0.95
    test_method: str = ""
    more_launches: int | None = None  # launches per side that would settle an inconclusive verdict
    reason: str = ""

    @property
    def failed(self) -> bool:
        return self.verdict == "regressed"

    def message(self) -> str:
        """One paragraph for a test report: effect, interval, p, noise floor, bar and baseline."""
        head = f"{self.metric} {self.verdict.upper()}"
        parts: list[str] = []
        if self.effect is not None:
            parts.append(f"candidate {_value(self.metric, self.candidate_median)} vs baseline "
                         f"{_value(self.metric, self.baseline_median)}: effect {self.effect:.3f}x "
                         f"({_signed_pct(self.effect - 1)})")
        if self.ci is not None:
            parts.append(f"{self.confidence:.0%} CI {self.ci[0]:.3f}x..{self.ci[1]:.3f}x")
        if self.p is not None:
            p = self.p_improved if self.verdict == "improved" else self.p
            tail = _tail(self.metric, better=self.verdict == "improved")
            parts.append(f"Mann-Whitney p={p:.4g} (one-sided, candidate {tail}; {self.test_method}; "
                         f"{self.n_candidate} vs {self.n_baseline} launches; alpha {self.alpha:g})")
        else:
            parts.append(f"{self.n_candidate} vs {self.n_baseline} launches")
        nf = ("noise floor unknown" if self.noise_floor is None
              else f"{self.k_noise:g} x noise floor {self.noise_floor:.1%} ({self.noise_source})")
        parts.append(f"bar {_signed_pct(self.bar)} = max(threshold {self.threshold:.0%}, {nf})")
        parts.append(f"baseline: {self.baseline or 'unnamed'}")
        text = f"{head}: " + "; ".join(parts)
        if self.reason:
            text += f". {self.reason}"
        return text


@dataclass(frozen=True)
class SceneVerdict:
    """Per-metric verdicts combined: regressed if any gating metric regressed, else inconclusive if any
    was, else improved if any improved, else same. `skipped` lists metrics that could not be judged."""

    verdicts: tuple[Verdict, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def verdict(self) -> Outcome:
        outcomes = {v.verdict for v in self.verdicts}
        for outcome in ("regressed", "inconclusive", "improved"):
            if outcome in outcomes:
                return outcome
        return "same" if outcomes else "inconclusive"

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"

    def by_metric(self) -> dict[str, Verdict]:
        return {v.metric: v for v in self.verdicts}

    def message(self) -> str:
        """The scene verdict, then the deciding metrics first, then the rest, then what was skipped."""
        order = {"regressed": 0, "inconclusive": 1, "improved": 2, "same": 3}
        lines = [f"scene verdict: {self.verdict}"]
        lines += [v.message() for v in sorted(self.verdicts, key=lambda v: order[v.verdict])]
        lines += [f"{metric} not judged: {why}" for metric, why in self.skipped]
        return "\n".join(lines)


def launches_to_decide(undecided: Iterable[tuple[int, int, int | None]],
                       cap: int = GateConfig.max_suggested_launches) -> tuple[int, int | None]:
    """(launches per side now, per side needed) for the inconclusive metrics of a scene, each given as
    (baseline launches, candidate launches, Verdict.more_launches); needed is None when it is `cap` or more."""
    undecided = list(undecided)
    now = max((min(n_b, n_c) for n_b, n_c, _ in undecided), default=0)
    more = [m for _, _, m in undecided]
    if not more or any(m is None for m in more) or now + max(m for m in more if m is not None) >= cap:
        return now, None
    return now, now + max(m for m in more if m is not None)


def launch_value(launch: Any, metric: str) -> float:
    """One launch's value of `metric` ("cpu_ms.p50", "jank_share"), NaN when the launch lacks it.

    `launch` is a stats.LaunchSummary or its to_dict() (SceneSummary.per_run holds those dicts)."""
    obj = launch
    for part in metric.split("."):
        obj = obj.get(part) if isinstance(obj, Mapping) else getattr(obj, part, None)
        if obj is None:
            return math.nan
    value = float(obj)
    return value if math.isfinite(value) else math.nan


def launch_values(launches: Iterable[Any], metric: str) -> np.ndarray:
    """The known per-launch values of `metric`, launches lacking it dropped."""
    values = np.array([launch_value(launch, metric) for launch in launches], dtype=float)
    return values[np.isfinite(values)]


def gpu_sources(launches: Iterable[Any]) -> set[str | None]:
    """The gpu_source of every launch that has gpu_ms values."""
    found: set[str | None] = set()
    for launch in launches:
        has_gpu = launch.get("gpu_ms") if isinstance(launch, Mapping) else getattr(launch, "gpu_ms", None)
        if has_gpu is not None:
            found.add(launch.get("gpu_source") if isinstance(launch, Mapping) else launch.gpu_source)
    return found


def gpu_incomparable(baseline: Sequence[Any], candidate: Sequence[Any]) -> str | None:
    """Why gpu_ms cannot be compared (docs/methodology.md §5: never across timer sources), or None."""
    for side, launches in (("baseline", baseline), ("candidate", candidate)):
        if any((l.get("gpu_valid") if isinstance(l, Mapping) else getattr(l, "gpu_valid", None)) is False
               for l in launches):
            return f"the {side}'s GPU time source failed the timer check (gpu_valid false); its gpu_ms is not trusted"
    base, cand = gpu_sources(baseline), gpu_sources(candidate)
    if not base or not cand:
        return "no gpu_ms on " + ("either side" if not base and not cand else
                                  "the baseline" if not base else "the candidate")
    if len(base) > 1 or len(cand) > 1 or base != cand:
        return (f"gpu_source differs (baseline {_names(base)}, candidate {_names(cand)}); "
                "GPU times from different sources are never compared")
    (source,) = base
    if source not in MEASURED_GPU_SOURCES:
        return f"gpu_source {source!r} is not a GPU measurement"
    return None


def min_p_value(n_baseline: int, n_candidate: int) -> float:
    """The smallest one-sided p an exact Mann-Whitney U can give with these sizes (no ties)."""
    if n_baseline < 1 or n_candidate < 1:
        return 1.0
    return 1.0 / math.comb(n_baseline + n_candidate, n_baseline)


def min_launches_per_side(alpha: float, n_baseline: int = 0, n_candidate: int = 0) -> int:
    """Smallest m such that with max(n, m) launches on each side the exact test can reach alpha."""
    m = 1
    while min_p_value(max(n_baseline, m), max(n_candidate, m)) > alpha * (1 + 1e-9):
        m += 1
    return m


def mann_whitney(baseline: ArrayLike, candidate: ArrayLike, *, seed: int = 0) -> tuple[float, float, str]:
    """One-sided p-values (candidate slower, candidate faster) and the method used.

    Exact when there are no ties and the sizes allow it; an exact/seeded permutation test when ties exist
    in small samples (jank shares are often all zero); the tie-corrected normal approximation otherwise.
    """
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    ties = np.unique(np.concatenate([b, c])).size < b.size + c.size
    method: Any
    if not ties and b.size * c.size <= _EXACT_MAX_PAIRS:
        method, name = "exact", "exact"
    elif ties and b.size + c.size <= _PERMUTATION_MAX_LAUNCHES:
        # n_resamples above the number of distinct splits makes scipy enumerate them: exact with ties.
        exhaustive = math.comb(b.size + c.size, b.size) <= _PERMUTATIONS
        method = sps.PermutationMethod(n_resamples=_PERMUTATIONS, rng=seed)
        name = "exact permutation (ties)" if exhaustive else f"permutation ({_PERMUTATIONS} resamples, ties)"
    else:
        method, name = "asymptotic", "normal approximation"
    slower = sps.mannwhitneyu(c, b, alternative="greater", method=method).pvalue
    faster = sps.mannwhitneyu(c, b, alternative="less", method=method).pvalue
    return float(slower), float(faster), name


def bootstrap_ratio_ci(baseline: ArrayLike, candidate: ArrayLike, *, offset: float = 0.0,
                       resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of (median(candidate) + offset) / (median(baseline) + offset),
    resampling launches within each side (seeded, so a verdict is reproducible)."""
    rng = np.random.default_rng(seed)
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    b_star = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1) + offset
    c_star = np.median(c[rng.integers(0, c.size, size=(resamples, c.size))], axis=1) + offset
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = c_star / b_star
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.nanpercentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)


def compare_launches(baseline: ArrayLike, candidate: ArrayLike, metric: str,
                     config: GateConfig = GateConfig(), *, noise_floor: float | None = None,
                     noise_source: str | None = None, baseline_description: str = "") -> Verdict:
    """Judge one metric from per-launch values (NaN dropped).

    noise_floor: a calibrated relative noise floor (A/A launches); None computes it from the baseline's
    launches (stats.noise_floor of the baseline values, jank shares shifted by the offset first).
    """
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    b, c = b[np.isfinite(b)], c[np.isfinite(c)]
    offset = config.offset(metric)
    if noise_floor is None:
        noise_source = "baseline launches"
        try:
            noise_floor = relative_noise_floor(list(b + offset))
        except ValueError:
            noise_floor = None
    else:
        noise_source = noise_source or "calibration"
    bar = max(config.threshold, config.k_noise * noise_floor if noise_floor is not None else 0.0)
    common: dict[str, Any] = dict(
        metric=metric, noise_floor=noise_floor, noise_source=noise_source, threshold=config.threshold, bar=bar,
        n_baseline=int(b.size), n_candidate=int(c.size), baseline=baseline_description,
        k_noise=config.k_noise, alpha=config.alpha, confidence=config.confidence,
    )
    if b.size == 0 or c.size == 0:
        return Verdict(verdict="inconclusive", effect=None, ci=None, p=None, p_improved=None,
                       reason=f"no launch values on the {'baseline' if b.size == 0 else 'candidate'} side",
                       **common)
    b_med, c_med = float(np.median(b)), float(np.median(c))
    common.update(baseline_median=b_med, candidate_median=c_med)
    if b_med + offset <= 0:
        effect = 1.0 if c_med + offset <= 0 else None
        if effect is None:
            return Verdict(verdict="inconclusive", effect=None, ci=None, p=None, p_improved=None,
                           reason="the baseline median is zero, so no ratio can be formed", **common)
    else:
        effect = (c_med + offset) / (b_med + offset)

    ci = bootstrap_ratio_ci(b, c, offset=offset, resamples=config.resamples, confidence=config.confidence,
                            seed=config.seed)
    p_greater, p_less, method = mann_whitney(b, c, seed=config.seed)
    higher = config.higher_is_better(metric)
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    common.update(effect=effect, ci=ci, p=p_worse, p_improved=p_better, test_method=method)
    alpha = config.alpha * (1 + 1e-9)  # 1/20 with 3 vs 3 launches is exactly alpha 0.05: reachable

    floor_p = min_p_value(b.size, c.size)
    if floor_p > alpha:
        m = min_launches_per_side(config.alpha, b.size, c.size)
        return Verdict(verdict="inconclusive", more_launches=m - min(b.size, c.size), reason=(
            f"Too few launches: with {c.size} vs {b.size} the exact one-sided test cannot go below "
            f"p={floor_p:.3g} > alpha {config.alpha:g}; at least {m} launches per side are needed "
            f"({m - min(b.size, c.size)} more)"), **common)

    up_bar, down_bar = 1 + bar, 1 / (1 + bar)
    worse_bar, better_bar = (down_bar, up_bar) if higher else (up_bar, down_bar)

    def past(edge: float) -> bool:
        return effect < edge if edge < 1 else effect > edge

    if past(worse_bar) and p_worse <= alpha:
        return Verdict(verdict="regressed", **common)
    if past(better_bar) and p_better <= alpha:
        return Verdict(verdict="improved", **common)
    if ci[1] > up_bar or ci[0] < down_bar:
        edge = up_bar if ci[1] > up_bar else down_bar
        more, total = _more_launches(effect, ci, edge, b.size, c.size, config)
        advice = (f"about {more} more launches per side ({total} each) would decide it" if total is not None
                  else f"at this effect and spread more than {config.max_suggested_launches} launches per side "
                       "would be needed to decide it")
        why = (f"the {config.confidence:.0%} CI {ci[0]:.3f}x..{ci[1]:.3f}x reaches past the bar {edge:.3f}x"
               if not (effect > up_bar or effect < down_bar) else
               f"the effect is past the bar {edge:.3f}x but the test is not significant "
               f"(p={p_worse if edge == worse_bar else p_better:.3g} > alpha {config.alpha:g})")
        return Verdict(verdict="inconclusive", more_launches=more, reason=f"Inconclusive: {why}; {advice}",
                       **common)
    return Verdict(verdict="same", **common)


def _more_launches(effect: float, ci: tuple[float, float], edge: float, n_b: int, n_c: int,
                   config: GateConfig) -> tuple[int, int | None]:
    """Launches per side for the interval to clear `edge`, scaling the observed log-interval by 1/sqrt(n).

    The effect and spread are taken as observed, so this is an estimate: an effect near the bar needs many
    launches, one on it can never be decided. Returns (more per side, total per side or None past the cap)."""
    n_now = 2 / (1 / n_b + 1 / n_c)  # sizes combine like a harmonic mean in a two-sample standard error
    half_width = max(math.log(ci[1] / effect), math.log(effect / ci[0]), 1e-12) if ci[0] > 0 else math.inf
    distance = abs(math.log(effect) - math.log(edge))
    needed = max(n_now * (half_width / distance) ** 2 if distance > 0 else math.inf,
                 min_launches_per_side(config.alpha))
    if not math.isfinite(needed) or needed > config.max_suggested_launches:
        return config.max_suggested_launches - min(n_b, n_c), None
    total = max(math.ceil(needed), min(n_b, n_c) + 1)
    return total - min(n_b, n_c), total


def judge(baseline: Sequence[Any], candidate: Sequence[Any], config: GateConfig = GateConfig(), *,
          noise_floors: Mapping[str, float] | None = None, baseline_description: str = "") -> SceneVerdict:
    """Judge a scene: per-launch summaries (LaunchSummary or to_dict()) of the baseline and the candidate.

    gpu_ms metrics are judged only when both sides measured them with one valid, equal gpu_source.
    noise_floors maps metric -> calibrated noise floor; metrics without one use the baseline's launches.
    """
    verdicts: list[Verdict] = []
    skipped: list[tuple[str, str]] = []
    gpu_reason = gpu_incomparable(baseline, candidate)
    calibrated = noise_floors or {}
    for metric in config.metrics:
        if metric.startswith("gpu_ms") and gpu_reason:
            skipped.append((metric, gpu_reason))
            continue
        b, c = launch_values(baseline, metric), launch_values(candidate, metric)
        if b.size == 0 or c.size == 0:
            skipped.append((metric, f"no launch has it on the {'baseline' if b.size == 0 else 'candidate'} side"))
            continue
        verdicts.append(compare_launches(b, c, metric, config, noise_floor=calibrated.get(metric),
                                         baseline_description=baseline_description))
    return SceneVerdict(tuple(verdicts), tuple(skipped))


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "?"
    if metric == "jank_share":
        return f"{value:.2%} of frames janky"
    return f"{value:.3f} ms" if "_ms" in metric else f"{value:.4g}"


def _tail(metric: str, *, better: bool) -> str:
    """The one-sided alternative a p-value tests, in the metric's own terms."""
    if GateConfig.higher_is_better(metric):
        return "higher" if better else "lower"
    return "faster" if better else "slower"


def _signed_pct(x: float) -> str:
    return f"{x:+.1%}"


def _names(sources: set[str | None]) -> str:
    return "/".join(sorted(str(s) for s in sources))


__all__ = [
    "GATING_METRICS", "GateConfig", "Outcome", "SceneVerdict", "Verdict",
    "bootstrap_ratio_ci", "compare_launches", "gpu_incomparable", "gpu_sources", "judge", "launch_value",
    "launch_values", "mann_whitney", "min_launches_per_side", "min_p_value",
]
