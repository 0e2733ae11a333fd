"""GPU time sources side by side: timer_query, finish_bracket, readback and CPU time for the same scenes.

Each (scene, source) pair renders in its own gles2 backend (its own EGL context), uncapped, with the runner's
interpreter; the table shows per-source medians of the measured frames and the ratios that matter:

* finish/timer   how much a glFinish bracket inflates the timer query's number (CPU part + pipeline drain);
* timer/cpu      GPU time against CPU submit time;
* heavy/light    per source, each scene against the first (lightest) one: a source whose ratio stays near 1
                 does not see the GPU's work (gpu_timing.check_timer);
* coverage       timer_query against finish_bracket minus CPU time (gpu_timing.check_coverage): a timer that
                 scales with the work but measures only part of the frame fails here.

    python bench/bench_gpu_timers.py [--size 512] [--frames 60] [--warmup 10]
                                     [--scenes fill.alpha.x1,fill.alpha.x8,fill.opaque.x1,fill.opaque.x8,shadow.blur8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_zbench.gpu_timing import check_coverage, check_timer  # noqa: E402
from pytest_zbench.runner.backends import BackendUnavailable  # noqa: E402
from pytest_zbench.runner.backends.gles2 import Gles2Backend  # noqa: E402
from pytest_zbench.runner.interpreter import compile_scene  # noqa: E402
from pytest_zbench.scenes import load_corpus  # noqa: E402

SOURCES = ("timer_query", "finish_bracket", "readback")


def measure(ops: list, size: int, source: str, warmup: int, frames: int) -> dict[str, float | None]:
    backend = Gles2Backend(timer=source)
    backend.collects_late_timings = True
    try:
        program = compile_scene(ops, upload_image=backend.upload_image)
        surface = backend.make_surface(size, size)
        canvas = surface.getCanvas()
        timings = {}
        for frame in range(warmup + frames):
            backend.begin_frame()
            program.render(canvas, frame)
            timing = backend.end_frame()
            timings[frame] = timing
            timings.update(backend.late_timings())
        timings.update(backend.late_timings(final=True))
        measured = [timings[f] for f in range(warmup, warmup + frames)]
        gpu = [t.gpu_ms for t in measured if t.gpu_ms is not None]
        return {"cpu": statistics.median(t.cpu_ms for t in measured),
                "gpu": statistics.median(gpu) if gpu else None,
                "dropped": len(measured) - len(gpu)}
    finally:
        backend.close()


def fmt(value: float | None, width: int = 9) -> str:
    return f"{value:{width}.3f}" if value is not None else " " * (width - 1) + "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="square surface side in px (default 512)")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--scenes", default="fill.alpha.x1,fill.alpha.x8,fill.opaque.x1,fill.opaque.x8,shadow.blur8")
    args = parser.parse_args()

    cases, _errors = load_corpus(ROOT / "scenes")
    by_id = {case.id: case for case in cases}
    wanted = [s.strip() for s in args.scenes.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in by_id]
    if unknown:
        print(f"unknown scene(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        probe = Gles2Backend(timer="finish_bracket")
    except BackendUnavailable as exc:
        print(f"no gles2 backend here: {exc}", file=sys.stderr)
        return 1
    info = probe.probe_info()
    probe.close()
    has_timer = bool(info.get("timer_query_extension")) and info.get("timer_query_bits", 0) > 0
    sources = [s for s in SOURCES if s != "timer_query" or has_timer]
    print(f"{info['gl_renderer']} | {info['gl_version']} | {args.size}x{args.size}, "
          f"{args.frames} frames after {args.warmup} warmup, uncapped; medians in ms")

    results: dict[tuple[str, str], dict] = {}
    for scene_id in wanted:
        ops = by_id[scene_id].job_scene(args.size, args.size)["ops"]
        for source in sources:
            results[scene_id, source] = measure(ops, args.size, source, args.warmup, args.frames)

    header = f"{'scene':<16}{'cpu':>9}" + "".join(f"{s:>16}" for s in sources)
    header += f"{'finish/timer':>14}{'timer/cpu':>11}"
    print(header)
    for scene_id in wanted:
        cpu = statistics.median(results[scene_id, s]["cpu"] for s in sources)
        row = f"{scene_id:<16}{fmt(cpu)}"
        for source in sources:
            r = results[scene_id, source]
            dropped = f" ({r['dropped']} dropped)" if r["dropped"] else ""
            row += f"{fmt(r['gpu'], 16 - len(dropped))}{dropped}"
        timer = results.get((scene_id, "timer_query"), {}).get("gpu")
        finish = results[scene_id, "finish_bracket"]["gpu"]
        row += f"{fmt(finish / timer if timer and finish else None, 14)}"
        row += f"{fmt(timer / cpu if timer else None, 11)}"
        print(row)

    light = wanted[0]
    print(f"\nheavy/light against {light} (timer check, pass at >= 1.5x):")
    for scene_id in wanted[1:]:
        cells = []
        for source in sources + ["cpu"]:
            if source == "cpu":
                a = results[light, sources[0]]["cpu"]
                b = results[scene_id, sources[0]]["cpu"]
                cells.append(f"cpu {b / a:5.2f}x")
                continue
            verdict = check_timer(results[light, source]["gpu"], results[scene_id, source]["gpu"])
            a, b = results[light, source]["gpu"], results[scene_id, source]["gpu"]
            ratio = f"{b / a:5.2f}x" if a and b else "   - "
            cells.append(f"{source} {ratio} {'ok' if verdict.valid else 'FAIL'}")
        print(f"  {scene_id:<16}" + "   ".join(cells))
    if "timer_query" in sources:
        print("\ntimer_query coverage of the finish bracket (pass at >= 25%):")
        for scene_id in wanted:
            finish = results[scene_id, "finish_bracket"]
            verdict = check_coverage(results[scene_id, "timer_query"]["gpu"], finish["gpu"], finish["cpu"])
            print(f"  {scene_id:<16}{'ok  ' if verdict.valid else 'FAIL'} {verdict.detail.split(': ', 1)[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
