"""Precision and coverage of the adaptive score's interval, on synthetic launches and end to end.

Synthetic part (default): the real controller (host/measure/adaptive_launches.py) plans every launch and the real fit and
bootstrap (adaptive_score.py) score it; only the device is simulated, with the variance structure seen on
real devices:

* a frame's cost is intercept + slope x complexity (1 ms + 0.01567 ms per element: the budget of 16.67 ms
  is reached at exactly 1000 elements, the true score);
* each launch runs at its own speed (x exp(N(0, launch_sd))): clocks, thermal state, cache layout; "quiet"
  is a dedicated device (launch_sd 0.02), "loaded" a shared machine (0.08);
* per-frame noise: lognormal (sigma 0.10) with AR(1) correlation (phi 0.6), half of the previous frame's
  cost carried into the next interval (two frames in flight), and preemption spikes (3 % of frames, +5-30 ms).

For each cell it prints, over --trials simulated scenes: the coverage of the true score by the 95 %
interval, the median relative half-width of the interval (the precision the issue asks for: at most 5 % with
10 launches) and the median absolute error of the score. At the true speed the per-launch score of a device
at speed k is (budget - k x intercept) / (k x slope), so the median over launches estimates the score at the
median speed, 1000.

End to end (--e2e DEVICE...): runs one adaptive scene with --zbench-runs=10 on each device through pytest, and
prints the relative half-width from its first 5 and from all 10 scored launches (the interval recomputed
with adaptive_score.summarize_scores, as run.json's is), and the per-launch scores.

Run: python bench/bench_adaptive_score.py [--trials N] [--e2e local local-gles2 --scene ID --frames N].
The synthetic part takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import signal

from pytest_zbench.adaptive_score import fit_hinge, step_points, summarize_scores
from pytest_zbench.host.measure.adaptive_launches import Controller
from pytest_zbench.host.measure.results import LaunchPlan
from pytest_zbench.scenes import ComplexitySpec

BUDGET_MS = 16.67
INTERCEPT_MS = 1.0
TRUE_SCORE = 1000.0
SLOPE_MS = (BUDGET_MS - INTERCEPT_MS) / TRUE_SCORE
FRAME_SD, PHI, CARRY = 0.10, 0.6, 0.5
SPIKE_SHARE, SPIKE_MS = 0.03, (5.0, 30.0)
REGIMES = {"quiet": 0.02, "loaded": 0.08}
LAUNCHES = (5, 10)


def simulate(plan: LaunchPlan, rng: np.random.Generator, launch_sd: float) -> list[dict[str, object]]:
    """frames.csv rows of one simulated launch of `plan`."""
    c = np.asarray(plan.complexity, dtype=float)
    n = c.size
    speed = float(np.exp(rng.normal(0.0, launch_sd)))
    shocks = rng.normal(0.0, FRAME_SD * np.sqrt(1 - PHI ** 2), n)
    noise = np.exp(signal.lfilter([1.0], [1.0, -PHI], shocks))
    own = (INTERCEPT_MS + SLOPE_MS * c) * speed * noise
    cost = (1 - CARRY) * own + CARRY * np.concatenate(([own[0]], own[:-1]))
    cost += np.where(rng.random(n) < SPIKE_SHARE, rng.uniform(*SPIKE_MS, n), 0.0)
    return [{"frame": f, "phase": "warmup" if f < plan.warmup_frames else "measure", "complexity": c[f],
             "present_interval_ms": float(cost[f])} for f in range(n)]


def simulated_scene(rng: np.random.Generator, launches: int, frames: int, launch_sd: float) -> list[float]:
    """The per-launch scores of one scene: the controller's search, then `launches` ramps."""
    controller = Controller(ComplexitySpec("elements", 100, 100_000), BUDGET_MS, frames, 60, (0,))
    while (plan := controller.next_search()) is not None:
        controller.observe(step_points(simulate(plan, rng, launch_sd)))
    ramp = controller.ramp()
    return [fit_hinge(step_points(simulate(ramp, rng, launch_sd)).points, BUDGET_MS).score
            for _ in range(launches)]


def synthetic(trials: int, frames: int, seed: int) -> None:
    print(f"synthetic: true score {TRUE_SCORE:g}, budget {BUDGET_MS} ms, {frames} measured frames per ramp, "
          f"{trials} scenes per cell")
    print(f"{'regime':8} {'launches':>8} {'coverage':>9} {'half-width (median)':>20} {'(90th pct)':>11} "
          f"{'|error| (median)':>17}")
    rng = np.random.default_rng(seed)
    for regime, launch_sd in REGIMES.items():
        scenes = [simulated_scene(rng, max(LAUNCHES), frames, launch_sd) for _ in range(trials)]
        for n in LAUNCHES:
            summaries = [summarize_scores(scores[:n]) for scores in scenes]
            covered = np.mean([s.ci is not None and s.ci[0] <= TRUE_SCORE <= s.ci[1] for s in summaries])
            widths = np.array([s.relative_half_width for s in summaries], dtype=float)
            errors = np.array([abs(s.score - TRUE_SCORE) / TRUE_SCORE for s in summaries])
            print(f"{regime:8} {n:>8} {covered:>9.1%} {np.median(widths):>20.2%} {np.quantile(widths, 0.9):>11.2%} "
                  f"{np.median(errors):>17.2%}")


def end_to_end(devices: list[str], scene: str, frames: int) -> None:
    root = Path(__file__).resolve().parent.parent
    for device in devices:
        with tempfile.TemporaryDirectory() as tmp:
            results = Path(tmp) / "results"
            command = [sys.executable, "-m", "pytest", f"--zbench-device={device}", "--zbench-runs=10",
                       f"--zbench-frames={frames}", "--zbench-baseline=none", "-p", "no:cacheprovider", "-q",
                       "-k", f"perf and {scene}", f"--zbench-results={results}"]
            print(f"{device}: load average before {os.getloadavg()[0]:.1f}", flush=True)
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=os.environ.copy())
            run_json = results / "run.json"
            if not run_json.is_file():
                print(f"{device}: no run.json (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
                continue
            entry = next(s for s in json.loads(run_json.read_text())["scenes"] if s["id"] == scene)
            adaptive = entry["adaptive"]
            scores = adaptive["per_run_scores"]
            print(f"{device} {scene}: {len(scores)} scored launches of {frames} frames, budget "
                  f"{adaptive['budget_ms']} ms, censored {adaptive['censored']}, launches took "
                  f"{sum(entry['launch_wall_s']):.0f} s; load average at the end {os.getloadavg()[0]:.1f}")
            print(f"  per-launch scores: {', '.join(f'{s:.1f}' for s in scores)}")
            for n in LAUNCHES:
                if len(scores) >= n:
                    s = summarize_scores(scores[:n])
                    print(f"  {n:>2} launches: score {s.score:.1f}, 95% CI {s.ci[0]:.1f}..{s.ci[1]:.1f}, "
                          f"half-width {s.relative_half_width:.2%} of the score")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--frames", type=int, default=600, help="measured frames per ramp (--zbench-frames)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--e2e", nargs="*", metavar="DEVICE", help="also measure end to end on these devices")
    parser.add_argument("--scene", default="rrect.grid.adaptive")
    parser.add_argument("--skip-synthetic", action="store_true")
    args = parser.parse_args()
    if not args.skip_synthetic:
        synthetic(args.trials, args.frames, args.seed)
    if args.e2e:
        end_to_end(args.e2e, args.scene, args.frames)


if __name__ == "__main__":
    main()
