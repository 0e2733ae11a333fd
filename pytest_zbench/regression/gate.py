"""The regression gate: is the candidate slower than the baseline? (docs/regression.md has the model.)

Inputs are per-launch statistics (one value per runner launch: its p50 cpu_ms, its jank share, ...). Frames
inside a launch are correlated, so the launch is the smallest unit of inference and frames are never pooled
(docs/methodology.md §1, §6). Launches inside one session are not independent either: whatever moves a session
(load, clocks, thermal state) moves all its launches. So there are two gates:

* `judge` (a history or a run.json baseline: the candidate is one session, the baseline one or more earlier
  ones): two levels of variance (regression/hierarchy.py); the effect's uncertainty includes the
  between-session spread for the candidate's own session and for the baseline's centre; a t statistic with
  the hierarchical bootstrap's standard error and Satterthwaite degrees of freedom; the interval
  exp(d +- t x se). A baseline whose between-session spread cannot be estimated is `inconclusive`.
* `judge_interleaved` (A/B: both runners' launches interleaved on one device in one session, which cancels
  session offsets): launch-level, a permutation test of rank sums and a launch bootstrap interval.

In both, the gated metrics are one family, tested together with max-T (regression/multiplicity.py) at the
scene's alpha, each direction at half of it (GateConfig.alpha_per_direction), and a verdict agrees with its
interval:

* regressed: effect past 1 + threshold, family-adjusted p <= alpha / 2, and the interval's lower end above 1;
* improved: symmetrically below 1 / (1 + threshold);
* inconclusive: neither, and the interval reaches past a bar (or the data cannot decide at all);
* same: the interval lies inside both bars.

Every metric is lower-is-better but those in config.HIGHER_IS_BETTER (an adaptive scene's score), for which a
drop is the regression: their test statistics enter the family negated, so "slower" above reads "worse", and
their effect and interval are turned over (1 / effect) before the bars are applied; effect and interval are
reported as measured (candidate / baseline).

Plain values only: no pytest, no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..protocol import MEASURED_GPU_SOURCES
from .config import GATING_METRICS, GateConfig, metric_unit, per_direction
from .hierarchy import (
    BetweenSessions,
    Replicates,
    Session,
    SessionGroup,
    between_sessions,
    bootstrap,
    launch_value,
    launch_values,
    median_last_axis,
    satterthwaite_df,
    shamos_spread,
    within_sessions,
)
from .multiplicity import Adjusted, max_t, permutation_max_t
from .paired import SAME_LEVEL, min_rounds, paired_test, rounds_of
from .verdict_words import Outcome, verdict_rank

GateMode = Literal["sessions", "interleaved"]


def _scipy_special() -> Any:
    """scipy.special, imported when a verdict needs a quantile. Not at import: a session that judges nothing (no
    baseline yet) never pays it. And not scipy.stats, whose t and norm quantiles are these functions
    (stdtrit, ndtri; stdtr for the tails) but which imports optimize, linalg and sparse besides: about a second
    more of the first judged scene's time (0.3-0.9 s for special against 0.7-2.4 s for stats on this host)."""
    from scipy import special

    return special


@dataclass(frozen=True)
class Verdict:
    """The gate's judgement of one metric. Ratios (effect, ci, 1 + bar) are candidate / baseline."""

    metric: str
    verdict: Outcome
    effect: float | None
    ci: tuple[float, float] | None
    p: float | None  # family-adjusted one-sided p for "candidate worse" (slower; a lower score if higher is better)
    p_improved: float | None  # family-adjusted one-sided p for "candidate better"
    threshold: float
    n_baseline: int  # baseline launches with the metric
    n_candidate: int
    baseline: str
    mode: GateMode = "sessions"
    n_sessions: int = 0  # baseline sessions (sessions mode)
    p_marginal: float | None = None  # this metric's own one-sided p (worse), before the family adjustment
    t: float | None = None
    df: float | None = None
    baseline_median: float | None = None
    candidate_median: float | None = None
    between_session: float | None = None  # relative spread of a session's offset, exp(tau) - 1
    between_measured: float | None = None  # its estimate when below the floor (between_session is then the floor)
    between_df: float | None = None
    between_sessions_used: int = 0
    between_sources: tuple[str, ...] = ()
    within_session: float | None = None  # relative robust spread of one launch within a session
    alpha: float = 0.01
    confidence: float = 0.95
    resamples: int = 2000
    test_method: str = ""
    adjustment: str = ""
    more_launches: int | None = None  # launches per side (A/B) or in the candidate that would settle it
    advice: str = ""
    reason: str = ""
    # The interval's level, one-sided at each end, when it is the decision's own (paired rounds: the inverted
    # test at the level the verdict was tested at, family-adjusted); None: a two-sided `confidence` interval.
    ci_level: float | None = None
    # paired rounds: the interval `same` is decided on (SAME_LEVEL each end: an equivalence test, which declares
    # no change and so spends no alpha), beside `ci`, the one a change is decided on
    ci_same: tuple[float, float] | None = None
    rounds: int | None = None  # paired rounds (A/B): the within-round ratios the verdict judged
    pair_spread: float | None = None  # robust spread of the within-round log ratios (paired rounds)

    def ci_text(self) -> str:
        """The interval with its level and sidedness: the decision's own for paired rounds."""
        if self.ci is None:
            return ""
        span = interval_text(*self.ci)
        if self.ci_level is None:
            return f"{self.confidence:.0%} CI {span}"
        text = f"{1 - 2 * self.ci_level:.2%} CI {span} (one-sided {self.ci_level:.3g} each end: a change's)"
        if self.ci_same is not None:
            text += (f", {1 - 2 * SAME_LEVEL:.0%} CI {interval_text(*self.ci_same)} "
                     f"(one-sided {SAME_LEVEL:g} each end: `same`'s)")
        return text

    @property
    def bar(self) -> float:
        """The change for the worse that counts (the threshold; the noise enters through the test and the
        interval)."""
        return self.threshold

    @property
    def failed(self) -> bool:
        return self.verdict == "regressed"

    def message(self) -> str:
        """A short first line (verdict, effect with its direction, interval), then one indented line of detail:
        test, spreads, launches, bar and baseline, and the reason."""
        head = f"{self.metric} {self.verdict.upper()}"
        first: list[str] = []
        parts: list[str] = []
        if self.effect is not None:
            direction = "higher is better" if GateConfig.higher_is_better(self.metric) else "lower is better"
            first.append(f"{ratio_text(self.effect)} ({_signed_pct(self.effect - 1)}, candidate/baseline, "
                         f"{direction})")
            parts.append(f"candidate {_value(self.metric, self.candidate_median)} vs baseline "
                         f"{_value(self.metric, self.baseline_median)}: effect {self.effect:.3f}x "
                         f"({_signed_pct(self.effect - 1)})")
        if self.ci is not None:
            how = ("hierarchical bootstrap" if self.mode == "sessions" else
                   "signed-rank test inverted over the rounds' Walsh averages, family-adjusted"
                   if self.rounds is not None else "launch bootstrap")
            first.append(self.ci_text())
            parts.append(f"{self.ci_text()} ({how}"
                         f"{'' if self.rounds is not None else f', {self.resamples} resamples'})")
        if self.p is not None:
            p = self.p_improved if self.verdict == "improved" else self.p
            tail = _tail(self.metric, better=self.verdict == "improved")
            stat = (f"t={self.t:.3g}, df {self.df:.3g}, " if self.t is not None and self.df is not None
                    and math.isfinite(self.t) else "")
            parts.append(f"{stat}p={p:.3g} for candidate {tail} ({self.adjustment}; level {per_direction(self.alpha):g} per "
                         f"direction, alpha {self.alpha:g} both ways; {self.test_method})")
        if self.mode == "sessions":
            floor = ("" if self.between_measured is None else
                     f"the floor, measured {self.between_measured:.1%}; ")
            spread = ("between-session spread unknown" if self.between_session is None else
                      f"between-session spread {self.between_session:.1%} ({floor}{self.between_df:.0f} df from "
                      f"{self.between_sessions_used} sessions: {', '.join(self.between_sources) or 'none'})")
            within = ("" if self.within_session is None else
                      f", within-session launch spread {self.within_session:.1%}")
            parts.append(spread + within)
            parts.append(f"{self.n_candidate} launches vs {self.n_sessions} baseline session(s) "
                         f"({self.n_baseline} launches)")
        else:
            within = "" if self.within_session is None else f"; launch spread {self.within_session:.1%}"
            rounds = ("" if self.rounds is None else f" in {self.rounds} paired rounds" + (
                "" if self.pair_spread is None else f" (within-round ratio spread {self.pair_spread:.1%})"))
            parts.append(f"{self.n_candidate} vs {self.n_baseline} launches{rounds}{within}")
        parts.append(f"bar {_signed_pct(self.bar)} (threshold)")
        parts.append(f"baseline: {self.baseline or 'unnamed'}")
        text = f"{head}: " + ", ".join(first) + "\n  " + "; ".join(parts) if first else f"{head}: " + "; ".join(parts)
        if self.reason:
            text += f". {self.reason}"
        if self.advice:
            text += f" {self.advice}"
        return text


@dataclass(frozen=True)
class SceneVerdict:
    """Per-metric verdicts combined: regressed if any gating metric regressed, else inconclusive if any
    was, else improved if any improved, else same. `skipped` lists metrics that could not be judged; `notes`
    what the message should say besides (same build, conditions changed)."""

    verdicts: tuple[Verdict, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> Outcome:
        outcomes = {v.verdict for v in self.verdicts}
        return min(outcomes, key=verdict_rank) if outcomes else "inconclusive"

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"

    def by_metric(self) -> dict[str, Verdict]:
        return {v.metric: v for v in self.verdicts}

    def with_notes(self, *notes: str) -> SceneVerdict:
        return SceneVerdict(self.verdicts, self.skipped, self.notes + tuple(n for n in notes if n))

    def message(self) -> str:
        """The scene verdict, the notes, then the deciding metrics first, then the rest, then what was skipped."""
        lines = [f"scene verdict: {self.verdict}"]
        lines += list(self.notes)
        lines += [v.message() for v in sorted(self.verdicts, key=lambda v: verdict_rank(v.verdict))]
        lines += [f"{metric} not judged: {why}" for metric, why in self.skipped]
        if not self.verdicts and not self.skipped:
            lines.append("no gated metric to judge")
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


@dataclass(frozen=True)
class BaselineSession:
    """One earlier session of the scene: its launches (LaunchSummary or to_dict()), its run id and build."""

    launches: Sequence[Any]
    label: str = ""
    build: str = ""


@dataclass(frozen=True)
class SessionPool:
    """Other sessions measured alike, each a list of launches, whose spread about their own mean is
    between-session spread: another scene of the device in its baseline window, or A/A calibration sessions
    (docs/regression.md, "Pooling the between-session spread")."""

    source: str
    sessions: Sequence[Sequence[Any]]


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


def _judged_metrics(baseline: Sequence[Any], candidate: Sequence[Any],
                    config: GateConfig) -> tuple[list[str], list[tuple[str, str]]]:
    """The metrics that can be judged, and why each other one is not."""
    judged: list[str] = []
    skipped: list[tuple[str, str]] = []
    gpu_reason = gpu_incomparable(baseline, candidate)
    for metric in config.metrics:
        if metric.startswith("gpu_ms") and gpu_reason:
            skipped.append((metric, gpu_reason))
            continue
        b, c = launch_values(baseline, metric), launch_values(candidate, metric)
        if b.size == 0 or c.size == 0:
            skipped.append((metric, f"no launch has it on the {'baseline' if b.size == 0 else 'candidate'} side"))
            continue
        judged.append(metric)
    return judged, skipped


def _as_session(session: BaselineSession | Sequence[Any]) -> BaselineSession:
    return session if isinstance(session, BaselineSession) else BaselineSession(list(session))


def _relative(log_spread: float | None) -> float | None:
    return None if log_spread is None or not math.isfinite(log_spread) else math.expm1(log_spread)


def judge(baseline: Sequence[BaselineSession | Sequence[Any]], candidate: Sequence[Any],
          config: GateConfig = GateConfig(), *, older: Sequence[BaselineSession | Sequence[Any]] = (),
          pool: Sequence[SessionPool] = (), baseline_description: str = "") -> SceneVerdict:
    """Judge one candidate session against baseline sessions (each a BaselineSession or a list of launches:
    LaunchSummary or to_dict()): the effect is the candidate's against their centre.

    The between-session spread is estimated from the baseline sessions together with `older` ones of the same
    scene (the spread window: more sessions than the centre needs), and `pool`: other session groups measured
    alike, each about its own mean (A/A calibration sessions; other scenes' sessions that are not sessions of
    this scene). docs/regression.md, "Where the between-session spread comes from".

    gpu_ms metrics are judged only when both sides measured them with one valid, equal gpu_source."""
    sessions = [s for s in (_as_session(s) for s in baseline) if len(s.launches)]
    flat = [launch for s in sessions for launch in s.launches]
    metrics, skipped = _judged_metrics(flat, candidate, config)
    if not metrics:
        return SceneVerdict((), tuple(skipped))
    offsets = {m: config.offset(m) for m in metrics}
    cand = Session.of(candidate, metrics, offsets, label="candidate")
    base = [Session.of(s.launches, metrics, offsets, s.label, s.build) for s in sessions]
    earlier = [Session.of(s.launches, metrics, offsets, s.label, s.build)
               for s in (_as_session(s) for s in older) if len(s.launches)]
    groups = [SessionGroup((*base, *earlier), "this scene")]
    groups += [SessionGroup(tuple(Session.of(list(ls), metrics, offsets) for ls in p.sessions if len(ls)), p.source)
               for p in pool]
    within = within_sessions([*base, cand], len(metrics))
    between = between_sessions(groups, len(metrics), floor=config.between_floor)
    rng = np.random.default_rng(config.seed)
    if any(between.known(j) for j in range(len(metrics))):
        reps = bootstrap(cand, base, within, between, resamples=config.resamples, rng=rng)
    else:  # nothing can be tested: every metric is inconclusive for a thin baseline, no resampling needed
        reps = Replicates(np.zeros((1, len(metrics))), np.zeros((1, len(metrics))), np.zeros(len(metrics)))
    total = reps.total

    rows: list[dict[str, Any]] = []
    for j, metric in enumerate(metrics):
        offset = offsets[metric]
        stats = np.array([s.stat(j) for s in base])
        stats = stats[np.isfinite(stats)]
        m_c, centre = cand.stat(j), float(stats.mean())
        d = m_c - centre
        common: dict[str, Any] = dict(
            metric=metric, threshold=config.threshold, n_baseline=sum(s.count(j) for s in base),
            n_candidate=cand.count(j), n_sessions=int(stats.size), baseline=baseline_description,
            mode="sessions", alpha=config.alpha, confidence=config.confidence, resamples=config.resamples,
            effect=math.exp(d), baseline_median=math.exp(centre) - offset, candidate_median=math.exp(m_c) - offset,
            within_session=_relative(float(within.sigma[j])),
            between_sources=between.sources[j], between_sessions_used=int(between.sessions[j]),
        )
        if not between.known(j):
            rows.append(dict(common, thin=True))
            continue
        var_w, var_b, se, df = _effect_variance(j, stats.size, reps, between, float(within.df[j]))
        # No spread anywhere: equal values say nothing (NaN: p 1 both ways), unequal ones are certain (inf).
        t = d / se if se > 0 else (math.nan if d == 0 else math.copysign(math.inf, d))
        special = _scipy_special()
        q = float(special.stdtrit(df, (1 + config.confidence) / 2)) if math.isfinite(df) else float(
            special.ndtri((1 + config.confidence) / 2))  # t and normal quantiles
        rows.append(dict(common, d=d, se=se, var_w=var_w, var_b=var_b, df=df, t=t, q=q,
                         ci=(math.exp(d - q * se), math.exp(d + q * se)),
                         between_session=_relative(math.sqrt(float(between.tau2[j]))),
                         between_measured=(_relative(math.sqrt(float(between.measured_tau2[j])))
                                           if between.floored(j) and between.measured_tau2 is not None else None),
                         between_df=float(between.df[j])))

    live = [i for i, r in enumerate(rows) if not r.get("thin")]
    adjusted: Adjusted | None = None
    if live:
        sign = _orientation([rows[i]["metric"] for i in live], config)
        t_live = np.array([rows[i]["t"] for i in live]) * sign
        spread = np.array([rows[i]["se"] for i in live])
        columns = total[:, [metrics.index(rows[i]["metric"]) for i in live]] * sign
        corr = _correlation(columns, spread)
        adjusted = max_t(t_live, np.array([rows[i]["df"] for i in live]), corr, rng=rng)

    verdicts: list[Verdict] = []
    for i, row in enumerate(rows):
        if row.get("thin"):
            verdicts.append(_thin(row, len(base), config))
            continue
        assert adjusted is not None
        k = live.index(i)
        verdicts.append(_decide_sessions(row, float(adjusted.adj_slow[k]), float(adjusted.adj_fast[k]),
                                         float(adjusted.p_slow[k]), adjusted.method, config))
    return SceneVerdict(tuple(verdicts), tuple(skipped))


def _effect_variance(j: int, s_b: int, reps: Replicates, between: BetweenSessions, df_within: float
                     ) -> tuple[float, float, float, float]:
    """Metric j's effect variance: its launches' part, its sessions' part, the standard error and the
    Satterthwaite df, against s_b baseline sessions (docs/regression.md, "Verdicts").

    The bootstrap draws session offsets at tau2 >= 0. Under the floor, its between part is topped up to what
    the floor implies for the candidate's offset less the mean of s_b baseline offsets, tau^2 (1 + 1 / s_b)
    (identical sessions have no deviations to draw). Without a floor, an estimate under zero (the sessions
    agree more closely than their launches' spread explains) is kept signed (BetweenSessions.pivot_tau2): the
    launches' part is scaled by r, the session statistics' own variance over what their launches explain, so
    that with this scene's sessions alone the variance is theirs, on their df, as in the t test of session
    statistics. Scaled, not added: the bootstrap's and the formula's readings of the launches' part differ by a
    few %, which a difference of two near-equal numbers would turn into any size. Only the part of the
    candidate's noise that a baseline session also has is scaled; what its fewer launches add beyond that is
    launch noise, measured on many df, and is kept whole."""
    k = 1 + 1 / s_b
    var_w, var_b = float(np.nanvar(reps.within[:, j])), float(np.nanvar(reps.between[:, j]))
    pivot, own_w = between.pivot_tau2(j), between.own_within(j, group=0)
    if pivot < 0 and own_w + pivot > 0:
        r = (own_w + pivot) / own_w
        session_w = float(reps.session_within[j])  # one baseline session's statistic, from its launches
        candidate_w = max(0.0, var_w - session_w / s_b)
        scaled = r * (min(candidate_w, session_w) + session_w / s_b)
        extra = max(0.0, candidate_w - session_w)
        # The spread of the pivot's estimate in the units of the scaled part: (scaled / the session
        # statistics' variance) ^ 2 x that of their pooled variance.
        var_of_between = (scaled / (own_w + pivot)) ** 2 * between.variance_of_tau2(j)
        df = satterthwaite_df(scaled, extra, var_of_between=var_of_between, df_within=df_within)
        # As reported (and as the advice reads them): what more candidate launches would shrink, and the rest.
        baseline_part = r * session_w / s_b
        return scaled + extra - baseline_part, baseline_part, math.sqrt(scaled + extra), df
    top_up = max(0.0, k * float(between.tau2[j]) - var_b) if between.floored(j) else 0.0
    se = math.sqrt(float(np.nanvar(reps.total[:, j])) + top_up)
    var_b += top_up
    # The own group's within part as the bootstrap reads it, so that both parts of the variance are measured
    # alike (group 0 is this scene's sessions).
    var_tau2 = between.variance_of_tau2(j, group=0, w=float(reps.session_within[j]))
    return var_w, var_b, se, satterthwaite_df(var_b, var_w, var_of_between=k ** 2 * var_tau2, df_within=df_within,
                                              within_counted=between.within_uncancelled(j, group=0))


def _correlation(columns: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """The metrics' correlation from the joint replicates (a metric with no spread correlates with nothing)."""
    k = columns.shape[1]
    corr = np.eye(k)
    ok = [i for i in range(k) if spread[i] > 0 and np.isfinite(columns[:, i]).all()]
    if len(ok) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            sub = np.corrcoef(columns[:, ok], rowvar=False)
        corr[np.ix_(ok, ok)] = np.where(np.isfinite(sub), sub, 0.0)
        np.fill_diagonal(corr, 1.0)
    return corr


def _public(row: Mapping[str, Any]) -> dict[str, Any]:
    names = Verdict.__dataclass_fields__
    return {k: v for k, v in row.items() if k in names}


def _thin(row: Mapping[str, Any], sessions: int, config: GateConfig) -> Verdict:
    what = ("one baseline session" if sessions == 1 else
            f"{sessions} baseline sessions" if sessions else "no baseline session")
    reason = (f"Inconclusive: {what}, and no other session of this device measured alike (other scenes in "
              "their baseline window, A/A calibration sessions), so the between-session spread cannot be "
              "estimated: a candidate session's own offset (load, clocks, thermal state) would read as an effect.")
    advice = ("To decide: record more sessions (each next run is judged against more), run `zbench calibrate "
              "--sessions 3` on this device, or compare interleaved on one device with --zbench-ab.")
    return Verdict(verdict="inconclusive", ci=None, p=None, p_improved=None, reason=reason, advice=advice,
                   **_public(row))


def _orientation(metrics: Sequence[str], config: GateConfig) -> np.ndarray:
    """Per metric +1, or -1 for a higher-is-better one: a test statistic times it is positive for "worse"."""
    return np.array([-1.0 if config.higher_is_better(m) else 1.0 for m in metrics])


def _worse_ratio(effect: float, ci: tuple[float, float], metric: str,
                 config: GateConfig) -> tuple[float, tuple[float, float]]:
    """Effect and interval as ratios where > 1 is worse: turned over for a higher-is-better metric."""
    if not config.higher_is_better(metric):
        return effect, ci
    return 1 / effect, (1 / ci[1] if ci[1] > 0 else math.inf, 1 / ci[0] if ci[0] > 0 else math.inf)


def _outcome(effect: float, ci: tuple[float, float], p_worse: float, p_better: float, metric: str,
             config: GateConfig) -> Outcome:
    alpha = config.alpha_per_direction * (1 + 1e-9)
    effect, ci = _worse_ratio(effect, ci, metric, config)
    worse_bar, better_bar = 1 + config.threshold, 1 / (1 + config.threshold)
    if effect > worse_bar and p_worse <= alpha and ci[0] > 1:
        return "regressed"
    if effect < better_bar and p_better <= alpha and ci[1] < 1:
        return "improved"
    if ci[1] > worse_bar or ci[0] < better_bar:
        return "inconclusive"
    return "same"


def _why_undecided(effect: float, ci: tuple[float, float], p_worse: float, p_better: float, metric: str,
                   config: GateConfig, interval: str = "") -> tuple[str, float]:
    """Why an inconclusive verdict is undecided, and the bar it is measured against (as a candidate / baseline
    ratio, like the effect)."""
    worse, (lo, hi) = _worse_ratio(effect, ci, metric, config)
    worse_bar, better_bar = 1 + config.threshold, 1 / (1 + config.threshold)
    if worse >= 1:
        edge = worse_bar if hi > worse_bar else better_bar
    else:
        edge = better_bar if lo < better_bar else worse_bar
    p = p_worse if edge == worse_bar else p_better
    shown = 1 / edge if config.higher_is_better(metric) else edge
    bar = f"the {'regression' if edge == worse_bar else 'improvement'} bar {ratio_text(shown)}"
    interval = interval or f"{config.confidence:.0%} CI {interval_text(ci[0], ci[1])}"
    if worse > worse_bar or worse < better_bar:
        why = (f"the effect is past {bar} but not established (adjusted p={p:.3g} vs {config.alpha_per_direction:g}, "
               f"alpha / 2 for each direction; {interval})")
    else:
        why = f"the {interval} reaches past {bar}"
    return why, shown


def _decide_sessions(row: Mapping[str, Any], p_worse: float, p_better: float, p_marginal: float, adjustment: str,
                     config: GateConfig) -> Verdict:
    effect, ci, metric = row["effect"], row["ci"], row["metric"]
    outcome = _outcome(effect, ci, p_worse, p_better, metric, config)
    fields = dict(_public(row), p=p_worse, p_improved=p_better, p_marginal=p_marginal, adjustment=adjustment,
                  test_method="t with the hierarchical bootstrap's standard error, Satterthwaite df")
    if outcome != "inconclusive":
        return Verdict(verdict=outcome, **fields)
    why, edge = _why_undecided(effect, ci, p_worse, p_better, metric, config)
    more, advice = _session_advice(row, edge, config)
    return Verdict(verdict="inconclusive", reason=f"Inconclusive: {why}", advice=advice, more_launches=more,
                   **fields)


def _session_advice(row: Mapping[str, Any], edge: float, config: GateConfig) -> tuple[int | None, str]:
    """What would decide an undecided sessions verdict. With few degrees of freedom the t distribution's tail is
    what blocks it (more sessions, or a calibration); when the launches' spread dominates, more candidate
    launches; when the between-session spread does, more sessions or an A/B run (which cancels it)."""
    few_df = ("The between-session spread comes from {df:.0f} degree(s) of freedom ({sessions} baseline "
              "session(s)), so even a clear effect cannot reach alpha yet: more baseline sessions (each next run "
              "adds one), an A/A calibration (`zbench calibrate --sessions 3`) or an interleaved A/B run "
              "(--zbench-ab) would decide it.").format(df=row["between_df"], sessions=row["n_sessions"])
    if math.isfinite(row["t"]) and abs(row["t"]) > 4 and row["between_df"] < 6:
        return None, few_df
    special = _scipy_special()
    level = 1 - config.alpha_per_direction
    crit = float(special.stdtrit(row["df"], level)) if math.isfinite(row["df"]) else float(
        special.ndtri(level))  # t and normal quantiles
    distance = min(abs(math.log(row["effect"]) - math.log(edge)), abs(math.log(row["effect"])))
    room = (distance / crit) ** 2 - row["var_b"] if crit > 0 else -1.0
    n_now = row["n_candidate"]
    if room > 0 and row["var_w"] > 0:
        needed = math.ceil(n_now * row["var_w"] / room)
        if needed <= config.max_suggested_launches:
            total = max(needed, n_now + 1)
            return total - n_now, (f"About {total} candidate launches (--zbench-runs={total}) would decide it at "
                                   "this effect and spread.")
    if row["var_b"] >= row["var_w"]:
        return None, ("The between-session spread dominates the interval, so more launches per session cannot "
                      "narrow it enough: more baseline sessions, a calibration (`zbench calibrate --sessions 3`) "
                      "or an interleaved A/B run (--zbench-ab, which cancels session offsets) can.")
    return None, (f"At this effect and spread more than {config.max_suggested_launches} launches would be needed; "
                  "an interleaved A/B run (--zbench-ab) is more sensitive.")


def min_launches_per_side(level: float) -> int:
    """The fewest launches per side for which an exact one-sided permutation test of n vs n can reach `level`
    (a direction's share of the alpha: GateConfig.alpha_per_direction)."""
    m = 1
    while 1 / math.comb(2 * m, m) > level * (1 + 1e-9):
        m += 1
    return m


def judge_interleaved(a_launches: Sequence[Any], b_launches: Sequence[Any], config: GateConfig = GateConfig(), *,
                      baseline_description: str = "", paired: bool = False) -> SceneVerdict:
    """Judge B (candidate) against A (baseline) from launches interleaved on one device in one session: the
    session offset is common to both sides, so launches are the units (docs/regression.md, "A/B").

    paired: the i-th launch of A and the i-th of B ran in one round, adjacently (ABBA order): B is judged
    against A within each round (regression/paired.py, docs/regression.md "Paired rounds"); else all of A's
    launches against all of B's."""
    metrics, skipped = _judged_metrics(a_launches, b_launches, config)
    if not metrics:
        return SceneVerdict((), tuple(skipped))
    offsets = {m: config.offset(m) for m in metrics}
    a = Session.of(a_launches, metrics, offsets, label="A")
    b = Session.of(b_launches, metrics, offsets, label="B")
    if paired:
        return SceneVerdict(tuple(_judge_paired(a, b, offsets, config, baseline_description)), tuple(skipped))
    rng = np.random.default_rng(config.seed)
    cis = _launch_bootstrap(a, b, config, rng)
    sign = _orientation(metrics, config)
    adjusted = permutation_max_t(a.y * sign, b.y * sign, rng=rng)
    within = within_sessions([a, b], len(metrics))
    verdicts = []
    for j, metric in enumerate(metrics):
        offset = offsets[metric]
        med_a, med_b = float(np.median(a.column(j))), float(np.median(b.column(j)))
        effect = math.exp(med_b - med_a)
        fields: dict[str, Any] = dict(
            metric=metric, threshold=config.threshold, n_baseline=a.count(j), n_candidate=b.count(j),
            baseline=baseline_description, mode="interleaved", alpha=config.alpha, confidence=config.confidence,
            resamples=config.resamples, effect=effect, ci=cis[j], baseline_median=math.exp(med_a) - offset,
            candidate_median=math.exp(med_b) - offset, within_session=_relative(float(within.sigma[j])),
            p=float(adjusted.adj_slow[j]), p_improved=float(adjusted.adj_fast[j]),
            p_marginal=float(adjusted.p_slow[j]), adjustment=adjusted.method.split(" (")[0],
            test_method=adjusted.method)
        if adjusted.min_p > config.alpha_per_direction * (1 + 1e-9):
            need = min_launches_per_side(config.alpha_per_direction)
            now = min(a.count(j), b.count(j))
            verdicts.append(Verdict(verdict="inconclusive", more_launches=max(need - now, 1), reason=(
                f"Too few launches: with {b.count(j)} vs {a.count(j)} the permutation test cannot go below "
                f"p={adjusted.min_p:.3g} > {config.alpha_per_direction:g}, alpha / 2 for each direction"), advice=(
                f"At least {need} launches per side are needed (--zbench-runs={need})."), **fields))
            continue
        outcome = _outcome(effect, cis[j], fields["p"], fields["p_improved"], metric, config)
        if outcome != "inconclusive":
            verdicts.append(Verdict(verdict=outcome, **fields))
            continue
        why, edge = _why_undecided(effect, cis[j], fields["p"], fields["p_improved"], metric, config)
        more, total = _more_launches(effect, cis[j], edge, a.count(j), b.count(j), config)
        advice = (f"About {more} more launches per side ({total} each, --zbench-runs={total}) would decide it."
                  if total is not None else
                  f"At this effect and spread more than {config.max_suggested_launches} launches per side "
                  "would be needed to decide it.")
        verdicts.append(Verdict(verdict="inconclusive", more_launches=more, reason=f"Inconclusive: {why}",
                                advice=advice, **fields))
    return SceneVerdict(tuple(verdicts), tuple(skipped))


def _judge_paired(a: Session, b: Session, offsets: Mapping[str, float], config: GateConfig,
                  baseline_description: str) -> list[Verdict]:
    """The paired rounds' verdicts: within-round log ratios, the signed-rank max-T test and its inverted
    interval at the level each direction is tested at, so the interval and the verdict are one decision."""
    metrics = a.metrics
    n = rounds_of(a.y.shape[0], b.y.shape[0])
    d = b.y[:n] - a.y[:n]
    level = config.alpha_per_direction
    test = paired_test(d, _orientation(metrics, config), rng=np.random.default_rng(config.seed))
    within = within_sessions([a, b], len(metrics))
    verdicts = []
    for j, metric in enumerate(metrics):
        col = d[:, j][np.isfinite(d[:, j])]
        spread = shamos_spread([col]) if col.size >= 2 else math.nan
        lo, hi = test.interval(j, level)
        effect = math.exp(float(test.effect[j])) if math.isfinite(test.effect[j]) else 1.0
        ci = (math.exp(lo), math.exp(hi))
        offset = offsets[metric]
        med_a, med_b = float(np.median(a.column(j))), float(np.median(b.column(j)))
        fields: dict[str, Any] = dict(
            metric=metric, threshold=config.threshold, n_baseline=a.count(j), n_candidate=b.count(j),
            baseline=baseline_description, mode="interleaved", alpha=config.alpha, confidence=1 - 2 * level,
            resamples=config.resamples, effect=effect, ci=ci, baseline_median=math.exp(med_a) - offset,
            candidate_median=math.exp(med_b) - offset, within_session=_relative(float(within.sigma[j])),
            p=float(test.adj_worse[j]), p_improved=float(test.adj_better[j]), p_marginal=float(test.p_worse[j]),
            adjustment="max-T over the family (sign flips)", test_method=test.method, ci_level=level, rounds=n,
            pair_spread=_relative(spread) if math.isfinite(spread) else None)
        lo_same, hi_same = test.interval(j, SAME_LEVEL)
        fields["ci_same"] = (math.exp(lo_same), math.exp(hi_same)) if math.isfinite(lo_same) else None
        if test.min_p > level * (1 + 1e-9):
            need = min_rounds(level)
            verdicts.append(Verdict(verdict="inconclusive", more_launches=None if need is None else max(need - n, 1),
                                    reason=(f"Too few rounds: {n} paired rounds cannot give p below "
                                            f"{test.min_p:.3g} > {level:g}, the level of each direction"),
                                    advice="" if need is None else (
                                        f"At least {need} rounds (launches per side) are needed "
                                        f"(--zbench-runs={need})."), **dict(fields, ci=None)))
            continue
        outcome = _outcome(effect, ci, fields["p"], fields["p_improved"], metric, config)
        if (outcome == "inconclusive" and fields["ci_same"] is not None
                and _outcome(effect, fields["ci_same"], 1.0, 1.0, metric, config) == "same"):
            outcome = "same"
        if outcome != "inconclusive":
            verdicts.append(Verdict(verdict=outcome, **fields))
            continue
        probe = Verdict(verdict="inconclusive", **fields)
        why, edge = _why_undecided(effect, ci, fields["p"], fields["p_improved"], metric, config, probe.ci_text())
        more, total = _more_rounds(effect, ci, edge, n, config)
        advice = (f"About {more} more rounds ({total} launches per side, --zbench-runs={total}) would decide it, "
                  "at the rate this interval narrows." if total is not None else
                  f"At this effect and spread more than {config.max_suggested_launches} launches per side "
                  "would be needed to decide it.")
        verdicts.append(dataclasses.replace(probe, more_launches=more, reason=f"Inconclusive: {why}", advice=advice))
    return verdicts


def needed_rounds(effect: float, ci: tuple[float, float], edge: float, n: int) -> float:
    """Rounds for the interval's end that faces `edge` to reach it, that end's own distance from the effect
    shrinking as 1/sqrt(n): the paired interval is not symmetric, so the side that must move is the one used.
    inf when the effect sits on the edge or the interval is unbounded that way."""
    centre, target = math.log(effect), math.log(edge)
    if ci[0] <= 0 or not math.isfinite(ci[1]):
        return math.inf
    side = (math.log(ci[1]) - centre) if target > centre else (centre - math.log(ci[0]))
    distance = abs(target - centre)
    if distance == 0:
        return math.inf
    if side <= 0:
        return float(n)
    return n * (side / distance) ** 2


def _more_rounds(effect: float, ci: tuple[float, float], edge: float, n: int,
                 config: GateConfig) -> tuple[int, int | None]:
    """(more rounds, total per side or None past the cap) for an undecided paired verdict: to decide a change
    the interval's near end must pass no change; to decide `same`, its far end must come inside `edge`."""
    worse, (lo, hi) = effect, ci
    past = (edge > 1 and effect > edge) or (edge < 1 and effect < edge)
    # past the bar: the end towards 1 must cross 1; inside: the end towards the bar must come inside it
    needed = needed_rounds(worse, (lo, hi), 1.0 if past else edge, n)
    needed = max(needed, min_rounds(config.alpha_per_direction) or math.inf)
    if not math.isfinite(needed) or needed > config.max_suggested_launches:
        return config.max_suggested_launches - n, None
    total = max(math.ceil(needed), n + 1)
    return total - n, total


def _launch_bootstrap(a: Session, b: Session, config: GateConfig,
                      rng: np.random.Generator) -> list[tuple[float, float]]:
    """Percentile interval of exp(median(B) - median(A)), launches resampled within each side (jointly for
    all metrics: the same launches are drawn for each)."""
    u_a = rng.random((config.resamples, a.y.shape[0]))
    u_b = rng.random((config.resamples, b.y.shape[0]))
    tail = (1 - config.confidence) / 2 * 100
    out = []
    for j in range(len(a.metrics)):
        va, vb = a.column(j), b.column(j)
        draw_a = va[np.minimum((u_a[:, :va.size] * va.size).astype(int), va.size - 1)]
        draw_b = vb[np.minimum((u_b[:, :vb.size] * vb.size).astype(int), vb.size - 1)]
        diff = median_last_axis(draw_b) - median_last_axis(draw_a)
        lo, hi = np.percentile(diff, [tail, 100 - tail])
        out.append((math.exp(float(lo)), math.exp(float(hi))))
    return out


def _more_launches(effect: float, ci: tuple[float, float], edge: float, n_b: int, n_c: int,
                   config: GateConfig) -> tuple[int, int | None]:
    """Launches per side for the interval to clear `edge`, scaling the observed log-interval by 1/sqrt(n).

    The effect and spread are taken as observed, so this is an estimate: an effect near the bar needs many
    launches, one on it can never be decided. Returns (more per side, total per side or None past the cap)."""
    n_now = 2 / (1 / n_b + 1 / n_c)  # sizes combine like a harmonic mean in a two-sample standard error
    half_width = max(math.log(ci[1] / effect), math.log(effect / ci[0]), 1e-12) if ci[0] > 0 else math.inf
    distance = abs(math.log(effect) - math.log(edge))
    needed = max(n_now * (half_width / distance) ** 2 if distance > 0 else math.inf,
                 min_launches_per_side(config.alpha_per_direction))
    if not math.isfinite(needed) or needed > config.max_suggested_launches:
        return config.max_suggested_launches - min(n_b, n_c), None
    total = max(math.ceil(needed), min(n_b, n_c) + 1)
    return total - min(n_b, n_c), total


def ratio_text(value: float) -> str:
    """A ratio for display: 3 decimals, and past 1000x or below 0.001x the bound, not digits of bootstrap noise
    (a thin baseline's `0.000x..2593098.183x` said nothing)."""
    if not math.isfinite(value) or value > 1000:
        return ">1000x"
    if value < 0.001:
        return "<0.001x"
    return f"{value:.3f}x"


def interval_text(low: float, high: float) -> str:
    """A ratio's interval for display, each end as ratio_text writes it: `0.910x..>1000x`."""
    return f"{ratio_text(low)}..{ratio_text(high)}"


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "?"
    if metric == "jank_share":
        return f"{value:.2%} of frames janky"
    return f"{value:.4g} ms" if metric_unit(metric) == "ms" else f"{value:.4g}"


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
    "BaselineSession", "GATING_METRICS", "GateConfig", "GateMode", "Outcome", "SceneVerdict", "SessionPool",
    "Verdict", "gpu_incomparable", "gpu_sources", "judge", "judge_interleaved", "launch_value", "launch_values",
    "interval_text", "min_launches_per_side", "ratio_text",
]
