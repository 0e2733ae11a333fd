"""What the platform frame collection adds to an adb launch, measured side by side in one run.

Starts the adb server and the emulated adbd of tests/remote (its dumpsys prints the recorded dumps of
tests/data/android), then runs the same paced mini scene (64x48, 5 warmup + N measured frames) as launches
of two inventory devices on that one emulated device, interleaved: `plain` (no package) and `platform`
(package set: baseline, a dump every 0.5 x 120 / refresh seconds, one after). It prints the medians of the
launch's wall time (measure.guarded_launch, the platform probe before and after included, as in a test),
the difference, and the median of one dump round trip (gfxinfo + SurfaceFlinger latency in one `sh -c`).

    python bench/bench_platform_frames.py [-n 10] [--frames 120]

What it cannot show: the cost of `dumpsys` on a real device (the app's render thread is held while gfxinfo
prints, the compositor prints its ring). The emulated device prints files; its figure is the host's and the
adb server's share, which is what the host adds on any device.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from adb_launches import PACKAGE, emulated_devices, interleaved_launches

from pytest_zbench.host.devices import android_frame_dumps as platform_frames
from pytest_zbench.host.devices.device import Device, LaunchOutcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="launches per device (default 10)")
    parser.add_argument("--frames", type=int, default=120, help="measured frames per launch (default 120)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with emulated_devices(tmp, {"plain": {}, "platform": {"package": PACKAGE}}) as devices:
            counted: list[int] = []

            def count_dumps(name: str, outcome: LaunchOutcome) -> None:
                if outcome.platform_frames is not None:
                    counted.append(outcome.platform_frames.dumps + 1)

            times = interleaved_launches(devices, args.n, args.frames, tmp, count_dumps)
            dumps = _dump_round_trips(devices["platform"])
    plain, platform = (statistics.median(times[k]) for k in ("plain", "platform"))
    print(f"adb launch wall time, {args.n} launches each of a paced {args.frames}-frame mini scene at 60 Hz, "
          f"interleaved; medians")
    print(f"  without platform frames  {plain * 1e3:8.1f} ms")
    print(f"  with platform frames     {platform * 1e3:8.1f} ms   (+{(platform - plain) * 1e3:.1f} ms, "
          f"x{platform / plain:.3f})")
    print(f"  one dump round trip      {statistics.median(dumps) * 1e3:8.1f} ms   (median of {len(dumps)}; "
          f"p90 {statistics.quantiles(dumps, n=10)[-1] * 1e3:.1f} ms)")
    print(f"  dumps per launch         {statistics.median(counted):8.1f}      (baseline, during, after)")
    return 0


def _dump_round_trips(device: Device, n: int = 20) -> list[float]:
    """One dump round trip, timed alone, on the device's second connection."""
    took = []
    for _ in range(n):
        started = time.perf_counter()
        device.side_channel().run(["sh", "-c", platform_frames.DUMP_SCRIPT, "zbench", PACKAGE, "", ""], timeout_s=30)
        took.append(time.perf_counter() - started)
    return took


if __name__ == "__main__":
    sys.exit(main())
