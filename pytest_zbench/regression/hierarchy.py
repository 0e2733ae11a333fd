"""Two levels of variance: launches within a session, sessions within the baseline (docs/regression.md).

Every gated metric is a ratio, so everything here is on the log scale: y = log(value + offset) of one launch's
statistic (its p50 cpu_ms, its jank share + 5 %, ...). A session's statistic is the median of its launches' y.
The model behind the gate:

    y(session s, launch l) = mu + b_s + e_sl      b_s: between sessions, spread tau; e_sl: within, spread sigma

Whatever moves a whole session (background load, clocks, thermal state, a reboot) is b_s: every launch of the
session shares it, so more launches cannot average it away, and one candidate session's own b_s looks exactly
like an effect. This module estimates both levels and resamples them:

* `within_sessions`: the launches' residuals about their session's median, pooled over the judged scene's
  sessions (baseline and candidate), and their robust spread;
* `between_sessions`: tau, from groups of sessions measured alike (the scene's baseline window, the other
  scenes of the device in theirs, A/A calibration sessions): the pooled sum of squares of session statistics
  about their group's mean, less the part their launches' spread explains, with its degrees of freedom;
* `bootstrap`: the hierarchical bootstrap of the effect's error (session offsets drawn from the pooled session
  deviations, launch residuals within each session), jointly for all metrics.

Plain numpy; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# n x Var(median of n) / sigma^2 for normal samples (simulated once, 400,000 draws each): the median of 1 or 2
# launches is their mean; larger odd n approach pi/2 from below, even n from further below.
MEDIAN_VARIANCE_FACTOR = (1.0, 1.0, 1.344, 1.198, 1.430, 1.288, 1.472, 1.347, 1.494, 1.379,
                          1.517, 1.405, 1.522, 1.426, 1.526, 1.444, 1.529, 1.456, 1.538, 1.469)
SHAMOS_TO_SIGMA = 1.0483  # median |x_i - x_j| x this estimates a normal sigma
# The log of a value this small stands for zero: a statistic below the clock's resolution.
LOG_FLOOR = 1e-9


def median_variance_factor(n: int) -> float:
    if n < 1:
        raise ValueError(f"a median of {n} values has no variance")
    return MEDIAN_VARIANCE_FACTOR[n - 1] if n <= len(MEDIAN_VARIANCE_FACTOR) else math.pi / 2


def launch_value(launch: Any, metric: str) -> float:
    """One launch's value of `metric` ("cpu_ms.p50", "jank_share"), NaN when the launch lacks it.

    `launch` is a stats.LaunchSummary or its to_dict() (SceneSummary.per_run holds those dicts)."""
    obj = launch
    for part in metric.split("."):
        obj = obj.get(part) if isinstance(obj, Mapping) else getattr(obj, part, None)
        if obj is None:
            return math.nan
    try:
        value = float(obj)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def launch_values(launches: Iterable[Any], metric: str) -> np.ndarray:
    """The known per-launch values of `metric`, launches lacking it dropped."""
    values = np.array([launch_value(launch, metric) for launch in launches], dtype=float)
    return values[np.isfinite(values)]


def to_log(values: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """log(value + offset), a value at or below zero read as LOG_FLOOR (NaN stays NaN)."""
    shifted = np.asarray(values, dtype=float) + offset
    with np.errstate(invalid="ignore"):
        return np.log(np.where(shifted > LOG_FLOOR, shifted, np.where(np.isnan(shifted), np.nan, LOG_FLOOR)))


@dataclass(frozen=True, eq=False)
class Session:
    """One session's launches of one scene: y[l, j] = log(value + offset) of launch l's metric j (NaN where a
    launch lacks it). `label` names it in messages (a run id, a build)."""

    metrics: tuple[str, ...]
    y: np.ndarray
    label: str = ""
    build: str = ""

    @classmethod
    def of(cls, launches: Sequence[Any], metrics: Sequence[str], offsets: Mapping[str, float] | None = None,
           label: str = "", build: str = "") -> Session:
        offsets = offsets or {}
        columns = [to_log(np.array([launch_value(l, m) for l in launches], dtype=float), offsets.get(m, 0.0))
                   for m in metrics]
        y = np.column_stack(columns) if columns else np.empty((len(launches), 0))
        return cls(tuple(metrics), y.reshape(len(launches), len(metrics)), label, build)

    def column(self, j: int) -> np.ndarray:
        values = self.y[:, j]
        return values[np.isfinite(values)]

    def count(self, j: int) -> int:
        return int(np.isfinite(self.y[:, j]).sum())

    def stat(self, j: int) -> float:
        """The session's statistic of metric j: the median of its launches (NaN when none has it)."""
        values = self.column(j)
        return float(np.median(values)) if values.size else math.nan


@dataclass(frozen=True)
class SessionGroup:
    """Sessions measured alike, whose spread about their own mean is between-session spread: the judged
    scene's baseline window, another scene of the same device in its window, or an A/A calibration set."""

    sessions: tuple[Session, ...]
    source: str


def shamos_spread(sessions: Iterable[np.ndarray]) -> float:
    """Robust within-session spread: SHAMOS_TO_SIGMA x the median of |y_i - y_j| over pairs of launches of one
    session, pooled over sessions. NaN without any pair. Unlike the MAD about a session's own median, it has
    no built-in zero for small sessions, and one wild launch (a preempted p95) moves it little."""
    gaps = [np.abs(v[:, None] - v[None, :])[np.triu_indices(v.size, 1)] for v in sessions if v.size >= 2]
    if not gaps:
        return math.nan
    return SHAMOS_TO_SIGMA * float(np.median(np.concatenate(gaps)))


@dataclass(frozen=True, eq=False)
class WithinSessions:
    """The judged scene's launch residuals, pooled: residuals[r, j] is a launch's y about its session's median
    (scaled by sqrt(n / (n - 1)) for the centre taken out), NaN where a launch lacks metric j or its session has
    a single launch. df[j] = sum of (launches - 1) over those sessions; sigma[j] the robust spread."""

    residuals: np.ndarray
    df: np.ndarray
    sigma: np.ndarray


def within_sessions(sessions: Sequence[Session], n_metrics: int) -> WithinSessions:
    rows: list[np.ndarray] = []
    df = np.zeros(n_metrics)
    sigma = np.full(n_metrics, math.nan)
    for session in sessions:
        block = np.full(session.y.shape, np.nan)
        for j in range(n_metrics):
            column = session.y[:, j]
            known = np.isfinite(column)
            n = int(known.sum())
            if n >= 2:
                block[known, j] = (column[known] - np.median(column[known])) * math.sqrt(n / (n - 1))
                df[j] += n - 1
        rows.append(block)
    residuals = np.vstack(rows) if rows else np.empty((0, n_metrics))
    for j in range(n_metrics):
        sigma[j] = shamos_spread(s.column(j) for s in sessions)
    return WithinSessions(residuals, df, sigma)


@dataclass(frozen=True, eq=False)
class BetweenSessions:
    """The between-session spread, per metric, pooled over session groups.

    tau2[j]: variance of a session offset (log scale); df[j]: its degrees of freedom (sum over contributing
    groups of sessions - 1; 0 = unknown); var_tau2[j]: its sampling variance (normal theory), for the degrees
    of freedom of the test; unbiased_tau2[j]: the estimate, negative when the sessions agree more closely than
    their launches' spread explains (the test's pivot uses it, `pivot_tau2`; `measured_tau2`, it truncated at
    zero, is what the floor is compared with: tau2[j] = max(it, floor^2)); deviations[k, j]: every
    contributing session's deviation from its group's mean, rescaled to variance tau2[j] (NaN where it lacks
    metric j), the bootstrap's draws of a session offset;
    sources[j]: which groups contributed; sessions[j]: how many sessions; parts[j]: per contributing group
    (its index, its degrees of freedom, the within-session part w_g of its session statistics' variance)."""

    tau2: np.ndarray
    df: np.ndarray
    var_tau2: np.ndarray
    deviations: np.ndarray
    sources: tuple[tuple[str, ...], ...]
    sessions: np.ndarray
    parts: tuple[tuple[tuple[int, int, float], ...], ...] = ()
    unbiased_tau2: np.ndarray | None = None

    @property
    def measured_tau2(self) -> np.ndarray | None:
        """The estimate before the floor: unbiased_tau2 truncated at zero (a variance to report)."""
        return None if self.unbiased_tau2 is None else np.maximum(self.unbiased_tau2, 0.0)

    def known(self, j: int) -> bool:
        return bool(self.df[j] > 0)

    def floored(self, j: int) -> bool:
        """Whether tau2[j] is the floor, raised from a smaller estimate (measured_tau2[j])."""
        return self.unbiased_tau2 is not None and bool(self.tau2[j] > max(self.unbiased_tau2[j], 0.0))

    def pivot_tau2(self, j: int) -> float:
        """The between part of the test's variance: the floor where the estimate is under it; without a floor,
        the unbiased estimate as measured, negative included. Truncating it at zero and adding the launches'
        part back would raise the variance exactly when the sessions happen to agree, while keeping the few
        degrees of freedom of the estimate: a test that is never right-sized, conservative at the level and
        without the power of the t test on the same session statistics (docs/regression.md, "Few baseline
        sessions"). Left signed, tau2 + the launches' part is the session statistics' own pooled variance, the
        t test's, on their degrees of freedom."""
        if self.unbiased_tau2 is None or self.floored(j):
            return float(self.tau2[j])
        return float(self.unbiased_tau2[j])

    def own_within(self, j: int, *, group: int) -> float:
        """Group `group`'s within part w_g of metric j (the variance its launches give a session statistic), 0
        when that group did not contribute."""
        return next((w for g, _, w in self.parts[j] if g == group), 0.0) if self.parts else 0.0

    def within_uncancelled(self, j: int, *, group: int) -> float:
        """The share of the launches' part of the test's variance whose sampling error is not already counted
        in the between part's. The pivot's tau2 subtracts group `group`'s within part with weight g_df / df[j],
        and the test adds the launches' part back once, so that share of its error cancels: with the judged
        scene's sessions alone, the variance is the session statistics' own, on their df and no more. Under the
        floor the between part is fixed and nothing cancels."""
        if self.floored(j) or not self.df[j]:
            return 1.0
        own = sum(g_df for g, g_df, _ in self.parts[j] if g == group) if self.parts else 0
        return 1.0 - own / float(self.df[j])

    def variance_of_tau2(self, j: int, *, group: int | None = None, w: float | None = None) -> float:
        """The sampling variance of the pivot's tau2 (normal theory: a pooled variance with df[j] degrees of
        freedom), optionally with group `group`'s within part replaced by `w` (the bootstrap's own reading)."""
        if not self.parts or not self.df[j]:
            return float(self.var_tau2[j])
        tau2 = self.pivot_tau2(j)
        total = sum(g_df * max(0.0, tau2 + (w if g == group and w is not None else g_w)) ** 2
                    for g, g_df, g_w in self.parts[j])
        return float(2 * total / self.df[j] ** 2)


def between_sessions(groups: Sequence[SessionGroup], n_metrics: int, *, floor: float = 0.0) -> BetweenSessions:
    """Pool the session-level spread of `groups` (each about its own mean), metric by metric.

    `floor` (relative, config.DEFAULT_BETWEEN_FLOOR in the gate): tau is never taken below log(1 + floor).
    Two or three sessions agree by chance far more closely than a device's sessions do, and an estimate of 0.4 %
    from 1 df would let one session's offset pass for an effect. The floor keeps the estimate's degrees of
    freedom (var_tau2 is computed at the floored tau2), so a t reference on them still asks a 1-df comparison
    for a large effect (docs/regression.md, "A floor on the between-session spread").

    A group's session statistics vary by tau^2 plus what the spread of their own launches explains, w_g (the
    variance of a median of n launches: MEDIAN_VARIANCE_FACTOR[n] x sigma_g^2 / n, sigma_g robust): tau^2 is
    the pooled sum of squares less the pooled w_g, never below zero. It is a sum of squares, not a robust
    scale, on purpose: a candidate is one session, and the sessions a robust scale would discount (the one
    under load) are exactly the sessions a candidate can be."""
    tau2 = np.zeros(n_metrics)
    df = np.zeros(n_metrics)
    var_tau2 = np.zeros(n_metrics)
    counts = np.zeros(n_metrics, dtype=int)
    unbiased = np.zeros(n_metrics)
    floor2 = math.log1p(floor) ** 2
    sources: list[tuple[str, ...]] = []
    per_group: list[list[tuple[int, np.ndarray, float, int]]] = [[] for _ in range(n_metrics)]
    rows: list[list[float]] = []
    for j in range(n_metrics):
        ss = dfs = w_sum = 0.0
        used: list[str] = []
        for g, group in enumerate(groups):
            members = [s for s in group.sessions if s.count(j) >= 1]
            if len(members) < 2:
                continue
            stats = np.array([s.stat(j) for s in members])
            sigma = shamos_spread(s.column(j) for s in members)
            w = float(np.mean([median_variance_factor(s.count(j)) * sigma ** 2 / s.count(j) for s in members])
                      ) if math.isfinite(sigma) else 0.0
            g_df = len(members) - 1
            ss += float(((stats - stats.mean()) ** 2).sum())
            dfs += g_df
            w_sum += g_df * w
            used.append(group.source)
            per_group[j].append((g, stats - stats.mean(), w, g_df))
        if dfs > 0:
            unbiased[j] = (ss - w_sum) / dfs
            tau2[j] = max(unbiased[j], 0.0, floor2)
            df[j] = dfs
            var_tau2[j] = 2 * sum(g_df * (tau2[j] + w) ** 2 for _, _, w, g_df in per_group[j]) / dfs ** 2
            counts[j] = sum(g_df + 1 for *_, g_df in per_group[j])
        sources.append(tuple(dict.fromkeys(used)))
    # One row per (group, session); a session missing a metric, or in a group too small for it, is NaN there.
    index: dict[tuple[int, int], int] = {}
    for g, group in enumerate(groups):
        for i in range(len(group.sessions)):
            index[(g, i)] = len(rows)
            rows.append([math.nan] * n_metrics)
    for j in range(n_metrics):
        for g, deviations, w, g_df in per_group[j]:
            scale = math.sqrt((g_df + 1) / g_df) * (math.sqrt(tau2[j] / (tau2[j] + w)) if tau2[j] > 0 else 0.0)
            positions = [i for i, session in enumerate(groups[g].sessions) if session.count(j) >= 1]
            for i, deviation in zip(positions, deviations):
                rows[index[(g, i)]][j] = float(deviation) * scale
    matrix = np.array(rows, dtype=float).reshape(len(rows), n_metrics)
    parts = tuple(tuple((g, int(g_df), float(w)) for g, _, w, g_df in per_group[j]) for j in range(n_metrics))
    return BetweenSessions(tau2, df, var_tau2, matrix, tuple(sources), counts, parts, unbiased)


def median_last_axis(values: np.ndarray) -> np.ndarray:
    """np.median over the last axis of finite values, the same numbers: a sort and the middle one (or the mean
    of the middle two). The bootstraps take thousands of medians of a few launches each, where np.median's
    partition costs 4-5x a sort."""
    ordered = np.sort(values, axis=-1)
    n = ordered.shape[-1]
    if n % 2:
        return ordered[..., n // 2]
    return (ordered[..., n // 2 - 1] + ordered[..., n // 2]) / 2


def _draw(pool: np.ndarray, u: np.ndarray) -> np.ndarray:
    """pool[k] for uniform draws u in [0, 1): the same u picks the same row of a shared pool, so metrics known
    in the same rows are drawn jointly (their correlation kept)."""
    return pool[np.minimum((u * pool.size).astype(int), pool.size - 1)]


@dataclass(frozen=True, eq=False)
class Replicates:
    """Bootstrap replicates of the effect's error, per metric (columns): `within` from the launches' residuals,
    `between` from the session offsets, `total` their sum; `session_within[j]`: the variance the launches'
    residuals give one baseline session's statistic (averaged over the baseline sessions)."""

    within: np.ndarray
    between: np.ndarray
    session_within: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.within + self.between


def bootstrap(candidate: Session, baseline: Sequence[Session], within: WithinSessions, between: BetweenSessions,
              *, resamples: int, rng: np.random.Generator) -> Replicates:
    """The hierarchical bootstrap of d = candidate's session statistic - mean of the baseline's.

    Per resample, every session (each baseline session and the candidate) gets a session offset drawn from the
    pooled session deviations and launch residuals drawn from the pooled residuals, as many as it has launches;
    its statistic's error is the offset plus the median of those residuals. The candidate's own offset is
    drawn like every other: one session's offset is part of the uncertainty of one session's effect. The same
    draws serve every metric (jointly), so the replicates carry the metrics' correlation."""
    m = len(candidate.metrics)
    sessions = [candidate, *baseline]
    u_offset = rng.random((resamples, len(sessions)))
    n_max = max((s.y.shape[0] for s in sessions), default=0)
    u_launch = rng.random((resamples, len(sessions), max(n_max, 1)))
    within_rep = np.zeros((resamples, m))
    between_rep = np.zeros((resamples, m))
    session_within = np.zeros(m)
    for j in range(m):
        residuals = within.residuals[:, j]
        residuals = residuals[np.isfinite(residuals)]
        offsets = between.deviations[:, j] if between.deviations.size else np.empty(0)
        offsets = offsets[np.isfinite(offsets)]
        counts = np.array([s.count(j) for s in sessions])
        if counts[0] == 0 or not (counts[1:] > 0).any():
            within_rep[:, j] = between_rep[:, j] = np.nan
            continue
        w = np.zeros((resamples, len(sessions)))
        if residuals.size:
            for n in np.unique(counts[counts > 0]):  # sessions of equal size share one vectorised median
                which = np.flatnonzero(counts == n)
                w[:, which] = median_last_axis(_draw(residuals, u_launch[:, which, :n]))
        b = _draw(offsets, u_offset) if offsets.size else np.zeros((resamples, len(sessions)))
        base = np.flatnonzero(counts[1:] > 0) + 1
        within_rep[:, j] = w[:, 0] - w[:, base].mean(axis=1)
        between_rep[:, j] = b[:, 0] - b[:, base].mean(axis=1)
        session_within[j] = float(w[:, base].var(axis=0).mean())
    return Replicates(within_rep, between_rep, session_within)


def satterthwaite_df(var_between: float, var_within: float, *, var_of_between: float, df_within: float,
                     within_counted: float = 1.0) -> float:
    """Degrees of freedom of an estimated variance var_between + var_within whose parts are estimated with
    sampling variances var_of_between (the between part, from few sessions) and 2 var_within^2 / df_within, of
    which the share `within_counted` is not already in var_of_between (BetweenSessions.within_uncancelled)."""
    total = var_between + var_within
    spread = var_of_between + (within_counted ** 2 * 2 * var_within ** 2 / df_within if df_within > 0 else 0.0)
    if total <= 0 or spread <= 0:
        return math.inf
    return max(1.0, 2 * total ** 2 / spread)


__all__ = [
    "BetweenSessions", "LOG_FLOOR", "MEDIAN_VARIANCE_FACTOR", "Replicates", "Session", "SessionGroup",
    "WithinSessions", "between_sessions", "bootstrap", "launch_value", "launch_values", "median_last_axis",
    "median_variance_factor",
    "satterthwaite_df", "shamos_spread", "to_log", "within_sessions",
]
