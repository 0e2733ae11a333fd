"""How much the kit asks of a device: frames and surfaces sized to how long the device takes to draw a frame.

The kit's first launch (the paced timing job, a few frames of 48 rects at the kit surface) is its measure of the
device: the median step between its frames' starts is one frame of the timing scene, waiting for vsync
included. A fast device gets the kit's full jobs. A device that takes seconds a frame (an emulated ARM board, a
first-generation tablet under software rendering) gets fewer frames per job and the kit's own feature scenes at
its small surface instead of the corpus's at their golden's size, so that it is checked in minutes, not a quarter of an hour.
Each job keeps the frames its check needs to be able to fail: the uncapped check needs intervals enough that a
paced runner cannot pass by chance, the complexity check medians of several frames at each level
(docs/runner-protocol.md, "Checking a runner").
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .jobs import KIT_SURFACE

# The first launch: small enough to cost seconds on a slow device, with warmup and measured frames both there
# for the phase and pacing checks.
PACED_WARMUP, PACED_FRAMES = 2, 6
# What each job may spend on its frames, in frames of the timing scene (the job's start-up comes on top).
UNCAPPED_BUDGET_S = 5.0
COMPLEXITY_BUDGET_S = 5.0
# A feature's corpus scene is drawn at its golden's size when one frame of the timing scene, scaled by the
# pixels, is estimated under this; else the kit's own scene of the feature, against the reference render.
GOLDEN_SIZE_BUDGET_S = 2.0
# The uncapped job's bounds: fewer measured intervals and a paced runner could pass by chance (it needs 90 % of
# them on whole periods, each 4 % likely by chance); more adds nothing.
UNCAPPED_MIN, UNCAPPED_MAX = 8, 40
UNCAPPED_WARMUP_FAST, UNCAPPED_WARMUP_SLOW = 3, 1
# The determinism job draws every checked feature at once (a frame costs several of the timing scene's); it
# compares its first and last frame, so two frames still check that a frame index, not time, animates it.
SAMPLER_FRAMES_FAST, SAMPLER_FRAMES_SLOW = 6, 2
# Complexity frames alternate between the two levels: an even count, at least 4 a level for a median.
COMPLEXITY_MIN, COMPLEXITY_MAX = 8, 24


@dataclass(frozen=True)
class Sizes:
    """The kit's job sizes for one device; `frame_s` is None when the first launch gave no frame times."""

    frame_s: float | None
    uncapped_warmup: int
    uncapped_frames: int
    complexity_frames: int
    sampler_frames: int
    max_pixels: int | None  # a corpus scene larger than this is drawn at the kit surface; None: any size

    def describe(self) -> str:
        if self.frame_s is None:
            return "full-size jobs (the first launch gave no frame times)"
        return (f"a frame of the timing scene takes {self.frame_s:.3g} s: {self.uncapped_frames} uncapped "
                f"frames, {self.complexity_frames} per complexity job, {self.sampler_frames} of the determinism job, "
                f"a feature's corpus scene at its golden's size when that has at most {self.max_pixels:,} pixels, "
                f"else the kit's own scene at {KIT_SURFACE[0]}x{KIT_SURFACE[1]}")


FULL = Sizes(None, UNCAPPED_WARMUP_FAST, UNCAPPED_MAX, COMPLEXITY_MAX, SAMPLER_FRAMES_FAST, None)


def frame_seconds(starts_ns: Sequence[float]) -> float | None:
    """The median step between consecutive frames' starts, in seconds (None without two rising starts)."""
    starts = [int(v) for v in starts_ns]
    steps = [b - a for a, b in zip(starts, starts[1:]) if b > a]
    return statistics.median(steps) / 1e9 if steps else None


def sizes_for(frame_s: float | None) -> Sizes:
    if frame_s is None:
        return FULL
    uncapped = max(UNCAPPED_MIN, min(UNCAPPED_MAX, round(UNCAPPED_BUDGET_S / frame_s)))
    complexity = max(COMPLEXITY_MIN, min(COMPLEXITY_MAX, 2 * round(COMPLEXITY_BUDGET_S / frame_s / 2)))
    fast = uncapped == UNCAPPED_MAX  # its full uncapped job fits the budget
    return Sizes(frame_s, UNCAPPED_WARMUP_FAST if fast else UNCAPPED_WARMUP_SLOW, uncapped, complexity,
                 SAMPLER_FRAMES_FAST if fast else SAMPLER_FRAMES_SLOW, int(GOLDEN_SIZE_BUDGET_S / frame_s * KIT_SURFACE[0] * KIT_SURFACE[1]))
