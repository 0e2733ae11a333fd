"""Frame pacing: when a frame may start and when it is considered presented (docs/methodology.md §4).

`paced` simulates a display refreshing at refresh_hz on an ideal vsync schedule t0 + k * period. A frame
starts on a boundary; it presents at the first boundary after it finishes (never earlier than the next one),
and the next frame starts there. A frame that overruns one period therefore presents one or more periods late,
and present_interval_ms is always a whole number of periods: vsync quantisation, as on a real device, without
the scheduler's jitter. `uncapped` never waits; the interval is the time between consecutive frame ends, which
shows throughput that vsync would hide.

The clock and sleep are parameters so the schedule can be tested without waiting for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Pacer:
    """Call begin() before a frame (returns its t_start_ns) and end() after it (returns present_interval_ms)."""

    def begin(self) -> int:
        raise NotImplementedError

    def end(self) -> float:
        raise NotImplementedError

    def next_start_ns(self) -> int:
        """The earliest time the next frame may start (a paced frame waits for its vsync)."""
        raise NotImplementedError

    def present_ns(self) -> int:
        """When the frame that last ended is presented: its vsync (paced), its end (uncapped)."""
        raise NotImplementedError

    def exclude(self, ns: int) -> None:
        """Leave `ns` of work done between frames (the runner's counting walk) out of the schedule, as if
        that time had not passed: it never lengthens an interval nor makes a frame miss its vsync."""
        raise NotImplementedError


class PacedVsync(Pacer):
    def __init__(self, refresh_hz: float, *, clock: Callable[[], int] = time.monotonic_ns,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.period_ns = 1e9 / refresh_hz
        self.period_ms = 1e3 / refresh_hz
        self._clock, self._sleep = clock, sleep
        self._t0 = 0  # vsync 0: the first frame's start
        self._started = False
        self._next = 0  # vsync the next frame may start on (the previous frame's present)
        self._start = 0  # vsync the current frame started on
        self._last_present = 0

    def begin(self) -> int:
        now = self._clock()
        if not self._started:
            self._t0, self._started = now, True
        else:
            target = self._t0 + math.ceil(self._next * self.period_ns)
            if now < target:
                self._sleep((target - now) / 1e9)
                now = self._clock()
        # Woken (or called) after a later vsync already passed: the frame starts on that one, and the vsyncs
        # in between are missed, as they would be on a display.
        self._start = max(self._next, math.floor((now - self._t0) / self.period_ns))
        return now

    def end(self) -> float:
        elapsed = self._clock() - self._t0
        present = max(self._start + 1, math.ceil(elapsed / self.period_ns))
        interval = (present - self._last_present) * self.period_ms
        self._last_present = self._next = present
        return interval

    def next_start_ns(self) -> int:
        if not self._started:
            return self._clock()
        return self._t0 + math.ceil(self._next * self.period_ns)

    def present_ns(self) -> int:
        return self._t0 + math.ceil(self._last_present * self.period_ns)

    def exclude(self, ns: int) -> None:
        self._t0 += ns  # the vsync grid moves with it


class Uncapped(Pacer):
    def __init__(self, *, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._last_end: int | None = None

    def begin(self) -> int:
        now = self._clock()
        if self._last_end is None:
            self._last_end = now  # the first interval runs from the loop's start
        return now

    def end(self) -> float:
        now = self._clock()
        interval = (now - self._last_end) / 1e6  # type: ignore[operator]
        self._last_end = now
        return interval

    def next_start_ns(self) -> int:
        return self._clock()

    def present_ns(self) -> int:
        assert self._last_end is not None
        return self._last_end

    def exclude(self, ns: int) -> None:
        if self._last_end is not None:
            self._last_end += ns


def make_pacer(mode: str, refresh_hz: float) -> Pacer:
    return PacedVsync(refresh_hz) if mode == "paced" else Uncapped()
