"""What the runner process knows of itself: when it started on the frames' clock (result.json
`process_start_ns`; cold start counts from there, and the host aligns its conditions samples with it), its
page faults so far (the `minor_faults` column) and how often the kernel took the CPU from it (the `preemptions`
column). Linux and Android read /proc; elsewhere the fallbacks below say what they are."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import ModuleType

from pytest_zbench.runner import STARTED_NS

resource: ModuleType | None
try:
    import resource
except ImportError:  # not a Unix: no rusage
    resource = None

# A start read from /proc further back than this before the runner's own import is not this process's (an
# emulator that reports its host's values): the import time is used instead.
MAX_STARTUP_NS = 60_000_000_000


def process_start() -> tuple[int, str]:
    """(the process's start in CLOCK_MONOTONIC nanoseconds, where it comes from).

    /proc/self/stat's starttime counts clock ticks since boot on the boot clock (CLOCK_BOOTTIME, which also
    counts suspend); it is moved onto the monotonic clock of t_start_ns by the two clocks' difference now.
    Its resolution is one tick (10 ms at the usual 100 Hz). Without it: the moment the runner package was
    imported, which leaves out the interpreter's own start-up."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22, counted after "pid (comm)"
        hz = os.sysconf("SC_CLK_TCK")
        boot_now, mono_now = time.clock_gettime_ns(time.CLOCK_BOOTTIME), time.monotonic_ns()
    except (OSError, ValueError, IndexError, AttributeError):
        return STARTED_NS, "runner_import"
    start = mono_now - (boot_now - ticks * 1_000_000_000 // hz)
    if not STARTED_NS - MAX_STARTUP_NS <= start <= STARTED_NS:
        return STARTED_NS, "runner_import"
    return start, "proc_stat"


def usage() -> tuple[int, int] | None:
    """(minor page faults, involuntary context switches) of the process so far, from one getrusage call taken
    just outside a frame's clocks. A minor fault is memory touched for the first time (fresh allocations); an
    involuntary switch is the kernel handing the CPU to another runnable task before this one was done: a frame
    that saw one was lengthened by something that is not the scene (docs/regression.md, "A busy host")."""
    if resource is None:
        return None
    now = resource.getrusage(resource.RUSAGE_SELF)
    return int(now.ru_minflt), int(now.ru_nivcsw)


def thread_cpu_ns() -> int | None:
    """The calling thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID), None where the platform has no such
    clock. A frame's wall time less this clock's advance over the same interval is its `stolen_ms`: time the
    thread was off the CPU while the frame ran (docs/runner-protocol.md)."""
    try:
        return time.thread_time_ns()
    except (AttributeError, OSError):
        return None


def stolen_ms(wall0: int, cpu0: int | None, cpu1: int | None, wall1: int) -> float | None:
    """A frame's `stolen_ms`: wall time less the thread's CPU time over the same bracket (the wall clock read
    outside the CPU clock on both sides, so rounding cannot make it negative); None without a thread clock."""
    if cpu0 is None or cpu1 is None:
        return None
    return max(0, (wall1 - wall0) - (cpu1 - cpu0)) / 1e6
