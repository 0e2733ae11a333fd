"""The emulated adb device two benches share (bench_platform_frames.py, bench_frame_timeline.py): the adb server
and the emulated adbd of tests/remote, two inventory devices on that one emulated device, and the same paced
mini scene (64x48, 5 warmup + N measured frames) launched on both, interleaved, as a test launches it
(measure.guarded_launch, the platform probe before and after included)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from remote.fake_adbd import FakeAdbd  # noqa: E402
from remote.servers import AdbServer, adb_device_entry  # noqa: E402

from pytest_zbench.host.devices.device import Device, LaunchOutcome  # noqa: E402
from pytest_zbench.host.devices.health import DeviceHealth  # noqa: E402
from pytest_zbench.host.measure.launches import guarded_launch  # noqa: E402
from pytest_zbench.inventory import load_inventory  # noqa: E402
from pytest_zbench.protocol import Job  # noqa: E402
from pytest_zbench.scenes import load_scene_file  # noqa: E402
from pytest_zbench.transports import make_transport  # noqa: E402

PACKAGE = "com.soundvisualization.accessibility"
DISPLAY = {"width": 64, "height": 48, "refresh_hz": 60}


@contextmanager
def emulated_devices(tmp: Path, entries: dict[str, dict[str, Any]],
                     trace: bytes | None = None) -> Iterator[dict[str, Device]]:
    """Open the devices named by `entries` (keyword arguments of tests/remote's adb_device_entry beyond the
    server, serial and display) on one emulated device, which serves `trace` as its perfetto output if given."""
    adb = AdbServer().start()
    adbd = FakeAdbd(tmp / "adbd").start()
    if trace is not None:
        adbd.serve_trace(trace)
    devices: dict[str, Device] = {}
    try:
        adb.connect(adbd.serial)
        listed = {name: adb_device_entry(adb, adbd.serial, tmp / f"w-{name}", display=DISPLAY, **extra)
                  for name, extra in entries.items()}
        (tmp / "devices.yaml").write_text(yaml.safe_dump({"devices": listed}))
        specs = load_inventory(tmp / "devices.yaml").devices
        devices = {name: Device(specs[name], make_transport(specs[name])) for name in listed}
        for device in devices.values():
            device.open()
        yield devices
    finally:
        for device in devices.values():
            device.close()
        adb.adb("disconnect", adbd.serial)
        adbd.stop()
        adb.stop()


def interleaved_launches(devices: dict[str, Device], n: int, frames: int, tmp: Path,
                         check: Callable[[str, LaunchOutcome], None] | None = None) -> dict[str, list[float]]:
    """Each device's launch wall times in seconds, `n` each after one warm-up round, the devices interleaved;
    `check(name, outcome)` sees every measured launch (it raises SystemExit to stop the bench)."""
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
            if i:
                times[name].append(took)
                if check is not None:
                    check(name, outcome)
    return times
