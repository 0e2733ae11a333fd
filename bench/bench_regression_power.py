"""False-positive rate and power of the regression gate on synthetic launches, and why frames are not pooled.

Each simulated launch is a frame-time series drawn from a realistic model:

* lognormal: heavy right tail (sigma 0.25 in logs around 8 ms);
* bimodal: a sticky two-state chain (fast 6 ms / slow 18 ms frames, e.g. atlas hits and misses, 10 % slow);
* both with a launch-level random offset (x exp(N(0, 0.03)): thermal state, clocks, cache layout differ per
  launch) and within-launch AR(1) correlation (phi 0.8 in logs).

Every launch is summarised exactly as the plugin does (stats.summarize_launch, then per-launch p50 and p95 of
cpu_ms), and the candidate's frames are scaled by 1 + shift. For each cell the script prints how often:

* "MWU p50": the one-sided launch-level Mann-Whitney on per-launch p50s alone is significant at alpha;
* "gate p50": the gate flags cpu_ms.p50 as regressed (the MWU AND the effect past max(15 %, 3 x noise floor));
* "gate scene": the scene verdict (cpu_ms.p50 or cpu_ms.p95) is regressed;
* "pooled MWU": one Mann-Whitney over all frames of all launches pooled is significant at alpha: the test
  the launch as the unit replaces. At shift 0 % this is its false-positive rate.

At shift 0 % every column is a false-positive rate; otherwise it is power. Run: python bench/bench_regression_power.py
[--trials N] [--frames N] [--jobs N]. About two minutes on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
from scipy import signal
from scipy import stats as sps

from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.stats import LaunchSamples, summarize_launch

ALPHA = 0.05
BUDGET_MS = 16.67
PHI = 0.8
LAUNCH_SPREAD = 0.03
SHIFTS = (0.0, 0.05, 0.10, 0.20)
LAUNCHES = (5, 10)
FAMILIES = ("lognormal", "bimodal")


def ar1(rng: np.random.Generator, launches: int, frames: int, sigma: float) -> np.ndarray:
    """Stationary AR(1) noise with marginal sd `sigma`, one row per launch."""
    shocks = rng.normal(0.0, sigma * np.sqrt(1 - PHI ** 2), size=(launches, frames))
    shocks[:, 0] = rng.normal(0.0, sigma, size=launches)  # start in the stationary distribution
    return signal.lfilter([1.0], [1.0, -PHI], shocks, axis=1)


def frame_times(family: str, rng: np.random.Generator, launches: int, frames: int) -> np.ndarray:
    offsets = np.exp(rng.normal(0.0, LAUNCH_SPREAD, size=(launches, 1)))
    if family == "lognormal":
        return 8.0 * np.exp(ar1(rng, launches, frames, 0.25)) * offsets
    # Sticky two-state chain: a slow frame is followed by another slow one with probability 0.7.
    p_enter, p_stay = 0.1 * 0.3 / 0.9, 0.7  # stationary share of slow frames = 10 %
    slow = np.zeros((launches, frames), dtype=bool)
    slow[:, 0] = rng.random(launches) < 0.1
    draws = rng.random((launches, frames))
    for t in range(1, frames):
        slow[:, t] = np.where(slow[:, t - 1], draws[:, t] < p_stay, draws[:, t] < p_enter)
    level = np.where(slow, 18.0, 6.0)
    return level * np.exp(ar1(rng, launches, frames, 0.08)) * offsets


def summarise(frames: np.ndarray) -> list:
    nan = np.full(frames.shape[1], np.nan)
    return [summarize_launch(LaunchSamples(cpu_ms=row, gpu_ms=nan, gpu_source=None, interval_ms=nan,
                                           warmup_cpu_ms=[], counters={}, mode="uncapped"), BUDGET_MS)
            for row in frames]


def cell(family: str, n: int, shift: float, trials: int, frames: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    config = GateConfig(alpha=ALPHA, metrics=("cpu_ms.p50", "cpu_ms.p95"))
    counts = {"mwu": 0, "gate_p50": 0, "gate_scene": 0, "pooled": 0}
    floors = []
    for trial in range(trials):
        base_frames = frame_times(family, rng, n, frames)
        cand_frames = frame_times(family, rng, n, frames) * (1 + shift)
        base, cand = summarise(base_frames), summarise(cand_frames)
        base_p50 = [launch.cpu_ms.p50 for launch in base]
        cand_p50 = [launch.cpu_ms.p50 for launch in cand]
        counts["mwu"] += sps.mannwhitneyu(cand_p50, base_p50, alternative="greater", method="exact").pvalue <= ALPHA
        scene = judge(base, cand, GateConfig(**{**config.__dict__, "seed": trial}))
        p50 = scene.by_metric()["cpu_ms.p50"]
        counts["gate_p50"] += p50.verdict == "regressed"
        floors.append(p50.noise_floor if p50.noise_floor is not None else np.nan)
        counts["gate_scene"] += scene.verdict == "regressed"
        counts["pooled"] += sps.mannwhitneyu(cand_frames.ravel(), base_frames.ravel(), alternative="greater",
                                             method="asymptotic").pvalue <= ALPHA
    return {"family": family, "n": n, "shift": shift, "floor": float(np.nanmedian(floors)),
            **{k: v / trials for k, v in counts.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="simulated comparisons per cell (default: 400)")
    parser.add_argument("--frames", type=int, default=600, help="measured frames per launch (default: 600)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    args = parser.parse_args(argv)

    cells = [(family, n, shift) for family in FAMILIES for n in LAUNCHES for shift in SHIFTS]
    print(f"{len(cells)} cells x {args.trials} trials, {args.frames} frames per launch, alpha {ALPHA}, "
          f"{args.jobs} process(es)", flush=True)
    started = time.perf_counter()
    results = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(cell, family, n, shift, args.trials, args.frames, seed)
                   for seed, (family, n, shift) in enumerate(cells)]
        for done, future in enumerate(as_completed(futures), 1):
            results.append(future.result())
            print(f"  {done}/{len(cells)} cells, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    results.sort(key=lambda r: (FAMILIES.index(r["family"]), r["n"], r["shift"]))
    margin = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.trials)
    print()
    print("shift 0 % = false-positive rate (should be <= alpha); other shifts = power; noise floor = median of the")
    print("gate's p50 noise floor estimate from the baseline launches (the bar is max(15 %, 3 x it))")
    header = (f"{'family':<10} {'launches':>8} {'shift':>6} {'MWU p50':>8} {'gate p50':>9} {'gate scene':>11} "
              f"{'pooled MWU':>11} {'noise floor':>12}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['family']:<10} {r['n']:>8} {r['shift']:>6.0%} {r['mwu']:>8.3f} {r['gate_p50']:>9.3f} "
              f"{r['gate_scene']:>11.3f} {r['pooled']:>11.3f} {r['floor']:>12.1%}")
    null = [r for r in results if r["shift"] == 0]
    print()
    print(f"false positives at alpha {ALPHA} (binomial 95 % margin +-{margin:.3f} at {args.trials} trials):")
    for r in null:
        ratio = r["pooled"] / max(r["mwu"], 1 / args.trials)
        print(f"  {r['family']:<10} {r['n']:>2} launches: launch-level MWU {r['mwu']:.3f}, gate {r['gate_scene']:.3f}, "
              f"pooled frames {r['pooled']:.3f} ({ratio:.0f}x the launch-level rate)")
    print(f"elapsed {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
