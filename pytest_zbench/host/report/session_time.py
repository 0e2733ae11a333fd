"""How long a session took and will take, in words: the elapsed and remaining time the progress shows on a long
session, and `--zbench-first-look`'s closing line with its estimate of the whole suite under --zbench-quick.

Plain numbers in, text out: the plugin (plugin/progress.py, plugin/terminal.py) keeps the clock and the counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# A session shorter than this shows no elapsed time or estimate: it is over before either would help, and a
# remaining time from the first one or two scenes is mostly their start-up.
CLOCK_AFTER_S = 30.0

# What an adaptive scene costs under --zbench-quick, in launches of a plain scene under --zbench-quick: its search
# launches (a ramp of growing complexity each) then 2 ramp launches, longer than a plain launch's 35 frames.
# Measured on `local` (2 cores, the 10 adaptive scenes of scenes/ under --zbench-quick): 6.1 s of launches per
# adaptive scene against 1.16 s per plain launch of 35 paced frames.
ADAPTIVE_LAUNCHES = 5.2


def duration(seconds: float) -> str:
    """`45 s`, `1m 12s`, `17 min`, `2 h 05 min`: seconds while they matter, whole minutes past ten."""
    seconds = max(0.0, seconds)
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    whole = int(round(seconds))
    if whole < 600:
        return f"{whole // 60}m {whole % 60:02d}s"
    minutes = int(round(seconds / 60))
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def clock_text(elapsed_s: float, done: int, total: int) -> str | None:
    """`1m 40s elapsed, about 3m 20s left, 12 of 40 scenes done` once the session is past CLOCK_AFTER_S, from
    the scenes finished so far (each scene's tests on one device count once); None before that, or before any
    scene finished."""
    if elapsed_s < CLOCK_AFTER_S or done <= 0 or total <= 0:
        return None
    if done >= total:
        return f"{duration(elapsed_s)} elapsed"
    left = elapsed_s / done * (total - done)
    return f"{duration(elapsed_s)} elapsed, about {duration(left)} left, {done} of {total} scenes done"


@dataclass(frozen=True)
class Frames:
    """One launch's length and a session's launches per scene: the first look's, and --zbench-quick's."""

    runs: int
    warmup: int
    frames: int

    @property
    def per_launch(self) -> int:
        return self.warmup + self.frames


def quick_estimate_s(entries: Sequence[Mapping[str, Any]], session_s: float, plain: int, adaptive: int,
                     devices: int, first_look: Frames, quick: Frames) -> float | None:
    """The whole suite under --zbench-quick, from this session's own launches: each measured launch split into
    its start-up and its frames (at the scene's frame interval), a quick launch the same start-up with quick's
    frames; a scene's share of the rest of the session (golden checks, collection) added per scene; an adaptive
    scene counted as ADAPTIVE_LAUNCHES quick launches. None when no scene launched."""
    launches: list[float] = []
    per_scene_launches: list[float] = []
    for entry in entries:
        walls = [float(w) for w in entry.get("launch_wall_s") or [] if w is not None]
        if not walls:
            continue
        wall = sum(walls) / len(walls)
        frame_s = _frame_s(entry)
        start_s = max(0.0, wall - first_look.per_launch * frame_s)
        launches.append(start_s + quick.per_launch * frame_s)
        per_scene_launches.append(sum(walls))
    if not launches:
        return None
    quick_launch = sum(launches) / len(launches)
    rest = max(0.0, session_s - sum(per_scene_launches)) / len(launches)
    scene_s = rest + quick.runs * quick_launch
    adaptive_s = rest + ADAPTIVE_LAUNCHES * quick_launch
    return devices * (plain * scene_s + adaptive * adaptive_s)


def _frame_s(entry: Mapping[str, Any]) -> float:
    """A scene's frame interval in seconds: its measured frame time's median (paced: the refresh interval),
    else its frame budget, else 0 (the launch is then all start-up)."""
    frame = ((entry.get("metrics") or {}).get("frame_ms") or {}).get("p50")
    value = frame if isinstance(frame, (int, float)) and math.isfinite(frame) else entry.get("budget_ms")
    return float(value) / 1000.0 if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else 0.0


def first_look_line(measured: int, families: int, total: int, session_s: float, estimate_s: float | None) -> str:
    """`first look: 22 of 90 scenes (one per family, 22 families) in 41 s; the whole suite with --zbench-quick
    would take about 17 min (this session's launch cost x 90 scenes)`."""
    head = (f"first look: {measured} of {total} scenes (one per family, {families} families) in "
            f"{duration(session_s)}")
    if estimate_s is None:
        return head + "; no scene launched, so no estimate of the whole suite"
    return (f"{head}; the whole suite with --zbench-quick would take about {duration(estimate_s)} (this session's "
            f"launch cost x {total} scenes, adaptive ones as {ADAPTIVE_LAUNCHES:g} launches)")
