"""Per-launch transport cost to vm-arm64 (ci/vm-device.sh, docs/vm-device.md) against the same launch inside it.

The VM is a machine of its own under TCG, many times slower than the host, so a launch's wall time over ssh
says little by itself. This bench factors the guest's speed out: each round, interleaved,

* `launch`: a full `Device.launch` over ssh of a mini GLES2 scene (push the job, start the deployed runner
  through the connection's launcher, pull frames.csv, result.json and the capture, remove the launch folder),
  timed on the host;
* `inside`: the same runner on the same job started in the guest by a shell there, timed by the guest's own
  clock (`date +%s%N` around it): what the launch costs with no transport at all;
* `command`: `true` through the transport (Transport.run), the fixed cost of one remote command.

ssh's own share of a launch is `launch - inside`, printed in ms and as a fraction of the launch. With
`--boot` the VM is first powered off and booted again from a clean overlay, and the boot time is printed.

    bash ci/vm-device.sh start && zbench deploy --device vm-arm64 build/native/arm64/zbench-gles2
    python bench/bench_vm_transport.py [-n 10] [--boot]

A bench, not a timed test: it prints figures; it exits non-zero only when a launch fails or the VM is not
there.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_zbench.inventory import load_inventory  # noqa: E402
from pytest_zbench.transports import make_transport  # noqa: E402

SCRIPT = REPO / "ci" / "vm-device.sh"
STATE = REPO / ".zbench" / "vm" / "arm64"
FRAMES, WARMUP, SIZE = 10, 2, (64, 48)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="rounds (default 10)")
    parser.add_argument("--boot", action="store_true", help="power the VM off and boot it again first, timed")
    args = parser.parse_args()
    if args.boot:
        subprocess.run(["bash", str(SCRIPT), "stop"], check=True)
        started = time.monotonic()
        subprocess.run(["bash", str(SCRIPT), "start"], check=True)
        print(f"boot: {time.monotonic() - started:.1f} s from QEMU's start until sshd answered (clean overlay)")
    if subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True).returncode != 0:
        raise SystemExit("vm-arm64 is not running: bash ci/vm-device.sh start (and zbench deploy, see above)")

    devices = yaml.safe_load((REPO / "devices.yaml").read_text())["devices"]
    entry = dict(devices["vm-arm64"], identity_file=str(STATE / "id_ed25519"), known_hosts=str(STATE / "known_hosts"))
    with tempfile.TemporaryDirectory(prefix="zbench-bench-vm-") as tmp_name:
        tmp = Path(tmp_name)
        inventory = tmp / "devices.yaml"
        inventory.write_text(yaml.safe_dump({"devices": {"vm-arm64": entry}}))
        spec = load_inventory(inventory).devices["vm-arm64"]
        transport = make_transport(spec)
        transport.open()
        try:
            times = _rounds(spec, transport, args.n, tmp)
        finally:
            transport.close()

    print(f"vm-arm64, {args.n} rounds, interleaved; a mini GLES2 scene {SIZE[0]}x{SIZE[1]}, "
          f"{WARMUP} warmup + {FRAMES} frames, uncapped, one capture; medians")
    print(f"{'what':<34}{'median ms':>11}{'min ms':>9}{'max ms':>9}")
    for name, label in (("launch", "launch over ssh (Device.launch)"), ("inside", "the same run inside the guest"),
                        ("share", "ssh's share (launch - inside)"), ("command", "`true` over ssh (Transport.run)")):
        values = times[name]
        print(f"{label:<34}{statistics.median(values) * 1e3:>11.0f}{min(values) * 1e3:>9.0f}"
              f"{max(values) * 1e3:>9.0f}")
    share = statistics.median(times["share"]) / statistics.median(times["launch"])
    print(f"ssh's share of a launch: {share:.0%} (the guest's own speed is in `inside`, not in the share)")
    return 0


def _rounds(spec, transport, n: int, tmp: Path) -> dict[str, list[float]]:
    from pytest_zbench.host.devices.device import Device
    from pytest_zbench.protocol import Job
    from pytest_zbench.scenes import load_scene_file

    scene_file = tmp / "mini.yaml"
    scene_file.write_text("family: mini\nscenes:\n  - id: mini.fill.x1\n    ops:\n"
                          "      - {op: rect, x: 1, y: 1, w: '100% - 2', h: '100% - 2', color: '#3366CC80'}\n")
    case = load_scene_file(scene_file)[0]
    job = Job(backend="gles2", mode="uncapped", refresh_hz=60.0, warmup_frames=WARMUP, frames=FRAMES, capture=(0,),
              seed=1, scene=case.job_scene(*SIZE))
    device = Device(spec, transport)
    runner = list(spec.runner)
    # The job once in the guest, for the runs started there: a folder of its own under the device's workdir.
    inside_dir = f"{spec.workdir}/bench-inside"
    transport.run(["mkdir", "-p", inside_dir], timeout_s=60)
    job_file = tmp / "job.json"
    job_file.write_text(job.to_json())
    transport.push(job_file, f"{inside_dir}/job.json")
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (spec.env or {}).items())
    inner = (f"cd {shlex.quote(inside_dir)} && rm -rf out && mkdir out && t0=$(date +%s%N) && "
             f"env {env} {shlex.join(runner)} run job.json out >/dev/null 2>&1; rc=$?; t1=$(date +%s%N); "
             'echo "$rc $((t1 - t0))"')
    times: dict[str, list[float]] = {"launch": [], "inside": [], "share": [], "command": []}
    try:
        for i in range(n + 1):  # the first round warms up
            started = time.perf_counter()
            outcome = device.launch(job, i, tmp / "out" / f"launch-{i}", timeout_s=600)
            launch = time.perf_counter() - started
            if not outcome.complete:
                raise SystemExit(f"vm-arm64: launch failed: {outcome.issues}")
            ran = transport.run(["sh", "-c", inner], timeout_s=600)
            rc, _, ns = ran.stdout.strip().partition(" ")
            if not ran.ok or rc != "0":
                raise SystemExit(f"vm-arm64: the run inside the guest failed (exit {rc}): {ran.stderr.strip()}")
            started = time.perf_counter()
            if not transport.run(["true"], timeout_s=60).ok:
                raise SystemExit("vm-arm64: `true` failed")
            command = time.perf_counter() - started
            if i:
                inside = int(ns) / 1e9
                times["launch"].append(launch)
                times["inside"].append(inside)
                times["share"].append(launch - inside)
                times["command"].append(command)
    finally:
        transport.run(["rm", "-rf", inside_dir], timeout_s=60)
    return times


if __name__ == "__main__":
    sys.exit(main())
