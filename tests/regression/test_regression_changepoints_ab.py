"""Change points on synthetic history series, and the A/B helper."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_zbench.regression.changepoints import change_points, e_divisive
from pytest_zbench.regression.history import SeriesPoint
from pytest_zbench.regression.interleaved_ab import interleave, judge_ab, judge_order, split


def noisy(level: float, n: int, *, spread: float = 0.03, seed: int = 0) -> list[float]:
    return list(level * np.exp(np.random.default_rng(seed).normal(0, spread, n)))


def points(values: list[float | None]) -> list[SeriesPoint]:
    return [SeriesPoint(f"run{i}", f"2026-10-{1 + i % 28:02d}T00:00:00Z", f"build{i:03d}", False, "fp", v, 5)
            for i, v in enumerate(values)]


def test_known_step_is_found_with_its_build_and_magnitude():
    series = noisy(5.0, 25, seed=1) + noisy(6.25, 20, seed=2)
    (step,) = change_points(points(series))
    assert step.index == 25 and step.build_hash == "build025" and step.run_id == "run25"
    assert step.magnitude == pytest.approx(1.25, abs=0.03)
    assert step.p_value <= 0.05
    assert "x1.2" in step.describe() and "build025" in step.describe()


def test_two_steps_up_and_down():
    series = noisy(5.0, 20, seed=3) + noisy(6.0, 15, seed=4) + noisy(5.5, 20, seed=5)
    steps = change_points(series)
    assert [s.index for s in steps] == [20, 35]
    assert steps[0].magnitude == pytest.approx(1.2, abs=0.03)
    assert steps[1].magnitude == pytest.approx(5.5 / 6.0, abs=0.03)


@pytest.mark.parametrize("seed", range(5))
def test_flat_noisy_series_has_no_change_point(seed):
    assert change_points(noisy(5.0, 60, spread=0.08, seed=100 + seed), seed=seed) == []


def test_missing_values_are_skipped_and_indices_kept():
    series: list[float | None] = [*noisy(5.0, 12, seed=6), None, *noisy(7.0, 12, seed=7)]
    (step,) = change_points(points(series))
    assert step.index == 13 and step.build_hash == "build013"


def test_short_series_yield_nothing():
    assert change_points([5.0, 6.0, 7.0]) == []
    assert e_divisive([1.0] * 5, min_size=3) == []
    with pytest.raises(ValueError):
        e_divisive([1.0] * 10, min_size=1)


def test_interleaved_order():
    assert interleave(3, pattern="ABAB") == ["A", "B", "A", "B", "A", "B"]
    assert interleave(3) == ["A", "B", "B", "A", "A", "B"]  # counterbalanced by default
    abba = interleave(4)
    assert abba == ["A", "B", "B", "A", "A", "B", "B", "A"]
    positions = {arm: [i for i, a in enumerate(abba) if a == arm] for arm in "AB"}
    assert sum(positions["A"]) == sum(positions["B"])  # a linear drift hits both arms alike
    with pytest.raises(ValueError):
        interleave(0)


def test_split_and_judge_b_against_a():
    order = interleave(6)
    a_values, b_values = iter(noisy(8.0, 6, seed=8)), iter(noisy(8.0 * 1.3, 6, seed=9))
    launches = [{"cpu_ms": {"p50": next(a_values if arm == "A" else b_values)}} for arm in order]
    a, b = split(order, launches)
    assert len(a) == len(b) == 6 and a[0] is launches[0] and b[0] is launches[1]
    assert split(order, launches[:3]) == ([launches[0]], [launches[1], launches[2]])  # A, B, B, A ...
    verdict = judge_order(order, launches, a_name="main@abc", b_name="branch@def", device="pi3b")
    cpu = verdict.by_metric()["cpu_ms.p50"]
    assert verdict.verdict == "regressed" and cpu.effect == pytest.approx(1.3, abs=0.05)
    assert "main@abc, 6 launches interleaved with 6 of branch@def on pi3b" in cpu.message()
    assert judge_ab(a, a).verdict == "same"
