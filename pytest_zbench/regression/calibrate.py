"""Calibration: how noisy is a scene on a device, within a session and between sessions, and what slowdown can
the gate catch there? (docs/regression.md, "Calibration".)

From A/A sessions (the same build measured in several pytest sessions, recorded in the history as runs of kind
"calibration": `zbench calibrate --sessions N --runs M`), per scene and metric, on the log scale the gate works
on (regression/hierarchy.py):

* within-session spread sigma: the launches' robust spread inside a session (Shamos, pooled over the sessions);
* between-session spread tau: how much a whole session's statistic moves, once what its launches' spread
  explains is taken out (from two sessions up; one session cannot show it);
* minimum detectable effect (MDE) for n launches against a baseline of 5 sessions: the smallest true slowdown
  the gate flags with `power`, by normal theory on the gate's rule: the effect's standard error
  se = sqrt(tau^2 (1 + 1/5) + c_n sigma^2 / n (1 + 1/5)), the interval's critical value from the t
  distribution at the level of the `regressed` direction (alpha / 2) split over the gated metrics (Bonferroni:
  an upper bound of what the gate's min-P adjustment needs), the effect past max(threshold, critical x se)
  `power` of the time.

The gate reads the A/A sessions themselves (regression/baseline.calibration_sessions): they supply its
between-session spread. The calibration table keeps the figures for people: the within-session spread as the
`noise_floor`, the MDEs, and in `method` the between-session spread and the A/B MDE.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from .config import GateConfig
from .hierarchy import (
    Session,
    SessionGroup,
    between_sessions,
    launch_values,
    median_variance_factor,
    shamos_spread,
)
from .history import Calibration, HistoricRun, History

MIN_CALIBRATION_LAUNCHES = 6
BASELINE_SESSIONS = 5


@dataclass(frozen=True)
class Spread:
    """One metric's A/A spreads on the log scale: within a session (sigma) and between sessions (tau, None
    from fewer than two sessions), with the sessions and launches they come from."""

    within: float
    between: float | None
    sessions: int
    launches: int
    between_df: int = 0


def spread_of(sessions: Sequence[Sequence[float]], offset: float = 0.0) -> Spread:
    """The spreads of one metric from A/A sessions, each a list of per-launch values."""
    logs = [np.log(np.asarray([v for v in s if math.isfinite(v)], dtype=float) + offset) for s in sessions]
    logs = [v for v in logs if v.size]
    launches = sum(v.size for v in logs)
    within = shamos_spread(logs)
    if not math.isfinite(within):
        raise ValueError(f"a within-session spread needs a session with two launches, got {launches} launch(es) "
                         f"in {len(logs)} session(s)")
    group = SessionGroup(tuple(Session(("m",), v.reshape(-1, 1)) for v in logs), "calibration")
    between = between_sessions([group], 1)
    tau = math.sqrt(float(between.tau2[0])) if between.known(0) else None
    return Spread(within, tau, len(logs), launches, int(between.df[0]))


def minimum_detectable_effect(spread: Spread, n: int, *, power: float = 0.8, config: GateConfig = GateConfig(),
                              sessions: int = BASELINE_SESSIONS, metrics: int | None = None) -> float | None:
    """The smallest slowdown (0.25 = 25 %) the history gate flags `power` of the time with n candidate launches
    against `sessions` baseline sessions of n launches (normal theory, see the module docstring). None without
    a between-session spread (the gate is inconclusive then) or for n < 1."""
    if n < 1 or spread.between is None:
        return None
    k = metrics or len(config.metrics)
    df = max(spread.between_df, sessions - 1)
    within = median_variance_factor(n) * spread.within ** 2 / n
    se = math.sqrt((spread.between ** 2 + within) * (1 + 1 / sessions))
    crit = float(sps.t.ppf(1 - config.alpha_per_direction / k, df))
    needed = max(math.log1p(config.threshold), crit * se) + float(sps.norm.ppf(power)) * se
    return round(math.expm1(needed), 4)


def ab_minimum_detectable_effect(spread: Spread, n: int, *, power: float = 0.8,
                                 config: GateConfig = GateConfig(), threshold: float | None = None,
                                 metrics: int | None = None) -> float | None:
    """The same for an interleaved A/B run of n + n launches: no session offsets, launches only."""
    if n < 2:
        return None
    k = metrics or len(config.metrics)
    se = math.sqrt(2 * median_variance_factor(n) * spread.within ** 2 / n)
    crit = float(sps.t.ppf(1 - config.alpha_per_direction / k, 2 * n - 2))
    bar = math.log1p(config.threshold if threshold is None else threshold)
    return round(math.expm1(max(bar, crit * se) + float(sps.norm.ppf(power)) * se), 4)


@dataclass(frozen=True)
class CalibrationReport:
    """What calibrate_from_runs stored, and what it could not calibrate."""

    calibrations: tuple[Calibration, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _aa_runs(runs: Sequence[HistoricRun]) -> list[HistoricRun]:
    """The newest A/A set: the newest calibration run's build and environment, every run of both."""
    newest = runs[-1]
    return [r for r in runs if r.build_hash == newest.build_hash and r.fingerprint == newest.fingerprint]


def calibrate_from_runs(history: History, device: str, scene_ids: Iterable[str] | None = None, *,
                        ns: Sequence[int] = (5, 10), power: float = 0.8, config: GateConfig = GateConfig(),
                        kinds: Sequence[str] = ("calibration",), min_launches: int = MIN_CALIBRATION_LAUNCHES,
                        save: bool = True) -> CalibrationReport:
    """Calibrate every scene of `device` (or only `scene_ids`) from the A/A sessions already in history.

    A/A sessions are runs of kind "calibration" (what `pytest --zbench-calibrate` records); per scene key the
    newest build's runs in the newest environment. Each metric of config.metrics with at least `min_launches`
    values gets its spreads and MDEs, saved in the calibration table unless save=False. Scenes and metrics that
    could not be calibrated, and A/A sets of one session (no between-session spread), are named in the notes.
    """
    wanted = None if scene_ids is None else set(scene_ids)
    calibrations: list[Calibration] = []
    notes: list[str] = []
    keys = [k for k in history.scene_keys(device=device, kinds=kinds) if wanted is None or k.scene_id in wanted]
    if not keys:
        notes.append(f"no A/A runs (kind {'/'.join(kinds)}) of device {device!r}"
                     + (f" for scene(s) {', '.join(sorted(wanted))}" if wanted else "") + " in the history")
    for key in keys:
        runs = _aa_runs(history.runs_of(key, kinds=kinds))
        if len(runs) < 2:
            notes.append(f"{key.describe()}: one A/A session; the between-session spread needs at least two "
                         "(zbench calibrate --sessions 3)")
        for metric in config.metrics:
            sessions = [list(launch_values(run.launches, metric)) for run in runs]
            total = sum(len(s) for s in sessions)
            if total < min_launches:
                if total:
                    notes.append(f"{key.describe()} {metric}: {total} A/A launches, at least {min_launches} "
                                 "are needed; run more (--runs, --sessions)")
                continue
            try:
                spread = spread_of(sessions, config.offset(metric))
            except ValueError as exc:
                notes.append(f"{key.describe()} {metric}: {exc}")
                continue
            mde = {n: minimum_detectable_effect(spread, n, power=power, config=config) for n in ns}
            ab = {n: ab_minimum_detectable_effect(spread, n, power=power, config=config) for n in ns}
            between = ("unknown (one session)" if spread.between is None
                       else f"{math.expm1(spread.between):.2%} ({spread.between_df} df)")
            ab_text = ", ".join(f"{n}+{n}: " + ("never" if v is None else f"+{v:.1%}") for n, v in ab.items())
            calibrations.append(Calibration(
                key=key, metric=metric, noise_floor=math.expm1(spread.within), n_launches=spread.launches,
                mde=mde, alpha=config.alpha, power=power,
                method=(f"{spread.sessions} A/A session(s); between-session spread {between}; MDE by normal theory "
                        f"against {BASELINE_SESSIONS} baseline sessions (threshold {config.threshold:g}, "
                        f"{len(config.metrics)} metrics); A/B MDE {ab_text}"),
                build_hash=runs[-1].build_hash, fingerprint=runs[-1].fingerprint,
                run_ids=tuple(run.run_id for run in runs)))
    if save:
        for calibration in calibrations:
            history.save_calibration(calibration)
    return CalibrationReport(tuple(calibrations), tuple(notes))


def describe(calibration: Calibration) -> str:
    mde = ", ".join(f"{n} launches: " + ("never (no between-session spread)" if v is None else f"+{v:.1%}")
                    for n, v in sorted(calibration.mde.items()))
    return (f"{calibration.key.describe()} {calibration.metric}: within-session launch spread "
            f"{calibration.noise_floor:.2%} from {calibration.n_launches} A/A launches (build "
            f"{calibration.build_hash[:10]}); {calibration.method.split('; MDE')[0]}; smallest slowdown caught "
            f"{calibration.power:.0%} of the time at alpha {calibration.alpha:g} against "
            f"{BASELINE_SESSIONS} sessions: {mde}")


__all__ = [
    "BASELINE_SESSIONS", "CalibrationReport", "MIN_CALIBRATION_LAUNCHES", "Spread", "ab_minimum_detectable_effect",
    "calibrate_from_runs", "describe", "minimum_detectable_effect", "spread_of",
]
