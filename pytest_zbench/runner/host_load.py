"""What other tasks ran on the device while the runner ran: the busy time of every CPU (/proc/stat) less the
runner process's own CPU time, over the runner's whole run (result.json `host_load`, docs/runner-protocol.md).

Another task on another core slows a frame without taking its CPU (shared caches, memory bandwidth, a shared
clock), so the frame's stolen time cannot show it; the regression gate's busy-host guard reads this instead
(docs/regression.md, "A busy host"). The window is the whole run, from the runner's import to its result, not
the measured frames alone: /proc/stat counts in clock ticks (10 ms per CPU), and a small scene's measured
frames last a few tens of milliseconds, which those ticks cannot resolve.
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

SOURCE = "proc_stat"
PROC_STAT = "/proc/stat"
# /proc/stat's aggregate "cpu" line: user nice system idle iowait irq softirq steal (then guest and guest_nice,
# already inside user and nice), in clock ticks. Busy is everything but idle and iowait.
_IDLE_FIELDS = (3, 4)
_COUNTED_FIELDS = 8


@dataclass(frozen=True)
class HostSample:
    wall_ns: int  # time.monotonic_ns()
    busy_ns: int  # busy time of every CPU of the device so far, summed
    cpus: int
    own_cpu_ns: int  # user + system time of this process so far


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


def sample(path: str = PROC_STAT) -> HostSample | None:
    """The device's busy time and this process's CPU time now; None without /proc/stat or getrusage."""
    host = host_busy(path)
    if host is None or resource is None:
        return None
    own = resource.getrusage(resource.RUSAGE_SELF)
    return HostSample(time.monotonic_ns(), host[0], host[1], round((own.ru_utime + own.ru_stime) * 1e9))


def between(start: HostSample | None, end: HostSample | None) -> dict[str, Any] | None:
    """result.json's `host_load` between two samples; None when either is missing or they disagree on the CPUs."""
    if start is None or end is None or end.wall_ns <= start.wall_ns or start.cpus != end.cpus:
        return None
    return {
        "source": SOURCE,
        "wall_ms": round((end.wall_ns - start.wall_ns) / 1e6, 3),
        "busy_ms": round(max(0, end.busy_ns - start.busy_ns) / 1e6, 3),
        "own_cpu_ms": round(max(0, end.own_cpu_ns - start.own_cpu_ns) / 1e6, 3),
        "cpus": start.cpus,
    }
