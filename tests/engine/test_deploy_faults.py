"""`zbench deploy` under faults (docs/engine-ci.md, "One deploy at a time" and "When a deploy fails"): a second
deploy holding the device's lock, a full device filesystem, a dirty build, removing the current build, a file
name with a line break. Each gives one clear line, and nothing half-made is left on the device."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_zbench.cli import main
from pytest_zbench.engine.deploy import DeployError, DeviceFiles, DeviceLock, deploy, hash_build
from pytest_zbench.errors import UsageError
from pytest_zbench.inventory import load_inventory
from pytest_zbench.transports import make_transport
from tests.engine.runner_build import make_runner_build
from tests.engine.test_deploy import write_devices

REPO = Path(__file__).resolve().parents[2]

HOLD = """\
import sys, time
from pytest_zbench.engine.deploy import DeviceFiles, DeviceLock
from pytest_zbench.inventory import load_inventory
from pytest_zbench.transports import make_transport
spec = load_inventory(sys.argv[1]).get("box")
transport = make_transport(spec)
transport.open()
with DeviceLock(DeviceFiles("box", transport), sys.argv[2]):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
transport.close()
"""


def hold_lock(devices: Path, root: Path, seconds: float) -> subprocess.Popen[str]:
    """A second process holding the device's deploy lock for `seconds`; returns once it holds it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(devices), str(root), str(seconds)],
                              stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_deploy_waits_for_the_lock_another_process_holds(tmp_path):
    # Before: two deploys --keep 1 at once pruned each other's build and swapped `current` under each other.
    workdir = tmp_path / "device"
    devices = write_devices(tmp_path, workdir)
    spec = load_inventory(devices).get("box")
    root = workdir / "builds"
    build = hash_build(make_runner_build(tmp_path / "b", "engine-1"))
    holder = hold_lock(devices, root, 3.0)
    said: list[str] = []
    transport = make_transport(spec)
    transport.open()
    try:
        started = time.monotonic()
        done = deploy(spec, transport, build, keep=1, progress=said.append)
        waited = time.monotonic() - started
    finally:
        transport.close()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    assert waited >= 2.0, f"the deploy went on while the other process held the lock ({waited:.1f} s)"
    assert any(line.startswith(f"waiting for {root}/.lock, held by ") and "-pid" in line for line in said), said
    assert DeviceFiles("box", make_transport(spec)).current(str(root)) == done.content_hash
    assert sorted(p.name for p in root.iterdir()) == sorted([build.content_hash, "current"])  # lock released


def test_a_lock_held_too_long_is_a_one_line_error_naming_its_holder(tmp_path):
    workdir = tmp_path / "device"
    devices = write_devices(tmp_path, workdir)
    spec = load_inventory(devices).get("box")
    root = workdir / "builds"
    holder = hold_lock(devices, root, 5.0)
    transport = make_transport(spec)
    transport.open()
    try:
        with pytest.raises(DeployError, match=r"another deploy holds .*/builds/\.lock \(.*-pid\d+-.*\) after 1 s"):
            with DeviceLock(DeviceFiles("box", transport), str(root), wait_s=1.0):
                pass
    finally:
        transport.close()
        holder.wait(timeout=30)
    assert not (root / ".lock").exists()  # the holder released its own lock; the waiter took nothing


def test_removing_the_current_build_is_refused_unless_forced(tmp_path, capsys):
    workdir = tmp_path / "device"
    devices = write_devices(tmp_path, workdir)
    build = make_runner_build(tmp_path / "b", "engine-7")
    content_hash = hash_build(build).content_hash
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build)]) == 0
    capsys.readouterr()
    assert main(["deploy", "--devices", str(devices), "--device", "box", "--remove", content_hash]) == 1
    err = capsys.readouterr().err
    assert f"{content_hash} is the current build" in err and "--force" in err and err.count("\n") == 1, err
    assert (workdir / "builds" / content_hash).is_dir() and (workdir / "builds" / "current").is_symlink()
    assert main(["deploy", "--devices", str(devices), "--device", "box", "--remove", content_hash, "--force"]) == 0
    assert "and the `current` link" in capsys.readouterr().out
    assert not (workdir / "builds" / content_hash).exists() and not (workdir / "builds" / "current").exists()
    assert not (workdir / "builds" / ".lock").exists()


def test_a_dirty_build_is_said_and_is_never_the_expected_build(tmp_path, capsys):
    workdir = tmp_path / "device"
    devices = write_devices(tmp_path, workdir)
    build = make_runner_build(tmp_path / "b", "engine-3", dirty=True)
    content_hash = hash_build(build).content_hash
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build),
                 "--expect-build", "engine-3"]) == 1
    err = capsys.readouterr().err
    assert "reports build 'engine-3' DIRTY" in err and err.count("\n") == 1, err
    assert not (workdir / "builds" / content_hash).exists()  # refused builds are not left behind
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build)]) == 0
    out = capsys.readouterr().out
    assert "DIRTY (built from a checkout with uncommitted changes)" in out
    assert out.rstrip().endswith("build engine-3 DIRTY"), out


def test_a_file_name_with_a_line_break_is_refused_with_one_line(tmp_path, capsys):
    build = make_runner_build(tmp_path / "b", "engine-1")
    (build / "share" / "two\nlines.txt").write_text("x")
    with pytest.raises(UsageError, match="holds a line break"):
        hash_build(build)
    devices = write_devices(tmp_path, tmp_path / "device")
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build)]) == 2
    err = capsys.readouterr().err
    assert "holds a line break" in err and err.count("\n") == 1, err


@pytest.fixture
def small_device(tmp_path):
    """The device's workdir on a 2 MiB tmpfs: a real full filesystem. Needs root (CI runs as root)."""
    workdir = tmp_path / "device"
    workdir.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(workdir)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        message = f"cannot mount a 2 MiB tmpfs for the full-disk test: {mounted.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI runs as root and must run this test)")
        pytest.skip(message)
    try:
        yield workdir
    finally:
        subprocess.run(["umount", str(workdir)], check=False)


def test_a_full_device_filesystem_is_a_one_line_error_and_leaves_nothing(tmp_path, capsys, small_device):
    devices = write_devices(tmp_path, small_device)
    build = make_runner_build(tmp_path / "b", "engine-1")
    (build / "share" / "big.bin").write_bytes(os.urandom(3 << 20))
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert "is full (no space left on the device) while trying to push share/big.bin" in err, err
    assert [p.name for p in (small_device / "builds").iterdir()] == []  # no incoming folder, no lock
