"""What the runner process did over a launch's measured frames: its CPU time and its wake-ups, the idle
scene's own metric (docs/runner-protocol.md, result.json `activity`; docs/methodology.md, "Idle: wake-ups and
CPU time per second").

An idle or animation-light scene is not about throughput: a paced frame that costs 1 ms or 3 ms reads the
same 16.7 ms interval. What it costs is how often the process wakes and how much CPU it burns per second
while it animates. Both come from one getrusage call at each end of the measured frames: CPU time is user +
system time of every thread of the process; a wake-up is a voluntary context switch, the process blocking
(sleeping until the next vsync, waiting for the GPU) and being woken again: the per-process count
powertop's and Android's wake-up figures start from. Involuntary switches (preemptions) are kept beside them:
they are the machine's load, not the scene's wake-ups.

Where /proc/stat is readable (Linux, Android), the same two samples read the busy time of every CPU of the
device (`host_busy_ms`, summed over `host_cpus` CPUs): less the process's own CPU time, it is what other tasks
ran on the device while the frames were measured. Another task on another core slows a frame without taking
its CPU (shared caches and memory bandwidth, clocks), which the frame's stolen time cannot show; the
regression gate's busy-host guard reads it (docs/regression.md, "A busy host").
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

try:
    import resource
except ImportError:  # not a Unix: no rusage
    resource = None  # type: ignore[assignment]

SOURCE = "getrusage"
PROC_STAT = "/proc/stat"
# /proc/stat's aggregate "cpu" line: user nice system idle iowait irq softirq steal guest guest_nice, in clock
# ticks. Busy is everything but idle and iowait; guest time is already inside user and nice.
_IDLE_FIELDS = (3, 4)
_COUNTED_FIELDS = 8


@dataclass(frozen=True)
class ActivitySample:
    wall_ns: int  # time.monotonic_ns()
    cpu_ns: int  # user + system time of the process
    voluntary: int  # voluntary context switches so far: blocking, then woken
    involuntary: int  # involuntary ones: preempted
    host_busy_ns: int | None = None  # busy time of every CPU of the device so far (/proc/stat), None unknown
    host_cpus: int | None = None


def host_busy(path: str = PROC_STAT) -> tuple[int, int] | None:
    """(busy time of all CPUs in ns, number of CPUs) from /proc/stat; None where it is not readable."""
    try:
        with open(path, encoding="ascii") as stat:
            lines = stat.read().splitlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    total = next((line.split()[1:] for line in lines if line.startswith("cpu ")), None)
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    if total is None or len(total) < _COUNTED_FIELDS or not cpus or ticks <= 0:
        return None
    try:
        fields = [int(v) for v in total[:_COUNTED_FIELDS]]
    except ValueError:
        return None
    busy = sum(v for i, v in enumerate(fields) if i not in _IDLE_FIELDS)
    return busy * 1_000_000_000 // ticks, cpus


def sample() -> ActivitySample | None:
    """The process's counts now; None where the platform has no getrusage."""
    if resource is None:
        return None
    wall = time.monotonic_ns()
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu_ns = round((now.ru_utime + now.ru_stime) * 1e9)
    host = host_busy()
    return ActivitySample(wall, cpu_ns, int(now.ru_nvcsw), int(now.ru_nivcsw),
                          host[0] if host else None, host[1] if host else None)


def activity_between(start: ActivitySample | None, end: ActivitySample | None) -> dict[str, Any] | None:
    """result.json's `activity`: the counts between two samples, or None when either is missing."""
    if start is None or end is None or end.wall_ns <= start.wall_ns:
        return None
    return {
        "source": SOURCE,
        "wall_ms": round((end.wall_ns - start.wall_ns) / 1e6, 3),
        "cpu_ms": round(max(0, end.cpu_ns - start.cpu_ns) / 1e6, 3),
        "voluntary_switches": max(0, end.voluntary - start.voluntary),
        "involuntary_switches": max(0, end.involuntary - start.involuntary),
        **_host_between(start, end),
    }


def _host_between(start: ActivitySample, end: ActivitySample) -> dict[str, Any]:
    """The device's busy CPU time between the samples, when both read /proc/stat on the same CPUs."""
    if (start.host_busy_ns is None or end.host_busy_ns is None or start.host_cpus is None
            or start.host_cpus != end.host_cpus):
        return {}
    return {"host_busy_ms": round(max(0, end.host_busy_ns - start.host_busy_ns) / 1e6, 3),
            "host_cpus": start.host_cpus}
