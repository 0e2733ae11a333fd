"""False alarms and power of the history gate when some sessions run beside another busy process, with and
without the busy-host guard's co-run rule (docs/regression.md, "A busy host").

The model: sessions of 5 launches x 60 frames of a 0.3 ms fill (AR(1) frames, sigma 0.05, phi 0.8; a launch offset
of 1 %; 2 % of frames hit by a 0.5-4 ms preemption), a quiet session offset of 1 %, and with probability
`--busy-share` a session run beside another busy process: its frames slower by 10-40 % (shared caches, memory
bandwidth, clocks; nothing stolen) and its launches' corun_load about 1 CPU (0.05 when quiet, +-0.05). This is
the shape of the CI false alarm: a same-build session beside another measuring test, 41 % slower than its three
quiet baseline sessions, judged `regressed`.

Per baseline size S it prints, for identical builds and for a 30 % slowdown: the share judged `regressed` by the
gate alone (regression.gate.judge), by the gate with the busy-host guard (regression.contention.guard), and by
the t test on the baseline's S - 1 between-session df (the reference test, one-sided at the gate's level for
`regressed`, alpha / 2), with one-sided Clopper-Pearson 95 % upper bounds for the false-alarm rates.

Run: python bench/bench_corun_guard.py [--trials N] [--sessions S ...] [--busy-share P]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_regression_power import ar1, summaries, t_reference, upper  # noqa: E402

from pytest_zbench.regression import contention  # noqa: E402
from pytest_zbench.regression.gate import GateConfig, judge  # noqa: E402

LAUNCHES, FRAMES = 5, 60
QUIET_LOAD, BUSY_LOAD = 0.05, 1.0


def session(rng: np.random.Generator, busy_share: float, shift: float = 0.0) -> list[dict]:
    busy = rng.random() < busy_share
    offset = rng.normal(0.0, 0.01) + (rng.uniform(0.10, 0.40) if busy else 0.0)
    frames = 0.3 * np.exp(ar1(rng, LAUNCHES, FRAMES, 0.05)) * np.exp(rng.normal(0.0, 0.01, size=(LAUNCHES, 1)))
    frames = frames + (rng.random(frames.shape) < 0.02) * rng.uniform(0.5, 4.0, size=frames.shape)
    launches = summaries(frames * math.exp(offset) * (1 + shift))
    for launch in launches:
        launch["corun_load"] = float(max(0.0, (BUSY_LOAD if busy else QUIET_LOAD) + rng.normal(0.0, 0.05)))
    return launches


def cell(k: int, n: int, *, null: bool) -> str:
    """A rate; for identical builds (a false-alarm rate) with its Clopper-Pearson 95 % upper bound."""
    return f"{k / n:.3f} ({upper(k, n):.3f})" if null else f"{k / n:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300, help="comparisons per baseline size and shift (300)")
    parser.add_argument("--sessions", type=int, nargs="+", default=[3, 5], help="baseline sizes (3 5)")
    parser.add_argument("--busy-share", type=float, default=0.25,
                        help="share of sessions run beside another busy process (0.25)")
    args = parser.parse_args(argv)
    alpha = GateConfig().alpha_per_direction  # the gate's level for `regressed`: the reference's too
    started = time.perf_counter()
    print(f"{args.trials} trials per cell; {LAUNCHES} launches x {FRAMES} frames per session; "
          f"{args.busy_share:.0%} of sessions beside a busy process (+10-40 %); one-sided level {alpha} (alpha / 2)")
    print(f"{'sessions':>8} {'shift':>6} {'gate alone':>16} {'gate + co-run rule':>19} {'t test, S-1 df':>16}")
    for sessions in args.sessions:
        for shift in (0.0, 0.30):
            rng = np.random.default_rng(1000 * sessions + int(shift * 100))
            alone = guarded = reference = 0
            for trial in range(args.trials):
                baseline = [session(rng, args.busy_share) for _ in range(sessions)]
                candidate = session(rng, args.busy_share, shift)
                verdict = judge(baseline, candidate, GateConfig(seed=trial))
                alone += verdict.verdict == "regressed"
                guarded += contention.guard(verdict, [l for s in baseline for l in s],
                                            candidate).verdict == "regressed"
                reference += t_reference(baseline, candidate, alpha)
            cells = [cell(k, args.trials, null=shift == 0) for k in (alone, guarded, reference)]
            print(f"{sessions:>8} {shift:>6.0%} {cells[0]:>16} {cells[1]:>19} {cells[2]:>16}", flush=True)
    print(f"elapsed {time.perf_counter() - started:.0f} s; at shift 0 the rate is the false-alarm rate "
          "(95 % upper bound in brackets), at 30 % the power")
    return 0


if __name__ == "__main__":
    sys.exit(main())
