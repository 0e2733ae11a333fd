"""Per-launch overhead of the ssh and adb transports over local, measured side by side in one run.

Starts the same loopback parts as tests/remote (OpenSSH sshd with generated keys; the adb server on a free
port + the emulated adbd), then runs the same small command N times on each transport, interleaved
(local, ssh, adb, local, ...) so that machine noise hits all three alike, and prints medians and the ratios
transport / local. Each launch is a full `Transport.run` (pid wrapper, streaming, exit status); connection
setup is excluded (one persistent connection per device, as in a test session).

    python bench/bench_transport_overhead.py [-n 40] [--runner-probe | --scene]

On a device with Python the ssh launches go through the connection's launcher (docs/architecture.md, "The
ssh launcher"): the account's login shell and its rc files run once per connection, not per launch.

Targets (issue #33): ssh and adb per launch at most 1.2x local; one platform sample over ssh at most 2x
local. A missed target is printed, not an error: this is a bench, not a timed test (it exits non-zero only
when a launch fails or a part cannot start).

`--runner-probe` launches `python -m pytest_zbench.runner probe` instead of `sh -c 'echo ok'`: the ratio
then shows what the transport adds to a real (heavier) launch.

`--scene` times what a perf test does per launch: `Device.launch` of a mini scene (one translucent rect,
64x48, 5 warmup + 30 measured frames, uncapped, one capture): push the job, run the reference runner, pull
and read frames.csv, result.json and the capture, clean the device folder. The platform sample taken
before and after each launch is timed on its own (one `sample_conditions` call).
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
from remote.servers import AdbServer, SshServer, adb_device_entry, runner_argv, runner_env  # noqa: E402

from pytest_zbench.inventory import load_inventory  # noqa: E402
from pytest_zbench.transports import make_transport  # noqa: E402

LAUNCH_TARGET = 1.2  # ssh and adb per launch, over local
SAMPLE_TARGET = 2.0  # one platform sample over ssh, over local


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="launches per transport (default 40)")
    parser.add_argument("--runner-probe", action="store_true", help="launch the reference runner's probe")
    parser.add_argument("--scene", action="store_true", help="a full Device.launch of a 30-frame mini scene")
    args = parser.parse_args()
    command = [*runner_argv(), "probe"] if args.runner_probe else ["sh", "-c", "echo ok"]
    samples: dict[str, list[float]] = {}

    with tempfile.TemporaryDirectory(prefix="zbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        sshd = SshServer(tmp / "sshd").start()
        adb = AdbServer().start()
        adbd = FakeAdbd(tmp / "adbd").start()
        transports = {}
        try:
            adb.connect(adbd.serial)
            devices = {
                "local": {"transport": "local", "env": runner_env(), "runner": runner_argv()},
                "ssh": sshd.device_entry(workdir=str(tmp / "ssh-work")),
                "adb": adb_device_entry(adb, adbd.serial, tmp / "adb-work"),
            }
            inventory = tmp / "devices.yaml"
            inventory.write_text(yaml.safe_dump({"devices": devices}))
            specs = load_inventory(inventory).devices
            for name in devices:
                transports[name] = make_transport(specs[name])
                transports[name].open()
            if args.scene:
                times, samples = _scene_launches(specs, transports, args.n, tmp)
            else:
                times = _commands(transports, command, args.n)
        finally:
            for t in transports.values():
                t.close()
            adb.adb("disconnect", adbd.serial)
            adbd.stop()
            adb.stop()
            sshd.stop()

    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["local"]
    what = "Device.launch of a 30-frame mini scene" if args.scene else (
        "runner probe" if args.runner_probe else "sh -c 'echo ok'")
    print(f"per-launch wall time, {args.n} launches each of `{what}`, interleaved; medians")
    print(f"{'transport':<10}{'median ms':>11}{'p90 ms':>9}{'+ms vs local':>14}{'ratio':>8}")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) >= 10 else max(values)
        print(f"{name:<10}{medians[name] * 1e3:>11.1f}{p90 * 1e3:>9.1f}{(medians[name] - base) * 1e3:>14.1f}"
              f"{medians[name] / base:>8.2f}{_verdict(medians[name] / base, LAUNCH_TARGET, name)}")
    if samples:
        base = statistics.median(samples["local"])
        print("one platform sample (sample_conditions; two per launch), medians")
        for name, values in samples.items():
            ratio = statistics.median(values) / base
            print(f"{name:<10}{statistics.median(values) * 1e3:>11.1f}{'':>9}"
                  f"{(statistics.median(values) - base) * 1e3:>14.1f}{ratio:>8.2f}"
                  f"{_verdict(ratio, SAMPLE_TARGET, name) if name == 'ssh' else ''}")
    return 0


def _verdict(ratio: float, target: float, name: str) -> str:
    if name == "local":
        return ""
    return f"   target <= {target:.2f}: {'met' if ratio <= target else 'MISSED'} ({ratio:.3f})"


def _commands(transports: dict, command: list[str], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in transports}
    for name, t in transports.items():  # one warm-up launch each
        assert t.run(command, timeout_s=120).ok, f"{name}: warm-up launch failed"
    for _ in range(n):
        for name, t in transports.items():
            started = time.perf_counter()
            result = t.run(command, timeout_s=120)
            times[name].append(time.perf_counter() - started)
            if not result.ok:
                raise SystemExit(f"{name}: launch failed: {result.stderr.strip()}")
    return times


def _scene_launches(specs: dict, transports: dict, n: int, tmp: Path) -> tuple[dict, dict]:
    from pytest_zbench.host.devices.device import Device
    from pytest_zbench.protocol import Job
    from pytest_zbench.scenes import load_scene_file

    scene_file = tmp / "mini.yaml"
    scene_file.write_text("family: mini\nscenes:\n  - id: mini.fill.x1\n    ops:\n"
                          "      - {op: rect, x: 0, y: 0, w: '100%', h: '100%', color: '#3366CC80'}\n")
    case = load_scene_file(scene_file)[0]
    job = Job(backend="software", mode="uncapped", refresh_hz=60.0, warmup_frames=5, frames=30, capture=(0,),
              seed=1, scene=case.job_scene(64, 48))
    devices = {name: Device(specs[name], t) for name, t in transports.items()}
    times: dict[str, list[float]] = {name: [] for name in devices}
    samples: dict[str, list[float]] = {name: [] for name in devices}
    for i in range(n + 1):  # the first round warms up
        for name, device in devices.items():
            started = time.perf_counter()
            outcome = device.launch(job, i, tmp / "out" / name / f"launch-{i}", timeout_s=120)
            took = time.perf_counter() - started
            if not outcome.complete or len(outcome.frames.rows) != 35:
                raise SystemExit(f"{name}: launch failed: {outcome.issues}")
            started = time.perf_counter()
            device.sample_conditions()
            if i:
                times[name].append(took)
                samples[name].append(time.perf_counter() - started)
    return times, samples


if __name__ == "__main__":
    sys.exit(main())
