"""What the runner runs on, for the probe's `machine` key (docs/runner-protocol.md): read here, on the device,
because the host cannot tell. Under qemu-user the host is x86_64 while this process is aarch64, and only the
process itself sees the difference; the software golden set follows this architecture (docs/goldens.md).

Everything is best effort: a fact that cannot be read is left out, never guessed.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from pytest_zbench.protocol import arch_family

# ARM's "CPU part" numbers of common cores (implementer 0x41, ARM Ltd), from the cores' reference manuals.
ARM_PARTS = {
    "0xb76": "ARM1176", "0xc07": "Cortex-A7", "0xc08": "Cortex-A8", "0xc09": "Cortex-A9", "0xc0f": "Cortex-A15",
    "0xd03": "Cortex-A53", "0xd04": "Cortex-A35", "0xd05": "Cortex-A55", "0xd07": "Cortex-A57",
    "0xd08": "Cortex-A72", "0xd09": "Cortex-A73", "0xd0a": "Cortex-A75", "0xd0b": "Cortex-A76",
    "0xd0c": "Neoverse-N1", "0xd0d": "Cortex-A77", "0xd40": "Neoverse-V1", "0xd41": "Cortex-A78",
    "0xd44": "Cortex-X1", "0xd46": "Cortex-A510", "0xd47": "Cortex-A710", "0xd49": "Neoverse-N2",
}


def machine_facts(libraries: dict[str, str] | None = None) -> dict[str, Any]:
    """The probe's `machine` object for this process."""
    facts = _process_facts(libraries)
    facts.update(linux_facts(Path("/")))
    return {k: v for k, v in facts.items() if v not in (None, "")}


def linux_facts(root: Path) -> dict[str, Any]:
    """The SoC, the OS build and the CPU's highest clock, where Linux's /proc and /sys under `root` give them
    (docs/runner-protocol.md, probe `machine`); a fact that is not there is left out.

    * soc: /sys/devices/soc0 (`family` and `machine`, as Qualcomm's and other SoC drivers publish them), else
      the device tree's most generic `compatible` entry (the SoC, e.g. brcm,bcm2711), else cpuinfo's Hardware.
    * os_build: os-release's BUILD_ID (image-based systems), else the kernel's build string (uname -v,
      /proc/sys/kernel/version), which tells two builds of one kernel release apart.
    * max_mhz: the highest cpuinfo_max_freq of any CPU (the big cores of a big.LITTLE SoC), from cpufreq.
    """
    facts: dict[str, Any] = {}
    soc = _soc(root)
    if soc:
        facts["soc"] = soc
    build = _os_release_field(_read(str(root / "etc/os-release")), "BUILD_ID") or (
        _read(str(root / "proc/sys/kernel/version")) or "").strip()
    if build:
        facts["os_build"] = build
    khz = [int(text) for cpu in sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*"))
           if (text := (_read(str(cpu / "cpufreq/cpuinfo_max_freq")) or "").strip()).isdigit()]
    if khz and max(khz) > 0:
        facts["max_mhz"] = max(khz) // 1000
    return facts


def _soc(root: Path) -> str | None:
    soc0 = root / "sys/devices/soc0"
    named = [(_read(str(soc0 / name)) or "").strip() for name in ("family", "machine")]
    if named[1]:
        return " ".join(dict.fromkeys(n for n in named if n))  # "Snapdragon SM8250"; one name once
    compatible = [c for c in (_read(str(root / "proc/device-tree/compatible")) or "").split("\0") if c.strip()]
    if compatible:
        return compatible[-1].strip()
    for line in (_read(str(root / "proc/cpuinfo")) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "Hardware" and value.strip():
            return value.strip()
    return None


def _os_release_field(text: str | None, key: str) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1].strip().strip('"') or None
    return None


def _process_facts(libraries: dict[str, str] | None) -> dict[str, Any]:
    arch = platform.machine()
    facts: dict[str, Any] = {"arch": arch, "cores": os.cpu_count(), "os": _os_name(), "kernel": platform.release(),
                             "python": platform.python_version()}
    cpu_model, emulated = cpu_from_cpuinfo(_read("/proc/cpuinfo"), arch)
    if cpu_model:
        facts["cpu_model"] = cpu_model
    if emulated is not None:
        facts["emulated"] = emulated
    ram = _ram_mb(_read("/proc/meminfo"))
    if ram:
        facts["ram_mb"] = ram
    if libraries:
        facts["libraries"] = dict(libraries)
    return facts


def cpu_from_cpuinfo(text: str | None, arch: str) -> tuple[str | None, bool | None]:
    """(CPU model, emulated) from /proc/cpuinfo. qemu-user passes the host's file through unchanged, so an
    x86 cpuinfo read by an ARM process (or the reverse) describes another machine: no model then, and
    emulated=True. (None, None) when there is nothing to read (not Linux)."""
    if not text:
        return None, None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    describes = "x86" if "vendor_id" in fields or "flags" in fields else (
        "arm" if "CPU implementer" in fields or "CPU architecture" in fields else None)
    family = arch_family(arch)
    own = "x86" if family in ("x86_64", "x86") else "arm" if family in ("aarch64", "arm") else None
    if describes is not None and own is not None and describes != own:
        return None, True
    if describes == "x86":
        return fields.get("model name") or None, False
    if describes == "arm":
        # A Raspberry Pi kernel names the board; otherwise the core is named by its part number.
        part = fields.get("CPU part", "").lower()
        core = ARM_PARTS.get(part) if fields.get("CPU implementer", "").lower() == "0x41" else None
        name = fields.get("Model") or fields.get("Hardware") or fields.get("model name")
        parts = [p for p in (name, core or (f"CPU part {part}" if part else None)) if p]
        return (", ".join(parts) or None), False
    return fields.get("model name") or None, None


def _os_name() -> str:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return f"{platform.system()} {platform.release()}".strip()


def _ram_mb(meminfo: str | None) -> int | None:
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", meminfo or "", re.M)
    return int(match.group(1)) // 1024 if match else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
