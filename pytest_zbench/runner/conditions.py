"""The device's conditions as the runner samples them itself, at the start and at the end of a run
(result.json `conditions`, docs/runner-protocol.md "Conditions a runner samples"): the hottest readable
thermal zone, each CPU's current clock and governor, from /sys on Linux and Android. Only what could be read is
reported; a platform without /sys reports {} (an iOS runner reports thermalState and low power mode instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SYS = Path("/sys")


def sample(sys_root: Path = SYS) -> dict[str, Any]:
    out: dict[str, Any] = {}
    zones = {}
    for temp in sorted((sys_root / "class" / "thermal").glob("thermal_zone*/temp")):
        raw = _read(temp)
        if raw is None or not raw.lstrip("-").isdigit():
            continue
        value = int(raw)
        celsius = value / 1000 if abs(value) >= 1000 else float(value)  # old kernels report whole degrees
        if -40 <= celsius <= 150:
            zones[temp.parent.name] = round(celsius, 1)
    if zones:
        out["thermal_zones_c"] = zones
        out["temp_c"] = max(zones.values())
    clocks, governors = {}, set()
    for cpu in sorted((sys_root / "devices" / "system" / "cpu").glob("cpu[0-9]*")):
        khz = _read(cpu / "cpufreq" / "scaling_cur_freq")
        if khz is not None and khz.isdigit():
            clocks[cpu.name] = int(khz)
        governor = _read(cpu / "cpufreq" / "scaling_governor")
        if governor:
            governors.add(governor)
    if clocks:
        out["cpu_freq_khz"] = clocks
    if len(governors) == 1:
        out["governor"] = governors.pop()
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
