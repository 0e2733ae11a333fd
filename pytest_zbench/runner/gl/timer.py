"""GPU time sources for the GL backend, and the rules that keep their numbers honest.

Sources, in order of preference (docs/gpu-timing.md, docs/methodology.md §5):

* ``timer_query``    EXT_disjoint_timer_query (GL ES) or ARB_timer_query (desktop GL): a TIME_ELAPSED query
                     around each frame's GL commands. Results are read from a small ring of queries *without
                     stalling*: availability is polled once per frame, results arrive a few frames late and are
                     attached to the frame (ordinal) that issued them. GL_GPU_DISJOINT_EXT is read on every poll;
                     a disjoint event drops the values of every query in flight and flags those frames.
* ``finish_bracket`` frame start to glFinish return: CPU + GPU with the pipeline drained (a serialised,
                     slower number).
* ``readback``       frame start to the return of a 1-pixel glReadPixels of the frame's render target.
* ``none``           no GPU number at all.

One source is chosen per run (a job, or a probe) and every frame of that run carries its tag: values of two
sources are never mixed in one run. `choose_source` is the rule; `ZBENCH_GPU_TIMER` forces a source.

`judge_elapsed` is the pure validation of one raw timer value; everything it rejects is dropped and reported
as a runner issue of kind ``timer_invalid`` (the frame keeps its row, with gpu_ms unknown).
"""

from __future__ import annotations

import ctypes
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_zbench.protocol import GpuSource, ZbenchError
from pytest_zbench.runner.gl import glapi

# The sources this backend can offer, best first (a preference order over protocol.GPU_SOURCES).
TIMER_SOURCES: tuple[GpuSource, ...] = ("timer_query", "finish_bracket", "readback", "none")
FORCE_ENV = "ZBENCH_GPU_TIMER"

# Known non-times drivers hand back instead of a result (docs/methodology.md §5: Adreno 0s; 0xFFFFFFFF seen on the
# first query of a Mesa context).
SENTINELS = frozenset({0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF})
# No single frame's GPU work takes ten seconds; a value above that is a broken counter, whatever else we know.
ABSURD_NS = 10_000_000_000
# The GPU cannot spend longer on a frame's commands than the wall time between issuing the first of them and
# seeing the result available. Slack covers the two clocks' rates and granularity.
WALL_SLACK_RATIO = 1.02
WALL_SLACK_NS = 100_000


class TimerUnavailable(ZbenchError, RuntimeError):
    """The requested time source cannot run on this context; the message says which and why."""


@dataclass(frozen=True)
class GpuSample:
    """The GPU time of one frame, identified by its ordinal (0 = first frame this source timed)."""

    ordinal: int
    gpu_ms: float | None
    disjoint: bool | None = None  # None: this source cannot tell
    invalid: str | None = None  # why a raw value was dropped (a ``timer_invalid`` issue), else None


@dataclass(frozen=True)
class Verdict:
    gpu_ms: float | None
    disjoint: bool
    invalid: str | None  # set when the raw value itself was garbage (not for disjoint drops)


def judge_elapsed(raw_ns: int | None, *, counter_bits: int = 64, wall_ns: int | None = None,
                  disjoint: bool = False) -> Verdict:
    """Decide whether a raw TIME_ELAPSED value (nanoseconds) is a time.

    * a frame whose query was in flight during a disjoint event: dropped, flagged disjoint, not an issue
      (the driver told us honestly);
    * no value, 0, an all-ones sentinel, a value that does not fit the counter's bits, a value above
      ABSURD_NS, or more GPU time than wall time elapsed while the query was in flight: dropped as invalid.
    """
    if disjoint:
        return Verdict(None, True, None)
    if raw_ns is None:
        return Verdict(None, False, "no result: the query never became available")
    if raw_ns == 0:
        return Verdict(None, False, "0 ns: the counter did not run")
    if raw_ns in SENTINELS:
        return Verdict(None, False, f"0x{raw_ns:X}: an all-ones sentinel, not a time")
    if raw_ns < 0:
        return Verdict(None, False, f"{raw_ns} ns: negative")
    if 0 < counter_bits < 64 and raw_ns >= 1 << counter_bits:
        return Verdict(None, False, f"{raw_ns} ns does not fit the {counter_bits}-bit counter")
    if raw_ns > ABSURD_NS:
        return Verdict(None, False, f"{raw_ns / 1e6:.1f} ms for one frame is not a measurement")
    if wall_ns is not None and raw_ns > wall_ns * WALL_SLACK_RATIO + WALL_SLACK_NS:
        return Verdict(None, False, f"{raw_ns / 1e6:.3f} ms of GPU time reported while only "
                                    f"{wall_ns / 1e6:.3f} ms of wall time passed")
    return Verdict(raw_ns / 1e6, False, None)


def available_sources(timer_query: bool) -> tuple[GpuSource, ...]:
    """The sources a context offers, best first."""
    return tuple(s for s in TIMER_SOURCES if s != "timer_query" or timer_query)


def choose_source(available: Sequence[GpuSource], forced: str | None) -> GpuSource:
    """The source one run uses: the forced one (which must be available) or the best available."""
    if forced:
        forced = forced.strip()
        if forced not in TIMER_SOURCES:
            raise TimerUnavailable(f"{FORCE_ENV}={forced!r} is not one of {', '.join(TIMER_SOURCES)}")
        if forced not in available:
            raise TimerUnavailable(f"{FORCE_ENV}={forced} was asked for, but this context offers only "
                                   f"{', '.join(available)}")
        return forced
    return available[0]


# ------------------------------------------------------------------------------------------- sources


class TimeSource:
    """One frame's GPU clock. The backend calls, per frame:

        begin(ordinal)              before the frame's first GL command (before drawing)
        before_submit(ordinal)      after Skia issued the frame's GL commands, before they are submitted
        after_submit(ordinal, t0)   after the submit; returns the frame's sample, or None when it comes later
        poll()                      samples of earlier frames that completed since (non-blocking)
    and drain() once at the end (blocking: waits for everything in flight).
    """

    name = "none"
    deferred = False  # True: samples arrive through poll()/drain(), frames late

    def begin(self, ordinal: int) -> None:
        pass

    def before_submit(self, ordinal: int) -> None:
        pass

    def after_submit(self, ordinal: int, t0_ns: int) -> GpuSample | None:
        return GpuSample(ordinal, None)

    def poll(self) -> list[GpuSample]:
        return []

    def drain(self) -> list[GpuSample]:
        return []

    def close(self) -> None:
        pass


class NoTimer(TimeSource):
    name = "none"


class FinishBracket(TimeSource):
    """Frame start to the return of a full finish (`finish` is Skia's submit with GrSyncCpu.kYes plus
    glFinish): CPU and GPU serialised. Only comparable with other finish_bracket runs."""

    name = "finish_bracket"

    def __init__(self, finish: Callable[[], None], clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self._finish, self._clock = finish, clock

    def after_submit(self, ordinal: int, t0_ns: int) -> GpuSample:
        self._finish()
        return GpuSample(ordinal, (self._clock() - t0_ns) / 1e6)


class Readback(TimeSource):
    """Frame start to the return of a 1-pixel glReadPixels of the frame's render target, which cannot
    return before every command writing that target has completed."""

    name = "readback"

    def __init__(self, read_pixel: Callable[[], object], clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self._read, self._clock = read_pixel, clock

    def after_submit(self, ordinal: int, t0_ns: int) -> GpuSample:
        self._read()
        return GpuSample(ordinal, (self._clock() - t0_ns) / 1e6)


@dataclass
class _InFlight:
    ordinal: int
    query: int
    t_begin_ns: int
    disjoint: bool = False


class TimerQuery(TimeSource):
    """TIME_ELAPSED queries in a ring, read without stalling.

    A query is begun before a frame's first GL command and ended after its last; `poll()` (once a frame)
    collects, oldest first, the results that are available, so a frame's value arrives a few frames later and
    keeps its ordinal. The ring grows when every query is still in flight (up to `max_ring`); only beyond that
    does `begin` wait for the oldest result (counted in `stalls`).
    """

    name = "timer_query"
    deferred = True

    def __init__(self, gl: glapi.GL, *, ring: int = 4, max_ring: int = 32,
                 clock: Callable[[], int] = time.perf_counter_ns, drain_timeout_s: float = 5.0) -> None:
        if gl.timer_extension is None:
            raise TimerUnavailable("timer_query: the context has neither GL_EXT_disjoint_timer_query nor "
                                   "GL_ARB_timer_query")
        self.gl = gl
        self.counter_bits = gl.counter_bits()
        if self.counter_bits <= 0:
            raise TimerUnavailable(f"timer_query: {gl.timer_extension} reports 0 counter bits for "
                                   "GL_TIME_ELAPSED (the counter carries no information)")
        self.has_disjoint = gl.timer_extension == "GL_EXT_disjoint_timer_query"
        self._clock = clock
        self._drain_timeout_s = drain_timeout_s
        self._max_ring = max_ring
        self._all: list[int] = []
        self._free: deque[int] = deque()
        self._in_flight: deque[_InFlight] = deque()
        self._active: _InFlight | None = None
        self._early: list[GpuSample] = []  # samples collected while stalling in begin()
        self.stalls = 0
        self.disjoint_events = 0
        self.max_lag = 0  # most frames a result arrived late
        self._ordinal_now = 0
        self._grow(ring)
        self._disjoint_flag()  # clear anything pending from context creation

    def _grow(self, n: int) -> None:
        ids = (ctypes.c_uint32 * n)()
        self.gl.glGenQueries(n, ids)
        self._all.extend(ids)
        self._free.extend(ids)

    @property
    def ring_size(self) -> int:
        return len(self._all)

    def _disjoint_flag(self) -> bool:
        # Reading GL_GPU_DISJOINT_EXT also clears it.
        return bool(self.has_disjoint and self.gl.get_integer(glapi.GL_GPU_DISJOINT_EXT))

    def begin(self, ordinal: int) -> None:
        self._ordinal_now = ordinal
        if not self._free:
            if len(self._all) < self._max_ring:
                self._grow(min(len(self._all), self._max_ring - len(self._all)) or 1)
            else:
                self.stalls += 1
                self._early.extend(self._collect(block_for_oldest=True))
        query = self._free.popleft()
        self._active = _InFlight(ordinal, query, self._clock())
        self.gl.glBeginQuery(glapi.GL_TIME_ELAPSED_EXT, query)

    def before_submit(self, ordinal: int) -> None:
        if self._active is not None:
            self.gl.glEndQuery(glapi.GL_TIME_ELAPSED_EXT)
            self._in_flight.append(self._active)
            self._active = None

    def after_submit(self, ordinal: int, t0_ns: int) -> None:
        return None

    def _available(self, query: int) -> bool:
        out = ctypes.c_int32(0)
        self.gl.glGetQueryObjectiv(query, glapi.GL_QUERY_RESULT_AVAILABLE_EXT, ctypes.byref(out))
        return bool(out.value)

    def _collect(self, *, block_for_oldest: bool = False) -> list[GpuSample]:
        ready = 0
        for entry in self._in_flight:
            if not self._available(entry.query):
                if block_for_oldest and ready == 0:
                    self._wait_available(entry.query)
                else:
                    break
            ready += 1
        seen_ns = self._clock()
        # Read the flag after the availability checks: an event before this read may have touched any query
        # still in flight, including those that just became available.
        if self._disjoint_flag():
            self.disjoint_events += 1
            for entry in self._in_flight:
                entry.disjoint = True
        out = []
        for _ in range(ready):
            entry = self._in_flight.popleft()
            raw = ctypes.c_uint64(0)
            self.gl.glGetQueryObjectui64v(entry.query, glapi.GL_QUERY_RESULT_EXT, ctypes.byref(raw))
            verdict = judge_elapsed(raw.value, counter_bits=self.counter_bits,
                                    wall_ns=seen_ns - entry.t_begin_ns, disjoint=entry.disjoint)
            self._free.append(entry.query)
            self.max_lag = max(self.max_lag, self._ordinal_now - entry.ordinal)
            out.append(GpuSample(entry.ordinal, verdict.gpu_ms, verdict.disjoint, verdict.invalid))
        return out

    def _wait_available(self, query: int) -> bool:
        deadline = time.monotonic() + self._drain_timeout_s
        self.gl.glFlush()
        while not self._available(query):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True

    def poll(self) -> list[GpuSample]:
        early, self._early = self._early, []
        return early + self._collect()

    def drain(self) -> list[GpuSample]:
        out = self.poll()
        if self._active is not None:  # a frame that began but never ended: close it so the ring is clean
            self.before_submit(self._active.ordinal)
        while self._in_flight:
            if not self._wait_available(self._in_flight[0].query):
                # Never available: report every remaining frame as invalid rather than wait forever.
                while self._in_flight:
                    entry = self._in_flight.popleft()
                    self._free.append(entry.query)
                    out.append(GpuSample(entry.ordinal, None, entry.disjoint or None,
                                         judge_elapsed(None).invalid))
                break
            out.extend(self._collect())
        return out

    def close(self) -> None:
        if self._all:
            ids = (ctypes.c_uint32 * len(self._all))(*self._all)
            self.gl.glDeleteQueries(len(self._all), ids)
            self._all, self._free = [], deque()


def make_source(name: str, gl: glapi.GL, *, finish: Callable[[], None],
                read_pixel: Callable[[], object]) -> TimeSource:
    if name == "timer_query":
        return TimerQuery(gl)
    if name == "finish_bracket":
        return FinishBracket(finish)
    if name == "readback":
        return Readback(read_pixel)
    if name == "none":
        return NoTimer()
    raise TimerUnavailable(f"unknown time source {name!r}")
