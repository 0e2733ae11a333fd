"""A third-party runner that implements only DESIGN.md §3 and draws only `rect`.

It shares no code with the reference runner (it does not import pytest_zbench), as a runner written by
another team would. Fault knobs for tests, from the environment:
  RECT_RUNNER_EXIT_AT=N   exit 1 after writing N frames (a crash mid-run)
  RECT_RUNNER_KILL_AT=N   SIGKILL itself after writing N frames (killed mid-run, e.g. by the OOM killer)
  RECT_RUNNER_BAD=1       write NaN, negative and absurd cells into a few rows
  RECT_RUNNER_HANG=1      hang after the first frame (a runner that never returns)
  RECT_RUNNER_NOISE=1     add random noise to captures (a non-deterministic renderer)
  RECT_RUNNER_GPU=garbage claim a timer query: gpu_ms proportional to the rects drawn, except for a few
                          measured frames that pass through what a broken driver returns (0, 0xFFFFFFFF ns
                          read as ms = 4294.967295, a value flagged disjoint=1)
  RECT_RUNNER_GPU=stuck   claim a timer query whose gpu_ms never changes (fails calibration)
  RECT_RUNNER_ARCH=NAME   report probe key machine.arch NAME (without it the probe says nothing of the machine)
"""

import csv
import json
import os
import signal
import sys
import time

import numpy as np
from PIL import Image

COLUMNS = ["frame", "phase", "t_start_ns", "cpu_ms", "gpu_ms", "gpu_source", "present_interval_ms",
           "complexity", "draw_calls", "texture_upload_bytes", "disjoint", "gl_error"]


GPU = os.environ.get("RECT_RUNNER_GPU", "")
# Measured frame offset -> (gpu_ms cell, disjoint cell) written instead of the real value.
GARBAGE = {1: ("0", "0"), 2: ("4294.967295", "0"), 3: ("0.25", "1"), 5: ("0", "")}


def probe():
    timers = ["timer_query"] if GPU else ["none"]
    answer = {"protocol": 1, "runner": {"name": "rect-only", "version": "0.0.1"},
              "backends": {"software": {"features": ["rect"], "timer_sources": timers}}}
    if os.environ.get("RECT_RUNNER_ARCH"):
        answer["machine"] = {"arch": os.environ["RECT_RUNNER_ARCH"]}
    print(json.dumps(answer))


def gpu_cells(frame, job):
    """(gpu_ms, gpu_source, disjoint) cells of one row."""
    if not GPU:
        return "", "none", ""
    if GPU == "stuck":
        return "0.5", "timer_query", "0"
    ops = len(job["scene"]["ops"])
    value = f"{0.05 * ops * (1 + 0.01 * (frame % 3)):.6f}"
    cells = GARBAGE.get(frame - job["warmup_frames"], (value, "0"))
    return cells[0], "timer_query", cells[1]


def color(text):
    text = text.lstrip("#")
    if len(text) == 6:
        text += "FF"
    return [int(text[i:i + 2], 16) / 255.0 for i in range(0, 8, 2)]


def render(scene):
    h, w = scene["height"], scene["width"]
    img = np.ones((h, w, 4), dtype=np.float64)
    for op in scene["ops"]:
        r, g, b, a = color(op["color"])
        x0, y0 = max(0, int(op["x"])), max(0, int(op["y"]))
        x1, y1 = min(w, int(op["x"] + op["w"])), min(h, int(op["y"] + op["h"]))
        region = img[y0:y1, x0:x1]
        region[..., :3] = region[..., :3] * (1 - a) + np.array([r, g, b]) * a
    return (img * 255 + 0.5).astype(np.uint8)


def run(job_path, outdir):
    job = json.load(open(job_path))
    scene = job["scene"]
    exit_at = int(os.environ.get("RECT_RUNNER_EXIT_AT", "-1"))
    kill_at = int(os.environ.get("RECT_RUNNER_KILL_AT", "-1"))
    bad = os.environ.get("RECT_RUNNER_BAD") == "1"
    total = job["warmup_frames"] + job["frames"]
    with open(os.path.join(outdir, "frames.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + ["overdraw_px"])
        last = time.monotonic_ns()
        for frame in range(total):
            if frame == exit_at:
                sys.exit(1)
            if frame == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if os.environ.get("RECT_RUNNER_HANG") == "1" and frame == 1:
                time.sleep(3600)
            start = time.monotonic_ns()
            render(scene)
            end = time.monotonic_ns()
            cpu = (end - start) / 1e6
            if bad and frame == job["warmup_frames"] + 1:
                cpu = "nan"
            if bad and frame == job["warmup_frames"] + 2:
                cpu = -3
            if bad and frame == job["warmup_frames"] + 3:
                cpu = 1e12
            phase = "warmup" if frame < job["warmup_frames"] else "measure"
            gpu, source, disjoint = gpu_cells(frame, job)
            writer.writerow([frame, phase, start, cpu, gpu, source, (end - last) / 1e6, "", len(scene["ops"]), 0,
                             disjoint, "", len(scene["ops"]) * scene["width"] * scene["height"]])
            handle.flush()
            last = end
            if frame % 10 == 0:
                print(json.dumps({"frame": frame, "of": total}), flush=True)
    for frame in job["capture"]:
        pixels = render(scene)
        if os.environ.get("RECT_RUNNER_NOISE") == "1":
            pixels[0, 0, :3] = np.random.default_rng().integers(0, 256, 3)
        Image.fromarray(pixels, "RGBA").save(os.path.join(outdir, f"capture-{frame}.png"))
    json.dump({"protocol": 1, "backend": job["backend"], "timer_source": "timer_query" if GPU else "none",
               "present_source": "frame_delta",
               "gpu": {}, "issues": []}, open(os.path.join(outdir, "result.json"), "w"))


if __name__ == "__main__":
    if sys.argv[1:] == ["probe"]:
        probe()
    elif len(sys.argv) == 4 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    else:
        print("usage: rect_runner.py probe | run JOB OUTDIR", file=sys.stderr)
        sys.exit(2)
