"""How well a differential pair's interval (pytest_zbench/host/verdicts/differentials.py) covers the feature's true cost,
and how often it calls a free feature `costs` or misses a real one, on synthetic pairs.

Each synthetic pair has R launches a side; a launch's median cost is base (1 ms) times log-normal
launch-to-launch noise (sigma 10 %, the spread of launch medians on a loaded 2-core machine), with one launch in
20 slowed by 30-100 % (a background job); the scene with the feature costs `cost` times base more. Prints, per
launch count: the interval's coverage of the true difference, the share of free features (cost 0) judged
`costs` (false alarms), and the share of 10 %, 25 % and 50 % features judged `costs` (power).

    python bench/bench_differential_pairs.py [--trials N]
"""

from __future__ import annotations

import argparse
import random

from pytest_zbench.host.verdicts.differentials import differential_costs

BASE_MS = 1.0
LAUNCHES = (2, 3, 5, 10)
COSTS = (0.0, 0.10, 0.25, 0.50)


def launch(rng: random.Random, cost_ms: float) -> float:
    value = cost_ms * rng.lognormvariate(0.0, 0.10)
    return value * (1.3 + 0.7 * rng.random()) if rng.random() < 0.05 else value


def pair(rng: random.Random, launches: int, cost: float) -> list[dict]:
    def entry(scene: str, cost_ms: float, minus: str | None) -> dict:
        return {"id": scene, "device": "synthetic", "params": {}, "gpu_valid": None, "skipped": None,
                "per_run": [{"cpu_ms": {"p50": launch(rng, cost_ms)}, "partial": False} for _ in range(launches)],
                "differential": {"minus": minus, "feature": "synthetic"} if minus else None}

    return [entry("with", BASE_MS * (1 + cost), "without"), entry("without", BASE_MS, None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(2026)
    print(f"{args.trials} synthetic pairs per cell; base {BASE_MS} ms, 10 % log-normal launch noise, 1 in 20 slowed")
    print("launches a side | coverage of the true cost (25 % feature) | free judged costs | "
          + " | ".join(f"{c:.0%} judged costs" for c in COSTS[1:]))
    for launches in LAUNCHES:
        covered, costs = 0, {c: 0 for c in COSTS}
        for _ in range(args.trials):
            for cost in COSTS:
                [d] = differential_costs(pair(rng, launches, cost))
                costs[cost] += d.verdict == "costs"
                if cost == 0.25 and d.ci_low_ms is not None and d.ci_high_ms is not None:
                    covered += d.ci_low_ms <= cost * BASE_MS <= d.ci_high_ms
        print(f"{launches:>15} | {covered / args.trials:>40.1%} | {costs[0.0] / args.trials:>17.1%} | "
              + " | ".join(f"{costs[c] / args.trials:>15.1%}" for c in COSTS[1:]))


if __name__ == "__main__":
    main()
