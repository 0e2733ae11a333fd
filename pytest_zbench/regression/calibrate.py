"""Calibration: how noisy is a scene on a device, and what slowdown can the gate catch there?

From A/A launches (the same build launched many times, recorded in history as runs of kind "calibration"):

* noise floor = relative robust spread of the per-launch statistic, 1.4826 x MAD / median (stats.noise_floor);
* minimum detectable effect (MDE) for n launches per side = the smallest true slowdown the gate flags as
  regressed with probability `power` at `alpha`. Computed by SIMULATION, not a normal approximation: per-launch
  values are drawn lognormal with sigma = the noise floor (a relative spread), the candidate side is scaled
  by 1 + effect, and the gate's own rule is applied (ratio of medians past the bar AND one-sided exact
  Mann-Whitney p <= alpha). The bar itself is max(threshold, k x noise floor), so the MDE never drops below
  it. A normal approximation would be wrong exactly where it matters, at 3-10 launches, where the exact
  test's p-values are coarse.

The gate uses a stored noise floor in place of the one it would estimate from a handful of baseline launches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from ..stats import noise_floor as relative_noise_floor
from .gate import GateConfig, launch_values, min_p_value
from .history import Calibration, HistoricRun, History

MIN_CALIBRATION_LAUNCHES = 6


def detection_rate(noise_floor: float, n: int, effect: float, *, config: GateConfig = GateConfig(),
                   sims: int = 2000, seed: int = 0) -> float:
    """Share of simulated n-vs-n comparisons with a true slowdown `effect` (0.1 = 10 %) that the gate
    flags; effect 0 gives the false-positive rate."""
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, noise_floor, size=(sims, n))
    cand = rng.lognormal(0.0, noise_floor, size=(sims, n)) * (1 + effect)
    return float(_flagged(base, cand, noise_floor, config).mean())


def _flagged(base: np.ndarray, cand: np.ndarray, noise_floor: float, config: GateConfig) -> np.ndarray:
    bar = max(config.threshold, config.k_noise * noise_floor)
    ratio = np.median(cand, axis=1) / np.median(base, axis=1)
    p = sps.mannwhitneyu(cand, base, axis=1, alternative="greater", method="exact").pvalue
    return (ratio > 1 + bar) & (p <= config.alpha * (1 + 1e-9))


def minimum_detectable_effect(noise_floor: float, n: int, *, power: float = 0.8,
                              config: GateConfig = GateConfig(), sims: int = 2000, seed: int = 0,
                              max_effect: float = 4.0, tolerance: float = 0.002) -> float | None:
    """Smallest slowdown (0.25 = 25 %) flagged with probability >= power at n launches per side, by
    bisection over the effect with common random numbers (so detection grows monotonically with it).
    None when n launches can never reach alpha, or not even a `max_effect` slowdown is caught."""
    if n < 1 or min_p_value(n, n) > config.alpha * (1 + 1e-9):
        return None
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, noise_floor, size=(sims, n))
    cand0 = rng.lognormal(0.0, noise_floor, size=(sims, n))

    def caught(effect: float) -> bool:
        return float(_flagged(base, cand0 * (1 + effect), noise_floor, config).mean()) >= power

    if not caught(max_effect):
        return None
    lo, hi = 0.0, max_effect
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if caught(mid) else (mid, hi)
    return round(hi, 4)


@dataclass(frozen=True)
class CalibrationReport:
    """What calibrate_from_runs stored, and what it could not calibrate."""

    calibrations: tuple[Calibration, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def calibrate_values(values: Sequence[float], *, ns: Sequence[int] = (5, 10), power: float = 0.8,
                     config: GateConfig = GateConfig(), offset: float = 0.0, sims: int = 2000,
                     seed: int = 0) -> tuple[float, dict[int, float | None]]:
    """(noise floor, {n: MDE}) from A/A per-launch values of one metric (offset as the gate applies it)."""
    floor = relative_noise_floor([v + offset for v in values])
    return floor, {n: minimum_detectable_effect(floor, n, power=power, config=config, sims=sims, seed=seed)
                   for n in ns}


def _aa_runs(runs: Sequence[HistoricRun]) -> list[HistoricRun]:
    """The newest A/A set: the newest calibration run's build and environment, every run of both."""
    newest = runs[-1]
    return [r for r in runs if r.build_hash == newest.build_hash and r.fingerprint == newest.fingerprint]


def calibrate_from_runs(history: History, device: str, scene_ids: Iterable[str] | None = None, *,
                        ns: Sequence[int] = (5, 10), power: float = 0.8, config: GateConfig = GateConfig(),
                        kinds: Sequence[str] = ("calibration",), min_launches: int = MIN_CALIBRATION_LAUNCHES,
                        sims: int = 2000, seed: int = 0, save: bool = True) -> CalibrationReport:
    """Calibrate every scene of `device` (or only `scene_ids`) from the A/A runs already in history.

    A/A runs are runs of kind "calibration" (what `pytest --zbench-calibrate` records); per scene key the
    newest build's runs in the newest environment are pooled launch by launch. Each metric of config.metrics
    with at least `min_launches` values gets a noise floor and MDEs, saved in the calibration table unless
    save=False. Scenes and metrics that could not be calibrated are named in the notes.
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
        launches = [launch for run in runs for launch in run.launches]
        for metric in config.metrics:
            values = launch_values(launches, metric)
            if values.size < min_launches:
                if values.size:
                    notes.append(f"{key.describe()} {metric}: {values.size} A/A launches, at least {min_launches} "
                                 "are needed; run more (--runs)")
                continue
            try:
                floor, mde = calibrate_values(list(values), ns=ns, power=power, config=config,
                                              offset=config.offset(metric), sims=sims, seed=seed)
            except ValueError as exc:
                notes.append(f"{key.describe()} {metric}: {exc}")
                continue
            calibrations.append(Calibration(
                key=key, metric=metric, noise_floor=floor, n_launches=int(values.size), mde=mde,
                alpha=config.alpha, power=power,
                method=f"lognormal simulation, {sims} draws per effect, gate rule (k={config.k_noise:g}, "
                       f"threshold {config.threshold:g})",
                build_hash=runs[-1].build_hash, fingerprint=runs[-1].fingerprint,
                run_ids=tuple(run.run_id for run in runs)))
    if save:
        for calibration in calibrations:
            history.save_calibration(calibration)
    return CalibrationReport(tuple(calibrations), tuple(notes))


def describe(calibration: Calibration) -> str:
    mde = ", ".join(f"{n} launches: " + ("never" if v is None else f"+{v:.1%}")
                    for n, v in sorted(calibration.mde.items()))
    return (f"{calibration.key.describe()} {calibration.metric}: noise floor {calibration.noise_floor:.2%} "
            f"from {calibration.n_launches} A/A launches (build {calibration.build_hash[:10]}); "
            f"smallest slowdown caught {calibration.power:.0%} of the time at alpha {calibration.alpha:g}: {mde}")


__all__ = [
    "CalibrationReport", "MIN_CALIBRATION_LAUNCHES", "calibrate_from_runs", "calibrate_values",
    "describe", "detection_rate", "minimum_detectable_effect",
]
