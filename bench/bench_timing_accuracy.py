"""How closely the runner's timings follow known costs, measured side by side on this machine.

What the tests check without a clock (every burnt frame's cpu_ms contains the burn; every frame of an
alternating light/heavy sequence gets a GPU value of its own) this prints as ratios:

* cpu burn      `--cpu-burn-ms B`: median cpu_ms of a burnt launch minus a plain one, against B, launches
                interleaved plain, burnt, plain, burnt so that the machine's load falls on both alike;
* alternating   on gles2 (headless EGL), light and 8x heavier frames alternating in one run, in the ring
                (late results) and the blocking mode: median heavy / median light gpu_ms. A ratio near 1
                would mean values land on the wrong frames or the source does not see the GPU's work.

    python bench/bench_timing_accuracy.py [--launches 4] [--frames 30] [--burns 5,20]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_zbench.gpu_timing import heavier_ops  # noqa: E402
from pytest_zbench.protocol import Job, read_frames_csv  # noqa: E402
from pytest_zbench.runner.backends import BackendUnavailable  # noqa: E402
from pytest_zbench.runner.run import run  # noqa: E402

RECT = [{"op": "rect", "x": 0, "y": 0, "w": 8, "h": 8, "color": "#000000"}]
TRANSLUCENT = [{"op": "rect", "x": 1, "y": 1, "w": 94, "h": 94, "color": "#3366CC40"}]


def launch_cpu_ms(frames: int, burn_ms: float) -> float:
    job = Job(backend="software", mode="uncapped", refresh_hz=60.0, warmup_frames=2, frames=frames, capture=(),
              seed=1, scene={"id": "bench.burn", "params": {}, "width": 48, "height": 32, "features": ["rect"],
                             "ops": RECT})
    with tempfile.TemporaryDirectory() as work:
        job_path, outdir = Path(work) / "job.json", Path(work) / "out"
        outdir.mkdir()
        job_path.write_text(job.to_json(), encoding="utf-8")
        code = run(str(job_path), str(outdir), cpu_burn_ms=burn_ms, out=io.StringIO(), err=sys.stderr)
        if code != 0:
            raise SystemExit(f"runner exited {code}")
        return statistics.median(read_frames_csv(outdir / "frames.csv").column("cpu_ms"))


def cpu_burn(launches: int, frames: int, burns: list[float]) -> None:
    print("cpu burn: added cpu_ms (median of burnt launch - median of plain launch, interleaved)")
    for burn in burns:
        added = []
        for _ in range(launches):
            plain = launch_cpu_ms(frames, 0.0)
            added.append(launch_cpu_ms(frames, burn) - plain)
        ratios = ", ".join(f"{a / burn:.2f}" for a in added)
        print(f"  burn {burn:5.1f} ms: added {statistics.median(added):6.2f} ms median, "
              f"ratio added/burn per pair {ratios}")


def alternating(frames: int) -> None:
    from pytest_zbench.runner.backends.gles2 import Gles2Backend
    from pytest_zbench.runner.interpreter import compile_scene

    print("alternating light / 8x heavy frames on gles2, timer_query: median heavy / median light gpu_ms")
    for collects, mode in ((True, "ring (late results)"), (False, "blocking")):
        try:
            backend = Gles2Backend(timer="timer_query")
        except BackendUnavailable as exc:
            print(f"  no gles2 backend here: {exc}")
            return
        try:
            backend.collects_late_timings = collects
            light, heavy = compile_scene(TRANSLUCENT), compile_scene(heavier_ops(TRANSLUCENT, 8))
            canvas = backend.make_surface(96, 96).getCanvas()
            timings = {}
            for frame in range(2 * frames):
                backend.begin_frame()
                (heavy if frame % 2 else light).render(canvas, frame)
                timings[frame] = backend.end_frame()
                timings.update(backend.late_timings())
            timings.update(backend.late_timings(final=True))
        finally:
            backend.close()
        light_ms = statistics.median(t.gpu_ms for f, t in timings.items() if f >= 4 and f % 2 == 0 and t.gpu_ms)
        heavy_ms = statistics.median(t.gpu_ms for f, t in timings.items() if f >= 4 and f % 2 and t.gpu_ms)
        print(f"  {mode:<20} light {light_ms:.4f} ms, heavy {heavy_ms:.4f} ms, ratio {heavy_ms / light_ms:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=4)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--burns", default="5,20", help="burns in ms, comma separated")
    args = parser.parse_args()
    cpu_burn(args.launches, args.frames, [float(b) for b in args.burns.split(",")])
    alternating(args.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
