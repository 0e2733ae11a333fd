"""What the FrameTimeline trace adds to an adb launch with platform frames, measured side by side in one run.

Starts the adb server and the emulated adbd of tests/remote, serves a FrameTimeline trace built with Perfetto's
trace builder (tests/frame_timeline_traces.py, 120 frames), and runs the same paced mini scene as launches of
two inventory devices on that one emulated device, interleaved: `platform` (package set: the gfxinfo and
SurfaceFlinger dumps) and `timeline` (the same, plus `frame_timeline`: perfetto started before the baseline,
stopped after the last dump, the trace read back and parsed). It prints the medians of the launch's wall time
and the difference.

    python bench/bench_frame_timeline.py [-n 10] [--frames 120]

What it cannot show: what perfetto and traced cost on a real device (SurfaceFlinger writes its frame timeline
events either way once the data source is on). The emulated device's figure is the host's and the adb
server's share: two more round trips, the trace's bytes as base64, its parse.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from adb_launches import PACKAGE, emulated_devices, interleaved_launches
from frame_timeline_traces import Frame, build_trace

from pytest_zbench.host.devices.device import LaunchOutcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="launches per device (default 10)")
    parser.add_argument("--frames", type=int, default=120, help="measured frames per launch (default 120)")
    args = parser.parse_args()
    period = 16_666_667
    frames = [Frame(k, f"TX - {PACKAGE}/{PACKAGE}.Main#0", 100, (k * period, (k + 1) * period),
                    (k * period, (k + 1) * period - 1_000_000)) for k in range(1, 121)]
    with tempfile.TemporaryDirectory(prefix="zbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "traces").mkdir()
        entries = {"platform": {"package": PACKAGE},
                   "timeline": {"package": PACKAGE, "frame_timeline": str(tmp / "traces")}}
        with emulated_devices(tmp, entries, trace=build_trace(frames)) as devices:
            times = interleaved_launches(devices, args.n, args.frames, tmp, _timeline_read)
    platform, timeline = (statistics.median(times[k]) for k in ("platform", "timeline"))
    print(f"adb launch wall time, {args.n} launches each of a paced {args.frames}-frame mini scene at 60 Hz, "
          "interleaved; medians")
    print(f"  platform frames                   {platform * 1e3:8.1f} ms")
    print(f"  platform frames + frame timeline  {timeline * 1e3:8.1f} ms   (+{(timeline - platform) * 1e3:.1f} ms, "
          f"x{timeline / platform:.3f})")
    return 0


def _timeline_read(name: str, outcome: LaunchOutcome) -> None:
    if name == "timeline" and not (outcome.platform_frames and outcome.platform_frames.timeline):
        raise SystemExit(f"timeline: no frame timeline read: {outcome.platform_frames}")


if __name__ == "__main__":
    sys.exit(main())
