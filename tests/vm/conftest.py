"""The device that is its own machine (ci/vm-device.sh, docs/vm-device.md): a Debian arm64 system under
qemu-system-aarch64, reached over ssh on a loopback port, with its own kernel, disk and clock.

The image is built by `bash ci/vm-device.sh setup` (cached per machine); the kit's aarch64 runner by
`bash ci/native-devices.sh`. The `vm` fixture boots the machine once for the whole test session when it is not
already running, and powers it off at the end if it booted it. The fault tests cut its power (QEMU killed) and
power it on again with the same disk (`start --keep-disk`), as a device on a bench loses and regains power.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from parts import require

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPT = REPO / "ci" / "vm-device.sh"
STATE = REPO / ".zbench" / "vm" / "arm64"
RUNNER = REPO / "build" / "native" / "arm64" / "zbench-gles2"
PORT = int(os.environ.get("ZBENCH_VM_PORT", "10022"))  # devices.yaml's vm-arm64 (ci/vm-device.sh reads it too)
WORKDIR = "/var/lib/zbench"
DISPLAY = {"width": 64, "height": 48, "refresh_hz": 60}
BOOT_TIMEOUT_S = 900


class Vm:
    """The running machine, through ci/vm-device.sh (boot, power cut, ssh) and plain ssh (its files)."""

    def __init__(self) -> None:
        self.booted_here = False

    def script(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                              check=check, cwd=REPO)

    def ssh(self, *argv: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run argv in the guest (as root); every element is one word of the remote command line."""
        import shlex

        return self.script("ssh", " ".join(shlex.quote(a) for a in argv), timeout=timeout, check=check)

    def running(self) -> bool:
        return self.script("status", check=False).returncode == 0

    def answers(self) -> bool:
        return self.running() and self.ssh("true", timeout=30, check=False).returncode == 0

    def start(self, *, keep_disk: bool = False) -> float:
        """Boot (or power on again with the same disk); the seconds until sshd answered."""
        started = time.monotonic()
        self.script("start", *(["--keep-disk"] if keep_disk else []), timeout=BOOT_TIMEOUT_S + 60)
        return time.monotonic() - started

    def wait_for_launch(self, scene: str, timeout: float = 900) -> None:
        """Until a launch of `scene` runs in the guest: polled there, over one ssh connection (under TCG a new
        connection per poll takes seconds)."""
        script = 'while ! pgrep -f "zbench-gles2 run .*$1" >/dev/null; do sleep 0.3; done; echo seen'
        done = self.ssh("sh", "-c", script, "sh", scene.replace(".", "[.]"), timeout=timeout, check=False)
        assert "seen" in done.stdout, f"no launch of {scene} started in the guest: {done.stderr[-500:]}"

    def power_cut(self) -> None:
        self.script("kill")

    def wait(self, timeout: float = BOOT_TIMEOUT_S) -> None:
        self.script("wait", str(int(timeout)), timeout=timeout + 60)

    def entry(self, **extra: object) -> dict[str, object]:
        """The vm-arm64 inventory entry with absolute paths (the tests' projects are elsewhere)."""
        entry: dict[str, object] = {
            "transport": "ssh", "host": "127.0.0.1", "port": PORT, "user": "root",
            "identity_file": str(STATE / "id_ed25519"), "known_hosts": str(STATE / "known_hosts"),
            "backend": "gles2", "platform": "linux", "device_class": "vm-softpipe-arm64",
            "runner": ["{deployed}/zbench-gles2"], "workdir": WORKDIR,
            "env": {"ZBENCH_GPU_TIMER": "none", "GALLIUM_DRIVER": "softpipe"},
            "timeout_s": 600, "connect_timeout_s": 60, "keepalive_s": 30, "display": DISPLAY,
        }
        entry.update(extra)
        return entry


def zbench(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_zbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="session")
def vm() -> Iterator[Vm]:
    require(shutil.which("qemu-system-aarch64") is not None, "qemu-system-aarch64 (apt-get install qemu-system-arm)")
    require((STATE / "image" / "READY").is_file(), "the VM image (bash ci/vm-device.sh setup)")
    require(RUNNER.is_file(), "the kit's aarch64 runner (bash ci/native-devices.sh)")
    machine = Vm()
    if not machine.answers():
        if machine.running():
            machine.script("stop")
        boot_s = machine.start()
        machine.booted_here = True
        print(f"vm-arm64 booted in {boot_s:.0f} s")
    yield machine
    if machine.booted_here:
        machine.script("stop", check=False)


@pytest.fixture
def vm_up(vm: Vm) -> Vm:
    """The machine answering (a test before this one may have cut its power): powered on with its disk."""
    if not vm.answers():
        if vm.running():
            vm.wait()
        else:
            vm.start(keep_disk=(STATE / "overlay.qcow2").is_file())
    return vm


class VmProject:
    """A folder with scenes and a devices.yaml holding `local` and the VM, for zbench and pytest sessions."""

    def __init__(self, root: Path, machine: Vm) -> None:
        self.root = root
        self.vm = machine
        self.results = root / "results"
        (root / "scenes").mkdir(parents=True)
        (root / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
        self.devices(machine.entry())

    def devices(self, vm_entry: dict[str, object]) -> None:
        local = {"transport": "local", "backend": "software", "runner": ["python", "-m", "pytest_zbench.runner"],
                 "display": DISPLAY}
        (self.root / "devices.yaml").write_text(yaml.safe_dump({"devices": {"local": local, "vm": vm_entry}}))

    def scenes(self, name: str, text: str) -> None:
        (self.root / "scenes" / name).write_text(text)

    def zbench(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return zbench(*args, cwd=self.root, timeout=timeout)

    def deploy(self, build: Path = RUNNER) -> subprocess.CompletedProcess[str]:
        return self.zbench("deploy", "--device", "vm", str(build))

    def pytest_argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--zbench-baseline=none",
                f"--zbench-results={self.results}", f"--zbench-lease-dir={self.root / 'leases'}", *args]

    def session(self, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.pytest_argv(*args), capture_output=True, text=True, timeout=timeout,
                              cwd=self.root, env={**os.environ, "PYTHONPATH": str(REPO)})

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.pytest_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=self.root, env={**os.environ, "PYTHONPATH": str(REPO)})

    def run_json(self) -> dict:
        return json.loads((self.results / "run.json").read_text())


@pytest.fixture
def vm_project(tmp_path: Path, vm_up: Vm, monkeypatch: pytest.MonkeyPatch) -> VmProject:
    monkeypatch.delenv("CI", raising=False)  # the project's own sessions are not a CI run of their devices
    return VmProject(tmp_path / "project", vm_up)
