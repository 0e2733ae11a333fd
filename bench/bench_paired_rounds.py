"""Paired rounds against launch-against-launch A/B, on a device whose launches switch speed and on quiet ones.

Each trial draws one A/B session of max + max launches in the product's order (rounds A, B, B, A:
`regression/interleaved_ab.interleave`) and judges it four ways, through the product's entry points, with
common random numbers:

* `paired seq`: the sequential gate as the product runs it (`SceneSequence` with `pairs_rounds`, `judge_look`
  with paired rounds, `launches_to_decide` and `futile`, looks by `look_due`);
* `unpaired seq`: the same schedule, every look launch against launch (the gate before paired rounds);
* `paired fixed` / `unpaired fixed`: the max + max launches judged once (`judge_interleaved`).

Launch models (per-launch summaries: cpu_ms p50 and p95; the A/B gate's default metrics, gpu_ms absent and
jank_share 0 on these uncapped scenes, add nothing):

* `two-state`: every launch runs in one of two speed states `--ratio` apart (the slow one `--ratio` x the fast),
  a Markov chain over the session's launches that stays in its state with probability `--stay`; a launch whose
  state changes in its middle runs at a mixture (share `--mixed` of the changes); around the state, a lognormal
  launch spread `--state-spread`; p95 / p50 lognormal about `--tail-ratio` with spread `--tail-spread`. The
  defaults are fitted to this machine's `fill.opaque.x1` on `local` (docs/regression.md, "Paired rounds":
  `--fit RUN.JSON` prints the fit of a run.json's launches);
* `lognormal 3%`, `lognormal 5%`: a plain lognormal launch spread, no states.

Per cell: identical builds judged `regressed` (one-sided Clopper-Pearson 95 % upper bound in brackets), judged
`same`, the power at each slowdown, and the mean launches (both sides) each design used. Targets (issue 46): false
`regressed` <= 0.5 % with its bound < 1 % in every cell; a 10 % slowdown `regressed` in >= 90 % of trials within
14 + 14 in the two-state model and at 3 % and 5 % spread; identical builds `same` in >= 80 %; a 5 % slowdown >= 60 %
at 3 % spread.

Run: python bench/bench_paired_rounds.py [--null-trials 1000] [--trials 1000] [--jobs 2] [--models ...]
[--shifts 0.05,0.10] [--max-launches 14] [--designs ...] [--log FILE]
[--summarize FILE] [--fit RUN.JSON]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_regression_power import upper  # noqa: E402

from pytest_zbench.regression.config import DEFAULT_AB_THRESHOLD  # noqa: E402
from pytest_zbench.regression.gate import GateConfig, judge_interleaved  # noqa: E402
from pytest_zbench.regression.interleaved_ab import interleave, split  # noqa: E402
from pytest_zbench.regression.sequential import (  # noqa: E402
    Look,
    SceneSequence,
    futile,
    judge_look,
    launches_to_decide,
    look_due,
    look_fraction,
    pairs_rounds,
)
from pytest_zbench.settings import DEFAULT_MAX_LAUNCHES  # noqa: E402

METRICS = ("cpu_ms.p50", "cpu_ms.p95")
MODELS = ("two-state", "lognormal 3%", "lognormal 5%")
DESIGNS = ("paired seq", "unpaired seq", "paired fixed", "unpaired fixed")


@dataclasses.dataclass(frozen=True)
class TwoState:
    """The two-state launch model; defaults fitted to this machine (see --fit)."""

    ratio: float = 1.5
    stay: float = 0.8
    mixed: float = 0.5
    state_spread: float = 0.04
    tail_ratio: float = 1.15
    tail_spread: float = 0.08


def session(model: str, rng: np.random.Generator, n: int, two: TwoState) -> tuple[np.ndarray, np.ndarray]:
    """log p50 and log p95 of n launches in session order."""
    if model == "two-state":
        slow = np.empty(n, dtype=bool)
        slow[0] = rng.random() < 0.5
        mix = np.zeros(n)
        for i in range(1, n):
            slow[i] = slow[i - 1] if rng.random() < two.stay else not slow[i - 1]
        for i in range(1, n):
            if slow[i] != slow[i - 1] and rng.random() < two.mixed:
                mix[i] = rng.random()  # the change came this far into launch i
        level = np.where(slow, math.log(two.ratio), 0.0)
        changed = mix > 0
        before = np.where(slow, 0.0, math.log(two.ratio))  # the state launch i started in
        level[changed] = np.log(mix[changed] * np.exp(before[changed]) + (1 - mix[changed]) * np.exp(level[changed]))
        p50 = level + rng.normal(0.0, two.state_spread, n)
        tail, tail_spread = two.tail_ratio, two.tail_spread
    else:
        spread = float(model.split()[1].rstrip("%")) / 100
        p50 = rng.normal(0.0, spread, n)
        tail, tail_spread = 1.15, 3 * spread
    p95 = p50 + math.log(tail) + rng.normal(0.0, tail_spread, n)
    return p50, p95


def launches(p50: np.ndarray, p95: np.ndarray, scale: float) -> list[dict]:
    return [{"cpu_ms": {"p50": scale * math.exp(a), "p95": scale * math.exp(b)}} for a, b in zip(p50, p95)]


def sequential(a: list[dict], b: list[dict], max_launches: int, config: GateConfig, paired: bool) -> tuple[str, int]:
    """The product's sequential gate over rounds of 2 + 2; (verdict, launches both sides)."""
    sequence = SceneSequence(max_launches=max_launches, alpha=config.alpha, budget_min=0.0, paired=paired)
    looks: list[int] = []
    for n in sorted({*range(2, max_launches + 1, 2), max_launches}):
        if look_due(n, looks[-1] if looks else 0, max_launches):
            looks.append(n)
    verdict = "inconclusive"
    for n in looks:
        level = sequence.level(n)
        judged = judge_look(a[:n], b[:n], config, level, paired=paired)
        verdict = judged.verdict
        sequence.looks.append(Look(len(sequence.looks), n, n, look_fraction(n, max_launches), level, verdict, None,
                                   0.0))
        if verdict != "inconclusive" or futile(launches_to_decide(judged, n), n, max_launches,
                                                 futile_from=sequence.futile_from):
            return verdict, 2 * n
    return verdict, 2 * looks[-1]


def trial(job: tuple[str, int, float, int, TwoState, tuple[str, ...]]) -> dict:
    model, seed, shift, max_launches, two, designs = job
    rng = np.random.default_rng([seed, int(shift * 1000), MODELS.index(model)])
    order = interleave(max_launches)
    p50, p95 = session(model, rng, len(order), two)
    ordered = [launches(p50[i:i + 1], p95[i:i + 1], 1.0 + (shift if arm == "B" else 0.0))[0]
               for i, arm in enumerate(order)]
    a, b = split(order, ordered)
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=METRICS, seed=seed)
    out: dict = {"model": model, "shift": shift}
    paired = pairs_rounds(max_launches, config.alpha)
    if "paired seq" in designs:
        out["paired seq"] = sequential(a, b, max_launches, config, paired)
    if "unpaired seq" in designs:
        out["unpaired seq"] = sequential(a, b, max_launches, config, False)
    if "paired fixed" in designs:
        out["paired fixed"] = (judge_interleaved(a, b, config, paired=True).verdict, 2 * max_launches)
    if "unpaired fixed" in designs:
        out["unpaired fixed"] = (judge_interleaved(a, b, config).verdict, 2 * max_launches)
    return out


def fit(path: Path) -> None:
    """The two-state model's parameters from a run.json's launches (every scene: per-launch p50 and p95)."""
    document = json.loads(path.read_text())
    for scene in document["scenes"]:
        runs = scene.get("per_run") or (scene.get("metrics") or {}).get("per_run") or []
        p50 = np.log([r["cpu_ms"]["p50"] for r in runs if r.get("cpu_ms")])
        p95 = np.log([r["cpu_ms"]["p95"] for r in runs if r.get("cpu_ms")])
        if p50.size < 6:
            continue
        cut = (p50.min() + p50.max()) / 2
        slow = p50 > cut
        ratio = math.exp(np.median(p50[slow]) - np.median(p50[~slow])) if slow.any() and (~slow).any() else 1.0
        spread = float(np.sqrt(np.mean(np.concatenate([p50[slow] - np.median(p50[slow]),
                                                       p50[~slow] - np.median(p50[~slow])]) ** 2)))
        stays = float(np.mean(slow[1:] == slow[:-1]))
        print(f"{scene['id']}: {p50.size} launches, {slow.mean():.0%} slow; ratio {ratio:.2f}, stay {stays:.2f}, "
              f"within-state spread {spread:.3f}, p95/p50 {math.exp(np.median(p95 - p50)):.2f} (spread "
              f"{np.std(p95 - p50):.3f}); launch p50s (ms): "
              + " ".join(f"{math.exp(v):.3f}" for v in p50))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null-trials", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--shifts", default="0.05,0.10")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--max-launches", type=int, default=DEFAULT_MAX_LAUNCHES)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated, of " + ", ".join(DESIGNS))
    parser.add_argument("--log", type=Path, help="append each trial's result to this file (JSON lines) as it ends")
    parser.add_argument("--summarize", type=Path, help="print the table of a --log file's trials instead of running")
    parser.add_argument("--fit", type=Path, help="print the two-state fit of a run.json's launches and exit")
    defaults = TwoState()
    for name in ("ratio", "stay", "mixed", "state_spread", "tail_ratio", "tail_spread"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    if args.fit:
        fit(args.fit)
        return 0
    two = TwoState(args.ratio, args.stay, args.mixed, args.state_spread, args.tail_ratio, args.tail_spread)
    models = tuple(m for m in args.models.split(",") if m)
    if set(models) - set(MODELS):
        parser.error(f"--models: of {', '.join(MODELS)}")
    designs = tuple(d for d in args.designs.split(",") if d)
    if set(designs) - set(DESIGNS):
        parser.error(f"--designs: of {', '.join(DESIGNS)}")
    shifts = [0.0] + [float(s) for s in args.shifts.split(",") if s]
    # seed-major: every cell advances together, so a run stopped early (--log keeps each trial as it ends) still
    # has as many trials in every cell
    jobs = [(model, seed, shift, args.max_launches, two, designs)
            for seed in range(max(args.null_trials, args.trials)) for model in models for shift in shifts
            if seed < (args.null_trials if shift == 0 else args.trials)]
    started = time.monotonic()
    if args.summarize:
        results = [json.loads(line) for line in args.summarize.read_text().splitlines() if line.strip()]
    else:
        results = []
        with Pool(args.jobs) as pool, open(args.log or "/dev/null", "a", encoding="utf-8") as log:
            for result in pool.imap(trial, jobs, chunksize=2):
                results.append(result)
                log.write(json.dumps(result) + "\n")
                log.flush()
    counts = sorted({sum(1 for r in results if r["model"] == m and r["shift"] == s) for m in models for s in shifts})
    print(f"A/B at the bar {DEFAULT_AB_THRESHOLD:.0%}, metrics {', '.join(METRICS)}, at most {args.max_launches} + "
          f"{args.max_launches} launches; two-state: {two}; {'-'.join(map(str, counts[::max(len(counts) - 1, 1)]))} "
          f"trials per cell; {time.monotonic() - started:.0f} s on {args.jobs} process(es)\n")
    head = f"{'model':<13} {'design':<15} {'regressed (95% up)':>19} {'same':>6} " + " ".join(
        f"{f'+{s:.0%}':>6}" for s in shifts[1:]) + f" {'launches A/A':>13} " + " ".join(
        f"{f'at +{s:.0%}':>8}" for s in shifts[1:])
    print(head)
    print("-" * len(head))
    missed = []
    for model in models:
        for design in designs:
            null = [r[design] for r in results if r["model"] == model and r["shift"] == 0 and design in r]
            n = max(len(null), 1)
            regressed = sum(v == "regressed" for v, _ in null)
            same = sum(v == "same" for v, _ in null) / n
            powers, used = [], []
            for s in shifts[1:]:
                cell = [r[design] for r in results if r["model"] == model and r["shift"] == s and design in r]
                powers.append(sum(v == "regressed" for v, _ in cell) / max(len(cell), 1))
                used.append(float(np.mean([u for _, u in cell])) if cell else math.nan)
            print(f"{model:<13} {design:<15} {regressed / n:>10.4f} ({upper(regressed, n):.4f}) {same:>6.3f} "
                  + " ".join(f"{p:>6.3f}" for p in powers)
                  + f" {np.mean([u for _, u in null]):>13.1f} " + " ".join(f"{u:>8.1f}" for u in used))
            if design != "paired seq":
                continue
            if regressed / n > 0.005 or upper(regressed, n) >= 0.01:
                missed.append(f"{model}: false regressed {regressed / n:.4f} (bound {upper(regressed, n):.4f})")
            if same < 0.8:
                missed.append(f"{model}: identical builds same {same:.3f} < 0.80")
            for s, p in zip(shifts[1:], powers):
                if abs(s - 0.10) < 1e-9 and p < 0.9:
                    missed.append(f"{model}: +10% regressed {p:.3f} < 0.90")
                if abs(s - 0.05) < 1e-9 and model == "lognormal 3%" and p < 0.6:
                    missed.append(f"{model}: +5% regressed {p:.3f} < 0.60")
    for line in missed:
        print("MISSED (paired seq)", line)
    if not missed:
        print("\nall targets met (paired seq)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
