"""Cold start of each launch: the time from the runner process's start to the end of its first frame, on
the frames' clock (result.json `process_start_ns`, docs/runner-protocol.md), beside the existing first-frame
and warmup costs in run.json `scenes[].cold`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..devices.device import LaunchOutcome


def time_to_first_frame_ms(launch: LaunchOutcome) -> float | None:
    """Process start to the first frame's end (its t_start_ns + cpu_ms); None when the runner did not say when
    its process started, or rendered no frame with a start time."""
    start = launch.result.extra.get("process_start_ns")
    if not isinstance(start, int) or isinstance(start, bool) or not launch.frames.rows:
        return None
    first = launch.frames.rows[0]
    if first.get("t_start_ns") is None:
        return None
    ms = (first["t_start_ns"] - start) / 1e6 + (first.get("cpu_ms") or 0.0)
    return round(ms, 3) if ms >= 0 else None  # a start after the first frame is not this process's


def cold_start_entry(launches: Sequence[LaunchOutcome]) -> dict[str, Any]:
    """run.json `cold.time_to_first_frame_ms`: the median and max over launches, and each launch's value
    (null where unknown), with where the process start came from."""
    values = [time_to_first_frame_ms(launch) for launch in launches]
    known = sorted(v for v in values if v is not None)
    sources = sorted({str(launch.result.extra.get("process_start_source")) for launch in launches
                      if launch.result.extra.get("process_start_source")})
    median = None
    if known:
        middle = len(known) // 2
        median = known[middle] if len(known) % 2 else round((known[middle - 1] + known[middle]) / 2, 3)
    return {"median": median, "max": known[-1] if known else None, "per_launch": values, "source": sources}
