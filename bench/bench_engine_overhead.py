"""What the Cairo runner (runners/cairo, docs/native-runner.md "Porting an engine") adds to each frame over the same
Cairo calls in a bare loop: the kit's frame loop (clocks, getrusage, the frames.csv row, progress, pacing checks)
against bench/cairo_bare_loop.c, which prepares the same scene with the same engine code and then only draws and
flushes. Both uncapped, at the scene's 800x480; each one's frame time is the interval between its frame starts,
taken at the median and at the 10th percentile (on a shared machine every frame of several milliseconds may be
preempted; the low percentile is the frame that was not). Target: the runner's overhead at most 3 % of the bare
frame, printed per device and scene.

    python bench/bench_engine_overhead.py [--frames 300] [--launches 5] [--device host|arm64 ...]

`host` builds both with runners/cairo/Makefile (`make bench`) into a temporary folder; `arm64` cross-builds them
against the cached arm64 sysroot (ci/native-devices.sh sysroot arm64) and runs them under qemu-aarch64-static,
as local-arm64-cairo does (fewer frames: emulation is 5-40x slower, and its figures say nothing of a real arm64
CPU, only that the overhead ratio holds there too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from pytest_zbench.conformance.jobs import make_job
from pytest_zbench.protocol import read_frames_csv
from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]
# A cheap frame (where a fixed cost per frame weighs most), text, anti-aliased shapes and a scaled image.
SCENES = ("fill.alpha.x1", "text.labels", "rrect.grid", "image.downscale")
TARGET_PCT = 3.0


def build(device: str, out: Path) -> list[str]:
    """Make both programs for `device`; return the argv prefix that runs them (empty on the host)."""
    args = ["make", "-s", "-C", str(REPO / "runners" / "cairo"), "bench", f"OUT={out}"]
    if device == "host":
        subprocess.run(args, check=True)
        return []
    sysroot = subprocess.run([str(REPO / "ci" / "native-devices.sh"), "sysroot", "arm64"], check=True,
                             capture_output=True, text=True).stdout.strip()
    subprocess.run([*args, "ARCH=arm64", f"SYSROOT={sysroot}"], check=True)
    return ["qemu-aarch64-static", "-L", sysroot]


def figures(intervals: list[float]) -> tuple[float, float]:
    """(median, 10th percentile) of the intervals between frame starts."""
    ordered = sorted(intervals)
    return statistics.median(ordered), ordered[len(ordered) // 10]


def runner_ns(prefix: list[str], out: Path, job: Path, launch: Path) -> tuple[float, float]:
    launch.mkdir()
    subprocess.run([*prefix, str(out / "zbench-cairo"), "run", str(job), str(launch)], check=True,
                   stdout=subprocess.DEVNULL)
    starts = [r["t_start_ns"] for r in read_frames_csv(launch / "frames.csv").rows if r["phase"] == "measure"]
    return figures([b - a for a, b in zip(starts, starts[1:])])


def bare_ns(prefix: list[str], out: Path, job: Path, warmup: int, frames: int) -> tuple[float, float]:
    done = subprocess.run([*prefix, str(out / "cairo-bare-loop"), str(job), str(warmup), str(frames)], check=True,
                          capture_output=True, text=True)
    return figures([float(v) for v in json.loads(done.stdout)["intervals_ns"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--device", action="append", choices=("host", "arm64"))
    args = parser.parse_args()
    cases = {c.id: c for c in load_corpus(REPO / "scenes")[0]}
    for device in args.device or ["host"]:
        frames = args.frames if device == "host" else max(20, args.frames // 10)
        warmup = max(2, frames // 10)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            prefix = build(device, work / "bin")
            print(f"device {device}: {args.launches} launches of {warmup} + {frames} uncapped frames per scene, "
                  "runner and bare loop alternating")
            print(f"  {'scene':<18} {'bare ms p50/p10':>16} {'runner ms p50/p10':>18} {'overhead p50/p10':>17}")
            for scene in SCENES:
                job = work / scene / "job.json"
                job.parent.mkdir()
                job.write_text(make_job(cases[scene], "cairo", mode="uncapped", refresh_hz=60.0, warmup=warmup,
                                        frames=frames, capture=(), size=(800, 480)).to_json())
                bares, runs = [], []
                for n in range(args.launches):
                    bares.append(bare_ns(prefix, work / "bin", job, warmup, frames))
                    runs.append(runner_ns(prefix, work / "bin", job, work / scene / f"launch-{n}"))
                # Each figure's median over the launches, then the ratio of the two.
                bare = [statistics.median(b[k] for b in bares) for k in (0, 1)]
                run = [statistics.median(r[k] for r in runs) for k in (0, 1)]
                pct = [100 * (run[k] / bare[k] - 1) for k in (0, 1)]
                verdict = "ok" if min(pct) <= TARGET_PCT else "OVER"
                print(f"  {scene:<18} {bare[0] / 1e6:>7.3f} / {bare[1] / 1e6:<7.3f} {run[0] / 1e6:>8.3f} / "
                      f"{run[1] / 1e6:<8.3f} {pct[0]:>+7.2f} / {pct[1]:+.2f} %  {verdict} (target <= {TARGET_PCT:g} %)")

if __name__ == "__main__":
    main()
