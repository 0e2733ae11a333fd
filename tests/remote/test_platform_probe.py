"""Platform probes through real transports: the emulated adbd's stand-ins, local stand-ins, sshd without them."""

from __future__ import annotations

import os

from pytest_zbench.errors import DeviceError
from pytest_zbench.host.devices.conditions_probe import (
    decode_throttled,
    parse_dumpsys_battery,
    parse_pmset_therm,
    parse_thermal_zones,
    sample_conditions,
    split_sections,
)
from pytest_zbench.transports import make_transport
from tests.remote.fake_adbd import _standins
from tests.remote.servers import adb_device_entry

MAC_STANDINS = {
    "pmset": "#!/bin/sh\n[ \"$1 $2\" = '-g therm' ] || exit 1\n"
             "echo 'Note: No thermal warning level has been recorded'\n"
             "echo 'Note: No performance warning level has been recorded'\n"
             "echo 'CPU_Scheduler_Limit \t= 100'\necho 'CPU_Available_CPUs \t= 8'\necho 'CPU_Speed_Limit \t= 80'\n",
    "sysctl": "#!/bin/sh\nif [ \"$2\" = vm.loadavg ]; then echo '{ 1.52 1.31 1.20 }'; exit 0; fi\n"
              "echo 'Apple M1'\necho 8\necho 17179869184\n",
}


def opened(spec):
    t = make_transport(spec)
    t.open()
    return t


def check_shape(result: dict) -> None:
    assert set(result) >= {"platform", "sampled_utc", "conditions", "device", "readings", "unavailable"}
    for name, reason in result["unavailable"].items():
        assert isinstance(reason, str) and reason, name


def test_android_through_adb(adb_server, fake_adbd, write_inventory, tmp_path):
    spec = write_inventory({"n7": adb_device_entry(adb_server, fake_adbd.serial, tmp_path / "w")})["n7"]
    t = opened(spec)
    try:
        result = sample_conditions(t, spec)
    finally:
        t.close()
    check_shape(result)
    assert result["device"] == {"model": "Nexus 7", "soc": "tegra3", "os": "Android 7.1.2", "sdk": 25,
                                "os_build": "google/nakasi/grouper:7.1.2/NJH47F/4146041:userdebug/test-keys"}
    assert result["readings"]["battery"]["temp_c"] == 31.2
    assert result["conditions"]["power"] == "plugged" and result["conditions"]["battery_pct"] == 87
    # this machine may or may not expose thermal zones / cpufreq: either a reading or a reason, never an error
    for probe, key in (("thermal_zones", "thermal_zones_c"), ("cpufreq", "cpu_freq_khz")):
        assert (key in result["readings"]) != (probe in result["unavailable"])
    assert "load_avg" in result["readings"]


def test_raspberrypi_with_vcgencmd(write_inventory, tmp_path):
    bin_dir = _standins(tmp_path / "pi")
    spec = write_inventory({"pi": {"transport": "local", "platform": "raspberrypi",
                                   "env": {"PATH": f"{bin_dir}:{os.environ['PATH']}"}}})["pi"]
    t = opened(spec)
    try:
        result = sample_conditions(t, spec)
    finally:
        t.close()
    check_shape(result)
    readings = result["readings"]
    assert readings["soc_temp_c"] == 51.5
    assert readings["throttled_raw"] == "0x50005"
    assert readings["throttled_flags"] == ["under_voltage", "throttled", "under_voltage_occurred", "throttled_occurred"]
    assert readings["clocks_hz"] == {"arm": 1400000000, "core": 400000000, "v3d": 300000000}
    assert result["conditions"]["temp_c"] == 51.5 and result["conditions"]["throttled"] is True


def test_a_sample_beside_a_launch_reads_the_conditions_without_the_device_facts(write_inventory, tmp_path):
    """facts=False (the samples before and after each launch): the same conditions, no probe of what the device
    is (uname, os-release, memory, cores), and none of them reported unavailable."""
    bin_dir = _standins(tmp_path / "pi")
    spec = write_inventory({"pi": {"transport": "local", "platform": "raspberrypi",
                                   "env": {"PATH": f"{bin_dir}:{os.environ['PATH']}"}}})["pi"]
    t = opened(spec)
    try:
        whole, beside = sample_conditions(t, spec), sample_conditions(t, spec, facts=False)
    finally:
        t.close()
    check_shape(beside)
    assert whole["device"].get("kernel") and "kernel" not in beside["device"]
    assert not {"uname", "os_release", "meminfo", "nproc"} & set(beside["unavailable"])
    assert beside["readings"]["clocks_hz"] == whole["readings"]["clocks_hz"]
    assert beside["conditions"]["temp_c"] == 51.5 and beside["conditions"]["throttled"] is True
    assert "load_avg" in beside["readings"]


def test_raspberrypi_without_vcgencmd_over_ssh_records_unavailable(sshd, write_inventory, tmp_path):
    spec = write_inventory({"pi": sshd.device_entry(platform="raspberrypi", workdir=str(tmp_path / "w"))})["pi"]
    t = opened(spec)
    try:
        result = sample_conditions(t, spec)
    finally:
        t.close()
    check_shape(result)
    for probe in ("measure_temp", "get_throttled", "clock_arm", "clock_core", "clock_v3d"):
        assert "not found" in result["unavailable"][probe]
    assert result["conditions"]["throttled"] is None
    assert result["readings"]["load_avg"]


def test_macos_probes(write_inventory, tmp_path):
    bin_dir = tmp_path / "macbin"
    bin_dir.mkdir()
    for name, text in MAC_STANDINS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    spec = write_inventory({"mac": {"transport": "local", "platform": "macos",
                                    "env": {"PATH": f"{bin_dir}:{os.environ['PATH']}"}}})["mac"]
    t = opened(spec)
    try:
        result = sample_conditions(t, spec)
    finally:
        t.close()
    check_shape(result)
    assert result["device"] == {"cpu": "Apple M1", "cores": 8, "ram_mb": 16384}
    assert result["readings"]["pmset_therm"]["CPU_Speed_Limit"] == 80
    assert result["conditions"]["throttled"] is True and result["conditions"]["load_avg_1m"] == 1.52
    assert result["unavailable"] == {}


def test_ios_is_reported_by_the_runner(write_inventory):
    spec = write_inventory({"d": {"transport": "local", "platform": "ios"}})["d"]

    class NoRun:
        def run_script(self, *a, **k):
            raise AssertionError("nothing is run for this platform")

    result = sample_conditions(NoRun(), spec)
    assert result["conditions"] == {} and result["note"] == "reported by runner"


def test_a_failing_transport_is_recorded_not_raised(write_inventory):
    spec = write_inventory({"d": {"transport": "local", "platform": "linux"}})["d"]

    class Broken:
        def run_script(self, *a, **k):
            raise DeviceError("device d: connection refused")

    result = sample_conditions(Broken(), spec)
    assert "connection refused" in result["unavailable"]["probe"]


def test_parsers():
    assert split_sections("noise\n@@zb-begin a\nx\n@@zb-end 0\n@@zb-begin b\ny\n") == {"a": (0, "x"), "b": (None, "y")}
    assert decode_throttled(0) == [] and decode_throttled(0x80008) == ["soft_temp_limit", "soft_temp_limit_occurred"]
    zones = parse_thermal_zones("thermal_zone0 cpu-thermal 48312\nthermal_zone1 tegra 41\nthermal_zone2 bad -273000\n")
    assert zones == {"thermal_zone0": {"type": "cpu-thermal", "temp_c": 48.3}, "thermal_zone1": {"type": "tegra", "temp_c": 41.0}}
    assert parse_dumpsys_battery("  AC powered: false\n  USB powered: false\n  level: 40\n  scale: 50\n") == {
        "plugged": [], "level_pct": 80}
    assert parse_pmset_therm("Note: No thermal warning level has been recorded\n") == {
        "notes": ["No thermal warning level has been recorded"]}
