"""webOS conditions over the command transport (host/devices/conditions_probe.py): the shipped novacom script
against a stand-in `novacom` that runs on this machine, so the probe reads this machine's /sys thermal zones,
cpufreq and /proc/loadavg through the real script; what it must find is read here straight from /sys."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from pytest_zbench.host.devices.conditions_probe import sample_conditions
from pytest_zbench.transports import make_transport
from tests.remote.test_device_scripts import FAKE_NOVACOM, NOVACOM


def sys_thermal_zones() -> dict[str, float]:
    zones = {}
    for path in glob.glob("/sys/class/thermal/thermal_zone*/temp"):
        try:
            raw = int(Path(path).read_text().strip())
        except (OSError, ValueError):
            continue
        celsius = raw / 1000 if abs(raw) >= 1000 else float(raw)
        if -40 <= celsius <= 150:
            zones[Path(path).parent.name] = celsius
    return zones


def sys_cpufreq_cpus() -> set[str]:
    return {Path(p).parent.parent.name for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
            if os.access(p, os.R_OK)}


def test_webos_conditions_come_from_sys_through_the_novacom_script(tmp_path, write_inventory, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "novacom").write_text(FAKE_NOVACOM)
    (bin_dir / "novacom").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    spec = write_inventory({"touchpad": {
        "transport": "command", "platform": "webos", "workdir": str(tmp_path / "media"),
        "push": [str(NOVACOM), "push"], "pull": [str(NOVACOM), "pull"],
        "exec": [str(NOVACOM), "exec"], "kill": [str(NOVACOM), "kill"],
    }})["touchpad"]
    transport = make_transport(spec)
    transport.open()
    try:
        result = sample_conditions(transport, spec)
    finally:
        transport.close()
    assert "note" not in result and "probe" not in result["unavailable"], result["unavailable"]
    readings, conditions = result["readings"], result["conditions"]
    zones = sys_thermal_zones()
    if zones:
        assert {z: v["temp_c"] for z, v in readings["thermal_zones_c"].items()} == {
            z: pytest.approx(t, abs=2.0) for z, t in zones.items()}  # a zone moves a degree or two between reads
        assert conditions["temp_c"] == max(v["temp_c"] for v in readings["thermal_zones_c"].values())
    else:
        assert "thermal_zone" in result["unavailable"]["thermal_zones"] and conditions["temp_c"] is None
    cpus = sys_cpufreq_cpus()
    if cpus:
        assert set(readings["cpu_freq_khz"]) == cpus
    else:
        assert "cpufreq" in result["unavailable"]["cpufreq"]
    assert conditions["load_avg_1m"] == readings["load_avg"][0] >= 0
    assert result["device"]["cpu"]["cores"] == os.cpu_count()
    assert "palm-build-info" in result["unavailable"]["palm_build"]  # not a TouchPad: said, not raised



# /proc and /sys as a TouchPad's (webOS 3.0.5, kernel 2.6.35) print them; constructed from the kernel's formats,
# no recording of one was found.
TOUCHPAD = """@@zb-begin uname
Linux 2.6.35-palm-tenderloin armv7l
@@zb-end 0
@@zb-begin os_release
grep: /etc/os-release: No such file or directory
@@zb-end 2
@@zb-begin meminfo
MemTotal:         999424 kB
@@zb-end 0
@@zb-begin nproc
2
@@zb-end 0
@@zb-begin palm_build
BUILDNAME=Nova-HP-Topaz-3.0.5-86
PRODUCT_VERSION_STRING=HP webOS 3.0.5
@@zb-end 0
@@zb-begin thermal_zones
thermal_zone0 pm8058_tz 41000
@@zb-end 0
@@zb-begin cpufreq
cpu0 1188000 ondemand
cpu1 384000 ondemand
@@zb-end 0
@@zb-begin load
1.25 0.90 0.70 2/180 1234
@@zb-end 0
"""


def test_a_touchpad_output_fills_conditions_and_device(write_inventory):
    from pytest_zbench.transports.base import CommandResult

    spec = write_inventory({"touchpad": {"transport": "local", "platform": "webos"}})["touchpad"]

    class Printed:
        def run_script(self, script, *, timeout_s):
            assert "/etc/palm-build-info" in script and "thermal_zone" in script
            return CommandResult(argv=("sh",), exit_code=0, stdout=TOUCHPAD, stderr="", timed_out=False, wall_s=0.1)

    result = sample_conditions(Printed(), spec)
    assert result["device"]["os"] == "HP webOS 3.0.5" and result["device"]["os_build"] == "Nova-HP-Topaz-3.0.5-86"
    assert result["device"]["cpu"] == {"arch": "armv7l", "cores": 2} and result["device"]["ram_mb"] == 976
    assert result["readings"]["cpu_freq_khz"] == {"cpu0": 1188000, "cpu1": 384000}
    assert result["conditions"]["temp_c"] == 41.0 and result["conditions"]["governor"] == "ondemand"
    assert result["conditions"]["load_avg_1m"] == 1.25
    assert list(result["unavailable"]) == ["os_release"]
