"""The gate's power end to end on this machine: real runner launches of one scene, a history of S sessions of
one build, then a build whose every frame burns SLOWDOWN more CPU (the reference runner's --cpu-burn-ms, sized
from the history's own cpu_ms.p50), judged against the history; then the same two runners interleaved in one
A/B session (--zbench-ab). Per trial it prints both verdicts, the history verdict's interval of cpu_ms.p50 and
whether it holds the effect the A/B session measured; then the share of trials judged regressed by each mode.

    python bench/bench_gate_e2e.py [--trials 3] [--sessions 5] [--slowdown 0.3] [--scene fill.alpha.x1]

Each trial takes S + 2 pytest sessions (about 15 s each on 2 idle cores, more under load). The A/A side (the
same build in ten sessions under intermittent load, never regressed or improved) is a test:
tests/regression/test_gate_sessions.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_zbench.regression.history import History

REPO = Path(__file__).resolve().parents[1]
SESSION = ["--zbench-runs=5", "--zbench-frames=60", "--zbench-warmup=5", "--zbench-mode=uncapped"]
DEVICES = """devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner{burn}]
    display: {{width: 320, height: 240, refresh_hz: 60}}
"""


def session(work: Path, scene: str, build: str, history: Path, burn_ms: float = 0.0, *extra: str) -> dict:
    """One pytest session of the perf test of `scene`; the gate's section of run.json."""
    burn = f", --cpu-burn-ms, '{burn_ms:.6f}'" if burn_ms else ""
    inventory = work / "devices.yaml"
    inventory.write_text(DEVICES.format(burn=burn))
    results = work / "results"
    env = dict(os.environ, ZBENCH_BUILD_HASH=build * 40)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "zbench_perf",
                    "-k", scene, f"--zbench-devices={inventory}", f"--zbench-results={results}",
                    f"--zbench-history={history}", *SESSION, *extra],
                   cwd=REPO, env=env, capture_output=True, text=True, check=False)
    document = json.loads((results / "run.json").read_text())
    (entry,) = [s for s in document["scenes"] if s["id"] == scene]
    return dict(entry["regression"])


def p50(section: dict) -> dict:
    return next(m for m in section["metrics"] if m["metric"] == "cpu_ms.p50")


def trial(scene: str, sessions: int, slowdown: float) -> tuple[bool, bool, bool, str]:
    with tempfile.TemporaryDirectory(prefix="zbench-gate-e2e-") as folder:
        work = Path(folder)
        history = work / "history.sqlite"
        for _ in range(sessions):
            session(work, scene, "a", history)
        with History(history) as db:
            (key,) = db.scene_keys()
            cost = statistics.median(run.median("cpu_ms.p50") for run in db.runs_of(key))
        burn = slowdown * cost
        judged = session(work, scene, "b", history, burn)
        ab = session(work, scene, "a", work / "ab.sqlite", 0.0, "--zbench-runs=6",
                     f"--zbench-ab=python -m pytest_zbench.runner --cpu-burn-ms {burn:.6f}")
        m, ab_m = p50(judged), p50(ab)
        low, high = m["ci"] if m.get("ci") else (float("nan"), float("nan"))
        holds = bool(m.get("ci")) and ab_m.get("effect") is not None and low <= ab_m["effect"] <= high
        line = (f"history {judged['verdict']:>12} p50 effect {m.get('effect') or float('nan'):.3f}x "
                f"CI {low:.3f}..{high:.3f}  A/B {ab['verdict']:>12} p50 effect "
                f"{ab_m.get('effect') or float('nan'):.3f}x  holds {holds}")
        return judged["verdict"] == "regressed", ab["verdict"] == "regressed", holds, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--slowdown", type=float, default=0.3)
    parser.add_argument("--scene", default="fill.alpha.x1")
    args = parser.parse_args()
    print(f"{args.trials} trial(s): {args.sessions} history sessions of {args.scene} (5 launches x 60 frames, "
          f"uncapped, 320x240), then a build {args.slowdown:.0%} slower per frame; then A/B, 6 + 6 launches")
    outcomes = []
    for number in range(1, args.trials + 1):
        *flags, line = trial(args.scene, args.sessions, args.slowdown)
        outcomes.append(flags)
        print(f"trial {number}: {line}", flush=True)
    n = len(outcomes)
    print(f"regressed: history {sum(o[0] for o in outcomes)}/{n}, A/B {sum(o[1] for o in outcomes)}/{n}; "
          f"history interval holds the A/B effect {sum(o[2] for o in outcomes)}/{n}")


if __name__ == "__main__":
    main()
