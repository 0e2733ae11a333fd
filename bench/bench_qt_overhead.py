"""The Qt 6 runner's per-frame overhead (runners/qt/, docs/native-runner.md "Porting an engine"): the runner's
uncapped frame loop against a bare loop of the same engine calls with no kit (runners/qt/bare_loop.h: prepare
once, then draw and submit per frame, no clocks, getrusage, frames.csv row or pacing per frame), per device
(raster and gles2) and per scene. Printed side by side; the target is at most 3 %.

    python bench/bench_qt_overhead.py [--frames 400] [--launches 5] [--scenes fill.opaque.x1,text.labels]

Builds the runners and the bare loops with runners/qt/Makefile (`make all bench`, incremental). Each launch
runs the runner and the bare loop on the same job at 800x480, alternating, twice each: with N and with 2N
frames. Two figures per side, medians over the launches:

* `cpu`: the process's CPU time per frame (user + system, all threads: llvmpipe's too), from the children's
  getrusage around each run, the N-frame run subtracted from the 2N-frame one so that start-up, Qt's
  initialisation and `prepare` cancel. The verdict is on this one: it is what the kit adds to each frame,
  and other work on the machine does not inflate it.
* `wall`: the mean interval between frame starts (the runner: frames.csv's t_start_ns; the bare loop: its
  loop's mean). On a loaded machine this also holds the time slices other processes take at the runner's
  per-frame system calls (the row's write and flush), which a loop that makes none is not preempted at.

GPU time is not sampled (ZBENCH_GPU_TIMER=none on both): the timer's own cost is gpu-timing.md's business.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

from pytest_zbench.conformance.jobs import make_job
from pytest_zbench.protocol import read_frames_csv
from pytest_zbench.scenes import SceneCase, load_corpus

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "build" / "runners" / "qt" / "host"
BACKENDS = {"raster": "zbench-qt-raster", "gles2": "zbench-qt-gles2"}
TARGET_PCT = 3.0


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def runner_run(binary: Path, job: Path, out: Path) -> tuple[float, float]:
    """(CPU seconds of the run, mean ms between measured frame starts)."""
    out.mkdir()
    before = children_cpu_s()
    subprocess.run([str(binary), "run", str(job), str(out)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "ZBENCH_GPU_TIMER": "none"}, timeout=600)
    cpu = children_cpu_s() - before
    starts = [r["t_start_ns"] for r in read_frames_csv(out / "frames.csv").rows if r["phase"] == "measure"]
    return cpu, (starts[-1] - starts[0]) / (len(starts) - 1) / 1e6


def bare_run(binary: Path, job: Path, frames: int) -> tuple[float, float]:
    before = children_cpu_s()
    done = subprocess.run([str(binary), str(job), str(frames)], check=True, capture_output=True, text=True,
                          env={**os.environ, "ZBENCH_GPU_TIMER": "none"}, timeout=600)
    cpu = children_cpu_s() - before
    return cpu, float(json.loads(done.stdout.strip().splitlines()[-1])["ns_per_frame"]) / 1e6


def write_job(case: SceneCase, backend: str, frames: int, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(make_job(case, backend, mode="uncapped", refresh_hz=60.0, warmup=10, frames=frames, capture=(),
                             size=(800, 480)).to_json())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300, help="N: the runs have N and 2N measured frames")
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--scenes", default="fill.opaque.x1,text.labels,rrect.grid")
    args = parser.parse_args()
    subprocess.run(["make", "-s", "-j2", "-C", str(REPO / "runners" / "qt"), "all", "bench"], check=True)
    cases = {c.id: c for c in load_corpus(REPO / "scenes")[0]}
    print(f"{'device':<16} {'scene':<15} {'cpu ms/frame runner':>20} {'bare':>7} {'overhead':>9}   "
          f"{'wall ms/frame runner':>21} {'bare':>7} {'overhead':>9}   target <= {TARGET_PCT:g} % (cpu)")
    n = args.frames
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for backend, name in BACKENDS.items():
            for scene_id in args.scenes.split(","):
                folder = work / f"{backend}-{scene_id}"
                jobs = {k: write_job(cases[scene_id], backend, k, folder / f"job-{k}" / "job.json") for k in (n, 2 * n)}
                kit_cpu, bare_cpu, kit_wall, bare_wall = [], [], [], []
                for launch in range(args.launches):
                    short, long_ = (runner_run(OUT / name, jobs[k], folder / f"out-{launch}-{k}") for k in (n, 2 * n))
                    kit_cpu.append((long_[0] - short[0]) / n * 1e3)
                    kit_wall.append(long_[1])
                    short, long_ = (bare_run(OUT / f"{name}-bare", jobs[k], k) for k in (n, 2 * n))
                    bare_cpu.append((long_[0] - short[0]) / n * 1e3)
                    bare_wall.append(long_[1])
                kc, bc = statistics.median(kit_cpu), statistics.median(bare_cpu)
                kw, bw = statistics.median(kit_wall), statistics.median(bare_wall)
                cpu_pct, wall_pct = 100.0 * (kc - bc) / bc, 100.0 * (kw - bw) / bw
                verdict = "ok" if cpu_pct <= TARGET_PCT else "OVER"
                print(f"local-qt-{backend:<7} {scene_id:<15} {kc:>20.3f} {bc:>7.3f} {cpu_pct:>8.2f}%   "
                      f"{kw:>21.3f} {bw:>7.3f} {wall_pct:>8.2f}%   {verdict}", flush=True)


if __name__ == "__main__":
    main()
