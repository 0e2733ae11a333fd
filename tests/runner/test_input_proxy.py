"""The input-to-photon proxy's synthetic taps (pytest_zbench/runner/input_proxy.py) on the simulated vsync,
on a fake clock, and the tap_target op that shows them (docs/display-list.md)."""

from __future__ import annotations

import numpy as np
import pytest
import skia

from pytest_zbench.host.measure.input_latency import read_events, summarize_input_latency
from pytest_zbench.runner.input_proxy import SyntheticTaps
from pytest_zbench.runner.interpreter import DisplayListError, compile_scene
from pytest_zbench.runner.pacing import PacedVsync, Uncapped

MS = 1_000_000
PERIOD_MS = 1000 / 60


class FakeClock:
    def __init__(self) -> None:
        self.now = 5 * MS

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


def run_frames(pacer, taps, clock, frames, work_ms, warmup=0):
    for f in range(frames):
        tapped = taps.reflects_tap(f)
        if tapped:
            taps.tap(pacer.next_start_ns())
        pacer.begin()
        clock.now += round(work_ms * MS)
        pacer.end()
        if tapped:
            taps.presented(f, pacer.present_ns(), measured=f >= warmup)


def test_a_paced_tap_is_presented_at_the_vsync_after_its_frame_and_within_two_periods():
    clock = FakeClock()
    pacer = PacedVsync(60, clock=clock, sleep=clock.sleep)
    taps = SyntheticTaps(3, seed=1, clock=clock, sleep=clock.sleep)
    run_frames(pacer, taps, clock, 13, work_ms=4.0)
    assert [f for f, _ in taps.events] == [1, 4, 7, 10]
    # The tap falls in the idle gap before its frame's vsync; the frame (4 ms) presents at the next vsync.
    for _, ms in taps.events:
        assert PERIOD_MS < ms <= 2 * PERIOD_MS
    assert len({ms for _, ms in taps.events}) > 1  # seeded phases, not one fixed point


def test_an_overrunning_frame_presents_its_tap_a_period_later():
    clock = FakeClock()
    pacer = PacedVsync(60, clock=clock, sleep=clock.sleep)
    taps = SyntheticTaps(2, seed=1, clock=clock, sleep=clock.sleep)
    run_frames(pacer, taps, clock, 4, work_ms=20.0)  # over one period: each frame takes two vsyncs
    for _, ms in taps.events:
        assert 2 * PERIOD_MS - 1e-6 <= ms <= 3 * PERIOD_MS


def test_uncapped_taps_are_taken_at_once_and_presented_at_the_frame_end():
    clock = FakeClock()
    pacer = Uncapped(clock=clock)
    taps = SyntheticTaps(2, seed=1, clock=clock, sleep=clock.sleep)
    run_frames(pacer, taps, clock, 6, work_ms=7.0, warmup=2)
    assert taps.events == [(3, 7.0), (5, 7.0)]  # frame 1, in the warmup, is not recorded
    assert taps.result() == {"source": "synthetic_tap", "tap_every": 2, "events": [[3, 7.0], [5, 7.0]]}


def test_the_target_lights_only_in_a_frame_that_reflects_a_tap():
    ops = [{"op": "tap_target", "x": 0, "y": 0, "w": 8, "h": 8, "color": "#000000FF", "active_color": "#FF0000FF",
            "tap_every": 4}]
    program = compile_scene(ops)
    assert program.tap_every == 4
    surface = skia.Surface(8, 8)
    colours = []
    for tapped in (False, True):
        program.render(surface.getCanvas(), 1, None, tapped)
        colours.append(tuple(np.array(surface.makeImageSnapshot().toarray())[4, 4][:3]))
    assert colours[0] != colours[1]
    with pytest.raises(DisplayListError, match="one series of taps"):
        compile_scene([ops[0], {**ops[0], "tap_every": 5}])


def test_the_scene_summary_is_over_every_tap_and_labelled_a_proxy():
    launches = [{"source": "synthetic_tap", "tap_every": 6, "events": [[1, 20.0], [7, 30.0]]},
                {"source": "synthetic_tap", "tap_every": 6, "events": [[1, 10.0], [7, 40.0]]}, None]
    summary = summarize_input_latency(launches)
    assert summary is not None and summary["proxy"] is True and summary["definition"].startswith("proxy: ")
    assert summary["taps"] == 4 and summary["p50_ms"] == pytest.approx(25.0) and summary["max_ms"] == 40.0
    assert summary["per_run_p50_ms"] == [25.0, 25.0]
    assert read_events({"events": [[1, -3.0]]}) is None and summarize_input_latency([None]) is None
