"""A bisect step placed from its two A/Bs against the ends (pytest_zbench/engine/step_placement.py), on run.json
`regression` entries as the plugin writes them."""

from __future__ import annotations

import pytest

from pytest_zbench.engine.step_placement import deciding, place

NAMES = ("good", "m", "bad")
ENDS = {"metric": "cpu_ms.p50", "verdict": "regressed", "effect": 1.2, "ci": [1.15, 1.26]}


def regression(verdict, effect=1.0, ci=(0.9, 1.1)):
    return {"verdict": verdict, "metrics": [{"metric": "cpu_ms.p50", "verdict": verdict, "effect": effect,
                                             "ci": list(ci)}]}


SLOWER = regression("regressed", 1.2, (1.14, 1.27))
SAME = regression("same", 1.0, (0.98, 1.02))
UNDECIDED = regression("inconclusive", 1.1, (0.85, 1.5))


@pytest.mark.parametrize("before, after, side, leaned", [
    (SLOWER, SAME, "bad", False),  # both agree
    (SAME, SLOWER, "good", False),
    (SLOWER, UNDECIDED, "bad", True),  # M slower than GOOD by the bisected effect: bad, whatever M->BAD said
    (UNDECIDED, SAME, "bad", True),  # M as fast as BAD
    (UNDECIDED, SLOWER, "good", True),  # BAD slower than M
    (SAME, UNDECIDED, "good", True),  # M as fast as GOOD
    (UNDECIDED, {}, "undecided", False),  # the other side not measured is no evidence
    (UNDECIDED, UNDECIDED, "undecided", False),
    (SLOWER, SLOWER, "ambiguous", False),  # in parts
    (SAME, SAME, "ambiguous", False),
    (regression("improved", 0.8, (0.75, 0.85)), SLOWER, "ambiguous", False),
    (SLOWER, regression("improved", 0.8, (0.75, 0.85)), "ambiguous", False),
])
def test_a_step_is_placed_from_what_is_decided(before, after, side, leaned):
    placement = place(before, after, ENDS, NAMES)
    assert (placement.side, placement.leaned) == (side, leaned), placement.why
    assert f"good->m {before.get('verdict')}, m->bad {after.get('verdict')}" in placement.why


def test_a_regression_surely_smaller_than_the_ends_is_part_of_the_slowdown():
    part = regression("regressed", 1.08, (1.06, 1.10))  # wholly below the ends' [1.15, 1.26]
    for before, after in ((part, UNDECIDED), (UNDECIDED, part)):
        placement = place(before, after, ENDS, NAMES)
        assert placement.side == "ambiguous" and "in parts" in placement.why
    # An interval that reaches the ends' is the bisected effect as far as the launches can tell.
    assert place(regression("regressed", 1.1, (1.05, 1.16)), UNDECIDED, ENDS, NAMES).side == "bad"
    # Another metric than the ends' deciding one is not compared.
    other = {"verdict": "regressed", "metrics": [{"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.05,
                                                  "ci": [1.01, 1.09]}]}
    assert place(other, UNDECIDED, ENDS, NAMES).side == "bad"


def test_the_deciding_metric_is_a_regressed_one_first():
    entry = {"verdict": "regressed", "metrics": [
        {"metric": "cpu_ms.p50", "verdict": "same", "effect": 1.0, "ci": [0.99, 1.01]},
        {"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.3, "ci": [1.2, 1.4]}]}
    assert deciding(entry) == {"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.3, "ci": [1.2, 1.4]}
    assert deciding({}) is None
