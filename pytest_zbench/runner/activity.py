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
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

try:
    import resource
except ImportError:  # not a Unix: no rusage
    resource = None  # type: ignore[assignment]

SOURCE = "getrusage"


@dataclass(frozen=True)
class ActivitySample:
    wall_ns: int  # time.monotonic_ns()
    cpu_ns: int  # user + system time of the process
    voluntary: int  # voluntary context switches so far: blocking, then woken
    involuntary: int  # involuntary ones: preempted


def sample() -> ActivitySample | None:
    """The process's counts now; None where the platform has no getrusage."""
    if resource is None:
        return None
    wall = time.monotonic_ns()
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu_ns = round((now.ru_utime + now.ru_stime) * 1e9)
    return ActivitySample(wall, cpu_ns, int(now.ru_nvcsw), int(now.ru_nivcsw))


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
    }
