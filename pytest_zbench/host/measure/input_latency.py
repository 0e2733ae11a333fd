"""The input-to-photon proxy of a scene with a `tap_target` (docs/methodology.md §13): from each launch's
result.json `input_to_photon` (runner/input_proxy.py in the reference runner), run.json's scene
`input_to_photon`. A proxy, and labelled so: the path from a synthetic tap's timestamp to the present of the
first frame reflecting it holds no input device, driver, compositor or scan-out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DEFINITION = ("proxy: ms from a synthetic tap's timestamp (taken by the runner in the gap before a frame) to the "
              "present of the first frame that reflects it (its vsync when paced, its end when uncapped); no input "
              "device, driver, compositor or display scan-out is in the path")
_DIGITS = 4


def read_events(raw: Any) -> list[float] | None:
    """The latencies (ms) of one launch's result.json `input_to_photon`; None when absent or malformed (a
    malformed one is already a protocol issue: result.schema.json's check reports it)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("events"), list):
        return None
    latencies = []
    for event in raw["events"]:
        if not (isinstance(event, list) and len(event) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in event)):
            return None
        latencies.append(float(event[1]))
    return latencies


def summarize_input_latency(per_launch: Sequence[Any]) -> dict[str, Any] | None:
    """run.json's scene `input_to_photon`: percentiles over every reflected tap of the launches, and each
    launch's median (the launch is the unit for comparisons, docs/methodology.md §1); None without taps."""
    launches = [events for raw in per_launch if (events := read_events(raw)) is not None]
    every = [ms for events in launches for ms in events]
    if not every:
        return None
    values = np.array(every)
    return {
        "proxy": True,
        "definition": DEFINITION,
        "taps": len(every),
        "p50_ms": round(float(np.percentile(values, 50)), _DIGITS),
        "p95_ms": round(float(np.percentile(values, 95)), _DIGITS),
        "max_ms": round(float(values.max()), _DIGITS),
        "per_run_p50_ms": [round(float(np.median(e)), _DIGITS) if e else None for e in launches],
    }
