"""The C runner kit's own per-frame cost (native/kit, docs/native-runner.md): the kit's frame loop around an
engine that draws nothing (bench/native_kit_null_engine.c), uncapped, so every nanosecond between two frame
starts is the kit's bookkeeping: the monotonic and thread CPU clocks, getrusage before and after, the row's
formatting and its write and flush to frames.csv, the progress line, the pacing and the per-frame checks.
Printed per frame and as a share of a 1 ms frame; the target is under 1 %.

    python bench/bench_native_kit.py [--frames 20000] [--launches 5]

It builds the null engine with native/Makefile (`make bench`) into a temporary folder. Two figures per launch:
`loop`, the median interval between consecutive frame starts (everything the kit does per frame); `inside`,
the median cpu_ms of the empty frame (what the kit's own clocks add inside a measured frame).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from pytest_zbench.protocol import read_frames_csv

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--launches", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["make", "-s", "-C", str(REPO / "native"), "bench", f"OUT={work}"], check=True)
        job = work / "job" / "job.json"
        job.parent.mkdir()
        job.write_text(json.dumps({
            "protocol": 1, "backend": "null", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 0,
            "frames": args.frames, "capture": [], "seed": 1, "complexity": None,
            "scene": {"id": "bench.empty", "params": {}, "width": 1, "height": 1, "features": ["rect"], "ops": []}}))
        loops, insides = [], []
        for launch in range(args.launches):
            out = work / f"out-{launch}"
            out.mkdir()
            subprocess.run([str(work / "zbench-kit-null"), "run", str(job), str(out)], check=True,
                           stdout=subprocess.DEVNULL)
            rows = read_frames_csv(out / "frames.csv").rows
            starts = [r["t_start_ns"] for r in rows if r.get("t_start_ns") is not None]
            loop_us = statistics.median(b - a for a, b in zip(starts, starts[1:])) / 1e3
            inside_us = statistics.median(r["cpu_ms"] for r in rows if r.get("cpu_ms") is not None) * 1e3
            loops.append(loop_us)
            insides.append(inside_us)
            print(f"launch {launch + 1}: {len(rows)} frames, loop {loop_us:.2f} us/frame "
                  f"({loop_us / 10:.3f} % of 1 ms), inside the frame's clocks {inside_us:.3f} us")
        loop, inside = statistics.median(loops), statistics.median(insides)
        verdict = "under" if loop < 10 else "OVER"
        print(f"median of {args.launches} launches: the kit's per-frame bookkeeping costs {loop:.2f} us, "
              f"{loop / 10:.3f} % of a 1 ms frame ({verdict} the 1 % target); {inside:.3f} us of it inside the "
              f"frame's own clocks")


if __name__ == "__main__":
    main()
