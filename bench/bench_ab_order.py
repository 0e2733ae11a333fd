"""The bias an A/B launch order leaves under a steady drift, and what it does to the A/B gate's false alarms.

Model: 2n launches in one session, a launch's log value = a steady drift (the device warming up: `drift` in
total from the first launch to the last, linear in the launch's slot) + its own noise N(0, 0.03) (the launch
spread of bench/bench_regression_power.py). A and B are the same build. For each order (ABAB, ABBA):

* bias: the mean of log(median B / median A) over `--trials` draws, as a ratio (1.000x: none);
* FP: the share of draws the A/B gate (`judge_interleaved` at the A/B defaults, cpu_ms.p50) judges `regressed`,
  over `--gate-trials` draws, with its one-sided Clopper-Pearson 95 % upper bound.

Run: python bench/bench_ab_order.py [--launches N] [--trials N] [--gate-trials N] [--drifts D ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pytest_zbench.regression.config import DEFAULT_AB_THRESHOLD
from pytest_zbench.regression.gate import GateConfig, judge_interleaved
from pytest_zbench.regression.interleaved_ab import Pattern, interleave, split

sys.path.insert(0, str(Path(__file__).parent))
from bench_regression_power import upper  # noqa: E402

LAUNCH_SPREAD = 0.03
PATTERNS: tuple[Pattern, ...] = ("ABAB", "ABBA")


def draws(n: int, drift: float, trials: int, rng: np.random.Generator) -> np.ndarray:
    slots = np.arange(2 * n) / max(2 * n - 1, 1)
    return drift * slots + rng.normal(0.0, LAUNCH_SPREAD, size=(trials, 2 * n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10, help="launches per side (default 10)")
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--gate-trials", type=int, default=300)
    parser.add_argument("--drifts", type=float, nargs="+", default=[0.0, 0.05, 0.10, 0.20])
    args = parser.parse_args()
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=("cpu_ms.p50",))
    print(f"{args.launches} + {args.launches} launches, launch spread {LAUNCH_SPREAD:.0%}; bias over "
          f"{args.trials} draws, FP of the A/B gate over {args.gate_trials}")
    print(f"{'drift':>6} {'order':>6} {'bias B/A':>9} {'FP':>7} {'FP 95% up':>10}")
    for drift in args.drifts:
        for pattern in PATTERNS:
            order = interleave(args.launches, pattern=pattern)
            rng = np.random.default_rng(7)
            y = draws(args.launches, drift, args.trials, rng)
            is_b = np.array([arm == "B" for arm in order])
            bias = float(np.mean(np.median(y[:, is_b], axis=1) - np.median(y[:, ~is_b], axis=1)))
            regressed = 0
            for row in y[: args.gate_trials]:
                a, b = split(order, [{"cpu_ms": {"p50": float(np.exp(v))}} for v in row])
                verdict = judge_interleaved(a, b, config)
                regressed += verdict.verdict == "regressed"
            n = min(args.gate_trials, args.trials)
            print(f"{drift:>6.0%} {pattern:>6} {np.exp(bias):>8.3f}x {regressed / n:>7.1%} {upper(regressed, n):>10.1%}",
                  flush=True)


if __name__ == "__main__":
    main()
