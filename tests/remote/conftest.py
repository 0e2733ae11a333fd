"""Fixtures that start real loopback parts for the remote transports (README, Remote devices).

* `sshd` (session): an OpenSSH sshd on 127.0.0.1 with generated host and user keys, as the current user
  (tests/remote/servers.py: SshServer; `.device_entry(**overrides)` is an inventory entry for it).
* `adb_server` (session): the real adb server on a free port (servers.AdbServer).
* `fake_adbd` (session): the emulated device (fake_adbd.FakeAdbd) connected to `adb_server` with
  `adb connect`; `.serial` is its serial, `.sandbox` its folder, `.device_entry(adb_server)` an entry.
* `android_dumps` (function): `fake_adbd`, whose dumpsys outputs the test may replace with `serve_dumps(...)`;
  the recorded defaults are served again afterwards.
* `write_inventory(devices)` (function): writes a devices.yaml into tmp_path and loads it.

A test whose part is missing fails when CI=true and skips otherwise (tests/parts.py `require`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from parts import require

from pytest_zbench.inventory import DeviceSpec, load_inventory
from tests.remote.servers import AdbServer, MissingPart, SshServer


def _start(factory: Callable[[], Any], what: str) -> Any:
    try:
        return factory()
    except MissingPart as exc:
        require(False, f"{what}: {exc}")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    server = _start(lambda: SshServer(tmp_path_factory.mktemp("sshd")).start(), "OpenSSH sshd")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def adb_server():
    server = _start(lambda: AdbServer().start(), "adb server")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fake_adbd(adb_server: AdbServer, tmp_path_factory: pytest.TempPathFactory):
    from tests.remote.fake_adbd import FakeAdbd

    device = FakeAdbd(tmp_path_factory.mktemp("adbd-sandbox")).start()
    try:
        adb_server.connect(device.serial)
        yield device
    finally:
        adb_server.adb("disconnect", device.serial)
        device.stop()


@pytest.fixture
def android_dumps(fake_adbd):
    fake_adbd.serve_dumps()
    try:
        yield fake_adbd
    finally:
        fake_adbd.serve_dumps()


@pytest.fixture
def write_inventory(tmp_path: Path) -> Callable[[dict[str, dict[str, Any]]], dict[str, DeviceSpec]]:
    def write(devices: dict[str, dict[str, Any]]) -> dict[str, DeviceSpec]:
        path = tmp_path / "devices.yaml"
        path.write_text(yaml.safe_dump({"devices": devices}))
        return dict(load_inventory(path).devices)

    return write
