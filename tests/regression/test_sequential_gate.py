"""The sequential gate's statistics (regression/sequential.py) and its schedule (host/measure/sequential_rounds.py),
without devices: the launches are synthetic summaries, the clock a counter. End to end:
test_sequential_gate_session.py."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy import stats

from pytest_zbench.host.measure.sequential_rounds import run_rounds
from pytest_zbench.regression.config import AB_GATING_METRICS, DEFAULT_AB_THRESHOLD
from pytest_zbench.regression.gate import GateConfig
from pytest_zbench.regression.sequential import (
    DESIGN,
    FIRST_LOOK,
    FUTILE_FROM,
    REACHABLE_SPLITS,
    TAIL_SAME_FACTOR,
    SceneSequence,
    boundaries,
    futile,
    hsd_spent_alpha,
    judge_look,
    launches_to_decide,
    look_due,
    nominal_alphas,
    permutation_floor,
    same_bar,
    spending,
    spent_alpha,
)

CONFIG = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=("cpu_ms.p50",))


def test_spending_reaches_alpha_at_the_end_and_little_early():
    assert spent_alpha(1.0, 0.01) == pytest.approx(0.01, rel=1e-9)
    assert spent_alpha(0.5, 0.01) == pytest.approx(2 * stats.norm.sf(stats.norm.isf(0.005) * math.sqrt(2)), rel=1e-9)
    assert spent_alpha(0.25, 0.01) < 1e-6


def test_boundaries_match_the_published_obrien_fleming_type_design():
    # Lan-DeMets O'Brien-Fleming-type spending, one-sided 0.025, 5 equally spaced looks (gsDesign sfLDOF):
    # 4.8769, 3.3569, 2.6803, 2.2898, 2.0310
    published = (4.8769, 3.3569, 2.6803, 2.2898, 2.0310)
    assert boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025) == pytest.approx(published, abs=3e-3)


def test_one_look_is_the_fixed_test():
    assert nominal_alphas([1.0], 0.01) == pytest.approx((0.01,), rel=1e-6)


def test_a_look_without_new_launches_spends_nothing():
    levels = nominal_alphas([0.5, 0.5, 1.0], 0.01)
    assert levels[1] == 0.0 and 0 < levels[0] < levels[2] < 0.01


def test_the_boundaries_hold_alpha_over_all_looks_for_brownian_paths():
    """The chance that any look crosses, with no change, is alpha (Monte Carlo over the canonical joint
    distribution of the looks' statistics; unequal spacing, as a session's failed launches leave it)."""
    fractions = np.array([4, 6, 8, 10, 11, 12]) / 12
    b = np.array(boundaries(fractions, 0.01))
    rng = np.random.default_rng(5)
    steps = rng.normal(size=(400_000, len(fractions))) * np.sqrt(np.diff(fractions, prepend=0.0))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = (z >= b).any(axis=1).mean()
    assert crossed == pytest.approx(0.01, abs=0.0008)  # 3.2 binomial standard errors at 400,000 paths


def test_hwang_shih_decani_spending_reaches_alpha_and_is_linear_at_gamma_zero():
    assert hsd_spent_alpha(1.0, 0.005, -2.0) == pytest.approx(0.005, rel=1e-12)
    assert hsd_spent_alpha(0.5, 0.005, 0.0) == pytest.approx(0.0025, rel=1e-12)
    # gamma -2 spends more of alpha by half-way than O'Brien-Fleming does
    assert hsd_spent_alpha(0.5, 0.005, -2.0) > 10 * spent_alpha(0.5, 0.005)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75])
def test_the_products_spending_is_hwang_shih_decani_gamma_minus_one_at_the_interior_looks(fraction):
    """The end point alone (alpha at t = 1) holds for any gamma: the shape is pinned where the looks are.
    gamma -1 is a (e^t - 1) / (e - 1) (docs/regression.md), convex: by t it has spent less than t of alpha.
    The wrong sign, gamma +1, spends 0.35 of alpha by t = 0.25 and 0.62 by t = 0.5."""
    a = 0.005
    published = a * math.expm1(fraction) / (math.e - 1)  # 0.1653 a, 0.3775 a, 0.6501 a
    spent = spending(DESIGN)(fraction, a)
    assert spent == pytest.approx(published, rel=1e-9)  # two closed forms of one formula: rounding only
    assert spent < fraction * a
    assert hsd_spent_alpha(fraction, a, -1.0) == pytest.approx(published, rel=1e-9)


def test_the_products_levels_at_8_to_14_launches_are_the_documented_ones():
    """docs/regression.md gives the levels of the product's looks at a maximum of 14 (4 + 4 and 6 + 6 spend
    nothing): 0.0022, 0.0017, 0.0019, 0.0024. A spending curve of the wrong shape moves them (gamma +1:
    0.0034 at 8 + 8, falling to 0.0013 at 14 + 14)."""
    looks = np.array([4, 6, 8, 10, 12, 14])
    floors = [REACHABLE_SPLITS * permutation_floor(int(n)) for n in looks]
    levels = nominal_alphas(looks / 14, 0.005, DESIGN, floors)
    # The documented levels are rounded to two significant digits (0.00165 is written 0.0017): within 6e-5.
    assert levels == pytest.approx((0.0, 0.0, 0.0022, 0.0017, 0.0019, 0.0024), abs=6e-5)


def test_the_permutation_floor_is_one_over_the_splits_or_the_random_permutations():
    assert permutation_floor(4) == pytest.approx(1 / 70) and permutation_floor(6) == pytest.approx(1 / 924)
    assert permutation_floor(10) == pytest.approx(1 / 10_000)  # C(20, 10) > 20,000 splits: 9,999 random ones


def test_a_look_the_permutation_test_cannot_reach_spends_nothing_and_the_next_look_spends_it():
    looks = np.array([4, 6, 8, 10, 12])
    fractions = looks / 12
    floors = [permutation_floor(int(n)) for n in looks]
    plain = nominal_alphas(fractions, 0.005)
    floored = nominal_alphas(fractions, 0.005, floors=floors)
    # O'Brien-Fleming's levels at 4 + 4 and 6 + 6 are below 1/70 and 1/924: those looks spend nothing ...
    assert plain[0] < floors[0] and plain[1] < floors[1] and floored[:2] == (0.0, 0.0)
    # ... and the look at 8 + 8 spends what they did not, so its level is higher
    assert floored[2] > plain[2] and floored[2] >= floors[2]
    # all looks together still cross with chance alpha, with no change (Monte Carlo, Brownian paths)
    b = np.array(boundaries(fractions, 0.005, floors=floors))
    rng = np.random.default_rng(11)
    steps = rng.normal(size=(400_000, len(fractions))) * np.sqrt(np.diff(fractions, prepend=0.0))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    assert (z >= b).any(axis=1).mean() == pytest.approx(0.005, abs=0.0006)  # 5.4 binomial standard errors


def test_the_products_design_holds_alpha_over_all_looks_for_brownian_paths():
    """The product's spending (DESIGN) with its floors (REACHABLE_SPLITS x the permutation floor): the chance
    that any look crosses, with no change, is the alpha per direction."""
    looks = np.array([4, 6, 8, 10, 12])
    fractions = looks / 12
    floors = [REACHABLE_SPLITS * permutation_floor(int(n)) for n in looks]
    b = np.array(boundaries(fractions, 0.005, DESIGN, floors))
    assert math.isinf(b[0]) and math.isinf(b[1])  # 4 + 4 and 6 + 6 could barely reject: only `same` there
    rng = np.random.default_rng(12)
    steps = rng.normal(size=(400_000, len(fractions))) * np.sqrt(np.diff(fractions, prepend=0.0))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    assert (z >= b).any(axis=1).mean() == pytest.approx(0.005, abs=0.0006)


def test_each_direction_spends_half_the_scenes_alpha():
    sequence = SceneSequence(max_launches=12, alpha=0.01, budget_min=1.0)
    assert sequence.alpha_per_direction == pytest.approx(0.005)
    assert sequence.level(12) == pytest.approx(0.005, rel=1e-6)  # one look at the maximum: the fixed test
    assert sequence.to_json()["alpha_per_direction"] == pytest.approx(0.005)


def test_a_tail_metric_has_its_own_wider_same_bar():
    assert same_bar("cpu_ms.p50", 0.05) == 0.05
    assert same_bar("cpu_ms.p95", 0.05) == same_bar("jank_share", 0.05) == pytest.approx(TAIL_SAME_FACTOR * 0.05)


def test_a_look_decides_same_with_the_tail_inside_its_own_bar_and_not_past_it():
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=("cpu_ms.p50", "cpu_ms.p95"), seed=3)

    def side(seed: int, tail_spread: float) -> list[dict]:
        rng = np.random.default_rng(seed)
        return [{"cpu_ms": {"p50": 5.0 * float(rng.lognormal(0, 0.003)),
                            "p95": 8.0 * float(rng.lognormal(0, tail_spread))}, "gpu_ms": None,
                 "gpu_source": None, "jank_share": 0.0} for _ in range(8)]

    def p95_interval(verdict) -> tuple[float, float]:
        return next(v.ci for v in verdict.verdicts if v.metric == "cpu_ms.p95")

    steady_tail = judge_look(side(1, 0.04), side(2, 0.04), config, 1e-6)
    low, high = p95_interval(steady_tail)
    assert (low < 1 / 1.05 or high > 1.05) and 1 / 1.10 <= low and high <= 1.10  # past the gate's bar, inside 2x
    assert steady_tail.verdict == "same"
    assert any("a tail metric" in v.reason for v in steady_tail.verdicts)
    wild_tail = judge_look(side(1, 0.3), side(2, 0.3), config, 1e-6)
    assert max(abs(math.log(x)) for x in p95_interval(wild_tail)) > math.log(1.10)
    assert wild_tail.verdict == "inconclusive"


def launches(p50_ms: float, n: int, seed: int, spread: float = 0.03) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"cpu_ms": {"p50": p50_ms * float(rng.lognormal(0, spread)), "p95": p50_ms * 1.5}, "gpu_ms": None,
             "gpu_source": None, "jank_share": 0.0} for _ in range(n)]


def test_a_look_decides_same_when_every_interval_is_inside_the_bars():
    verdict = judge_look(launches(5.0, 6, 1, spread=0.005), launches(5.0, 6, 2, spread=0.005), CONFIG, 1e-6)
    assert verdict.verdict == "same"
    assert "inside both bars" in verdict.verdicts[0].reason


def test_an_early_look_cannot_call_a_regression_its_level_does_not_allow():
    a, b = launches(5.0, 12, 3), launches(6.0, 12, 4)
    levels = nominal_alphas([4 / 12, 1.0], 0.01)
    early = judge_look(a[:4], b[:4], CONFIG, levels[0])  # 4 + 4: p >= 1/70, far above the level
    assert early.verdict == "inconclusive"
    assert judge_look(a, b, CONFIG, levels[1]).verdict == "regressed"


def test_a_look_that_spends_nothing_advises_no_fixed_run_count():
    """Before: 4+4 at level 0 said "At least 22 launches per side are needed (--zbench-runs=22)", the fixed
    design's count at 1e-12, an option the sequential gate does not take."""
    a, b = launches(5.0, 4, 5), launches(5.6, 4, 6)
    for level in (0.0, nominal_alphas([4 / 12, 1.0], 0.01)[0]):
        verdict = judge_look(a, b, CONFIG, level)
        assert verdict.verdict == "inconclusive"
        for v in verdict.verdicts:
            assert v.more_launches is None and v.advice == "" and "--zbench-runs" not in v.reason
            assert "this look tests `same` only" in v.reason and "4 vs 4 launches" in v.reason


def test_an_undecided_look_advises_the_sequential_gates_own_options():
    """Before: futile at 12+12 advised --zbench-runs=43, an option the sequential gate refuses."""
    a, b = launches(5.0, 12, 11, spread=0.08), launches(5.3, 12, 12, spread=0.08)
    verdict = judge_look(a, b, CONFIG, nominal_alphas([1.0], 0.01)[0])
    undecided = [v for v in verdict.verdicts if v.verdict == "inconclusive" and v.more_launches]
    assert undecided, [v.verdict for v in verdict.verdicts]
    for v in undecided:
        assert "--zbench-runs" not in v.advice and f"--zbench-max-launches={12 + v.more_launches}" in v.advice


def test_launches_to_decide_favours_the_scene_nearer_a_decision():
    config = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=AB_GATING_METRICS[:1])
    clear = judge_look(launches(5.0, 4, 5), launches(7.0, 4, 6), config, 1e-9)
    at_bar = judge_look(launches(5.0, 4, 7), launches(5.3, 4, 8), config, 1e-9)
    assert clear.verdict == at_bar.verdict == "inconclusive"
    assert launches_to_decide(clear, 4) < launches_to_decide(at_bar, 4)


def _with(verdict, *metrics):
    """The scene verdict with its first metric's verdict copied once per (metric, effect, interval)."""
    first = verdict.verdicts[0]
    return dataclasses.replace(verdict, verdicts=tuple(
        dataclasses.replace(first, metric=metric, effect=effect, ci=ci) for metric, effect, ci in metrics))


def test_launches_to_decide_takes_the_nearer_of_a_change_and_same():
    judged = judge_look(launches(5.0, 6, 1), launches(5.5, 6, 2), CONFIG, 1e-9)
    # A slowdown decides as a change by its median, whatever a tail metric whose interval never comes inside
    # its same bar: the interval's end towards no change, log(1.2 / 1.10) from the effect, against log 1.2, at 6
    # launches per side. Each end on its own: the interval is not symmetric about the effect.
    slowed = _with(judged, ("cpu_ms.p50", 1.2, (1.10, 1.31)), ("jank_share", 1.0, (0.5, 2.0)))
    near_end = math.log(1.2) - math.log(1.10)
    assert launches_to_decide(slowed, 6) == pytest.approx(6 * (near_end / math.log(1.2)) ** 2, rel=1e-9)
    # An interval much longer on its far side: only its near end decides a change (a symmetric half-width
    # projected on it would ask for more than 4x the launches)
    lopsided = _with(judged, ("cpu_ms.p50", 1.2, (1.10, 2.0)))
    assert launches_to_decide(lopsided, 6) == pytest.approx(launches_to_decide(slowed, 6), rel=1e-9)
    # A median just inside the bar may still be decided a change: the change's estimate, not same's
    near = _with(judged, ("cpu_ms.p50", 1.04, (0.98, 1.10)))
    near_end = math.log(1.04) - math.log(0.98)
    assert launches_to_decide(near, 6) == pytest.approx(6 * (near_end / math.log(1.04)) ** 2, rel=1e-9)
    # No change in sight: same's estimate, every interval inside its same bar (the tail's is twice as wide), the
    # end that has the least room on its side deciding
    flat = _with(judged, ("cpu_ms.p50", 1.0, (0.97, 1.03)), ("cpu_ms.p95", 1.0, (0.9, 1.11)))
    room = math.log(1 + 2 * DEFAULT_AB_THRESHOLD)
    assert launches_to_decide(flat, 6) == pytest.approx(6 * (math.log(1 / 0.9) / room) ** 2, rel=1e-9)
    assert futile(launches_to_decide(slowed, 6), 6, 14) is False


# The schedule, with launches that are synthetic summaries and a clock that counts seconds per launch.

@dataclass
class _Side:
    summaries: list[dict] = field(default_factory=list)


@dataclass
class _AB:
    b: _Side
    order: list[str] = field(default_factory=list)


@dataclass
class _Measurement:
    id: str
    job: object = True
    summaries: list[dict] = field(default_factory=list)
    ab: _AB = field(default_factory=lambda: _AB(_Side()))
    sequential: SceneSequence | None = None


class _Scene:
    """Stands where ABLaunches stands: `run(arms)` appends one launch summary per arm."""

    def __init__(self, name: str, a_ms: float, b_ms: float, clock: list[float], seed: int,
                 spread: float = 0.03) -> None:
        self.a = _Measurement(name)
        self.quarantined = False
        self._draws = {"A": iter(launches(a_ms, 100, seed, spread)), "B": iter(launches(b_ms, 100, seed + 1, spread))}
        self._clock = clock

    def run(self, arms: list[str]) -> None:
        for arm in arms:
            self._clock[0] += 1.0  # one second per launch
            self.a.ab.order.append(arm)
            (self.a.summaries if arm == "A" else self.a.ab.b.summaries).append(next(self._draws[arm]))


def _judge(m, level):
    return judge_look(m.summaries, m.ab.b.summaries, CONFIG, level)


def test_rounds_stop_decided_scenes_and_spend_the_rest_on_the_undecided():
    clock = [0.0]
    same, slow, unclear = (_Scene("same", 5.0, 5.0, clock, 10, spread=0.01), _Scene("slow", 5.0, 6.0, clock, 20),
                           _Scene("unclear", 5.0, 5.25, clock, 30, spread=0.3))
    run_rounds([same, slow, unclear], _judge, budget_s=1000, max_launches=8, alpha=0.01, clock=lambda: clock[0])
    assert same.a.sequential.stopped == "decided" and same.a.sequential.looks[-1].verdict == "same"
    assert len(same.a.summaries) < 8  # stopped before its maximum
    assert slow.a.sequential.stopped == "decided" and slow.a.sequential.looks[-1].verdict == "regressed"
    # an effect at the bar under a launch spread of 30 %: its intervals say 8 + 8 launches could not decide it,
    # so it stops for futility before its maximum, undecided
    assert unclear.a.sequential.stopped == "futile" and len(unclear.a.summaries) < 8
    assert unclear.a.sequential.looks[-1].verdict == "inconclusive"
    assert unclear.a.sequential.looks[-1].launches_a >= FUTILE_FROM
    for scene in (same, slow, unclear):
        assert scene.a.ab.order[:4] == ["A", "B", "B", "A"]
        levels = [look.nominal_alpha for look in scene.a.sequential.looks]
        assert levels == sorted(levels) and all(level < 0.01 for level in levels)


def test_an_undecided_scene_runs_to_its_maximum_when_futility_comes_no_earlier():
    clock = [0.0]
    unclear = _Scene("unclear", 5.0, 5.25, clock, 30, spread=0.3)
    run_rounds([unclear], _judge, budget_s=1000, max_launches=FUTILE_FROM, alpha=0.01, clock=lambda: clock[0])
    assert unclear.a.sequential.stopped == "max_launches" and len(unclear.a.summaries) == FUTILE_FROM
    assert unclear.a.sequential.looks[-1].launches_a == FUTILE_FROM


def test_looks_follow_the_schedule_and_the_maximum_always_gets_one():
    def schedule(max_launches: int, look_every: int) -> list[int]:
        looks: list[int] = []
        for n in range(2, max_launches + 1, 2):  # rounds of 2 + 2
            if look_due(n, looks[-1] if looks else 0, max_launches, look_every=look_every):
                looks.append(n)
        return looks

    assert schedule(12, 2) == [4, 6, 8, 10, 12]
    assert schedule(14, 4) == [4, 8, 12, 14]
    assert not look_due(3, 0, 12)  # before the first look
    assert look_due(FIRST_LOOK, 0, 12)
    assert not look_due(8, 8, 12)  # no new launch: no look
    assert not look_due(9, 8, 12, look_every=2)  # one launch failed: not yet
    assert look_due(12, 11, 12, look_every=4)  # the maximum always gets a look
    assert [n for n in (4, 8, 12, 16)
            if look_due(n, n - 4 if n > 4 else 0, 16, first_look=4, look_every=4)] == [4, 8, 12, 16]


def test_futility_stops_only_a_scene_its_maximum_could_not_decide_and_only_before_the_maximum():
    assert futile(math.inf, FUTILE_FROM, 12)
    assert futile(12.5, FUTILE_FROM, 12)
    assert not futile(12.0, FUTILE_FROM, 12)  # its maximum may decide it: it keeps going
    assert not futile(math.inf, FUTILE_FROM - 1, 12)  # too early to tell
    assert not futile(math.inf, 12, 12)  # at its maximum it stops on max_launches, not futile


def test_a_budget_stops_the_undecided_and_no_round_starts_that_would_not_fit():
    clock = [0.0]
    scenes = [_Scene(f"s{k}", 5.0, 5.25, clock, 40 + 10 * k, spread=0.3) for k in range(2)]
    # a maximum its intervals say may decide them (not futile): the budget is what stops them
    run_rounds(scenes, _judge, budget_s=30, max_launches=200, alpha=0.01, clock=lambda: clock[0])
    assert clock[0] <= 30
    assert all(s.a.sequential.stopped == "budget" for s in scenes)
    # both scenes got their first look before either got more
    assert all(len(s.a.summaries) >= FIRST_LOOK for s in scenes)


def test_a_quarantined_device_stops_every_scene():
    clock = [0.0]
    scene = _Scene("s", 5.0, 5.25, clock, 60)
    scene.quarantined = True
    run_rounds([scene], _judge, budget_s=100, max_launches=12, alpha=0.01, clock=lambda: clock[0])
    assert scene.a.sequential.stopped == "device_fault" and scene.a.summaries == []
