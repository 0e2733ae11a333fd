"""The device's clock against the host's (conditions_probe._clock_offset), recorded with every platform sample
of a Linux-like device: a device that is its own machine keeps its own time (docs/vm-device.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_zbench.host.devices.conditions_probe import _clock_offset, sample_conditions, split_sections
from pytest_zbench.inventory import load_inventory
from pytest_zbench.transports import make_transport


def test_a_local_linux_device_is_on_the_hosts_clock(tmp_path: Path) -> None:
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(yaml.safe_dump({"devices": {"here": {"transport": "local", "platform": "linux"}}}))
    spec = load_inventory(inventory).devices["here"]
    transport = make_transport(spec)
    transport.open()
    try:
        readings = sample_conditions(transport, spec)["readings"]
    finally:
        transport.close()
    # One clock on both sides: the offset is zero within the bound (half the round trip), 1 ms of rounding.
    assert abs(readings["clock_offset_s"]) <= readings["clock_offset_bound_s"] + 0.001
    assert readings["device_clock_utc"].endswith("+00:00")


def offset(text: str, sent: float, answered: float) -> dict:
    result: dict = {"readings": {}, "unavailable": {}}
    _clock_offset(split_sections(f"@@zb-begin clock\n{text}\n@@zb-end 0\n"), result, sent, answered)
    return result


def test_the_offset_is_from_the_middle_of_the_window_and_bounded_by_half_of_it() -> None:
    ahead = offset("1000012.250000000", 1000000.0, 1000001.0)["readings"]
    assert ahead["clock_offset_s"] == 11.75 and ahead["clock_offset_bound_s"] == 0.5
    assert ahead["device_clock_utc"] == "1970-01-12T13:46:52.250+00:00"
    # A date without %N (prints it back, or nothing after the dot): whole seconds, a second more of doubt.
    coarse = offset("999990.%N", 1000000.0, 1000000.2)["readings"]
    assert coarse["clock_offset_s"] == -10.1 and coarse["clock_offset_bound_s"] == 1.1
    assert "not seconds" in offset("Mon Dec 7", 0.0, 1.0)["unavailable"]["clock"]
