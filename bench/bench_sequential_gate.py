"""The sequential A/B gate against the fixed one, on synthetic sessions with the variance structure of real runs.

The sessions come from bench_regression_power.py (lognormal or bimodal frames, AR(1) inside a launch, a launch
offset of 3 %, a session offset shared by both sides of the A/B session). Each trial draws one A/B session of
max + max launches; with common random numbers:

* fixed: the first 10 + 10 launches judged once by the A/B gate (`judge_interleaved`, alpha 0.01, bar 5 %);
* sequential: rounds of 2 + 2 launches (A, B, B, A), a look after each round from 4 + 4 on
  (`regression/sequential.judge_look` at the O'Brien-Fleming-type level of that look), stopping at the first
  decided look or at max + max.

Per family it prints: FP = identical builds judged `regressed` (Clopper-Pearson 95 % upper bound), `impr` =
identical builds judged `improved`, power for a 10 % slowdown, the mean launches (both sides) each design used,
with no change and with the slowdown. Targets (docs/regression.md, "The sequential gate"): the sequential FP's
upper bound at most 1 %, its power at least the fixed gate's, with fewer launches on average.

Run: python bench/bench_sequential_gate.py [--null-trials 1000] [--trials 300] [--max-launches 12]
[--frames 300] [--jobs 2] [--sequential-alpha 0.01]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_regression_power import session_frames, summaries, upper  # noqa: E402

from pytest_zbench.regression.config import AB_GATING_METRICS, DEFAULT_AB_THRESHOLD  # noqa: E402
from pytest_zbench.regression.gate import GateConfig, judge_interleaved  # noqa: E402
from pytest_zbench.regression.sequential import judge_look, look_fraction, nominal_alphas, permutation_floor  # noqa: E402

FIXED = 10
ROUND = 2  # launches per side per round
FIRST_LOOK = 4
SHIFT = 0.10
SESSION_SPREAD = 0.05
FAMILIES = ("lognormal", "bimodal")


def sequential(a: list[dict], b: list[dict], max_launches: int, config: GateConfig, design: str,
               per_direction: float, floors: bool) -> tuple[str, int]:
    """The verdict and the launches (both sides) of one sequential run over these launches."""
    looks = list(range(FIRST_LOOK, max_launches + 1, ROUND))
    if looks[-1] != max_launches:
        looks.append(max_launches)
    levels = nominal_alphas([look_fraction(n, max_launches) for n in looks], per_direction, design,
                            [permutation_floor(n) for n in looks] if floors else None)
    verdict = "inconclusive"
    for n, level in zip(looks, levels):
        verdict = judge_look(a[:n], b[:n], config, level).verdict
        if verdict != "inconclusive":
            return verdict, 2 * n
    return verdict, 2 * looks[-1]


def trial(job: tuple[str, int, float, int, int, float, str, float, bool]) -> dict:
    family, seed, shift, max_launches, frames, alpha, design, per_direction, floors = job
    rng = np.random.default_rng(seed)
    session = session_frames(family, rng, 2 * max_launches, frames, SESSION_SPREAD)
    a = summaries(session[:max_launches])
    b = summaries(session[max_launches:] * (1 + shift))
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=AB_GATING_METRICS, seed=seed)
    fixed = judge_interleaved(a[:FIXED], b[:FIXED], config).verdict
    verdict, used = sequential(a, b, max_launches, dataclasses.replace(config, alpha=alpha), design, per_direction,
                               floors)
    return {"family": family, "shift": shift, "fixed": fixed, "sequential": verdict, "launches": used}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null-trials", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--max-launches", type=int, default=12)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sequential-alpha", type=float, default=0.01,
                        help="the alpha the sequential gate spends (the fixed gate keeps 0.01)")
    parser.add_argument("--design", default="obf", help="alpha spending: obf or hsd:GAMMA")
    parser.add_argument("--split", type=float, default=2.0, help="per-direction alpha = alpha / SPLIT")
    parser.add_argument("--no-floors", action="store_true")
    args = parser.parse_args(argv)
    jobs = [(family, seed, shift, args.max_launches, args.frames, args.sequential_alpha, args.design,
             args.sequential_alpha / args.split, not args.no_floors) for family in FAMILIES
            for shift, count in ((0.0, args.null_trials), (SHIFT, args.trials))
            for seed in range(count)]
    started = time.monotonic()
    with Pool(args.jobs) as pool:
        results = pool.map(trial, jobs, chunksize=8)
    print(f"A/B, session spread {SESSION_SPREAD:.0%}, {args.frames} frames per launch; fixed {FIXED} + {FIXED} "
          f"launches vs sequential (rounds of {ROUND} + {ROUND}, looks from {FIRST_LOOK} + {FIRST_LOOK}, at most "
          f"{args.max_launches} + {args.max_launches}, alpha spending {args.design} of "
          f"{args.sequential_alpha:g}); fixed alpha 0.01, bar 5 %; "
          f"{args.null_trials} identical-build trials and {args.trials} at +{SHIFT:.0%} per family; "
          f"{time.monotonic() - started:.0f} s on {args.jobs} process(es)\n")
    header = (f"{'family':<10} {'design':<11} {'FP (95% up)':>15} {'impr':>7} {'power +10%':>11} "
              f"{'launches (same)':>16} {'launches (+10%)':>16}")
    print(header)
    print("-" * len(header))
    missed = []
    for family in FAMILIES:
        null = [r for r in results if r["family"] == family and r["shift"] == 0.0]
        slow = [r for r in results if r["family"] == family and r["shift"] == SHIFT]
        row = {}
        for design in ("fixed", "sequential"):
            if not null:
                null = [{"fixed": "", "sequential": "", "launches": 0}]
            fp = sum(r[design] == "regressed" for r in null)
            improved = sum(r[design] == "improved" for r in null) / len(null)
            power = sum(r[design] == "regressed" for r in slow) / len(slow)
            used_null = 2 * FIXED if design == "fixed" else float(np.mean([r["launches"] for r in null]))
            used_slow = 2 * FIXED if design == "fixed" else float(np.mean([r["launches"] for r in slow]))
            row[design] = (fp, power, used_slow)
            print(f"{family:<10} {design:<11} {fp / len(null):>6.3f} ({upper(fp, len(null)):.3f}) {improved:>7.3f} "
                  f"{power:>11.3f} {used_null:>16.1f} {used_slow:>16.1f}")
        fp, power, used = row["sequential"]
        if upper(fp, len(null)) > 0.01:
            missed.append(f"{family}: sequential FP upper bound {upper(fp, len(null)):.3f} > 0.01")
        if power < row["fixed"][1]:
            missed.append(f"{family}: sequential power {power:.3f} < fixed {row['fixed'][1]:.3f}")
        if used >= 2 * FIXED:
            missed.append(f"{family}: sequential used {used:.1f} launches on average, not fewer than {2 * FIXED}")
    for line in missed:
        print("MISSED", line)
    if not missed:
        print("\nall targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
