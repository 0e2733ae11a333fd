"""What the run was measured with: the build under test, what identifies a device's environment, and the
conditions of the machine (run.json's app, device, gpu, display, conditions; docs/architecture.md).

Only facts that are cheap to read and safe to publish: no environment variables, no user names, no paths
of credentials.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...protocol import Machine, RunnerBuild, Toolchain, arch_family
from ...regression.history import environment_fingerprint

# What identifies a device's environment: these run.json sections of the device (its facts: model, SoC, CPU,
# RAM, OS, kernel; the GPU driver strings and what the context offers; the display), without the keys below.
# A change in any of it is a new environment, for run.json's `fingerprint`, the history's runs and the
# verdict's fingerprint changes alike. Left out: the runner (often the build under test itself: a new build
# is not a new environment), the timer check's readings, what the launches fill in later (the timer source a
# run used, vsync and the present source), the fingerprint itself; conditions are never part of it.
ENVIRONMENT_SECTIONS = ("device", "gpu", "display")
NOT_ENVIRONMENT: Mapping[str, tuple[str, ...]] = {
    "device": ("fingerprint",),
    "gpu": ("runner", "timer_check", "timer_source", "timer_source_used"),
    # where the refresh rate came from is not the display: refresh_hz itself is (host/devices/refresh_rate.py)
    "display": ("vsync", "present_source", "refresh_source", "measured_refresh_hz", "measured_refresh_source",
                "refresh_warning"),
}


def environment(sections: Mapping[str, Any]) -> dict[str, Any]:
    """The environment of a device, from its run.json sections: equal environments, equal fingerprints,
    whenever in the session they are read."""
    return {name: {k: v for k, v in (sections.get(name) or {}).items() if k not in NOT_ENVIRONMENT.get(name, ())}
            for name in ENVIRONMENT_SECTIONS}


def fingerprint(sections: Mapping[str, Any]) -> str:
    """The hash of a device's environment (run.json `fingerprint`, the history's runs.fingerprint)."""
    return environment_fingerprint(environment(sections))


def app_info(root: Path) -> dict[str, Any]:
    """The build under test, until a runner reports its own (`runner_build`). ZBENCH_BUILD_HASH overrides git,
    for CI systems that build elsewhere; the harness checkout's commit is the last resort, and says so
    (`build_source`), since it does not change with the engine."""
    build = os.environ.get("ZBENCH_BUILD_HASH", "")
    dirty: bool | None = None
    source = "env" if build else ""
    if not build:
        build = _git(root, "rev-parse", "HEAD") or ""
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        dirty = bool(status) if status is not None and build else None
        source = "harness checkout" if build else ""
    return {
        "build_hash": build,
        "build_source": source,
        "dirty": dirty,
        "zinc_version": os.environ.get("ZBENCH_ZINC_VERSION", ""),
        "build_type": os.environ.get("ZBENCH_BUILD_TYPE", ""),
        "compiler": "",
        "flags": "",
    }


def build_record(build: RunnerBuild | None) -> dict[str, Any] | None:
    """A runner's build as run.json writes it (None: its probe reported none)."""
    return None if build is None else {"id": build.id, "dirty": build.dirty, "describe": build.describe}


def ab_builds(app: dict[str, Any], device: str, a: RunnerBuild | None, b: RunnerBuild | None) -> None:
    """Record in run.json's `app.ab_builds` both builds of an A/B session on a device, as their probes report
    them: app.build_hash is A's (the device's runner), so B (often the change under test) is named here."""
    app.setdefault("ab_builds", {})[device] = {"a": build_record(a), "b": build_record(b)}


def runner_build(app: dict[str, Any], device: str, build: RunnerBuild | None) -> None:
    """Record in run.json's `app` the build a device's runner reported in its probe: the first one becomes
    app.build_hash (build_source `runner`, build_device names the device); every device's is kept in
    app.runner_builds, so that two runners of different builds in one session are visible."""
    if build is None:
        return
    app.setdefault("runner_builds", {})[device] = build_record(build)
    if app.get("build_source") != "runner":
        app.update(build_hash=build.id, dirty=build.dirty, build_source="runner", build_device=device,
                   build_describe=build.describe)


def runner_toolchain(app: dict[str, Any], device: str, toolchain: Toolchain | None) -> None:
    """Record in run.json's `app` what a device's runner was built with (its probe's `toolchain`): the first
    device's becomes app.compiler and app.flags, every device's is kept in app.runner_toolchains (two runners
    built differently in one session stay visible)."""
    if toolchain is None:
        return
    app.setdefault("runner_toolchains", {})[device] = {"compiler": toolchain.compiler, "flags": toolchain.flags}
    if not app.get("compiler") and not app.get("flags"):
        app.update(compiler=toolchain.compiler, flags=toolchain.flags)


def host_device_info() -> dict[str, Any]:
    """This host's facts in the shape of a `device` section: run.json's top-level `host`, and the device
    section of a local device whose runner reports no `machine` (then marked `facts_from: host`)."""
    uname = platform.uname()
    return {
        "model": uname.machine,
        "soc": "",
        "cpu": {"arch": uname.machine, "family": arch_family(uname.machine), "cores": os.cpu_count() or 0,
                "max_mhz": _max_mhz()},
        "ram_mb": _ram_mb(),
        "os": f"{uname.system} {_os_release()}".strip(),
        "os_build": uname.version,
        "kernel": uname.release,
    }


def host_info() -> dict[str, Any]:
    """run.json's `host`: the machine pytest ran on, which is not the device, even for `local` devices (a
    local runner may run under an emulator). Never part of a device's fingerprint."""
    return {**host_device_info(), "python": platform.python_version()}


def reported_device_info(machine: Machine | None, platform_facts: dict[str, Any] | None) -> dict[str, Any]:
    """A device's facts as the device reports them: the runner's probe `machine` (what the runner process
    runs on), over the platform probe run through the device's transport (`platform_facts`, None for a local
    device: there it would read the host). A local device whose runner reports nothing is described by the
    host. `facts_from` says which it was."""
    facts: dict[str, Any] = {k: v for k, v in (platform_facts or {}).items()}
    sources = ["platform probe"] if platform_facts else []
    if machine is not None:
        cpu = dict(facts.get("cpu") or {})
        cpu.update({"arch": machine.arch, "family": machine.family})
        if machine.cpu_model:
            cpu["model"] = machine.cpu_model
        if machine.cores is not None:
            cpu["cores"] = machine.cores
        if machine.max_mhz and not cpu.get("max_mhz"):
            cpu["max_mhz"] = machine.max_mhz
        facts["cpu"] = cpu
        for key in ("os", "kernel", "ram_mb", "soc", "os_build"):
            value = getattr(machine, key)
            if value is not None and not facts.get(key):
                facts[key] = value
        facts["model"] = facts.get("model") or machine.cpu_model or machine.arch
        if machine.python:
            facts["python"] = machine.python
        if machine.libraries:
            facts["libraries"] = dict(machine.libraries)
        if machine.emulated is not None:
            facts["emulated"] = machine.emulated
        sources.insert(0, "runner probe")
    elif platform_facts is None:
        facts, sources = dict(host_device_info()), ["host"]
    reported_cpu = facts.get("cpu")
    if isinstance(reported_cpu, dict) and reported_cpu.get("arch") and not reported_cpu.get("family"):
        reported_cpu["family"] = arch_family(reported_cpu["arch"])
    facts["facts_from"] = ", ".join(sources) or "nothing"
    return facts


# A 1-minute load average above this many runnable tasks per core means other work competes for the CPU the
# runner (or, for a remote device, the host collecting its results) needs. An idle machine stays well under it;
# a runner alone adds about one task, so on 2 cores it stays under it too.
BUSY_LOAD_PER_CORE = 0.5


def background_load_note(load_avg_1m: float | None, cores: int | None, where: str) -> str:
    """run.json `conditions.background_load_note`: "" when the machine was quiet or its load unknown, else what
    it saw (methodology §8)."""
    if load_avg_1m is None or not cores or load_avg_1m / cores <= BUSY_LOAD_PER_CORE:
        return ""
    return (f"{where}: load average {load_avg_1m:.2f} on {cores} cores ({load_avg_1m / cores:.2f} per core, over "
            f"{BUSY_LOAD_PER_CORE}): other processes competed for the CPU; frame times may be longer and noisier")


def host_conditions() -> dict[str, Any]:
    """Conditions of this host now; a device's own platform probe replaces these for remote devices."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    load_1m = round(load[0], 2) if load else None
    return {
        "power": _power(),
        "battery_pct": None,
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "",
        "low_power_mode": None,
        "temp_c": _temp_c(),
        "thermal_state": "",
        "throttled": None,
        "load_avg_1m": load_1m,
        "background_load_note": background_load_note(load_1m, os.cpu_count(), "this host"),
        "headless": not os.environ.get("DISPLAY"),
    }


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _max_mhz() -> int:
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    return int(khz) // 1000 if khz and khz.isdigit() else 0


def _ram_mb() -> int:
    meminfo = _read("/proc/meminfo") or ""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 0


def _os_release() -> str:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.release()


def _temp_c() -> float | None:
    raw = _read("/sys/class/thermal/thermal_zone0/temp")
    return round(int(raw) / 1000.0, 1) if raw and raw.lstrip("-").isdigit() else None


def _power() -> str:
    supply = Path("/sys/class/power_supply")
    if not supply.is_dir():
        return "unknown"
    for entry in supply.iterdir():
        if _read(str(entry / "type")) == "Mains":
            return "plugged" if _read(str(entry / "online")) == "1" else "battery"
    return "unknown"
