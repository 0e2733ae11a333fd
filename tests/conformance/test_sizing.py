"""The kit's jobs sized to the device: full on a device that keeps up with its display, few frames and small
surfaces on one that takes seconds a frame, never so few that a check cannot fail."""

from __future__ import annotations

import pytest

from pytest_zbench.conformance.sizing import (
    COMPLEXITY_MAX,
    COMPLEXITY_MIN,
    FULL,
    UNCAPPED_MAX,
    UNCAPPED_MIN,
    frame_seconds,
    sizes_for,
)

GOLDEN_PIXELS = 800 * 480  # the corpus's software goldens


def test_a_device_on_its_vsync_gets_the_full_jobs_and_the_corpus_at_golden_size():
    sizes = sizes_for(1 / 60)
    assert (sizes.uncapped_frames, sizes.complexity_frames) == (UNCAPPED_MAX, COMPLEXITY_MAX)
    assert sizes.uncapped_warmup == FULL.uncapped_warmup and sizes.max_pixels >= GOLDEN_PIXELS
    assert sizes.sampler_frames == FULL.sampler_frames


@pytest.mark.parametrize("frame_s", [0.9, 3.0, 60.0])
def test_a_slow_device_gets_the_fewest_frames_a_check_can_fail_with_and_the_kit_surface(frame_s):
    sizes = sizes_for(frame_s)
    assert UNCAPPED_MIN <= sizes.uncapped_frames < UNCAPPED_MAX
    assert COMPLEXITY_MIN <= sizes.complexity_frames < COMPLEXITY_MAX and sizes.complexity_frames % 2 == 0
    assert sizes.max_pixels < GOLDEN_PIXELS and 2 <= sizes.sampler_frames < FULL.sampler_frames
    assert f"{frame_s:.3g} s" in sizes.describe()


def test_the_frame_time_is_the_median_step_so_one_preempted_frame_does_not_move_it():
    starts = [0, 10**9, 2 * 10**9, 9 * 10**9, 10 * 10**9, 11 * 10**9]  # one step of 7 s among steps of 1 s
    assert frame_seconds(starts) == pytest.approx(1.0)
    assert frame_seconds([5]) is None and frame_seconds([]) is None
    assert sizes_for(None) == FULL and "full-size" in FULL.describe()
