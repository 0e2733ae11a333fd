"""The adaptive controller's plans (host/measure/adaptive_launches.py): the search windows, the ramp, the captures."""

from __future__ import annotations

import math

import pytest

from pytest_zbench.adaptive_score import SETTLE_FRAMES, LaunchPoints, StepPoint
from pytest_zbench.host.measure.adaptive_launches import (
    EXTENSION_TIME_LIMIT_S,
    FIRST_SEARCH_TOP,
    MIN_HOLD,
    RAMP_BOTTOM,
    RAMP_TOP,
    SEARCH_GROWTH,
    Controller,
    complexity_at,
    geometric_steps,
    plan_warmup,
)
from pytest_zbench.scenes import ComplexitySpec

BUDGET = 16.0


def controller(frames=600, warmup=60, capture=(0,), spec=ComplexitySpec("rects", 100, 100_000)):
    return Controller(spec, BUDGET, frames, warmup, capture)


def measured(plan, cost_per_element, intercept=0.5):
    """What a device with a linear cost would measure for each step of a plan."""
    return LaunchPoints(tuple(StepPoint(c, intercept + cost_per_element * c, 4)
                              for c, _ in plan.steps()[1:]), 0)


def test_geometric_steps_double_and_end_on_the_top():
    assert geometric_steps(1, 64) == [1, 2, 4, 8, 16, 32, 64]
    assert geometric_steps(128, 300) == [128, 256, 300]
    assert geometric_steps(5, 5) == [5]


def test_complexity_at_interpolates_extrapolates_and_scales():
    pts = [StepPoint(10, 2.0, 4), StepPoint(20, 4.0, 4), StepPoint(40, 8.0, 4)]
    assert complexity_at(pts, 6.0) == pytest.approx(30)
    assert complexity_at(pts, 16.0) == pytest.approx(80)  # along the top two steps
    assert complexity_at(pts, 1.0) == pytest.approx(5)  # proportionally below the first
    assert complexity_at([StepPoint(10, 2.0, 4), StepPoint(20, 2.0, 4)], 16.0) == math.inf


def test_the_first_search_doubles_from_one_and_every_plan_captures_at_the_capture_complexity():
    c = controller(capture=(0,))
    plan = c.next_search()
    assert plan.role == "search" and plan.warmup_frames == 60
    hold = max(MIN_HOLD, (600 // 24) // 2)
    assert plan.hold == hold
    assert plan.steps() == [[100.0, 1], [1.0, 59 + hold]] + [[float(v), hold] for v in (2, 4, 8, 16, 32, FIRST_SEARCH_TOP)]
    assert plan.complexity[0] == 100  # the captured frame
    assert len(plan.complexity) == plan.warmup_frames + plan.frames


def test_a_later_search_is_bounded_by_growth_and_by_the_predicted_reach():
    c = controller()
    first = c.next_search()
    c.observe(measured(first, 1e-6))  # nothing measurable yet: the growth bound applies
    second = c.next_search()
    assert second.steps()[1][0] == 2 * FIRST_SEARCH_TOP
    assert second.steps()[-1][0] == FIRST_SEARCH_TOP * SEARCH_GROWTH
    c.observe(measured(second, 0.002))  # 4 budgets = 64 ms at 31,750 elements
    third = c.next_search()
    top = third.steps()[-1][0]
    assert top == pytest.approx((4 * BUDGET - 0.5) / 0.002, rel=0.01)


def test_the_search_ends_at_the_budget_and_the_ramp_spans_its_stated_costs():
    c = controller(frames=600, warmup=60, capture=(0,))
    plan = c.next_search()
    c.observe(measured(plan, 0.5))  # 32 elements cost 16.5 ms: over budget
    assert c.next_search() is None
    ramp = c.ramp()
    steps = ramp.steps()
    assert steps[0] == [100.0, 1] and ramp.role == "ramp"
    levels = [s[0] for s in steps[1:]]
    assert levels == sorted(levels, reverse=True)
    assert levels[0] == pytest.approx((RAMP_TOP * BUDGET - 0.5) / 0.5, abs=1)
    assert levels[-1] == pytest.approx((RAMP_BOTTOM * BUDGET - 0.5) / 0.5, abs=1)
    assert ramp.frames == 600 and ramp.hold == 25 and len(levels) == 24
    assert c.ramp() == ramp  # every scored launch runs one plan


def test_the_search_stops_at_the_scenes_max_and_the_ramp_stays_under_it():
    c = controller(spec=ComplexitySpec("rects", 10, 500))
    plan = c.next_search()
    c.observe(measured(plan, 1e-5))
    plan = c.next_search()
    assert plan.steps()[-1][0] == 500
    c.observe(measured(plan, 1e-5))
    assert c.next_search() is None
    assert max(c.ramp().complexity) == 500


def test_captures_sit_in_a_warmup_long_enough_to_settle_after_them():
    assert plan_warmup(5, (0,)) == 5
    assert plan_warmup(0, (0,)) == 1 + SETTLE_FRAMES
    assert plan_warmup(5, (0, 30)) == 31 + SETTLE_FRAMES
    c = controller(frames=30, warmup=5, capture=(0, 30))
    plan = c.next_search()
    assert plan.warmup_frames == 33 and plan.complexity[0] == plan.complexity[30] == 100
    assert set(plan.complexity[31:33]) == {1.0}


def test_a_quick_ramp_has_short_steps_and_every_frame_it_was_asked_for():
    c = controller(frames=30, warmup=5)
    c.observe(measured(c.next_search(), 0.5))
    ramp = c.ramp()
    assert ramp.hold == MIN_HOLD and ramp.frames == 30
    assert len(ramp.steps()) - 1 == 30 // MIN_HOLD


def test_a_search_step_whose_median_is_exactly_the_budget_ends_the_search():
    c = controller()
    levels = [v for v, _ in c.next_search().steps()[1:]]
    top = levels[-1]
    # Every step under the budget but the top one, whose median frame cost is the budget itself.
    c.observe(LaunchPoints(tuple(StepPoint(v, BUDGET if v == top else BUDGET / 2, 4) for v in dict.fromkeys(levels)),
                           0))
    assert c.next_search() is None
    # A hair under the budget is not there yet: the search goes on.
    under = controller()
    levels = [v for v, _ in under.next_search().steps()[1:]]
    under.observe(LaunchPoints(tuple(StepPoint(v, BUDGET - 1e-9 if v == levels[-1] else BUDGET / 2, 4)
                                     for v in dict.fromkeys(levels)), 0))
    assert under.next_search() is not None


# --- past the scene's max (docs/methodology.md §10, "Past max") -----------------------------------------------


class Clock:
    """A clock the test moves: the controller's time limit without waiting for it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def search_until_done(c, cost_per_element, clock=None, seconds_per_launch=0.0):
    plans = []
    while (plan := c.next_search()) is not None:
        plans.append(plan)
        if clock is not None:
            clock.now += seconds_per_launch
        c.observe(measured(plan, cost_per_element))
    return plans


def test_a_device_within_budget_at_max_is_searched_past_it_until_the_budget_is_crossed():
    # 0.5 + 1e-3 ms per element crosses 16 ms at 15,500: past the scene's max of 10,000.
    c = controller(spec=ComplexitySpec("rects", 100, 10_000, limit=100_000))
    plans = search_until_done(c, 1e-3)
    tops = [p.steps()[-1][0] for p in plans]
    assert 10_000 in tops and max(tops) > 10_000
    assert c.extension is not None and c.extension.stopped == "budget"
    assert (c.extension.max_complexity, c.extension.limit) == (10_000, 100_000)
    assert c.extension.reached == max(tops)
    ramp = c.ramp()
    assert max(ramp.complexity) == pytest.approx((RAMP_TOP * BUDGET - 0.5) / 1e-3, rel=1e-6)  # past max
    assert min(ramp.complexity) < 15_500 < max(ramp.complexity)


def test_the_search_past_max_stops_at_the_ops_limit_and_keeps_the_lower_bound():
    c = controller(spec=ComplexitySpec("rects", 100, 10_000, limit=40_000))
    search_until_done(c, 1e-6)
    assert c.extension is not None and c.extension.stopped == "limit" and c.extension.reached == 40_000
    assert max(c.ramp().complexity) == 40_000


def test_the_search_past_max_stops_at_its_time_limit():
    clock = Clock()
    c = controller(spec=ComplexitySpec("rects", 100, 10_000, limit=100_000))
    c = Controller(c.spec, BUDGET, 600, 60, (0,), clock=clock)
    search_until_done(c, 1e-6, clock, seconds_per_launch=EXTENSION_TIME_LIMIT_S / 2)
    assert c.extension is not None and c.extension.stopped == "time"
    assert c.extension.reached < 100_000


def test_a_scene_whose_op_can_draw_no_more_than_max_is_not_extended():
    c = controller(spec=ComplexitySpec("rects", 10, 500, limit=500))
    search_until_done(c, 1e-6)
    assert c.extension is None and max(c.ramp().complexity) == 500


def test_the_corpus_limits_are_the_ops_own_caps_and_the_frame_draw_cap():
    from pathlib import Path

    from pytest_zbench.protocol.display_list import MAX_COUNT
    from pytest_zbench.scenes import load_corpus

    cases, errors = load_corpus(Path(__file__).resolve().parent.parent / "scenes")
    assert not errors
    spec = {c.id: c.complexity for c in cases if c.complexity is not None}
    assert spec["drawcalls.rects.adaptive"].limit == MAX_COUNT  # a repeat of one rect: its count's cap
    assert spec["shader.loops.adaptive"].limit == spec["shader.loops.adaptive"].max == 1024
    assert all(s.limit is not None and s.limit >= s.max for s in spec.values())
