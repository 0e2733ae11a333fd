"""The idle scene's own metric: the runner process's wake-ups and CPU time per second over the measured
frames (docs/methodology.md, "Idle: wake-ups and CPU time per second"), from result.json's `activity`
(docs/runner-protocol.md).

Throughput says nothing about an idle or animation-light scene: paced, a frame that costs 1 ms and one that
costs 3 ms both read 16.7 ms. What it costs a battery is how often the process wakes and how much CPU it
uses per second. Per launch the rates are its counts over its measured wall time; per scene, their median
over launches (the launch is the unit, docs/methodology.md §1).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...json_types import is_int, is_number

_DIGITS = 3


@dataclass(frozen=True)
class ProcessActivity:
    """One launch's counts over its measured frames, as the runner reported them."""

    source: str
    wall_ms: float
    cpu_ms: float
    voluntary_switches: int
    involuntary_switches: int | None

    @property
    def wakeups_per_s(self) -> float:
        """Voluntary context switches per second: the process blocked and was woken again."""
        return self.voluntary_switches * 1000.0 / self.wall_ms

    @property
    def cpu_ms_per_s(self) -> float:
        """CPU time (user + system, every thread) per second of wall time: 1000 is one core kept busy."""
        return self.cpu_ms * 1000.0 / self.wall_ms

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "wall_ms": self.wall_ms, "cpu_ms": self.cpu_ms,
                "voluntary_switches": self.voluntary_switches, "involuntary_switches": self.involuntary_switches,
                "wakeups_per_s": round(self.wakeups_per_s, _DIGITS), "cpu_ms_per_s": round(self.cpu_ms_per_s, _DIGITS)}


def _count(value: Any) -> bool:
    return is_int(value) and value >= 0


def _number(value: Any) -> bool:
    return is_number(value) and value >= 0


def read_activity(raw: Any) -> ProcessActivity | None:
    """result.json's `activity` as a ProcessActivity; None when absent, null or malformed (a malformed one is
    already a `protocol` issue of the launch: result.schema.json's check reports it; readers never raise)."""
    if not isinstance(raw, Mapping):
        return None
    source, wall, cpu = raw.get("source"), raw.get("wall_ms"), raw.get("cpu_ms")
    voluntary, involuntary = raw.get("voluntary_switches"), raw.get("involuntary_switches")
    if not (isinstance(source, str) and isinstance(wall, (int, float)) and _number(wall) and wall > 0
            and isinstance(cpu, (int, float)) and _number(cpu) and isinstance(voluntary, int) and _count(voluntary)
            and (involuntary is None or (isinstance(involuntary, int) and _count(involuntary)))):
        return None
    return ProcessActivity(source, float(wall), float(cpu), voluntary, involuntary)


def summarize_activity(per_launch: Sequence[ProcessActivity | None]) -> dict[str, Any] | None:
    """run.json's scene `activity`: the median wake-ups and CPU time per second over the launches that
    reported them, beside each launch's rates; None when none did."""
    known = [a for a in per_launch if a is not None]
    if not known:
        return None
    return {
        "wakeups_per_s": round(statistics.median(a.wakeups_per_s for a in known), _DIGITS),
        "cpu_ms_per_s": round(statistics.median(a.cpu_ms_per_s for a in known), _DIGITS),
        "launches": len(known),
        "per_run_wakeups_per_s": [round(a.wakeups_per_s, _DIGITS) for a in known],
        "per_run_cpu_ms_per_s": [round(a.cpu_ms_per_s, _DIGITS) for a in known],
        "source": sorted({a.source for a in known})[0] if len({a.source for a in known}) == 1 else None,
    }
