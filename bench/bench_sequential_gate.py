"""The sequential A/B gate against the fixed one, on synthetic sessions with the variance structure of real runs.

The sessions come from bench_regression_power.py (lognormal or bimodal frames, AR(1) inside a launch, a launch
offset of 3 %, a session offset shared by both sides of the A/B session). Each trial draws one A/B session of
max + max launches; with common random numbers:

* fixed: the first 10 + 10 launches judged once by the A/B gate (`judge_interleaved`, alpha 0.01 split per
  direction, bar 5 %);
* sequential: rounds of 2 + 2 launches (A, B, B, A), a look when the product's schedule says so
  (`regression/sequential.look_due`: from 4 + 4, every 2 + 2 more, and at the maximum) through
  `regression/sequential.judge_look` at the level the product's `SceneSequence` gives that look (its spending
  function, the scene's alpha split per direction, looks its permutation test could barely reach spending
  nothing), stopping at the first decided look, at the first look from 6 + 6 whose intervals say the maximum
  could not decide it (`futile`, undecided), or at max + max. Every default is the product's.

Per family it prints: `regressed` and `improved` = identical builds judged so (each with its Clopper-Pearson 95 %
upper bound; only `regressed` fails a build), `same early` = the share of identical builds stopped `same` before
the maximum and the mean launches (both sides) they used, power for a 10 % slowdown, the mean launches (both
sides) each design used, with no change and with the slowdown. Targets (docs/regression.md, "The sequential
gate"): the sequential `regressed` rate's upper bound at most 1 %, its power at least the fixed gate's, with
fewer launches on average.

Run: python bench/bench_sequential_gate.py [--null-trials 2000] [--trials 1000] [--max-launches 14]
[--first-look 4] [--look-every 2] [--futile-from 6] [--families lognormal,bimodal] [--frames 300] [--jobs 2]
[--sequential-alpha 0.01] [--design hsd:-1] [--reachable-splits 5] [--first-seed 0]
(fewer trials and one family to explore a design quickly; the defaults for the table in docs/regression.md)
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
from pytest_zbench.regression.sequential import (  # noqa: E402
    DESIGN,
    FIRST_LOOK,
    FUTILE_FROM,
    LOOK_EVERY,
    REACHABLE_SPLITS,
    Look,
    SceneSequence,
    futile,
    judge_look,
    launches_to_decide,
    look_due,
    look_fraction,
)
from pytest_zbench.settings import DEFAULT_MAX_LAUNCHES  # noqa: E402

FIXED = 10
SHIFT = 0.10
SESSION_SPREAD = 0.05
ROUND = 2  # launches per side per round (host/measure/sequential_rounds.py)
FAMILIES = ("lognormal", "bimodal")


def sequential(a: list[dict], b: list[dict], max_launches: int, config: GateConfig, design: str,
               reachable_splits: int, first_look: int, look_every: int, futile_from: int) -> tuple[str, int]:
    """The verdict and the launches (both sides) of one sequential run over these launches: the product's
    SceneSequence gives each look its level (alpha split per direction, unreachable looks spend nothing)."""
    # rounds of 2 + 2 (A, B, B, A) as the product launches them; a look when the product's schedule says so
    rounds = sorted({*range(ROUND, max_launches + 1, ROUND), max_launches})
    looks: list[int] = []
    for n in rounds:
        if look_due(n, looks[-1] if looks else 0, max_launches, first_look=first_look, look_every=look_every):
            looks.append(n)
    sequence = SceneSequence(max_launches=max_launches, alpha=config.alpha, budget_min=0.0, design=design,
                             reachable_splits=reachable_splits)
    verdict = "inconclusive"
    for n in looks:
        level = sequence.level(n)
        judged = judge_look(a[:n], b[:n], config, level)
        verdict = judged.verdict
        sequence.looks.append(Look(index=len(sequence.looks), launches_a=n, launches_b=n,
                                   fraction=look_fraction(n, max_launches), nominal_alpha=level, verdict=verdict,
                                   effect=None, elapsed_s=0.0))
        if verdict != "inconclusive":
            return verdict, 2 * n
        if futile(launches_to_decide(judged, n), n, max_launches, futile_from=futile_from):
            return verdict, 2 * n
    return verdict, 2 * looks[-1]


def trial(job: tuple[str, int, float, int, int, float, str, int, int, int, int]) -> dict:
    family, seed, shift, max_launches, frames, alpha, design, reachable_splits, first_look, look_every, futile_from = job
    rng = np.random.default_rng(seed)
    session = session_frames(family, rng, 2 * max_launches, frames, SESSION_SPREAD)
    a = summaries(session[:max_launches])
    b = summaries(session[max_launches:] * (1 + shift))
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=AB_GATING_METRICS, seed=seed)
    fixed = judge_interleaved(a[:FIXED], b[:FIXED], config).verdict
    verdict, used = sequential(a, b, max_launches, dataclasses.replace(config, alpha=alpha), design,
                               reachable_splits, first_look, look_every, futile_from)
    return {"family": family, "shift": shift, "fixed": fixed, "sequential": verdict, "launches": used}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null-trials", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--max-launches", type=int, default=DEFAULT_MAX_LAUNCHES,
                        help=f"per side (default {DEFAULT_MAX_LAUNCHES}, the product's)")
    parser.add_argument("--first-look", type=int, default=FIRST_LOOK,
                        help=f"launches per side at the first look (default {FIRST_LOOK}, the product's)")
    parser.add_argument("--look-every", type=int, default=LOOK_EVERY,
                        help=f"launches per side between looks (default {LOOK_EVERY}, the product's)")
    parser.add_argument("--futile-from", type=int, default=FUTILE_FROM,
                        help=f"launches per side from which an undecided scene that its maximum could not decide "
                             f"stops (default {FUTILE_FROM}, the product's; past the maximum: never)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, of " + ", ".join(FAMILIES))
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sequential-alpha", type=float, default=0.01,
                        help="the scene's alpha the sequential gate spends, half per direction (the fixed gate "
                             "keeps the default, 0.01, also half per direction)")
    parser.add_argument("--design", default=DESIGN, help=f"alpha spending: obf or hsd:GAMMA (default {DESIGN})")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the trials' seeds start here: runs with disjoint seeds can be pooled (counts printed)")
    parser.add_argument("--reachable-splits", type=int, default=REACHABLE_SPLITS,
                        help=f"a look spends alpha only at a level of this many times its permutation test's "
                             f"smallest p-value (default {REACHABLE_SPLITS})")
    args = parser.parse_args(argv)
    families = tuple(f for f in args.families.split(",") if f)
    if not families or set(families) - set(FAMILIES):
        parser.error(f"--families {args.families!r}: expected a comma-separated list of {', '.join(FAMILIES)}")
    jobs = [(family, seed, shift, args.max_launches, args.frames, args.sequential_alpha, args.design,
             args.reachable_splits, args.first_look, args.look_every, args.futile_from)
            for family in families for shift, count in ((0.0, args.null_trials), (SHIFT, args.trials))
            for seed in range(args.first_seed, args.first_seed + count)]
    started = time.monotonic()
    with Pool(args.jobs) as pool:
        results = pool.map(trial, jobs, chunksize=8)
    print(f"A/B, session spread {SESSION_SPREAD:.0%}, {args.frames} frames per launch; fixed {FIXED} + {FIXED} "
          f"launches vs sequential (looks from {args.first_look} + {args.first_look}, every {args.look_every} + {args.look_every}, futile from {args.futile_from} + {args.futile_from}, at most "
          f"{args.max_launches} + {args.max_launches}, alpha spending {args.design}, alpha "
          f"{args.sequential_alpha:g} split per direction); fixed alpha 0.01 split per direction, bar 5 %; "
          f"{args.null_trials} identical-build trials and {args.trials} at +{SHIFT:.0%} per family; "
          f"{time.monotonic() - started:.0f} s on {args.jobs} process(es)\n")
    header = (f"{'family':<10} {'design':<11} {'regressed (95% up)':>19} {'improved (95% up)':>18} "
              f"{'same early':>11} {'at launches':>12} {'power +10%':>11} {'launches (A/A)':>15} "
              f"{'launches (+10%)':>16}")
    print(header)
    print("-" * len(header))
    missed = []
    for family in families:
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
    for family in families:  # the counts, to pool runs with disjoint seeds (--first-seed)
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
