"""The probe's `machine` facts, read by the runner on the device (pytest_zbench/runner/machine.py)."""

from __future__ import annotations

import platform

from pytest_zbench.protocol import parse_machine
from pytest_zbench.runner.machine import cpu_from_cpuinfo, machine_facts

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
