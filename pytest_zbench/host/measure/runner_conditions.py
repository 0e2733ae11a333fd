"""Conditions a runner samples itself (result.json `conditions`, docs/runner-protocol.md): the device states a
host-side probe cannot read, iOS's thermalState and low power mode first, and temperatures and clocks where no
platform probe runs (docs/methodology.md §8).

    kept = with_runner_sample(launch_conditions(before), runner_sample("start", result.extra))

A runner's sample fills the keys the platform probe left unknown, never replaces one it read; the sample itself
is kept as `runner`, and `from_runner` names the keys it filled. A value of the wrong type is left out (the
schema check of result.json has already made it a `protocol` issue).
"""

from __future__ import annotations

from typing import Any

from ...protocol.vocabulary import POWER_SOURCES

# Keys of run.json's launch conditions a runner may fill, with the types each accepts.
FILLABLE: dict[str, tuple[type, ...]] = {
    "power": (str,), "battery_pct": (int, float), "temp_c": (int, float), "throttled": (bool,),
    "thermal_state": (str,), "low_power_mode": (bool,), "governor": (str,),
}
UNKNOWN = (None, "", "unknown")
SIDES = ("start", "end")


def runner_sample(side: str, extra: dict[str, Any]) -> dict[str, Any] | None:
    """The runner's `conditions.<side>` sample of result.json's extra keys, None when it reported none."""
    conditions = extra.get("conditions")
    if not isinstance(conditions, dict):
        return None
    sample = conditions.get(side)
    return sample if isinstance(sample, dict) else None


def with_runner_sample(platform: dict[str, Any], sample: dict[str, Any] | None) -> dict[str, Any]:
    """`platform` (a launch_conditions dict) with the runner's sample filling what the platform left unknown."""
    if sample is None:
        return platform
    merged = dict(platform)
    filled = []
    for key, types in FILLABLE.items():
        value = sample.get(key)
        if value in UNKNOWN or not _typed(value, types) or (key == "power" and value not in POWER_SOURCES):
            continue
        if merged.get(key) in UNKNOWN:
            merged[key] = value
            filled.append(key)
    merged["runner"] = sample
    merged["from_runner"] = filled
    return merged


def _typed(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False  # JSON true is no temperature
    return isinstance(value, types)
