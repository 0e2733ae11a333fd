"""How a platform frame series writes its numbers, one rule for every series of Android's own frame timing
(gfxinfo, SurfaceFlinger, FrameTimeline): CSV cells of milliseconds to 6 decimals, empty cells for what a
frame lacks, and run.json summaries rounded to 4 digits."""

from __future__ import annotations

from typing import Any

MS_DIGITS = 6  # decimals of a ms cell in a series CSV (a nanosecond: the dumps' own resolution)


def ms_cell(value: float | None) -> str:
    return "" if value is None else f"{value:.{MS_DIGITS}f}"


def count_cell(value: int | None) -> str | int:
    return "" if value is None else value


def rounded(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in summary.items()}
