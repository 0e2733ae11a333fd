"""Cold start as a gate metric, measured on this machine: S real pytest sessions of one scene on `local`
(one build), each launch's time_to_first_frame_ms, warmup_ms and cpu_ms.p50 read from run.json. It prints
each metric's within-session launch spread and between-session spread (of the session medians), then judges
every session against the W sessions before it (the history gate, regression/gate.judge, one metric at a time):
the share judged regressed is the false-alarm rate on real variance; the same sessions with the candidate's
values scaled by 1+SHIFT give the power for that slowdown.

    python bench/bench_cold_start_gate.py [--sessions 12] [--window 5] [--shift 0.3 --shift 0.5]
                                          [--scene fill.alpha.x1]

Each session takes about 10-15 s on 2 idle cores (more under load). The shift is applied to real candidate
values, so the variance structure (launch to launch, session to session) is the machine's own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_zbench.regression.config import DEFAULT_THRESHOLD
from pytest_zbench.regression.gate import GateConfig, judge

REPO = Path(__file__).resolve().parents[1]
SESSION = ["--zbench-runs=5", "--zbench-frames=60", "--zbench-warmup=5", "--zbench-mode=uncapped",
           "--zbench-baseline=none"]
DEVICES = """devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
    display: {width: 320, height: 240, refresh_hz: 60}
"""
METRICS = ("time_to_first_frame_ms", "warmup_ms", "cpu_ms.p50")


def session(work: Path, scene: str) -> list[dict]:
    """One pytest session of the perf test of `scene`: its launches' summaries (run.json per_run)."""
    inventory = work / "devices.yaml"
    inventory.write_text(DEVICES)
    results = work / "results"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "zbench_perf",
                    "-k", scene, f"--zbench-devices={inventory}", f"--zbench-results={results}", *SESSION],
                   cwd=REPO, env=dict(os.environ), capture_output=True, text=True, check=False)
    document = json.loads((results / "run.json").read_text())
    (entry,) = [s for s in document["scenes"] if s["id"] == scene]
    return list(entry["per_run"])


def value(launch: dict, metric: str) -> float:
    obj = launch
    for part in metric.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return float(obj) if isinstance(obj, (int, float)) else math.nan


def spreads(sessions: list[list[dict]], metric: str) -> tuple[float, float]:
    """(within-session launch spread, between-session spread of medians), as relative SDs of the log."""
    logs = [[math.log(v) for v in (value(l, metric) for l in s) if v > 0] for s in sessions]
    within = statistics.mean(statistics.stdev(s) for s in logs if len(s) > 1)
    between = statistics.stdev(statistics.median(s) for s in logs if s)
    return math.expm1(within), math.expm1(between)


def scaled(launches: list[dict], metric: str, factor: float) -> list[dict]:
    out = []
    for launch in launches:
        copy = json.loads(json.dumps(launch))
        if metric in copy and isinstance(copy[metric], (int, float)):
            copy[metric] *= factor
        elif "." in metric:
            family, stat = metric.split(".")
            copy[family][stat] *= factor
        out.append(copy)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--shift", type=float, action="append")
    parser.add_argument("--scene", default="fill.alpha.x1")
    args = parser.parse_args()
    shifts = args.shift or [0.3, 0.5]
    with tempfile.TemporaryDirectory(prefix="zbench-cold-gate-") as folder:
        sessions = []
        for k in range(args.sessions):
            sessions.append(session(Path(folder), args.scene))
            print(f"session {k + 1}/{args.sessions}: time_to_first_frame_ms "
                  + " ".join(f"{value(l, 'time_to_first_frame_ms'):.0f}" for l in sessions[-1]), flush=True)
    print(f"\n{args.sessions} sessions x {len(sessions[0])} launches of {args.scene} on local; each session judged "
          f"against the {args.window} before it, one metric at a time (threshold {DEFAULT_THRESHOLD}, alpha 0.01)")
    print(f"{'metric':<24} {'within':>8} {'between':>8} {'A/A regressed':>14} "
          + " ".join(f"{'+' + format(s, '.0%') + ' regressed':>15}" for s in shifts))
    for metric in METRICS:
        within, between = spreads(sessions, metric)
        config = GateConfig(metrics=(metric,))
        trials = [(sessions[k - args.window:k], sessions[k]) for k in range(args.window, len(sessions))]
        aa = sum(judge(base, cand, config).verdict == "regressed" for base, cand in trials)
        powers = [sum(judge(base, scaled(cand, metric, 1 + s), config).verdict == "regressed" for base, cand in trials)
                  for s in shifts]
        print(f"{metric:<24} {within:>8.1%} {between:>8.1%} {f'{aa}/{len(trials)}':>14} "
              + " ".join(f"{f'{p}/{len(trials)}':>15}" for p in powers))


if __name__ == "__main__":
    main()
