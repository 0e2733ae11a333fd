"""Harness overhead: the wall time of a perf test over the runner's own time for the same launches.

Runs one scene as a real pytest session on the `local` device, then reads the test's duration from the
JUnit file and each launch's own wall time from run.json (`runner_wall_ms`, measured by the runner from
its start to its exit). Everything in between (process start, job push, pulling and validating the files,
statistics, artifacts) is the harness. Target: at most 1.03 for a 600-frame paced scene (issue #33).

The JUnit time is the test's setup, call and teardown: the setup of the first test of a session includes
the session's own start (the host's imports, opening and probing the device), which pytest's --durations
lines show apart; they are printed too.

A missed target is printed, not an error: this is a bench, not a timed test (exit 1 only when the session
itself fails).

    python bench/bench_harness_overhead.py [--scene fill.opaque.x1] [--runs 3] [--frames 600] [--mode paced]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.03


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="fill.opaque.x1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--mode", default="paced", choices=["paced", "uncapped"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results, junit = Path(tmp) / "results", Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "--zbench-device=local", "-k", f"perf and {args.scene}-",
                   f"--zbench-runs={args.runs}", f"--zbench-frames={args.frames}", f"--zbench-warmup={args.warmup}",
                   f"--zbench-mode={args.mode}", f"--zbench-results={results}", f"--junitxml={junit}",
                   f"--zbench-history={Path(tmp) / 'history.sqlite'}", "--durations=0", "-vv",
                   "-p", "no:cacheprovider", "-q"]
        started = time.monotonic()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        session_s = time.monotonic() - started
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
            return 1
        cases = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name", "").startswith("perf[")]
        if len(cases) != 1:
            print(f"expected one perf test for {args.scene}, found {len(cases)}")
            return 1
        test_s = float(cases[0].get("time"))
        scene = json.loads((results / "run.json").read_text())["scenes"][0]
    phases = {match.group(2): float(match.group(1)) for match in
              re.finditer(r"^([0-9.]+)s (setup|call|teardown) +\S*perf\[", proc.stdout, re.MULTILINE)}
    runner_s = sum(scene["runner_wall_ms"]) / 1000.0
    launch_s = sum(scene["launch_wall_s"])
    ratio = test_s / runner_s
    print(f"scene {args.scene}: {args.runs} launches x ({args.warmup} warmup + {args.frames} frames), {args.mode}")
    print(f"  runner's own time (sum of launches)    {runner_s:8.3f} s")
    print(f"  launch wall time as the host saw it    {launch_s:8.3f} s   ratio {launch_s / runner_s:6.3f}")
    print(f"  perf test wall time (JUnit)            {test_s:8.3f} s   ratio {ratio:6.3f}   (target <= {TARGET:.2f}: "
          f"{'met' if ratio <= TARGET else 'MISSED'})")
    for phase in ("setup", "call", "teardown"):
        if phase in phases:
            print(f"    of which {phase:<8}                  {phases[phase]:8.3f} s")
    if "call" in phases:
        print(f"  perf test call alone                   {phases['call']:8.3f} s   ratio {phases['call'] / runner_s:6.3f}")
    print(f"  whole pytest session                   {session_s:8.3f} s   ratio {session_s / runner_s:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
