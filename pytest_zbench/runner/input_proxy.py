"""The input-to-photon proxy's synthetic taps (docs/methodology.md §13, docs/display-list.md `tap_target`).

A scene with a `tap_target` gets one synthetic tap every `tap_every` frames. The tap is made in the gap
before frame k (k = 1, 1 + tap_every, ...): at a seeded random point between the end of frame k - 1 and the
earliest start of frame k (its vsync when paced; at once when uncapped), the runner reads the clock: that is
the event's timestamp, as a kernel stamps a touch. Frame k, the first to start after it, reads the tap (as an
app samples input at the start of a frame) and draws the target in its active colour; the proxy is the time
from the tap's timestamp to that frame's present (its vsync when paced, its end when uncapped).

It is a proxy: no input device, driver, compositor or display scan-out is in the path, only what the runner
itself adds (the wait for the next frame, the frame's work, the wait for its vsync). Which frame reflects a tap
is fixed by its index, so captures stay equal across launches; the latency is what varies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

SOURCE = "synthetic_tap"


class SyntheticTaps:
    def __init__(self, every: int, seed: int, *, clock: Callable[[], int] = time.monotonic_ns,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.every = every
        self._rng = np.random.default_rng(seed)
        self._clock, self._sleep = clock, sleep
        self._tap_ns: int | None = None
        self.events: list[tuple[int, float]] = []  # (frame, ms from its tap to its present), measured frames

    def reflects_tap(self, frame: int) -> bool:
        """Whether `frame` is the first to start after a tap (and so draws it)."""
        return frame >= 1 and (frame - 1) % self.every == 0

    def tap(self, next_start_ns: int) -> None:
        """Make the tap of the coming frame: wait a seeded share of the time left before it may start, then
        take the timestamp."""
        now = self._clock()
        wait_ns = max(0, next_start_ns - now) * float(self._rng.random())
        if wait_ns > 0:
            self._sleep(wait_ns / 1e9)
        self._tap_ns = self._clock()

    def presented(self, frame: int, present_ns: int, *, measured: bool = True) -> None:
        """The frame that reflects the last tap was presented at `present_ns`: record its latency (a warmup
        frame's is not recorded)."""
        if self._tap_ns is not None and measured:
            self.events.append((frame, round(max(0, present_ns - self._tap_ns) / 1e6, 4)))
        self._tap_ns = None

    def result(self) -> dict[str, Any]:
        """result.json's `input_to_photon` (docs/runner-protocol.md)."""
        return {"source": SOURCE, "tap_every": self.every, "events": [[f, ms] for f, ms in self.events]}
