"""`zbench deploy` round trips over the real parts: OpenSSH sshd, the adb server with the emulated adbd, and
the command transport's folder device. The build's content hash is checked on the device (sha256sum) and its
build identity by the runner's probe, then the inventory's `{deployed}` runner is probed as a session would."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_zbench.engine.deploy import DeviceFiles, deploy, hash_build, remove_build
from pytest_zbench.engine.deployed_runner import deploy_root
from pytest_zbench.host.devices.device import Device
from pytest_zbench.transports import make_transport
from tests.engine.runner_build import ENTRY, make_runner_build
from tests.remote.servers import adb_device_entry
from tests.remote.test_transports import FolderDevice


@pytest.fixture
def device_entry(request, tmp_path):
    kind = request.param
    if kind == "ssh":
        yield request.getfixturevalue("sshd").device_entry(workdir=str(tmp_path / "ssh-work"))
    elif kind == "adb":
        yield adb_device_entry(request.getfixturevalue("adb_server"), request.getfixturevalue("fake_adbd").serial,
                               tmp_path / "adb-work")
    else:
        device = FolderDevice(tmp_path / "folder-device").start()
        try:
            yield device.entry()
        finally:
            device.stop()


@pytest.mark.parametrize("device_entry", ["ssh", "adb", "command"], indirect=True)
def test_deploy_round_trip(device_entry, write_inventory, tmp_path):
    entry = {**device_entry, "runner": ["{deployed}/" + ENTRY]}
    spec = write_inventory({"dev": entry})["dev"]
    first = hash_build(make_runner_build(tmp_path / "b1", "engine-aaa"))
    second = hash_build(make_runner_build(tmp_path / "b2", "engine-bbb"))
    root = deploy_root(spec.workdir)
    assert root is not None
    transport = make_transport(spec)
    transport.open()
    try:
        done = deploy(spec, transport, first, keep=1, expect_build="engine-aaa")
        assert (done.content_hash, done.build_id, done.reused) == (first.content_hash, "engine-aaa", False)
        on_device = DeviceFiles("dev", transport)
        assert on_device.verify(done.folder, first) == []  # sha256sum on the device agrees with the host
        assert deploy(spec, transport, first, keep=1).reused
        done = deploy(spec, transport, second, keep=1, expect_build="engine-bbb")
        assert done.pruned == [first.content_hash]
        assert on_device.builds_newest_first(root) == [second.content_hash]
        assert on_device.current(root) == second.content_hash
    finally:
        transport.close()
    device = Device(spec, make_transport(spec))
    try:
        probe = device.probe()
        assert probe.build is not None and probe.build.id == "engine-bbb"
        assert device.spec.runner[0] == f"{root}/current/{ENTRY}"
    finally:
        device.close()
    transport = make_transport(spec)
    transport.open()
    try:
        assert remove_build(DeviceFiles("dev", transport), root, second.content_hash, allow_current=True)
        assert DeviceFiles("dev", transport).builds_newest_first(root) == []
    finally:
        transport.close()
    if device_entry.get("transport") != "ssh":  # the device shares this machine's files: nothing is left
        assert not any(Path(root).iterdir())
