"""Platform probes: the device's conditions (temperature, clocks, throttling, power), sampled before and
after each launch through the device's own transport.

    sample_conditions(transport, spec, *, timeout_s=20.0) -> dict

One round trip per sample: a fixed POSIX sh script (no input from anywhere is interpolated into it) runs
every probe of the platform and prints each one's output between markers. A probe the device lacks (no
vcgencmd, no readable thermal zone, dumpsys not allowed, ...) is recorded under "unavailable" with the
reason; sampling never raises. The result:

    {"platform": "android",
     "sampled_utc": "2025-01-01T12:00:00+00:00",
     "conditions": {"power": "plugged", "battery_pct": 87, "governor": "interactive", "temp_c": 41.0,
                    "throttled": None, "thermal_state": "", "load_avg_1m": 1.2},   # the run.json keys
     "device":     {"model": "Nexus 7", "soc": "tegra3", "os": "Android 7.1.2", "os_build": "<fingerprint>",
                    "sdk": 25, "cpu": "...", "cores": 4, "ram_mb": 1024},           # what the probe could tell
     "readings":   {...every parsed value: thermal_zones_c, cpu_freq_khz, clocks_hz, throttled_flags, ...},
     "unavailable": {"thermal_zones": "no readable /sys/class/thermal/thermal_zone*/temp", ...},
     "note": "..."}                                                                 # ios only

webOS (the TouchPad, over the command transport's novacom script) is Linux underneath: the same /sys thermal
zones, cpufreq and load as `linux`, the release from /etc/palm-build-info. iOS: nothing can be sampled from
the host side ({} for conditions); the runner reports its own (result.json `conditions`, thermalState and
low power mode; host/measure/runner_conditions.py).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Any

from ...errors import DeviceError
from ...inventory import DeviceSpec

BEGIN = "@@zb-begin "
END = "@@zb-end "
REPORTED_BY_RUNNER = "reported by runner"

# get_throttled bits (Raspberry Pi firmware documentation)
THROTTLED_BITS = {
    0: "under_voltage",
    1: "arm_freq_capped",
    2: "throttled",
    3: "soft_temp_limit",
    16: "under_voltage_occurred",
    17: "arm_freq_capped_occurred",
    18: "throttled_occurred",
    19: "soft_temp_limit_occurred",
}

PI_SOCS = {"Pi 3": "bcm2837", "Pi 4": "bcm2711", "Pi 5": "bcm2712", "Pi 2": "bcm2836", "Zero 2": "bcm2837"}

# The readings use the shell's own `read`, not `cat` in a command substitution: each of those was two processes
# per file (a subshell and cat), per thermal zone and per CPU, twice a launch (docs/architecture.md, "Host work
# per launch"). `got` prints a one-line file's content and fails like cat when it cannot be read.
_HELPERS = r"""
s() { n=$1; shift; echo "@@zb-begin $n"; "$@" 2>&1; echo "@@zb-end $?"; }
got() { v=; { IFS= read -r v || [ -n "$v" ]; } 2>/dev/null < "$1" || return 1; }
thermal() {
  found=0
  for z in /sys/class/thermal/thermal_zone*; do
    if [ -r "$z/temp" ]; then
      got "$z/temp" || continue
      t=$v; ty=
      got "$z/type" && ty=$v
      case $ty in *" "*) ty=$(printf '%s' "$ty" | tr ' ' _) ;; esac
      echo "${z##*/} ${ty:-unknown} $t"; found=1
    fi
  done
  [ $found = 1 ] || { echo "no readable /sys/class/thermal/thermal_zone*/temp"; return 1; }
}
cpufreq() {
  found=0
  for c in /sys/devices/system/cpu/cpu[0-9]*; do
    if [ -r "$c/cpufreq/scaling_cur_freq" ]; then
      f=; g=
      got "$c/cpufreq/scaling_cur_freq" && f=$v
      got "$c/cpufreq/scaling_governor" && g=$v
      echo "${c##*/} $f $g"
      found=1
    fi
  done
  [ $found = 1 ] || { echo "no readable /sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq"; return 1; }
}
loadavg() { got /proc/loadavg || { cat /proc/loadavg; return; }; echo "$v"; }
"""
# The device's own clock, read first in the script so that it falls early in the host's window around the round
# trip: a device that is its own machine (a Pi, docs/vm-device.md) keeps time of its own (_clock_offset).
_CLOCK = "s clock date +%s.%N\n"
# What the device is (run.json `device`, part of its fingerprint); cheap reads, no input interpolated.
_LINUX_FACTS = (
    "s uname uname -s -r -m\n"
    "s os_release grep -m1 ^PRETTY_NAME= /etc/os-release\n"
    "s meminfo grep -m1 ^MemTotal: /proc/meminfo\n"
    "s nproc getconf _NPROCESSORS_ONLN\n"
)

SCRIPTS = {
    "linux": _HELPERS + _CLOCK + _LINUX_FACTS + "s thermal_zones thermal\ns cpufreq cpufreq\ns load loadavg\n",
    "raspberrypi": _HELPERS + _CLOCK + _LINUX_FACTS + (
        "s dt_model cat /proc/device-tree/model\n"
        "s measure_temp vcgencmd measure_temp\n"
        "s get_throttled vcgencmd get_throttled\n"
        "s clock_arm vcgencmd measure_clock arm\n"
        "s clock_core vcgencmd measure_clock core\n"
        "s clock_v3d vcgencmd measure_clock v3d\n"
        "s thermal_zones thermal\ns cpufreq cpufreq\ns load loadavg\n"
    ),
    "android": _HELPERS + (
        "s getprop getprop\n"
        "s battery dumpsys battery\n"
        "s thermal_zones thermal\ns cpufreq cpufreq\ns load loadavg\n"
    ),
    "webos": _HELPERS + _CLOCK + _LINUX_FACTS + (
        "s palm_build cat /etc/palm-build-info\n"
        "s thermal_zones thermal\ns cpufreq cpufreq\ns load loadavg\n"
    ),
    "macos": _HELPERS + (
        "s pmset_therm pmset -g therm\n"
        "s sysctl sysctl -n machdep.cpu.brand_string hw.ncpu hw.memsize\n"
        "s load sysctl -n vm.loadavg\n"
    ),
}


# Around each launch only the conditions are kept (host/measure/launches.py `launch_conditions`), never the
# device's facts, which the session's first sample took: those probes are left out of the samples beside a
# launch (four processes fewer, twice a launch). Platforms not listed run their whole script.
_FACT_SECTIONS = ("uname", "os_release", "meminfo", "nproc")
CONDITIONS_SCRIPTS = {platform: SCRIPTS[platform].replace(_LINUX_FACTS, "")
                      for platform in ("linux", "raspberrypi", "webos")}


def sample_conditions(transport: Any, spec: DeviceSpec, *, timeout_s: float = 20.0,
                      facts: bool = True) -> dict[str, Any]:
    """Sample the device's conditions now; never raises for a probe the device lacks (see module doc).
    `facts=False`: a sample beside a launch, without the probes of what the device is (its `device` may stay
    empty)."""
    platform = spec.platform
    result: dict[str, Any] = {
        "platform": platform,
        "sampled_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "conditions": {},
        "device": {},
        "readings": {},
        "unavailable": {},
    }
    script = SCRIPTS.get(platform) if facts else CONDITIONS_SCRIPTS.get(platform, SCRIPTS.get(platform))
    if script is None:
        result["note"] = REPORTED_BY_RUNNER
        return result
    window = [time.time()]
    try:
        ran = transport.run_script(script, timeout_s=timeout_s)
        window.append(time.time())
    except (DeviceError, OSError) as exc:
        result["unavailable"]["probe"] = f"could not run the probe script: {exc}"
        return result
    if ran.timed_out:
        result["unavailable"]["probe"] = f"probe script timed out after {timeout_s:.0f} s"
    sections = split_sections(ran.stdout)
    if not sections and not ran.timed_out:
        result["unavailable"]["probe"] = (f"probe script printed nothing usable (exit {ran.exit_code}): "
                                          f"{(ran.stderr or ran.stdout).strip()[-300:]}")
        return result
    parse = {"linux": _linux, "raspberrypi": _raspberrypi, "android": _android, "macos": _macos,
             "webos": _webos}[platform]
    parse(sections, result)
    if "clock" in sections:
        _clock_offset(sections, result, window[0], window[-1])
    if script is not SCRIPTS[platform]:
        for name in _FACT_SECTIONS:  # not asked for: not unavailable either
            result["unavailable"].pop(name, None)
    _fill_conditions(result)
    return result


def _clock_offset(sections: dict[str, tuple[int | None, str]], result: dict[str, Any], sent: float,
                  answered: float) -> None:
    """The device's clock against the host's: `clock_offset_s` is the device's time minus the middle of the
    host's window around the round trip (positive: the device is ahead), true within `clock_offset_bound_s`,
    half that window (plus a second when the device's `date` has no %N)."""
    text = _ok(sections, "clock", result)
    if text is None:
        return
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?(.*)", text.strip())
    if match is None:
        result["unavailable"]["clock"] = f"date printed {text.strip()[:40]!r}, not seconds since the epoch"
        return
    whole, fraction, rest = match.groups()
    device = float(f"{whole}.{fraction}") if fraction else float(whole)
    coarse = 1.0 if rest or not fraction else 0.0  # `%N` not understood: whole seconds only
    result["readings"]["device_clock_utc"] = datetime.fromtimestamp(device, timezone.utc).isoformat(
        timespec="milliseconds")
    result["readings"]["clock_offset_s"] = round(device - (sent + answered) / 2, 3)
    result["readings"]["clock_offset_bound_s"] = round((answered - sent) / 2 + coarse, 3)


def split_sections(stdout: str) -> dict[str, tuple[int | None, str]]:
    """`@@zb-begin NAME` ... `@@zb-end RC` blocks -> {NAME: (RC, text)}; an unterminated block gets RC None."""
    sections: dict[str, tuple[int | None, str]] = {}
    name: str | None = None
    body: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(BEGIN):
            if name is not None:
                sections[name] = (None, "\n".join(body))
            name, body = line[len(BEGIN):].strip(), []
        elif line.startswith(END) and name is not None:
            rc_text = line[len(END):].strip()
            sections[name] = (int(rc_text) if rc_text.lstrip("-").isdigit() else None, "\n".join(body))
            name, body = None, []
        elif name is not None:
            body.append(line)
    if name is not None:
        sections[name] = (None, "\n".join(body))
    return sections


def _ok(sections: dict[str, tuple[int | None, str]], name: str, result: dict[str, Any]) -> str | None:
    """The section's text if the probe worked, else None with the reason recorded as unavailable."""
    if name not in sections:
        result["unavailable"][name] = "probe did not run (script cut short)"
        return None
    rc, text = sections[name]
    if rc != 0 or not text.strip():
        reason = text.strip().splitlines()[-1] if text.strip() else "no output"
        if rc == 127 or "not found" in reason:
            reason = f"command not found: {reason}"
        result["unavailable"][name] = reason if rc is None or rc == 0 else f"{reason} (exit {rc})"
        return None
    return text


# -- common /sys and /proc readings ----------------------------------------------------------------------


def parse_thermal_zones(text: str) -> dict[str, dict[str, Any]]:
    zones = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        zone, kind, raw = parts
        try:
            value = int(raw)
        except ValueError:
            continue
        celsius = value / 1000 if abs(value) >= 1000 else float(value)  # some old kernels report whole degrees
        if -40 <= celsius <= 150:
            zones[zone] = {"type": kind, "temp_c": round(celsius, 1)}
    return zones


def parse_cpufreq(text: str) -> tuple[dict[str, int], dict[str, str]]:
    freqs, governors = {}, {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            freqs[parts[0]] = int(parts[1])
            if len(parts) >= 3:
                governors[parts[0]] = parts[2]
    return freqs, governors


def _sys_common(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    readings = result["readings"]
    text = _ok(sections, "thermal_zones", result)
    if text is not None:
        zones = parse_thermal_zones(text)
        if zones:
            readings["thermal_zones_c"] = zones
        else:
            result["unavailable"]["thermal_zones"] = "thermal zones report no plausible temperature"
    text = _ok(sections, "cpufreq", result)
    if text is not None:
        freqs, governors = parse_cpufreq(text)
        if freqs:
            readings["cpu_freq_khz"] = freqs
        if governors:
            readings["governors"] = governors
    text = _ok(sections, "load", result)
    if text is not None:
        numbers = re.findall(r"\d+(?:\.\d+)?", text)
        if numbers:
            readings["load_avg"] = [float(n) for n in numbers[:3]]


def _linux(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    _linux_facts(sections, result)
    _sys_common(sections, result)


def _webos(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    _linux_facts(sections, result)
    text = _ok(sections, "palm_build", result)
    if text is not None:  # PRODUCT_VERSION_STRING=HP webOS 3.0.5, BUILDNAME=Nova-...
        fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        if fields.get("PRODUCT_VERSION_STRING"):
            result["device"]["os"] = fields["PRODUCT_VERSION_STRING"].strip()
        if fields.get("BUILDNAME"):
            result["device"]["os_build"] = fields["BUILDNAME"].strip()
    _sys_common(sections, result)


def _linux_facts(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    """uname, os-release, memory and cores into `device` (the keys of run.json's device section)."""
    device = result["device"]
    text = _ok(sections, "uname", result)
    if text is not None:
        parts = text.split()
        if len(parts) >= 3:
            device["kernel"] = parts[1]
            device["model"] = parts[2]
            device["cpu"] = {"arch": parts[2]}
    text = _ok(sections, "os_release", result)
    if text is not None and "=" in text:
        device["os"] = text.strip().split("=", 1)[1].strip('"')
    text = _ok(sections, "meminfo", result)
    if text is not None:
        match = re.search(r"(\d+)\s*kB", text)
        if match:
            device["ram_mb"] = int(match.group(1)) // 1024
    text = _ok(sections, "nproc", result)
    if text is not None and text.strip().isdigit():
        device.setdefault("cpu", {})["cores"] = int(text.strip())


# -- Raspberry Pi ---------------------------------------------------------------------------------------------


def decode_throttled(value: int) -> list[str]:
    return [name for bit, name in THROTTLED_BITS.items() if value & (1 << bit)]


def _raspberrypi(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    readings = result["readings"]
    _linux_facts(sections, result)
    text = _ok(sections, "dt_model", result)
    if text is not None:
        model = text.replace("\0", "").strip()  # "Raspberry Pi 3 Model B Plus Rev 1.3" (NUL-terminated)
        result["device"]["model"] = model
        soc = next((soc for name, soc in PI_SOCS.items() if name in model), None)
        if soc:
            result["device"]["soc"] = soc
    text = _ok(sections, "measure_temp", result)
    if text is not None:
        match = re.search(r"temp=([-\d.]+)", text)
        if match:
            readings["soc_temp_c"] = float(match.group(1))
        else:
            result["unavailable"]["measure_temp"] = f"unexpected output {text.strip()!r}"
    text = _ok(sections, "get_throttled", result)
    if text is not None:
        match = re.search(r"throttled=(0x[0-9a-fA-F]+|\d+)", text)
        if match:
            value = int(match.group(1), 0)
            readings["throttled_raw"] = f"0x{value:x}"
            readings["throttled_flags"] = decode_throttled(value)
        else:
            result["unavailable"]["get_throttled"] = f"unexpected output {text.strip()!r}"
    clocks = {}
    for clock in ("arm", "core", "v3d"):
        text = _ok(sections, f"clock_{clock}", result)
        if text is not None:
            match = re.search(r"frequency\(\d+\)=(\d+)", text)
            if match:
                clocks[clock] = int(match.group(1))
            else:
                result["unavailable"][f"clock_{clock}"] = f"unexpected output {text.strip()!r}"
    if clocks:
        readings["clocks_hz"] = clocks
    _sys_common(sections, result)


# -- Android ----------------------------------------------------------------------------------------------------


def parse_getprop(text: str) -> dict[str, str]:
    props = {}
    for match in re.finditer(r"^\[([^\]]+)\]: \[(.*)\]\s*$", text, re.M):
        props[match.group(1)] = match.group(2)
    return props


def parse_dumpsys_battery(text: str) -> dict[str, Any]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep:
            values[key.strip()] = value.strip()
    out: dict[str, Any] = {}
    if not values:
        return out
    plugged = [kind for kind in ("AC", "USB", "Wireless", "Dock") if values.get(f"{kind} powered") == "true"]
    out["plugged"] = plugged
    try:
        level, scale = int(values["level"]), int(values.get("scale", "100") or 100)
        out["level_pct"] = round(100 * level / scale) if scale else level
    except (KeyError, ValueError):
        pass
    try:
        out["temp_c"] = int(values["temperature"]) / 10  # tenths of a degree
    except (KeyError, ValueError):
        pass
    for key in ("status", "health", "voltage"):
        if values.get(key, "").lstrip("-").isdigit():
            out[key] = int(values[key])
    return out


def _android(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    readings, device = result["readings"], result["device"]
    text = _ok(sections, "getprop", result)
    if text is not None:
        props = parse_getprop(text)
        wanted = ("ro.product.model", "ro.board.platform", "ro.hardware", "ro.build.fingerprint",
                  "ro.build.version.release", "ro.build.version.sdk", "ro.product.manufacturer")
        readings["props"] = {key: props[key] for key in wanted if key in props}
        if "ro.product.model" in props:
            device["model"] = props["ro.product.model"]
        soc = props.get("ro.board.platform") or props.get("ro.hardware")
        if soc:
            device["soc"] = soc
        if "ro.build.version.release" in props:
            device["os"] = f"Android {props['ro.build.version.release']}"
        if "ro.build.fingerprint" in props:
            device["os_build"] = props["ro.build.fingerprint"]
        if props.get("ro.build.version.sdk", "").isdigit():
            device["sdk"] = int(props["ro.build.version.sdk"])
    text = _ok(sections, "battery", result)
    if text is not None:
        battery = parse_dumpsys_battery(text)
        if battery:
            readings["battery"] = battery
        else:
            result["unavailable"]["battery"] = f"unexpected dumpsys battery output: {text.strip()[:200]!r}"
    _sys_common(sections, result)


# -- macOS --------------------------------------------------------------------------------------------------------


def parse_pmset_therm(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    notes = []
    for line in text.splitlines():
        line = line.strip()
        match = re.match(r"^(\w+)\s*=\s*(\d+)$", line)
        if match:
            out[match.group(1)] = int(match.group(2))
        elif line.startswith("Note:"):
            notes.append(line[5:].strip())
    if notes:
        out["notes"] = notes
    return out


def _macos(sections: dict[str, tuple[int | None, str]], result: dict[str, Any]) -> None:
    readings, device = result["readings"], result["device"]
    text = _ok(sections, "pmset_therm", result)
    if text is not None:
        readings["pmset_therm"] = parse_pmset_therm(text)
    text = _ok(sections, "sysctl", result)
    if text is not None:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) >= 3:
            device["cpu"] = lines[0]
            if lines[1].isdigit():
                device["cores"] = int(lines[1])
            if lines[2].isdigit():
                device["ram_mb"] = int(lines[2]) // (1024 * 1024)
        else:
            result["unavailable"]["sysctl"] = f"unexpected output {text.strip()!r}"
    text = _ok(sections, "load", result)
    if text is not None:
        numbers = re.findall(r"\d+(?:\.\d+)?", text)
        if numbers:
            readings["load_avg"] = [float(n) for n in numbers[:3]]


# -- the run.json `conditions` keys ---------------------------------------------------------------------------------


def _fill_conditions(result: dict[str, Any]) -> None:
    readings = result["readings"]
    conditions: dict[str, Any] = {
        "power": "unknown", "battery_pct": None, "governor": "", "temp_c": None, "throttled": None,
        "thermal_state": "", "load_avg_1m": None,
    }
    battery = readings.get("battery")
    if battery:
        conditions["power"] = "plugged" if battery.get("plugged") else "battery"
        conditions["battery_pct"] = battery.get("level_pct")
    governors = readings.get("governors") or {}
    if governors:
        first = governors.get("cpu0") or next(iter(governors.values()))
        conditions["governor"] = first if len(set(governors.values())) == 1 else ",".join(
            f"{cpu}={gov}" for cpu, gov in sorted(governors.items()))
    if "soc_temp_c" in readings:
        conditions["temp_c"] = readings["soc_temp_c"]
    elif readings.get("thermal_zones_c"):
        conditions["temp_c"] = max(zone["temp_c"] for zone in readings["thermal_zones_c"].values())
    if "throttled_flags" in readings:
        conditions["throttled"] = any(flag in readings["throttled_flags"]
                                      for flag in ("arm_freq_capped", "throttled", "soft_temp_limit"))
    therm = readings.get("pmset_therm")
    if therm is not None:
        limit = therm.get("CPU_Speed_Limit")
        if limit is not None:
            conditions["throttled"] = limit < 100
            conditions["thermal_state"] = f"CPU_Speed_Limit={limit}"
        elif therm.get("notes"):
            conditions["thermal_state"] = "no thermal warning recorded" if any(
                "No thermal warning" in n for n in therm["notes"]) else "; ".join(therm["notes"])
    if readings.get("load_avg"):
        conditions["load_avg_1m"] = readings["load_avg"][0]
    result["conditions"] = conditions
