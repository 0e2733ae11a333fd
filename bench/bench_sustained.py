"""Sustained runs: how often the burst/sustained interval calls drift that is not there, how often it sees
drift that is, and (with --end-to-end) a real sustained session on `local` with a background load started
halfway through the launch.

Synthetic part: frame times with AR(1) noise (a slow frame tends to follow a slow frame), per-frame sigma 6 %
of the level, at 60 frames a second; stationary series for the false-alarm rate, a step of +X % halfway for
the power. The interval is a 95 % one: about 5 % false alarms is what it promises.

End-to-end part: `pytest --zbench-device=local --zbench-sustained=MINUTES --zbench-mode=uncapped` on the
CPU-heavy drawcalls.rects.n1000 scene; when the runner's first progress line arrives, a timer starts one
busy-loop process per core at half the duration. Prints the scene's ratio, its interval and the samples'
coverage from run.json.

    python bench/bench_sustained.py [--runs N] [--end-to-end] [--minutes M]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

from pytest_zbench.host.measure.sustained import analyse

REPO = Path(__file__).resolve().parents[1]


def ar1_series(seconds: float, fps: float, rho: float, sigma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    times = np.arange(0.0, seconds, 1.0 / fps)
    shocks = rng.normal(0.0, sigma * np.sqrt(1 - rho**2), times.size)
    noise = lfilter([1.0], [1.0, -rho], shocks)
    return times, noise


def synthetic(runs: int) -> None:
    print(f"synthetic: {runs} series per row, 60 fps, sigma 6 % per frame, 95 % interval")
    print(f"{'rho':>5} {'minutes':>7} {'step':>6} {'drift called':>13} {'median ratio':>13} {'steady found':>13}")
    for rho in (0.5, 0.8, 0.95):
        for minutes in (1.0, 5.0):
            for step in (0.0, 0.03, 0.10):
                called, ratios, steady = 0, [], 0
                for seed in range(runs):
                    times, noise = ar1_series(minutes * 60, 60, rho, 0.06, seed)
                    level = np.where(times < times[-1] / 2, 10.0, 10.0 * (1 + step))
                    stats = analyse(times, level * (1 + noise), seed=seed)
                    called += stats.drift
                    ratios.append(stats.ratio)
                    steady += stats.steady_s is not None
                print(f"{rho:5.2f} {minutes:7.1f} {step:6.0%} {called / runs:13.1%} {np.median(ratios):13.4f} "
                      f"{steady / runs:13.1%}")


def _burn(stop_at: float) -> None:
    x = 0
    while time.monotonic() < stop_at:
        x += 1


def end_to_end(minutes: float) -> None:
    duration = minutes * 60
    with tempfile.TemporaryDirectory(prefix="zbench-sustained-bench-") as tmp:
        results = Path(tmp) / "results"
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "scenes", "-m", "zbench_perf",
                "-k", "drawcalls.rects.n1000", "--zbench-device=local", f"--zbench-sustained={minutes}",
                "--zbench-sustained-interval=2", "--zbench-mode=uncapped", "--zbench-baseline=none",
                f"--zbench-results={results}", f"--zbench-history={Path(tmp) / 'history.sqlite'}", "-q"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        load: list[multiprocessing.Process] = []
        started = threading.Event()

        def start_load() -> None:
            stop_at = time.monotonic() + duration  # past the launch's end
            for _ in range(os.cpu_count() or 2):
                p = multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True)
                p.start()
                load.append(p)

        assert proc.stdout is not None
        output = []
        for line in proc.stdout:
            output.append(line)
            # The progress line of the first frame: the launch is drawing, the load starts halfway.
            if not started.is_set() and "launch 1/1 frame" in line:
                started.set()
                threading.Timer(duration / 2, start_load).start()
        proc.wait()
        for p in load:
            p.terminate()
            p.join()
        if proc.returncode != 0:
            print("".join(output[-30:]))
            raise SystemExit(f"pytest exited {proc.returncode}")
        scene = json.loads((results / "run.json").read_text())["scenes"][0]
    sustained = scene["sustained"]
    print(f"end to end: {scene['id']} on local, {minutes:g} min uncapped, load on every core from half-way")
    for name, m in sustained["metrics"].items():
        print(f"  {name}: burst {m['burst_ms']:.3f} ms, sustained {m['sustained_ms']:.3f} ms, ratio {m['ratio']:.3f} "
              f"[{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] drift={m['drift']} steady_s={m['steady_s']} "
              f"window {m['window_s']:.1f} s")
    cover = sustained["coverage"]
    print(f"  conditions: {cover['samples']} samples every {sustained['interval_s']:g} s, first at {cover['first_s']} s, "
          f"last at {cover['last_s']} s of {sustained['measured_s']} s measured, widest gap {cover['max_gap_s']} s "
          f"(at interval: {cover['at_interval']}), clock {sustained['clock']}")
    loads = [(c["t_s"], c.get("load_avg_1m")) for c in sustained["conditions"]]
    print(f"  load_avg_1m over time: {loads[:: max(1, len(loads) // 8)]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--end-to-end", action="store_true")
    parser.add_argument("--minutes", type=float, default=1.0)
    args = parser.parse_args()
    synthetic(args.runs)
    if args.end_to_end:
        end_to_end(args.minutes)


if __name__ == "__main__":
    main()
