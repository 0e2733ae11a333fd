"""The probe's `machine` facts, read by the runner on the device (pytest_zbench/runner/machine.py)."""

from __future__ import annotations

import platform
from pathlib import Path

from pytest_zbench.protocol import parse_machine
from pytest_zbench.runner.machine import cpu_from_cpuinfo, linux_facts, machine_facts

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme de pse tsc
"""
PI_CPUINFO = """processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd03
CPU revision\t: 4

Hardware\t: BCM2835
Revision\t: a020d3
Model\t\t: Raspberry Pi 3 Model B Plus Rev 1.3
"""
GENERIC_ARM_CPUINFO = """processor\t: 0
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd08
"""


def test_cpu_model_from_a_cpuinfo_of_the_same_architecture():
    assert cpu_from_cpuinfo(X86_CPUINFO, "x86_64") == ("AMD EPYC 7B13", False)
    assert cpu_from_cpuinfo(PI_CPUINFO, "aarch64") == ("Raspberry Pi 3 Model B Plus Rev 1.3, Cortex-A53", False)
    assert cpu_from_cpuinfo(GENERIC_ARM_CPUINFO, "armv7l") == ("Cortex-A72", False)


def test_another_architectures_cpuinfo_means_emulation_and_no_model():
    # qemu-user passes the host's /proc/cpuinfo through to the emulated process unchanged.
    assert cpu_from_cpuinfo(X86_CPUINFO, "aarch64") == (None, True)
    assert cpu_from_cpuinfo(PI_CPUINFO, "x86_64") == (None, True)
    assert cpu_from_cpuinfo(None, "arm64") == (None, None)


def test_machine_facts_of_this_process_parse_as_a_probe_machine():
    facts = machine_facts({"skia-python": "144.1"})
    machine = parse_machine(facts)
    assert machine.arch == platform.machine() and machine.python == platform.python_version()
    assert machine.libraries == {"skia-python": "144.1"} and machine.cores


def tree(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_soc_os_build_and_max_clock_of_a_big_little_board(tmp_path):
    root = tree(tmp_path, {
        "sys/devices/soc0/family": "Snapdragon\n", "sys/devices/soc0/machine": "SM8250\n",
        "proc/device-tree/compatible": "qcom,kona-mtp\0qcom,kona\0",
        "proc/sys/kernel/version": "#1 SMP PREEMPT Thu Mar 3 10:00:00 UTC 2022\n",
        "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "1804800\n",
        "sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_max_freq": "3096000\n",
        "sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq": "999999999\n",  # not a cpuN folder
    })
    assert linux_facts(root) == {"soc": "Snapdragon SM8250", "os_build": "#1 SMP PREEMPT Thu Mar 3 10:00:00 UTC 2022",
                                 "max_mhz": 3096}


def test_soc_from_the_device_tree_then_cpuinfo_and_build_id_before_the_kernel(tmp_path):
    pi = tree(tmp_path / "pi", {"proc/device-tree/compatible": "raspberrypi,4-model-b\0brcm,bcm2711\0",
                                "proc/cpuinfo": PI_CPUINFO, "etc/os-release": 'NAME="Yocto"\nBUILD_ID="20240131"\n',
                                "proc/sys/kernel/version": "#1 SMP\n"})
    assert linux_facts(pi) == {"soc": "brcm,bcm2711", "os_build": "20240131"}
    old_arm = tree(tmp_path / "old", {"proc/cpuinfo": PI_CPUINFO})
    assert linux_facts(old_arm) == {"soc": "BCM2835"}
    assert linux_facts(tmp_path / "nothing") == {}  # not Linux: every fact left out, none guessed


def test_machine_facts_carry_what_this_linux_host_gives():
    machine = parse_machine(machine_facts())
    expected = linux_facts(Path("/"))
    assert (machine.soc, machine.os_build, machine.max_mhz) == (
        expected.get("soc"), expected.get("os_build"), expected.get("max_mhz"))
    if Path("/proc/sys/kernel/version").exists():
        assert machine.os_build  # a Linux kernel always names its build
