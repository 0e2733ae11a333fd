"""Paired A/B rounds (regression/paired.py, docs/regression.md "Paired rounds"): B judged against A within each
round, the signed-rank sign-flip test and its inverted interval, in the fixed and the sequential gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_zbench.regression.config import DEFAULT_AB_THRESHOLD
from pytest_zbench.regression.gate import GateConfig, judge_interleaved
from pytest_zbench.regression.interleaved_ab import interleave, judge_ab, judge_order
from pytest_zbench.regression.paired import flip_floor, min_rounds, paired_test
from pytest_zbench.regression.sequential import (
    Look,
    SceneSequence,
    judge_look,
    launches_to_decide,
    look_fraction,
    pairs_rounds,
)

CONFIG = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=("cpu_ms.p50", "cpu_ms.p95"))


def two_state_session(n_rounds: int, shift: float, seed: int, *, ratio: float = 1.5,
                      stay: float = 0.95) -> tuple[list[dict], list[dict]]:
    """A and B launches of one A/B session in ABBA order on a device whose launches switch between two speeds
    `ratio` apart in blocks (a Markov chain that keeps its state with probability `stay`: blocks of 20 launches
    on average, so most rounds lie inside one), 3 % launch spread. Shorter blocks put more rounds across a
    switch, which the paired test reads as noise: bench/bench_paired_rounds.py measures that."""
    rng = np.random.default_rng(seed)
    order = interleave(n_rounds)
    slow = [rng.random() < 0.5]
    for _ in order[1:]:
        slow.append(slow[-1] if rng.random() < stay else not slow[-1])
    a, b = [], []
    for arm, s in zip(order, slow):
        base = (ratio if s else 1.0) * (1 + shift if arm == "B" else 1.0) * math.exp(rng.normal(0, 0.03))
        launch = {"cpu_ms": {"p50": base, "p95": base * 1.2 * math.exp(rng.normal(0, 0.08))}}
        (a if arm == "A" else b).append(launch)
    return a, b


def test_the_interval_clears_no_change_exactly_when_the_test_rejects():
    # The decision's interval is the test inverted: its lower end above 0 iff the family-adjusted p is at most
    # the level, for every draw (continuous data: no ties), at the fixed level and at a sequential look's.
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(300):
        n = int(rng.integers(8, 15))
        d = rng.normal(rng.uniform(-0.05, 0.12), 0.05, (n, 2)) + rng.normal(0, 0.03, (n, 1))
        test = paired_test(d, np.ones(2), rng=np.random.default_rng(trial))
        for level in (0.005, 0.0029):
            if flip_floor(n) > level:
                continue
            for j in range(2):
                lo, hi = test.interval(j, level)
                assert (lo > 0) == (test.adj_worse[j] <= level * (1 + 1e-9)), (trial, n, level, j)
                assert (hi < 0) == (test.adj_better[j] <= level * (1 + 1e-9)), (trial, n, level, j)
                assert lo <= test.effect[j] <= hi
                checked += 1
    assert checked > 800


def test_paired_rounds_decide_a_slowdown_that_switching_speed_hides_from_launch_against_launch():
    decided_paired = decided_unpaired = 0
    for seed in range(20):
        a, b = two_state_session(14, 0.10, seed)
        decided_paired += judge_interleaved(a, b, CONFIG, paired=True).verdict == "regressed"
        decided_unpaired += judge_interleaved(a, b, CONFIG).verdict == "regressed"
    assert decided_paired >= 14 and decided_paired >= decided_unpaired + 5, (decided_paired, decided_unpaired)


def test_identical_builds_on_a_switching_device_are_never_regressed_and_often_same():
    # the median alone: this model's p95 moves 8 % a launch, too much for its interval to come inside +-5 % here
    p50 = GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=("cpu_ms.p50",))
    verdicts = [judge_interleaved(*two_state_session(14, 0.0, 100 + seed), p50, paired=True).verdict
                for seed in range(30)]
    assert "regressed" not in verdicts and "improved" not in verdicts
    assert verdicts.count("same") >= 10, verdicts  # 14 of 30 at these seeds


def test_the_verdict_shows_the_interval_it_was_decided_on_with_its_level_and_sides():
    a, b = two_state_session(14, 0.10, 3)
    v = judge_interleaved(a, b, CONFIG, paired=True).by_metric()["cpu_ms.p50"]
    assert v.verdict == "regressed" and v.rounds == 14 and v.ci_level == pytest.approx(0.005)
    assert v.ci is not None and v.ci[0] > 1
    text = v.message()
    assert "99.00% CI" in text and "one-sided 0.005 each end: a change's" in text and "95% CI" in text
    assert "14 paired rounds" in text and "sign flips" in text
    # at a sequential look the interval is the look's level's: narrower levels, wider intervals
    look = judge_look(a, b, CONFIG, 0.0029, paired=True).by_metric()["cpu_ms.p50"]
    assert look.ci_level == pytest.approx(0.0029) and look.ci is not None
    assert look.ci[0] <= v.ci[0] and look.ci[1] >= v.ci[1]


def test_too_few_rounds_cannot_decide_a_change_and_the_fixed_gate_judges_them_unpaired():
    assert min_rounds(0.005) == 8 and flip_floor(8) == 1 / 256
    a, b = two_state_session(6, 0.5, 11)
    v = judge_interleaved(a, b, CONFIG, paired=True).by_metric()["cpu_ms.p50"]
    assert v.verdict == "inconclusive" and "Too few rounds" in v.reason and v.ci is None
    # judge_ab pairs only where the flips can reach the level: 6 rounds are judged launch against launch
    assert "paired" not in judge_ab(a, b, CONFIG, paired=True).by_metric()["cpu_ms.p50"].test_method
    a, b = two_state_session(8, 0.5, 11)
    assert "paired" in judge_order(interleave(8), [x for pair in zip(a, b) for x in pair],
                                   CONFIG).by_metric()["cpu_ms.p50"].test_method


def test_sequential_paired_looks_spend_alpha_only_where_the_flips_reach():
    assert pairs_rounds(14, 0.01) and pairs_rounds(12, 0.01) and not pairs_rounds(10, 0.01)
    sequence = SceneSequence(max_launches=14, alpha=0.01, budget_min=1.0, paired=True)
    levels = []
    for n in (4, 6, 8, 10, 12, 14):
        level = sequence.level(n)
        sequence.looks.append(Look(len(levels), n, n, look_fraction(n, 14), level, "inconclusive", None, 0.0))
        levels.append(level)
    assert levels[:4] == [0.0] * 4 and all(0 < level < 0.005 for level in levels[4:])
    # futility waits for the first look that can spend alpha: before it, the interval is the flips' discreteness
    assert sequence.futile_from == 11  # odd counts come only after a failed launch: the looks are at 12 and 14
    assert SceneSequence(max_launches=14, alpha=0.01, budget_min=1.0).futile_from == 6


def test_a_look_the_flips_cannot_reach_still_projects_and_can_stop_same():
    a, b = two_state_session(6, 0.0, 21)
    early = judge_look(a, b, CONFIG, 0.0, paired=True)
    assert early.verdict in ("inconclusive", "same") and early.verdict != "regressed"
    # no interval at 6 rounds: the launches needed are projected from the within-round spread, not infinite
    assert math.isfinite(launches_to_decide(early, 6))
    a, b = two_state_session(10, 0.0, 22)
    ten = judge_look(a, b, CONFIG, 0.0, paired=True)
    assert all(v.ci is not None and v.ci_level == pytest.approx(0.005) for v in ten.verdicts)
    if ten.verdict == "inconclusive":
        assert "tests `same` only" in ten.verdicts[0].reason
