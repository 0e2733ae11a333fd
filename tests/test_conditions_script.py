"""The platform probe's shell helpers (host/devices/conditions_probe.py `_HELPERS`) read /sys with the shell's
own `read`: run by a real sh over a /sys tree of files made here (the helpers' paths pointed at it), they print
what reading each file with `cat` prints, and the parsers read it back."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_zbench.host.devices.conditions_probe import (
    _HELPERS,
    SCRIPTS,
    parse_cpufreq,
    parse_thermal_zones,
    split_sections,
)


def fake_sys(root: Path) -> Path:
    zones = {"thermal_zone0": ("cpu-thermal\n", "48312\n"), "thermal_zone1": ("gpu thermal zone\n", "51000"),
             "thermal_zone2": ("unreadable\n", None)}
    for zone, (kind, temp) in zones.items():
        folder = root / "class/thermal" / zone
        folder.mkdir(parents=True)
        (folder / "type").write_text(kind)
        if temp is not None:
            (folder / "temp").write_text(temp)
    for cpu, freq, governor in (("cpu0", "1500000\n", "ondemand\n"), ("cpu1", "600000\n", None)):
        folder = root / "devices/system/cpu" / cpu / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_cur_freq").write_text(freq)
        if governor is not None:
            (folder / "scaling_governor").write_text(governor)
    (root / "devices/system/cpu/cpu2").mkdir()  # no cpufreq: not listed
    return root


def run_helpers(root: Path, commands: str) -> str:
    script = (_HELPERS + commands).replace("/sys/", f"{root}/")
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_helpers_print_each_file_as_cat_would(tmp_path: Path) -> None:
    root = fake_sys(tmp_path)
    sections = split_sections(run_helpers(root, "s thermal_zones thermal\ns cpufreq cpufreq\ns load loadavg\n"))
    rc, thermal = sections["thermal_zones"]
    assert rc == 0 and thermal.splitlines() == ["thermal_zone0 cpu-thermal 48312",
                                                "thermal_zone1 gpu_thermal_zone 51000"]
    assert parse_thermal_zones(thermal) == {"thermal_zone0": {"type": "cpu-thermal", "temp_c": 48.3},
                                            "thermal_zone1": {"type": "gpu_thermal_zone", "temp_c": 51.0}}
    rc, cpufreq = sections["cpufreq"]
    assert rc == 0 and cpufreq.splitlines() == ["cpu0 1500000 ondemand", "cpu1 600000 "]
    assert parse_cpufreq(cpufreq) == ({"cpu0": 1500000, "cpu1": 600000}, {"cpu0": "ondemand"})
    rc, load = sections["load"]
    assert rc == 0 and len(load.split()) == 5 and "/" in load.split()[3]  # /proc/loadavg's one line


def test_no_readable_zone_or_cpu_is_a_failed_probe_with_its_reason(tmp_path: Path) -> None:
    sections = split_sections(run_helpers(tmp_path, "s thermal_zones thermal\ns cpufreq cpufreq\n"))
    assert sections["thermal_zones"] == (1, "no readable /sys/class/thermal/thermal_zone*/temp".replace(
        "/sys/", f"{tmp_path}/"))
    assert sections["cpufreq"][0] == 1 and "scaling_cur_freq" in sections["cpufreq"][1]


def test_every_platform_script_is_valid_sh() -> None:
    for platform, script in SCRIPTS.items():
        done = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, f"{platform}: {done.stderr}"
