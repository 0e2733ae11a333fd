"""The Qt 6 runner's per-frame overhead (runners/qt/, docs/native-runner.md "Porting an engine"): the runner's
uncapped frame loop against a bare loop of the same engine calls with no kit (runners/qt/bare_loop.h: prepare
once, then draw and submit per frame, no clocks, getrusage, frames.csv row or pacing per frame), per device
(raster and gles2) and per scene. Printed side by side; the target is at most 3 %.

    python bench/bench_qt_overhead.py [--frames 400] [--launches 5] [--scenes fill.opaque.x1,text.labels]

Builds the runners and the bare loops with runners/qt/Makefile (`make all bench`, incremental). Each launch pair
runs the runner, then the bare loop, on the same job at 800x480; the runner's figure is the mean interval between
consecutive measured frame starts (everything a frame costs, the kit's bookkeeping included), the bare loop's the
mean of its loop. The figures are medians over the launches, which alternate so that a change of load on a
shared machine falls on both sides. GPU time is not sampled (ZBENCH_GPU_TIMER=none on both): the timer's
own cost is gpu-timing.md's business, not the kit's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from pytest_zbench.conformance.jobs import make_job
from pytest_zbench.protocol import read_frames_csv
from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "build" / "runners" / "qt" / "host"
BACKENDS = {"raster": "zbench-qt-raster", "gles2": "zbench-qt-gles2"}
TARGET_PCT = 3.0


def runner_ms(binary: Path, job: Path, out: Path, frames: int) -> float:
    out.mkdir()
    subprocess.run([str(binary), "run", str(job), str(out)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "ZBENCH_GPU_TIMER": "none"}, timeout=600)
    rows = [r for r in read_frames_csv(out / "frames.csv").rows if r["phase"] == "measure"]
    starts = [r["t_start_ns"] for r in rows]
    assert len(starts) == frames, f"{binary.name}: {len(starts)} measured frames of {frames}"
    return (starts[-1] - starts[0]) / (len(starts) - 1) / 1e6


def bare_ms(binary: Path, job: Path, frames: int) -> float:
    done = subprocess.run([str(binary), str(job), str(frames)], check=True, capture_output=True, text=True,
                          env={**os.environ, "ZBENCH_GPU_TIMER": "none"}, timeout=600)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["ns_per_frame"]) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--scenes", default="fill.opaque.x1,text.labels,rrect.grid")
    args = parser.parse_args()
    subprocess.run(["make", "-s", "-j2", "-C", str(REPO / "runners" / "qt"), "all", "bench"], check=True)
    cases = {c.id: c for c in load_corpus(REPO / "scenes")[0]}
    print(f"{'device':<16} {'scene':<16} {'runner ms':>10} {'bare ms':>10} {'overhead':>9}  target <= {TARGET_PCT:g} %")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for backend, name in BACKENDS.items():
            for scene_id in args.scenes.split(","):
                job = work / f"{backend}-{scene_id}" / "job.json"
                job.parent.mkdir()
                job.write_text(make_job(cases[scene_id], backend, mode="uncapped", refresh_hz=60.0, warmup=10,
                                        frames=args.frames, capture=(), size=(800, 480)).to_json())
                with_kit, bare = [], []
                for launch in range(args.launches):
                    with_kit.append(runner_ms(OUT / name, job, job.parent / f"out-{launch}", args.frames))
                    bare.append(bare_ms(OUT / f"{name}-bare", job, args.frames))
                kit_ms, loop_ms = statistics.median(with_kit), statistics.median(bare)
                pct = 100.0 * (kit_ms - loop_ms) / loop_ms
                verdict = "ok" if pct <= TARGET_PCT else "OVER"
                print(f"local-qt-{backend:<7} {scene_id:<16} {kit_ms:>10.3f} {loop_ms:>10.3f} {pct:>8.2f}%  {verdict}"
                      f"  (runner {min(with_kit):.3f}-{max(with_kit):.3f}, bare {min(bare):.3f}-{max(bare):.3f})",
                      flush=True)


if __name__ == "__main__":
    main()
