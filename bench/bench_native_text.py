"""Text-heavy scenes on zbench-gles2 (`local-native`: its FreeType glyph atlas, native/gles2/glyphs.c) against
the reference runner's GLES2 backend (`local-gles2`: Skia's Ganesh) on the same driver: frames per second side
by side, uncapped, the median frame of each launch.

    python bench/bench_native_text.py [--frames 120] [--launches 3] [-k text.labels,scroll.list.steady]

Both runners get the same job (the scene resolved for an 800 x 480 surface, docs/runner-protocol.md), one launch
after the other, alternating, so that a load change on the machine falls on both. A frame is the interval
between consecutive frame starts (everything the runner does per frame, the driver's work included: llvmpipe
finishes drawing inside the frame's flush or at the next frame's first call). The runner is built with
native/Makefile into a temporary folder; the reference runner is `python -m pytest_zbench.runner`.
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

from pytest_zbench.protocol import read_frames_csv
from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]
SCENES = "text.labels,text.paragraph,scroll.list.steady,scroll.list.fast,scroll.list.fling"


def _median_frame_ms(out: Path) -> float:
    starts = [r["t_start_ns"] for r in read_frames_csv(out / "frames.csv").rows if r.get("t_start_ns") is not None]
    return statistics.median(b - a for a, b in zip(starts, starts[1:])) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("-k", default=SCENES, help="comma-separated scene ids")
    args = parser.parse_args()
    cases, errors = load_corpus(REPO / "scenes")
    if errors:
        sys.exit(f"bench_native_text: the corpus does not load: {errors[0]}")
    by_id = {c.id: c for c in cases}
    wanted = [s for s in args.k.split(",") if s]
    missing = [s for s in wanted if s not in by_id]
    if missing:
        sys.exit(f"bench_native_text: no scene {', '.join(missing)} in scenes/")
    env = {**os.environ, "ZBENCH_GPU_TIMER": "finish_bracket"}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["make", "-s", "-C", str(REPO / "native"), f"OUT={work / 'bin'}"], check=True)
        runners = {"local-native (zbench-gles2)": [str(work / "bin" / "zbench-gles2")],
                   "local-gles2 (Skia Ganesh)": [sys.executable, "-m", "pytest_zbench.runner"]}
        print(f"{'scene':24s} " + " ".join(f"{name:>28s}" for name in runners) + "   ratio")
        for scene_id in wanted:
            job = work / scene_id / "job.json"
            job.parent.mkdir()
            job.write_text(json.dumps({
                "protocol": 1, "backend": "gles2", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 10,
                "frames": args.frames, "capture": [], "seed": 1, "complexity": None,
                "scene": by_id[scene_id].job_scene(800, 480)}))
            frame_ms: dict[str, list[float]] = {name: [] for name in runners}
            for _ in range(args.launches):
                for name, argv in runners.items():
                    out = work / scene_id / f"{len(frame_ms[name])}-{name.split()[0]}"
                    out.mkdir()
                    subprocess.run([*argv, "run", str(job), str(out)], check=True, env=env, cwd=REPO,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    frame_ms[name].append(_median_frame_ms(out))
            fps = {name: 1000 / statistics.median(ms) for name, ms in frame_ms.items()}
            native, skia = fps.values()
            print(f"{scene_id:24s} " + " ".join(
                f"{value:10.1f} fps ({min(1000 / m for m in frame_ms[name]):6.1f}-{max(1000 / m for m in frame_ms[name]):6.1f})"
                for name, value in fps.items()) + f"   {native / skia:5.2f}x")
        print(f"median of {args.launches} launches of {args.frames} uncapped frames each (range of the launches' "
              "medians in brackets); ratio: zbench-gles2 over Skia's Ganesh")


if __name__ == "__main__":
    main()
