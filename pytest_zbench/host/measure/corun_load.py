"""A launch's co-run load: the CPUs other tasks kept busy on the device while its runner ran, from result.json's
`host_load` (docs/runner-protocol.md). The busy-host guard compares it between the baseline and the candidate
(docs/regression.md, "A busy host")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...json_types import is_int, is_number


def _number(value: Any) -> float | None:
    """A finite number at or above zero as a float, else None."""
    if is_number(value) and 0 <= value < float("inf"):
        return float(value)
    return None


def read_corun_load(raw: Any) -> float | None:
    """(busy_ms - own_cpu_ms) / wall_ms, at least 0; None when host_load is absent, null or malformed (a malformed
    one is already a `protocol` issue of the launch: result.schema.json's check reports it; readers never raise)."""
    if not isinstance(raw, Mapping):
        return None
    wall, busy, own = _number(raw.get("wall_ms")), _number(raw.get("busy_ms")), _number(raw.get("own_cpu_ms"))
    cpus = raw.get("cpus")
    if wall is None or wall <= 0 or busy is None or own is None or not (
            is_int(cpus) and cpus >= 1):
        return None
    return max(0.0, busy - own) / wall
