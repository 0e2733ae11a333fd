"""The simulated vsync schedule and the uncapped frame delta, on a fake clock (no real waiting)."""

from __future__ import annotations

import pytest

from pytest_zbench.runner.pacing import PacedVsync, Uncapped

MS = 1_000_000


class FakeClock:
    def __init__(self, start: int = 5 * MS) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += round(seconds * 1e9) + 50_000  # the OS wakes us a little late


def drive(pacer, clock: FakeClock, work_ms: list[float]) -> list[tuple[int, float]]:
    out = []
    for ms in work_ms:
        start = pacer.begin()
        clock.now += round(ms * MS)
        out.append((start, pacer.end()))
    return out


def test_paced_frames_present_on_whole_periods():
    clock = FakeClock()
    pacer = PacedVsync(100.0, clock=clock, sleep=clock.sleep)  # 10 ms period
    frames = drive(pacer, clock, [2, 2, 15, 2, 25, 9, 2])
    assert [interval for _, interval in frames] == pytest.approx([10, 10, 20, 10, 30, 10, 10])
    # Each frame starts on the vsync where the previous one presented (plus the wake-up lateness).
    starts = [(start - 5 * MS) / MS for start, _ in frames]
    assert starts == pytest.approx([0, 10.05, 20.05, 40.05, 50.05, 80.05, 90.05])


def test_paced_frame_ending_exactly_on_a_vsync_presents_there():
    clock = FakeClock()
    pacer = PacedVsync(100.0, clock=clock, sleep=clock.sleep)
    assert [i for _, i in drive(pacer, clock, [10, 1])] == pytest.approx([10, 10])


def test_paced_late_wakeup_misses_vsyncs_instead_of_shifting_the_schedule():
    clock = FakeClock()
    pacer = PacedVsync(100.0, clock=clock, sleep=lambda s: setattr(clock, "now", clock.now + round(s * 1e9) + 12 * MS))
    frames = drive(pacer, clock, [2, 2, 2])
    # Frame 1 should start at 10 ms but wakes at 22 ms: it starts on vsync 2 and presents on vsync 3.
    assert [i for _, i in frames] == pytest.approx([10, 20, 20])


def test_uncapped_interval_is_the_delta_between_frame_ends():
    clock = FakeClock()
    pacer = Uncapped(clock=clock)
    intervals = []
    for work, gap in [(3, 1), (5, 0), (2, 4)]:
        pacer.begin()
        clock.now += work * MS
        intervals.append(pacer.end())
        clock.now += gap * MS  # time between frames (writing the row) counts in the next interval
    assert intervals == pytest.approx([3, 6, 2])



def _intervals(pacer, clock: FakeClock, work_ms: list[float], walk_ms: float) -> list[float]:
    out = []
    for ms in work_ms:
        pacer.begin()
        clock.now += round(ms * MS)
        out.append(pacer.end())
        clock.now += round(walk_ms * MS)  # work between frames (the runner's counting walk)
        pacer.exclude(round(walk_ms * MS))
    return out


@pytest.mark.parametrize("make", [lambda c: PacedVsync(100.0, clock=c, sleep=c.sleep), lambda c: Uncapped(clock=c)],
                         ids=["paced", "uncapped"])
def test_work_excluded_between_frames_never_shows_in_the_intervals(make):
    work = [6, 8, 2, 9, 12]
    with_walk, without = FakeClock(), FakeClock()
    assert _intervals(make(with_walk), with_walk, work, 9) == pytest.approx(_intervals(make(without), without, work, 0))
