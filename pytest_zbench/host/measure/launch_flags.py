"""What run.json and the history keep beside each launch's summary: the conditions around the launch (compact,
regression/conditions.py) and whether the device reported throttling during it, so that a later verdict can
name what changed and a reader can see which samples were taken throttled (docs/regression.md)."""

from __future__ import annotations

from typing import Any

from ...regression.conditions import compact
from .results import SceneMeasurement


def flagged_launches(m: SceneMeasurement, per_run: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`per_run` (the scene summary's launch dicts, one per launch that measured a frame, in order) with each
    launch's compact `conditions` and `throttled` (true when the platform probe said so before or after it)."""
    out = []
    for summary, outcome in zip(per_run, m.summarized):  # the launches paired with their summaries once
        conditions = compact(outcome.conditions)
        out.append(dict(summary, conditions=conditions, throttled=conditions.get("throttled") is True))
    out += per_run[len(out):]
    return out


__all__ = ["flagged_launches"]
