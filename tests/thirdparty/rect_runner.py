"""A third-party runner that implements only docs/runner-protocol.md and draws only `rect`.

It shares no code with the reference runner (it does not import pytest_zbench), as a runner written by
another team would, and it passes `zbench check-runner` with every other feature not applicable. The broken
runners of tests/conformance/broken/ each replace one of its functions. Fault knobs for tests, from the
environment:
  RECT_RUNNER_EXIT_AT=N   exit 1 after writing N frames (a crash mid-run)
  RECT_RUNNER_KILL_AT=N   SIGKILL itself after writing N frames (killed mid-run, e.g. by the OOM killer)
  RECT_RUNNER_BAD=1       write NaN, negative and absurd cells into a few rows
  RECT_RUNNER_HANG=1      hang after the first frame (a runner that never returns)
  RECT_RUNNER_NOISE=1     add random noise to captures (a non-deterministic renderer)
  RECT_RUNNER_GPU=garbage claim a timer query: gpu_ms proportional to the rects drawn, except for a few
                          measured frames that pass through what a broken driver returns (0, 0xFFFFFFFF ns
                          read as ms = 4294.967295, a value flagged disjoint=1)
  RECT_RUNNER_GPU=stuck   claim a timer query whose gpu_ms never changes (fails the timer check)
  RECT_RUNNER_GPU=tile    claim a timer query that sees 2 % of each frame's drawing (one tile of fifty), and
                          time a job asking for `finish_bracket` with one: the frame's CPU time plus all of it
  RECT_RUNNER_VERSION=V   report version V in the probe (default 0.0.1): a new build of the runner
  RECT_RUNNER_ARCH=NAME   report probe key machine.arch NAME (without it the probe says nothing of the machine)
  RECT_RUNNER_CONDITIONS=JSON  report result.json `conditions` as JSON ({"start": {...}, "end": {...}}): a
                          runner that samples its device's conditions itself, as an iOS runner reports thermalState
"""

import csv
import json
import math
import os
import signal
import sys
import time

import numpy as np
from PIL import Image

COLUMNS = ["frame", "phase", "t_start_ns", "cpu_ms", "gpu_ms", "gpu_source", "present_interval_ms",
           "complexity", "draw_calls", "texture_upload_bytes", "disjoint", "gl_error"]
FEATURES = ["rect"]
EXIT_USAGE, EXIT_SKIPPED = 2, 3

GPU = os.environ.get("RECT_RUNNER_GPU", "")
# Measured frame offset -> (gpu_ms cell, disjoint cell) written instead of the real value.
GARBAGE = {1: ("0", "0"), 2: ("4294.967295", "0"), 3: ("0.25", "1"), 5: ("0", "")}
STOP = []  # set by SIGTERM: the frame loop ends after the current frame


def probe_document():
    timers = ["timer_query", "finish_bracket"] if GPU == "tile" else ["timer_query"] if GPU else ["none"]
    answer = {"protocol": 1, "runner": {"name": "rect-only", "version": os.environ.get("RECT_RUNNER_VERSION", "0.0.1")},
              "backends": {"software": {"features": list(FEATURES), "timer_sources": timers}}}
    if os.environ.get("RECT_RUNNER_ARCH"):
        answer["machine"] = {"arch": os.environ["RECT_RUNNER_ARCH"]}
    return answer


def job_problem(job):
    """Why the job cannot be run (a message naming the key), or None."""
    if not isinstance(job, dict):
        return "the job is not a JSON object"
    if job.get("protocol") != 1 or isinstance(job.get("protocol"), bool):
        return f"protocol {job.get('protocol')!r}: this runner speaks 1"
    for key in ("backend", "mode", "refresh_hz", "warmup_frames", "frames", "capture", "seed", "scene"):
        if key not in job:
            return f"missing key {key!r}"
    if job["mode"] not in ("paced", "uncapped"):
        return f"mode {job['mode']!r} is not paced or uncapped"
    if job["backend"] != "software":
        return f"backend {job['backend']!r}: this runner has software only"
    scene = job["scene"]
    if not isinstance(scene, dict) or any(k not in scene for k in ("width", "height", "ops")):
        return "scene needs width, height and ops"
    return None


def unsupported(job):
    """Features the job needs that this runner cannot draw."""
    named = set(job["scene"].get("features", [])) | {op.get("op") for op in job["scene"]["ops"]}
    return sorted(str(f) for f in named - set(FEATURES))


def gpu_cells(frame, job):
    """(gpu_ms, gpu_source, disjoint) cells of one row."""
    if not GPU:
        return "", "none", ""
    if GPU == "stuck":
        return "0.5", "timer_query", "0"
    if GPU == "tile":  # the frame's drawing, 0.05 ms a rect; row_cells adds the CPU part to a finish bracket
        drawing = 0.05 * len(job["scene"]["ops"])
        if job.get("gpu_timer") == "finish_bracket":
            return f"{drawing:.6f}", "finish_bracket", "0"
        return f"{0.02 * drawing:.6f}", "timer_query", "0"
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


class Pacer:
    """paced: frames start on the vsync boundaries of refresh_hz and present on the first boundary after they
    end, so every interval is a whole number of periods; uncapped: the time between frame ends."""

    def __init__(self, mode, refresh_hz):
        self.paced = mode == "paced"
        self.period_ns = 1e9 / refresh_hz
        self.t0 = self.last = time.monotonic_ns()
        self.presented = 0

    def begin(self):
        if self.paced and self.presented:
            target = self.t0 + self.presented * self.period_ns
            delay = (target - time.monotonic_ns()) / 1e9
            if delay > 0:
                time.sleep(delay)
        return time.monotonic_ns()

    def end(self):
        now = time.monotonic_ns()
        if not self.paced:
            interval, self.last = (now - self.last) / 1e6, now
            return interval
        present = max(self.presented + 1, math.ceil((now - self.t0) / self.period_ns))
        interval = (present - self.presented) * self.period_ns / 1e6
        self.presented = present
        return interval


def row_cells(frame, phase, start, cpu, interval, job):
    scene = job["scene"]
    gpu, source, disjoint = gpu_cells(frame, job)
    if source == "finish_bracket":  # a finish bracket holds the frame's CPU part too
        gpu = f"{float(gpu) + cpu:.6f}"
    return [frame, phase, start, cpu, gpu, source, interval, "", len(scene["ops"]), 0, disjoint, "",
            len(scene["ops"]) * scene["width"] * scene["height"]]


def progress(frame, total):
    print(json.dumps({"frame": frame, "of": total}), flush=True)


def write_capture(pixels, path):
    Image.fromarray(pixels, "RGBA").save(path)


def source_of(job):
    """The GPU time source of the job's rows."""
    if GPU == "tile" and job.get("gpu_timer") == "finish_bracket":
        return "finish_bracket"
    return "timer_query" if GPU else "none"


def write_result(outdir, job, issues):
    document = {"protocol": 1, "backend": job["backend"], "timer_source": source_of(job),
                "present_source": "simulated_vsync" if job["mode"] == "paced" else "frame_delta",
                "gpu": {}, "issues": issues}
    if os.environ.get("RECT_RUNNER_CONDITIONS"):
        document["conditions"] = json.loads(os.environ["RECT_RUNNER_CONDITIONS"])
    with open(os.path.join(outdir, "result.json"), "w") as handle:
        json.dump(document, handle)


def frames_file(outdir):
    return open(os.path.join(outdir, "frames.csv"), "w", newline="")


def on_sigterm(signum, _frame):
    STOP.append(signum)


def run(job_path, outdir):
    try:
        with open(job_path) as handle:
            job = json.load(handle)
    except (OSError, ValueError) as exc:
        print(f"rect_runner: bad job {job_path}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = job_problem(job)
    if problem:
        print(f"rect_runner: bad job {job_path}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    missing = unsupported(job)
    if missing:
        detail = f"this runner draws rect only, not {', '.join(missing)}"
        print(f"rect_runner: skipped: {detail}", file=sys.stderr)
        write_result(outdir, job, [{"frame": None, "kind": "feature_skipped", "detail": detail}])
        return EXIT_SKIPPED
    signal.signal(signal.SIGTERM, on_sigterm)
    scene = job["scene"]
    exit_at = int(os.environ.get("RECT_RUNNER_EXIT_AT", "-1"))
    kill_at = int(os.environ.get("RECT_RUNNER_KILL_AT", "-1"))
    bad = os.environ.get("RECT_RUNNER_BAD") == "1"
    total = job["warmup_frames"] + job["frames"]
    pacer = Pacer(job["mode"], job["refresh_hz"])
    with frames_file(outdir) as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + ["overdraw_px"])
        handle.flush()
        for frame in range(total):
            if STOP:
                break
            if frame == exit_at:
                sys.exit(1)
            if frame == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if os.environ.get("RECT_RUNNER_HANG") == "1" and frame == 1:
                time.sleep(3600)
            start = pacer.begin()
            render(scene)
            cpu = (time.monotonic_ns() - start) / 1e6
            interval = pacer.end()
            if bad and frame == job["warmup_frames"] + 1:
                cpu = "nan"
            if bad and frame == job["warmup_frames"] + 2:
                cpu = -3
            if bad and frame == job["warmup_frames"] + 3:
                cpu = 1e12
            phase = "warmup" if frame < job["warmup_frames"] else "measure"
            writer.writerow(row_cells(frame, phase, start, cpu, interval, job))
            handle.flush()
            if frame % 10 == 0 or frame + 1 == total:
                progress(frame + 1, total)
    if STOP:
        write_result(outdir, job, [{"frame": None, "kind": "partial", "detail": "stopped by SIGTERM"}])
        return 128 + signal.SIGTERM
    for frame in job["capture"]:
        pixels = render(scene)
        if os.environ.get("RECT_RUNNER_NOISE") == "1":
            pixels[0, 0, :3] = np.random.default_rng().integers(0, 256, 3)
        write_capture(pixels, os.path.join(outdir, f"capture-{frame}.png"))
    write_result(outdir, job, [])
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["probe"]:
        print(json.dumps(probe_document()))
        return 0
    if len(argv) == 3 and argv[0] == "run":
        return run(argv[1], argv[2])
    print("usage: rect_runner.py probe | run JOB OUTDIR", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
