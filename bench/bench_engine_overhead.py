"""What the Cairo runner (runners/cairo, docs/native-runner.md "Porting an engine") adds to each frame over the same
Cairo calls in a bare loop: the kit's frame loop (clocks, getrusage, the frames.csv row, progress, pacing checks)
against bench/cairo_bare_loop.c, which prepares the same scene with the same engine code and then only draws and
flushes. Both uncapped, at the scene's 800x480; the runner's frame time is the mean interval between its
measured frame starts, the bare loop's its total time over its frames. Target: the runner's overhead at most
3 % of the bare frame, printed per device and scene.

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


def runner_ns(prefix: list[str], out: Path, job: Path, launch: Path) -> float:
    launch.mkdir()
    subprocess.run([*prefix, str(out / "zbench-cairo"), "run", str(job), str(launch)], check=True,
                   stdout=subprocess.DEVNULL)
    starts = [r["t_start_ns"] for r in read_frames_csv(launch / "frames.csv").rows if r["phase"] == "measure"]
    return (starts[-1] - starts[0]) / (len(starts) - 1)


def bare_ns(prefix: list[str], out: Path, job: Path, warmup: int, frames: int) -> float:
    done = subprocess.run([*prefix, str(out / "cairo-bare-loop"), str(job), str(warmup), str(frames)], check=True,
                          capture_output=True, text=True)
    return float(json.loads(done.stdout)["ns_per_frame"])


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
            print(f"  {'scene':<18} {'bare ms':>9} {'runner ms':>10} {'overhead':>9}")
            for scene in SCENES:
                job = work / scene / "job.json"
                job.parent.mkdir()
                job.write_text(make_job(cases[scene], "cairo", mode="uncapped", refresh_hz=60.0, warmup=warmup,
                                        frames=frames, capture=(), size=(800, 480)).to_json())
                ratios, bares, runs = [], [], []
                for n in range(args.launches):
                    bare = bare_ns(prefix, work / "bin", job, warmup, frames)
                    run = runner_ns(prefix, work / "bin", job, work / scene / f"launch-{n}")
                    bares.append(bare)
                    runs.append(run)
                    ratios.append(run / bare - 1)
                pct = 100 * statistics.median(ratios)
                verdict = "ok" if pct <= TARGET_PCT else "OVER"
                print(f"  {scene:<18} {statistics.median(bares) / 1e6:>9.3f} {statistics.median(runs) / 1e6:>10.3f} "
                      f"{pct:>8.2f}%  {verdict} (target <= {TARGET_PCT:g} %; launches "
                      f"{', '.join(f'{100 * r:+.1f}' for r in ratios)} %)")


if __name__ == "__main__":
    main()
