"""The session's device probed in the background from the session's start (host/devices/device.py
start_probes, Device.start_probe): the same probe as on first use, its failure raised where the probe is
collected (so the device is quarantined as before), and nothing started for a session on several devices.

Real runners on the local transport: the reference runner, and an interpreter that fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_zbench.errors import DeviceError
from pytest_zbench.host.devices.background import Background
from pytest_zbench.host.devices.device import session_device, start_probes
from pytest_zbench.inventory import Inventory, load_inventory
from pytest_zbench.settings import Settings, build_settings

FAILING_RUNNER = [sys.executable, "-c", "import sys; sys.stderr.write('no such backend\\n'); sys.exit(3)"]


def inventory(tmp_path: Path, runners: dict[str, list[str]]) -> Inventory:
    lines = ["devices:"]
    for name, runner in runners.items():
        argv = ", ".join(json.dumps(part) for part in runner)  # a JSON string is a YAML flow scalar
        lines += [f"  {name}:", "    transport: local", "    backend: software", f"    runner: [{argv}]",
                  "    display: {width: 64, height: 48, refresh_hz: 60}"]
    path = tmp_path / "devices.yaml"
    path.write_text("\n".join(lines) + "\n")
    return load_inventory(path)


def settings(tmp_path: Path, devices: str) -> Settings:
    given = {"devices": devices, "timeout_s": "60"}
    return build_settings(lambda option: given.get(option.name), tmp_path, quick=False)


def test_a_probe_started_early_is_the_probe_of_first_use(tmp_path: Path) -> None:
    runner = [sys.executable, "-m", "pytest_zbench.runner"]
    inv = inventory(tmp_path, {"here": runner})
    probing = start_probes(settings(tmp_path, "here"), inv)
    assert list(probing) == ["here"]
    plain = session_device(inv.get("here"), settings(tmp_path, "here"))
    try:
        early, late = probing["here"].probe(), plain.probe()
        assert early.runner_name == late.runner_name
        assert set(early.backends) == set(late.backends)
        assert "software" in early.backends
        assert probing["here"].probe() is early  # once per device
    finally:
        probing["here"].close()
        plain.close()


def test_a_failed_early_probe_raises_where_it_is_collected(tmp_path: Path) -> None:
    inv = inventory(tmp_path, {"broken": FAILING_RUNNER})
    device = start_probes(settings(tmp_path, "broken"), inv)["broken"]
    try:
        with pytest.raises(DeviceError, match=r"device broken: runner probe .* exited with 3: no such backend"):
            device.probe()
    finally:
        device.close()


def test_a_device_closed_while_its_probe_runs_waits_for_it(tmp_path: Path) -> None:
    inv = inventory(tmp_path, {"broken": FAILING_RUNNER})
    device = start_probes(settings(tmp_path, "broken"), inv)["broken"]
    device.close()  # must not leave the probe's thread using a closed transport
    assert device._probing is None


def test_no_early_probe_for_several_devices_or_an_unknown_one(tmp_path: Path) -> None:
    inv = inventory(tmp_path, {"a": FAILING_RUNNER, "b": FAILING_RUNNER})
    assert start_probes(settings(tmp_path, "a,b"), inv) == {}
    assert start_probes(settings(tmp_path, "c"), inv) == {}


def test_background_hands_back_the_value_or_the_exception() -> None:
    assert Background(lambda: 42).outcome() == 42

    def fails() -> int:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        Background(fails).outcome()
