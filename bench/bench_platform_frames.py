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

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from remote.fake_adbd import FakeAdbd  # noqa: E402
from remote.servers import AdbServer, adb_device_entry  # noqa: E402

from pytest_zbench.host.devices import android_frame_dumps as platform_frames  # noqa: E402
from pytest_zbench.host.devices.device import Device  # noqa: E402
from pytest_zbench.host.devices.health import DeviceHealth  # noqa: E402
from pytest_zbench.host.measure.launches import guarded_launch  # noqa: E402
from pytest_zbench.inventory import load_inventory  # noqa: E402
from pytest_zbench.protocol import Job  # noqa: E402
from pytest_zbench.scenes import load_scene_file  # noqa: E402
from pytest_zbench.transports import make_transport  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="launches per device (default 10)")
    parser.add_argument("--frames", type=int, default=120, help="measured frames per launch (default 120)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        adb = AdbServer().start()
        adbd = FakeAdbd(tmp / "adbd").start()
        devices: dict[str, Device] = {}
        try:
            adb.connect(adbd.serial)
            display = {"width": 64, "height": 48, "refresh_hz": 60}
            entries = {"plain": adb_device_entry(adb, adbd.serial, tmp / "w-plain", display=display),
                       "platform": adb_device_entry(adb, adbd.serial, tmp / "w-platform", display=display,
                                                    package="com.soundvisualization.accessibility")}
            (tmp / "devices.yaml").write_text(yaml.safe_dump({"devices": entries}))
            specs = load_inventory(tmp / "devices.yaml").devices
            devices = {name: Device(specs[name], make_transport(specs[name])) for name in entries}
            for device in devices.values():
                device.open()
            times, dumps, counted = _launches(devices, args.n, args.frames, tmp)
        finally:
            for device in devices.values():
                device.close()
            adb.adb("disconnect", adbd.serial)
            adbd.stop()
            adb.stop()
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


def _launches(devices: dict[str, Device], n: int, frames: int, tmp: Path) -> tuple[dict, list[float], list[int]]:
    scene_file = tmp / "mini.yaml"
    scene_file.write_text("family: mini\nscenes:\n  - id: mini.fill.x1\n    ops:\n"
                          "      - {op: rect, x: 0, y: 0, w: '100%', h: '100%', color: '#3366CC80'}\n")
    case = load_scene_file(scene_file)[0]
    job = Job(backend="software", mode="paced", refresh_hz=60.0, warmup_frames=5, frames=frames, capture=(),
              seed=1, scene=case.job_scene(64, 48))
    times: dict[str, list[float]] = {name: [] for name in devices}
    counted: list[int] = []
    health = DeviceHealth()
    for i in range(n + 1):  # the first round warms up
        for name, device in devices.items():
            started = time.perf_counter()
            outcome = guarded_launch(device, job, i, tmp / "out" / name / f"launch-{i}", 120.0, None, health,
                                     tmp / "out")
            took = time.perf_counter() - started
            if not outcome.complete:
                raise SystemExit(f"{name}: launch failed: {outcome.issues}")
            if i:
                times[name].append(took)
                if outcome.platform_frames is not None:
                    counted.append(outcome.platform_frames.dumps + 1)
    # one round trip, timed alone, on the device's second connection
    device = devices["platform"]
    dumps = []
    for _ in range(20):
        started = time.perf_counter()
        device.side_channel().run(["sh", "-c", platform_frames.DUMP_SCRIPT, "zbench",
                                   "com.soundvisualization.accessibility", "", ""], timeout_s=30)
        dumps.append(time.perf_counter() - started)
    return times, dumps, counted


if __name__ == "__main__":
    sys.exit(main())
