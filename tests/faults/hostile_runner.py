"""A hostile runner: speaks docs/runner-protocol.md correctly, except in the one way its fault mode says.

Standard library only (it must start fast and run over ssh as well as locally), draws nothing: every frame
is a fixed cost and every capture a solid colour of the scene's size, written by hand as a PNG.

The fault comes from the environment (devices.yaml `env`), several modes separated by commas:

    ZBENCH_FAULT=ok              a correct runner (the default)
    ZBENCH_FAULT=silent          writes nothing at all and exits 0
    ZBENCH_FAULT=silent_fail     writes nothing and exits 1
    ZBENCH_FAULT=extra_rows      ZBENCH_FAULT_ROWS (default 2,100,000) rows more than the job asked for
    ZBENCH_FAULT=nan_result      NaN, Infinity and -Infinity (and 1e999) as numbers in result.json
    ZBENCH_FAULT=many_issues     ZBENCH_FAULT_ISSUES (default 200,000) issues in result.json
    ZBENCH_FAULT=capture_size    captures of the wrong size (one pixel wider and taller)
    ZBENCH_FAULT=capture_16bit   16-bit RGBA captures of the right size
    ZBENCH_FAULT=capture_rgb     8-bit RGB captures (no alpha)
    ZBENCH_FAULT=capture_corrupt captures that are not PNGs
    ZBENCH_FAULT=capture_bomb    captures whose header claims 60000 x 60000 pixels (a decompression bomb)
    ZBENCH_FAULT=capture_huge    a capture file larger than the per-artifact byte cap (sparse: no disk used)
    ZBENCH_FAULT=linger          leaves a child running after exiting 0
    ZBENCH_FAULT=detach          leaves a child running in a session of its own (setsid) after exiting 0
    ZBENCH_FAULT=detach_scrub    like detach, and the child clears its environment
    ZBENCH_FAULT=hang            writes the warmup rows, then sleeps without a word until killed
    ZBENCH_FAULT=ignore_term     ignores SIGTERM (the deadline must escalate to SIGKILL)
    ZBENCH_FAULT=probe_hang      `probe` never answers
    ZBENCH_FAULT=color=#RRGGBB   the colour of the captures (default #3366CC)

Every process it starts carries ZBENCH_FAULT_MARK (when set) in its environment and on its command line, so
that a test can find whatever is left of it in /proc.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
import zlib

MODES = set(filter(None, os.environ.get("ZBENCH_FAULT", "ok").split(",")))
MARK = os.environ.get("ZBENCH_FAULT_MARK", "zbench-fault")
COLUMNS = ["frame", "phase", "t_start_ns", "cpu_ms", "gpu_ms", "gpu_source", "present_interval_ms",
           "complexity", "draw_calls", "texture_upload_bytes", "disjoint", "gl_error"]
HUGE_BYTES = 300 * 1024 * 1024  # over the per-artifact cap (pytest_zbench.protocol.limits)


def mode_value(name: str, default: str) -> str:
    for mode in MODES:
        if mode.startswith(name + "="):
            return mode.split("=", 1)[1]
    return default


def probe() -> None:
    if "probe_hang" in MODES:
        time.sleep(3600)
    print(json.dumps({"protocol": 1, "runner": {"name": "hostile", "version": "1"},
                      "backends": {"software": {"features": ["rect"], "timer_sources": ["none"]}}}))


def png(width: int, height: int, rgba: bytes, *, depth: int = 8, color_type: int = 6,
        border: bytes | None = None) -> bytes:
    """A PNG of one colour: `rgba` is one pixel's bytes as they go into every pixel of every row; with
    `border`, the outermost pixels are that colour instead (the scene's inset rect on its clear colour)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + rgba * width
    data = row * height
    if border is not None and width > 2 and height > 2:
        edge = b"\x00" + border * width
        data = edge + (b"\x00" + border + rgba * (width - 2) + border) * (height - 2) + edge
    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(data, 9))
            + chunk(b"IEND", b""))


def capture_bytes(width: int, height: int) -> bytes:
    hexcolor = mode_value("color", "#3366CC").lstrip("#")
    r, g, b = (int(hexcolor[i:i + 2], 16) for i in (0, 2, 4))
    if "capture_size" in MODES:
        return png(width + 1, height + 1, bytes((r, g, b, 255)))
    if "capture_16bit" in MODES:
        return png(width, height, struct.pack(">HHHH", r * 257, g * 257, b * 257, 65535), depth=16)
    if "capture_rgb" in MODES:
        return png(width, height, bytes((r, g, b)), color_type=2)
    if "capture_corrupt" in MODES:
        return b"\x89PNG\r\n\x1a\n this is not a PNG at all " * 10
    if "capture_bomb" in MODES:
        # The header of a 60000 x 60000 RGBA image (14 GB decoded) in front of a few bytes of data.
        whole = png(1, 1, bytes((r, g, b, 255)))
        header = struct.pack(">IIBBBBB", 60000, 60000, 8, 6, 0, 0, 0)
        ihdr = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header) & 0xFFFFFFFF)
        return whole[:8] + ihdr + whole[8 + 25:]
    # Not one colour: a one-colour capture is vacuous (golden/vacuous.py) and would fail every golden test.
    return png(width, height, bytes((r, g, b, 255)), border=bytes((255, 255, 255, 255)))


def leave_child(*, detach: bool, scrub: bool) -> None:
    """Start a sleeping child that outlives this runner, with MARK on its command line; it keeps the runner's
    stdout and stderr open, as a forgotten helper process does."""
    if os.fork() == 0:
        try:
            if detach:
                os.setsid()
            env = {} if scrub else dict(os.environ)
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", MARK], env)
        finally:
            os._exit(127)


def run(job_path: str, outdir: str) -> int:
    job = json.load(open(job_path))
    scene = job["scene"]
    warmup, frames = job["warmup_frames"], job["frames"]
    total = warmup + frames
    if "ignore_term" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "linger" in MODES:
        leave_child(detach=False, scrub=False)
    if "detach" in MODES or "detach_scrub" in MODES:
        leave_child(detach=True, scrub="detach_scrub" in MODES)
    if "silent" in MODES:
        return 0
    if "silent_fail" in MODES:
        return 1
    rows = total + (int(os.environ.get("ZBENCH_FAULT_ROWS", "2100000")) if "extra_rows" in MODES else 0)
    with open(os.path.join(outdir, "frames.csv"), "w", newline="") as handle:
        handle.write(",".join(COLUMNS) + "\n")
        start = time.monotonic_ns()
        lines = []
        for frame in range(rows):
            if "hang" in MODES and frame == warmup:
                handle.write("".join(lines))
                handle.flush()
                lines = []
                while True:
                    time.sleep(3600)
            phase = "warmup" if frame < warmup else "measure"
            lines.append(f"{frame},{phase},{start + frame * 1_000_000},1.5,,none,16.666667,,1,0,,\n")
            if len(lines) >= 10000:
                handle.write("".join(lines))
                lines = []
        handle.write("".join(lines))
    for frame in job["capture"]:
        path = os.path.join(outdir, f"capture-{frame}.png")
        if "capture_huge" in MODES:
            with open(path, "wb") as big:
                big.truncate(HUGE_BYTES)
            continue
        with open(path, "wb") as image:
            image.write(capture_bytes(scene["width"], scene["height"]))
    result: dict[str, object] = {"protocol": 1, "backend": job["backend"], "timer_source": "none",
                                 "present_source": "simulated_vsync", "gpu": {}, "issues": []}
    text = json.dumps(result)
    if "nan_result" in MODES:
        text = text[:-1] + (', "wall_ms": NaN, "frames_rendered": Infinity, "gpu": {"clock_mhz": -Infinity}, '
                            '"power_w": 1e999, "nested": {"list": [1, NaN]}}')
        text = text.replace('"gpu": {}, ', "")
    if "many_issues" in MODES:
        count = int(os.environ.get("ZBENCH_FAULT_ISSUES", "200000"))
        issues = ",".join(f'{{"frame": {i % max(1, total)}, "kind": "gl_error", "detail": "GL_INVALID_OPERATION"}}'
                          for i in range(count))
        text = text.replace('"issues": []', f'"issues": [{issues}]')
    with open(os.path.join(outdir, "result.json"), "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["probe"]:
        probe()
    elif len(sys.argv) == 4 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], sys.argv[3]))
    else:
        print("usage: hostile_runner.py probe | run JOB OUTDIR", file=sys.stderr)
        sys.exit(2)
