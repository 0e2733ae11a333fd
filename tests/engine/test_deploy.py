"""`zbench deploy` on the local transport, the content hash, and the inventory's `{deployed}` runner.
(The ssh, adb and command round trips are in tests/remote/test_deploy_remote.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from pytest_zbench.cli import main
from pytest_zbench.engine.deploy import DeployError, DeviceFiles, deploy, hash_build, prune
from pytest_zbench.engine.deployed_runner import expand_deployed
from pytest_zbench.errors import UsageError
from pytest_zbench.host.devices.device import Device
from pytest_zbench.inventory import load_inventory
from pytest_zbench.transports import make_transport
from tests.engine.runner_build import ENTRY, make_runner_build

REPO = Path(__file__).resolve().parents[2]


def write_devices(tmp_path: Path, workdir: Path, **extra: object) -> Path:
    entry = {"transport": "local", "workdir": str(workdir), "runner": ["{deployed}/" + ENTRY],
             "env": {"PYTHONPATH": str(REPO)}, **extra}
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"box": entry}}))
    return path


def test_content_hash_follows_the_files_their_names_and_executable_bits(tmp_path):
    a = hash_build(make_runner_build(tmp_path / "a", "v1"))
    again = hash_build(make_runner_build(tmp_path / "again", "v1"))
    assert a.content_hash == again.content_hash and len(a.content_hash) == 16
    assert a.entry == ENTRY
    assert {f.path for f in a.files} == {ENTRY, "BUILD_ID", "probe.json", "share/data.txt"}
    other = hash_build(make_runner_build(tmp_path / "b", "v1", data="another byte"))
    assert other.content_hash != a.content_hash
    (tmp_path / "again" / "BUILD_ID").chmod(0o755)  # same bytes, now executable: another build
    assert hash_build(tmp_path / "again", ENTRY).content_hash != a.content_hash


def test_a_build_without_one_clear_entry_or_with_a_link_is_refused(tmp_path):
    folder = make_runner_build(tmp_path / "a", "v1")
    (folder / "second").write_text("#!/bin/sh\n")
    (folder / "second").chmod(0o755)
    with pytest.raises(UsageError, match="--entry"):
        hash_build(folder)
    assert hash_build(folder, ENTRY).entry == ENTRY
    with pytest.raises(UsageError, match="inside the build"):
        hash_build(folder, "../x")
    with pytest.raises(UsageError, match="not executable"):
        hash_build(folder, "BUILD_ID")
    os.symlink("/etc/passwd", folder / "link")
    with pytest.raises(UsageError, match="symbolic links"):
        hash_build(folder, ENTRY)


def test_deployed_placeholder_expands_in_the_workdir_and_checks_its_hash(tmp_path):
    assert expand_deployed(("{deployed}/run", "probe"), "/w") == ("/w/builds/current/run", "probe")
    assert expand_deployed(("{deployed:0123456789abcdef}/run",), "/w") == ("/w/builds/0123456789abcdef/run",)
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"box": {"transport": "local", "runner": ["{deployed}/run"]}}}))
    with pytest.raises(UsageError, match="'runner'.*set `workdir`"):
        load_inventory(path)
    path.write_text(yaml.safe_dump({"devices": {"box": {"transport": "local", "workdir": "/w",
                                                        "runner": ["{deployed:HEAD}/run"]}}}))
    with pytest.raises(UsageError, match="16 lower-case hex"):
        load_inventory(path)


def test_deploy_probe_reuse_and_prune_on_local(tmp_path):
    workdir = tmp_path / "device"
    spec = load_inventory(write_devices(tmp_path, workdir)).get("box")
    builds = [hash_build(make_runner_build(tmp_path / f"b{i}", f"engine-{i}")) for i in range(3)]
    transport = make_transport(spec)
    transport.open()
    try:
        first = deploy(spec, transport, builds[0], keep=2, expect_build="engine-0")
        assert first.folder == f"{workdir}/builds/{builds[0].content_hash}" and not first.reused
        assert first.build_id == "engine-0"
        assert os.access(Path(first.folder) / ENTRY, os.X_OK)
        manifest = json.loads((Path(first.folder) / ".zbench-build.json").read_text())
        assert manifest["content_hash"] == builds[0].content_hash and manifest["build"]["id"] == "engine-0"
        assert deploy(spec, transport, builds[0], keep=2).reused
        for build in builds[1:]:
            done = deploy(spec, transport, build, keep=2)
        on_device = DeviceFiles("box", transport)
        root = str(workdir / "builds")
        assert on_device.builds_newest_first(root) == [builds[2].content_hash, builds[1].content_hash]
        assert done.pruned == [builds[0].content_hash]
        assert on_device.current(root) == builds[2].content_hash
        assert sorted(p.name for p in (workdir / "builds").iterdir()) == sorted(
            [builds[2].content_hash, builds[1].content_hash, "current"])  # no incoming folder left
    finally:
        transport.close()
    # The inventory's `{deployed}` runner is the build deployed last, as the host's probe sees it.
    device = Device(spec, make_transport(spec))
    try:
        assert device.probe().build.id == "engine-2"
    finally:
        device.close()


class ListedBuilds:
    """A device's builds as `ls -1t` lists them, and the commands prune runs on it."""

    def __init__(self, newest_first: list[str]) -> None:
        self.newest_first, self.commands = newest_first, []

    def builds_newest_first(self, root: str) -> list[str]:
        return list(self.newest_first)

    def run(self, argv: list[str], what: str, *, check: bool = True) -> str:
        self.commands.append(argv)
        return ""


def test_prune_keeps_the_build_just_made_current_even_when_its_folder_lists_oldest():
    """The folders' times, not the deploy, order the listing (a clock set back, a folder copied in by hand): the
    build deploy has just pointed `current` at stays whatever its place, and counts towards `keep`."""
    names = [f"{i:016x}" for i in range(4)]
    device = ListedBuilds(names)
    removed, kept = prune(device, "/w/builds", 2, current=names[3])
    assert (removed, kept) == (names[1:3], [names[0], names[3]])
    assert device.commands == [["rm", "-rf", f"/w/builds/{name}"] for name in names[1:3]]


def test_deploy_prunes_only_when_it_makes_the_build_current(tmp_path):
    """Pruning keeps the build it has just made current; left where it was, `current` could be pruned, so the
    combination is refused before the device is touched (a bisect deploys with keep=None)."""
    spec = load_inventory(write_devices(tmp_path, tmp_path / "device")).get("box")
    build = hash_build(make_runner_build(tmp_path / "b", "engine-0"))
    with pytest.raises(ValueError, match="make_current=False pass keep=None"):
        deploy(spec, make_transport(spec), build, keep=2, make_current=False)
    assert not (tmp_path / "device").exists()


def test_a_damaged_copy_on_the_device_is_replaced_and_a_wrong_build_is_refused(tmp_path):
    workdir = tmp_path / "device"
    spec = load_inventory(write_devices(tmp_path, workdir)).get("box")
    build = hash_build(make_runner_build(tmp_path / "b", "engine-1"))
    transport = make_transport(spec)
    transport.open()
    try:
        folder = Path(deploy(spec, transport, build).folder)
        (folder / "share" / "data.txt").write_text("changed on the device")
        again = deploy(spec, transport, build)
        assert not again.reused and (folder / "share" / "data.txt").read_text() == "engine-1"
        other = hash_build(make_runner_build(tmp_path / "c", "engine-2"))
        with pytest.raises(DeployError, match="reports build 'engine-2', not the expected 'engine-9'"):
            deploy(spec, transport, other, expect_build="engine-9")
        assert not (workdir / "builds" / other.content_hash).exists()  # a build failing its probe is removed
        assert DeviceFiles("box", transport).current(str(workdir / "builds")) == build.content_hash
    finally:
        transport.close()


def test_cli_deploy_list_remove(tmp_path, capsys):
    workdir = tmp_path / "device"
    devices = write_devices(tmp_path, workdir)
    build = make_runner_build(tmp_path / "b", "engine-7")
    content_hash = hash_build(build).content_hash
    out_json = tmp_path / "deployed.json"
    assert main(["deploy", "--devices", str(devices), "--device", "box", str(build), "--json", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["build_id"] == "engine-7"
    assert main(["deploy", "--devices", str(devices), "--device", "box", "--list"]) == 0
    assert f"{content_hash}  (current)" in capsys.readouterr().out
    # The current build goes only with --force (tests/engine/test_deploy_faults.py: refused without it)
    assert main(["deploy", "--devices", str(devices), "--device", "box", "--remove", content_hash, "--force"]) == 0
    assert not (workdir / "builds" / content_hash).exists() and not (workdir / "builds" / "current").exists()
    assert main(["deploy", "--devices", str(devices), "--device", "box", "--remove", "nothex"]) == 1
    assert "not a build's hash" in capsys.readouterr().err
    no_workdir = tmp_path / "bare.yaml"
    no_workdir.write_text(yaml.safe_dump({"devices": {"box": {"transport": "local"}}}))
    assert main(["deploy", "--devices", str(no_workdir), "--device", "box", str(build)]) == 2
    assert "set the device's `workdir`" in capsys.readouterr().err
