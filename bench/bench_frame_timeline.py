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
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from frame_timeline_traces import Frame, build_trace  # noqa: E402
from remote.fake_adbd import FakeAdbd  # noqa: E402
from remote.servers import AdbServer, adb_device_entry  # noqa: E402

from pytest_zbench.host.devices.device import Device  # noqa: E402
from pytest_zbench.host.devices.health import DeviceHealth  # noqa: E402
from pytest_zbench.host.measure.launches import guarded_launch  # noqa: E402
from pytest_zbench.inventory import load_inventory  # noqa: E402
from pytest_zbench.protocol import Job  # noqa: E402
from pytest_zbench.scenes import load_scene_file  # noqa: E402
from pytest_zbench.transports import make_transport  # noqa: E402

PACKAGE = "com.soundvisualization.accessibility"


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
        adb = AdbServer().start()
        adbd = FakeAdbd(tmp / "adbd").start()
        adbd.serve_trace(build_trace(frames))
        (tmp / "traces").mkdir()
        devices: dict[str, Device] = {}
        try:
            adb.connect(adbd.serial)
            display = {"width": 64, "height": 48, "refresh_hz": 60}
            entries = {"platform": adb_device_entry(adb, adbd.serial, tmp / "w-p", display=display, package=PACKAGE),
                       "timeline": adb_device_entry(adb, adbd.serial, tmp / "w-t", display=display, package=PACKAGE,
                                                    frame_timeline=str(tmp / "traces"))}
            (tmp / "devices.yaml").write_text(yaml.safe_dump({"devices": entries}))
            specs = load_inventory(tmp / "devices.yaml").devices
            devices = {name: Device(specs[name], make_transport(specs[name])) for name in entries}
            for device in devices.values():
                device.open()
            times = _launches(devices, args.n, args.frames, tmp)
        finally:
            for device in devices.values():
                device.close()
            adb.adb("disconnect", adbd.serial)
            adbd.stop()
            adb.stop()
    platform, timeline = (statistics.median(times[k]) for k in ("platform", "timeline"))
    print(f"adb launch wall time, {args.n} launches each of a paced {args.frames}-frame mini scene at 60 Hz, "
          "interleaved; medians")
    print(f"  platform frames                   {platform * 1e3:8.1f} ms")
    print(f"  platform frames + frame timeline  {timeline * 1e3:8.1f} ms   (+{(timeline - platform) * 1e3:.1f} ms, "
          f"x{timeline / platform:.3f})")
    return 0


def _launches(devices: dict[str, Device], n: int, frames: int, tmp: Path) -> dict[str, list[float]]:
    scene_file = tmp / "mini.yaml"
    scene_file.write_text("family: mini\nscenes:\n  - id: mini.fill.x1\n    ops:\n"
                          "      - {op: rect, x: 0, y: 0, w: '100%', h: '100%', color: '#3366CC80'}\n")
    case = load_scene_file(scene_file)[0]
    job = Job(backend="software", mode="paced", refresh_hz=60.0, warmup_frames=5, frames=frames, capture=(),
              seed=1, scene=case.job_scene(64, 48))
    times: dict[str, list[float]] = {name: [] for name in devices}
    health = DeviceHealth()
    for i in range(n + 1):  # the first round warms up
        for name, device in devices.items():
            started = time.perf_counter()
            outcome = guarded_launch(device, job, i, tmp / "out" / name / f"launch-{i}", 120.0, None, health,
                                     tmp / "out")
            took = time.perf_counter() - started
            if not outcome.complete:
                raise SystemExit(f"{name}: launch failed: {outcome.issues}")
            if name == "timeline" and not (outcome.platform_frames and outcome.platform_frames.timeline):
                raise SystemExit(f"timeline: no frame timeline read: {outcome.platform_frames}")
            if i:
                times[name].append(took)
    return times


if __name__ == "__main__":
    sys.exit(main())
