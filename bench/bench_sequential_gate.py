"""The sequential A/B gate against the fixed one, on synthetic sessions with the variance structure of real runs.

The sessions come from bench_regression_power.py (lognormal or bimodal frames, AR(1) inside a launch, a launch
offset of 3 %, a session offset shared by both sides of the A/B session). Each trial draws one A/B session of
max + max launches; with common random numbers:

* fixed: the first 10 + 10 launches judged once by the A/B gate (`judge_interleaved`, alpha 0.01 per direction,
  bar 5 %);
* sequential: rounds of 2 + 2 launches (A, B, B, A), a look after each round from 4 + 4 on
  (`regression/sequential.judge_look` at the level the product's `SceneSequence` gives that look: its spending
  function, the scene's alpha split per direction, looks its permutation test could barely reach spending
  nothing), stopping at the first decided look or at max + max.

Per family it prints: `regressed` and `improved` = identical builds judged so (each with its Clopper-Pearson 95 %
upper bound; only `regressed` fails a build), `same early` = the share of identical builds stopped `same` before
the maximum and the mean launches (both sides) they used, power for a 10 % slowdown, the mean launches (both
sides) each design used, with no change and with the slowdown. Targets (docs/regression.md, "The sequential
gate"): the sequential `regressed` rate's upper bound at most 1 %, its power at least the fixed gate's, with
fewer launches on average.

Run: python bench/bench_sequential_gate.py [--null-trials 2000] [--trials 300] [--max-launches 12]
[--frames 300] [--jobs 2] [--sequential-alpha 0.01] [--design hsd:-1] [--reachable-splits 5]
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
from pytest_zbench.regression.sequential import DESIGN, REACHABLE_SPLITS, Look, SceneSequence, judge_look, look_fraction  # noqa: E402

FIXED = 10
ROUND = 2  # launches per side per round
FIRST_LOOK = 4
SHIFT = 0.10
SESSION_SPREAD = 0.05
FAMILIES = ("lognormal", "bimodal")


def sequential(a: list[dict], b: list[dict], max_launches: int, config: GateConfig, design: str,
               reachable_splits: int) -> tuple[str, int]:
    """The verdict and the launches (both sides) of one sequential run over these launches: the product's
    SceneSequence gives each look its level (alpha split per direction, unreachable looks spend nothing)."""
    looks = list(range(FIRST_LOOK, max_launches + 1, ROUND))
    if looks[-1] != max_launches:
        looks.append(max_launches)
    sequence = SceneSequence(max_launches=max_launches, alpha=config.alpha, budget_min=0.0, design=design,
                             reachable_splits=reachable_splits)
    verdict = "inconclusive"
    for n in looks:
        level = sequence.level(n)
        verdict = judge_look(a[:n], b[:n], config, level).verdict
        sequence.looks.append(Look(index=len(sequence.looks), launches_a=n, launches_b=n,
                                   fraction=look_fraction(n, max_launches), nominal_alpha=level, verdict=verdict,
                                   effect=None, elapsed_s=0.0))
        if verdict != "inconclusive":
            return verdict, 2 * n
    return verdict, 2 * looks[-1]


def trial(job: tuple[str, int, float, int, int, float, str, int]) -> dict:
    family, seed, shift, max_launches, frames, alpha, design, reachable_splits = job
    rng = np.random.default_rng(seed)
    session = session_frames(family, rng, 2 * max_launches, frames, SESSION_SPREAD)
    a = summaries(session[:max_launches])
    b = summaries(session[max_launches:] * (1 + shift))
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=AB_GATING_METRICS, seed=seed)
    fixed = judge_interleaved(a[:FIXED], b[:FIXED], config).verdict
    verdict, used = sequential(a, b, max_launches, dataclasses.replace(config, alpha=alpha), design,
                               reachable_splits)
    return {"family": family, "shift": shift, "fixed": fixed, "sequential": verdict, "launches": used}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null-trials", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--max-launches", type=int, default=12)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sequential-alpha", type=float, default=0.01,
                        help="the scene's alpha the sequential gate spends, half per direction (the fixed gate "
                             "keeps 0.01 per direction)")
    parser.add_argument("--design", default=DESIGN, help=f"alpha spending: obf or hsd:GAMMA (default {DESIGN})")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the trials' seeds start here: runs with disjoint seeds can be pooled (counts printed)")
    parser.add_argument("--reachable-splits", type=int, default=REACHABLE_SPLITS,
                        help=f"a look spends alpha only at a level of this many times its permutation test's "
                             f"smallest p-value (default {REACHABLE_SPLITS})")
    args = parser.parse_args(argv)
    jobs = [(family, seed, shift, args.max_launches, args.frames, args.sequential_alpha, args.design,
             args.reachable_splits)
            for family in FAMILIES for shift, count in ((0.0, args.null_trials), (SHIFT, args.trials))
            for seed in range(args.first_seed, args.first_seed + count)]
    started = time.monotonic()
    with Pool(args.jobs) as pool:
        results = pool.map(trial, jobs, chunksize=8)
    print(f"A/B, session spread {SESSION_SPREAD:.0%}, {args.frames} frames per launch; fixed {FIXED} + {FIXED} "
          f"launches vs sequential (rounds of {ROUND} + {ROUND}, looks from {FIRST_LOOK} + {FIRST_LOOK}, at most "
          f"{args.max_launches} + {args.max_launches}, alpha spending {args.design}, alpha "
          f"{args.sequential_alpha:g} split per direction); fixed alpha 0.01 per direction, bar 5 %; "
          f"{args.null_trials} identical-build trials and {args.trials} at +{SHIFT:.0%} per family; "
          f"{time.monotonic() - started:.0f} s on {args.jobs} process(es)\n")
    header = (f"{'family':<10} {'design':<11} {'regressed (95% up)':>19} {'improved (95% up)':>18} "
              f"{'same early':>11} {'at launches':>12} {'power +10%':>11} {'launches (A/A)':>15} "
              f"{'launches (+10%)':>16}")
    print(header)
    print("-" * len(header))
    missed = []
    for family in FAMILIES:
        null = [r for r in results if r["family"] == family and r["shift"] == 0.0]
        slow = [r for r in results if r["family"] == family and r["shift"] == SHIFT]
        row = {}
        for design in ("fixed", "sequential"):
            regressed = sum(r[design] == "regressed" for r in null)
            improved = sum(r[design] == "improved" for r in null)
            power = sum(r[design] == "regressed" for r in slow) / max(len(slow), 1)
            if design == "fixed":
                used_null = used_slow = float(2 * FIXED)
                early, early_launches = 0, float("nan")
            else:
                used_null = float(np.mean([r["launches"] for r in null])) if null else float("nan")
                used_slow = float(np.mean([r["launches"] for r in slow])) if slow else float("nan")
                stopped_same = [r["launches"] for r in null
                                if r[design] == "same" and r["launches"] < 2 * args.max_launches]
                early = len(stopped_same)
                early_launches = float(np.mean(stopped_same)) if stopped_same else float("nan")
            row[design] = (regressed, power, used_slow)
            n = max(len(null), 1)
            print(f"{family:<10} {design:<11} {regressed / n:>10.4f} ({upper(regressed, n):.4f}) "
                  f"{improved / n:>9.4f} ({upper(improved, n):.4f}) {early / n:>11.3f} {early_launches:>12.1f} "
                  f"{power:>11.3f} {used_null:>15.1f} {used_slow:>16.1f}")
        regressed, power, used = row["sequential"]
        if null and upper(regressed, len(null)) > 0.01:
            missed.append(f"{family}: sequential regressed-on-A/A upper bound {upper(regressed, len(null)):.4f} > 0.01")
        if slow and power < row["fixed"][1]:
            missed.append(f"{family}: sequential power {power:.3f} < fixed {row['fixed'][1]:.3f}")
        if slow and used >= 2 * FIXED:
            missed.append(f"{family}: sequential used {used:.1f} launches on average, not fewer than {2 * FIXED}")
    for family in FAMILIES:  # the counts, to pool runs with disjoint seeds (--first-seed)
        null = [r for r in results if r["family"] == family and r["shift"] == 0.0]
        print(f"{family}: sequential on identical builds: {sum(r['sequential'] == 'regressed' for r in null)} "
              f"regressed, {sum(r['sequential'] == 'improved' for r in null)} improved of {len(null)}; fixed: "
              f"{sum(r['fixed'] == 'regressed' for r in null)} regressed, "
              f"{sum(r['fixed'] == 'improved' for r in null)} improved")
    for line in missed:
        print("MISSED", line)
    if not missed:
        print("\nall targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
