"""How often the isolation check (pytest_zbench/host/isolation.py) gets a sweep wrong, on synthetic sweeps.

Each synthetic sweep has 4 values of its dimension (1, 2, 4, 8) and R launches per value; a launch's median
cost is base * (1 + effect * k / 8) times log-normal launch-to-launch noise (sigma 10%, the spread of launch
medians on a loaded 2-core machine), with one launch in 20 slowed by 30-100% (a background job). Prints, per
launch count and effect, the share of sweeps judged `scales`: for effect 0 that is the false reassurance
rate (a sweep that isolates nothing passing), for a real effect it is the power.

    python bench/bench_isolation_rates.py [--trials N]
"""

from __future__ import annotations

import argparse
import random

from pytest_zbench.host.isolation import check_isolation

VALUES = (1, 2, 4, 8)


def sweep(rng: random.Random, launches: int, effect: float, base_ms: float) -> list[dict]:
    entries = []
    for k in VALUES:
        runs = []
        for _ in range(launches):
            cost = base_ms * (1 + effect * k / VALUES[-1]) * rng.lognormvariate(0.0, 0.10)
            if rng.random() < 0.05:
                cost *= 1.3 + 0.7 * rng.random()
            runs.append({"cpu_ms": {"p50": cost}, "partial": False, "first_frame_ms": 20.0})
        entries.append({"id": f"s.x{k}", "sweep": "s.x{n}", "device": "d", "params": {"n": k}, "per_run": runs})
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(16)
    print(f"{'launches':>8} {'effect':>7} {'scales':>7}")
    for launches in (2, 5):
        for effect in (0.0, 0.1, 0.25, 0.5, 1.0):
            scales = sum(check_isolation(sweep(rng, launches, effect, 2.0))[0].verdict == "scales"
                         for _ in range(args.trials))
            print(f"{launches:>8} {effect:>7.0%} {scales / args.trials:>7.1%}")


if __name__ == "__main__":
    main()
