"""A bisect's undecided A/Bs tried again (pytest_zbench/engine/ab_attempts.py): the first attempt's design from
the user's pytest arguments, each retry's launches doubled up to the cap, the budget, and the error bound."""

from __future__ import annotations

import pytest

from pytest_zbench.engine.ab_attempts import (
    Design,
    RetryPolicy,
    attempt_from_entry,
    false_alarm_bound,
    first_design,
)
from pytest_zbench.settings import DEFAULT_MAX_LAUNCHES, DEFAULT_RUNS


def test_the_first_design_is_what_the_pytest_arguments_ask():
    assert first_design(["--zbench-budget=3", "--zbench-max-launches", "16", "-k", "busy"]) == Design(16, 3.0)
    assert first_design(["--zbench-budget", "2.5"]) == Design(DEFAULT_MAX_LAUNCHES, 2.5)
    assert first_design(["--zbench-runs=8", "--zbench-frames=30"]) == Design(8, None)
    assert first_design([]) == Design(DEFAULT_RUNS, None)


def test_a_retry_doubles_the_launches_and_the_session_minutes_up_to_the_cap():
    policy = RetryPolicy(Design(16, 3.0), cap=50)
    second = policy.next_design(Design(16, 3.0))
    assert second == Design(32, 6.0)
    assert second.arguments() == ["--zbench-max-launches=32", "--zbench-budget=6"]
    third = policy.next_design(second)
    assert third is not None and third.launches == 50 and third.budget_min == pytest.approx(9.375, rel=1e-9)
    assert policy.next_design(third) is None
    assert "cap of 50" in (policy.refusal(third, 10.0, 0.0) or "")
    # The fixed design doubles its launches.
    assert RetryPolicy(Design(8, None)).next_design(Design(8, None)).arguments() == ["--zbench-runs=16"]


def test_a_refusal_at_the_cap_says_what_the_attempt_made_not_the_cap_it_did_not_use():
    """Before: "it had the cap of 64 launches per side" after an attempt that stopped futile at 6 + 6."""
    policy = RetryPolicy(Design(16, 3.0), cap=64, budget_min=10.0)
    refusal = policy.refusal(Design(64, 12.0), 60.0, 0.0, made=6, stopped="futile") or ""
    assert "stopped at 6 launches per side" in refusal and "would not decide it" in refusal
    assert "it had the cap" not in refusal
    assert "it had the cap of 64" in (policy.refusal(Design(64, 12.0), 60.0, 0.0, made=64) or "")
    # The time of a retry is reckoned from the launches made: 16 of 16 took 2 min, so 32 take 4 min ...
    assert policy.refusal(Design(16, 3.0), 120.0, 300.0, made=16, stopped="max_launches") is None
    # ... but 4 of 16 that took 2 min make 32 take 16 min, more than the 5 left.
    assert "--budget" in (policy.refusal(Design(16, 3.0), 120.0, 300.0, made=4, stopped="budget") or "")


def test_a_retry_that_would_not_end_within_the_budget_is_not_started():
    policy = RetryPolicy(Design(16, 3.0), cap=64, budget_min=10.0)
    assert policy.refusal(Design(16, 3.0), last_seconds=120.0, elapsed_s=300.0) is None  # 4 min of 5 left
    refusal = policy.refusal(Design(16, 3.0), last_seconds=120.0, elapsed_s=400.0)  # 4 min, 3.3 left
    assert refusal is not None and "--budget" in refusal and "4.0 min" in refusal


def entry(verdict, order, alpha=0.01, stopped="max_launches"):
    return {"regression": {"verdict": verdict, "settings": {"alpha": alpha}}, "ab": {"order": order},
            "sequential": {"stopped": stopped}}


def test_an_attempt_reads_its_launches_and_alpha_from_the_scene_entry():
    attempt = attempt_from_entry(2, Design(32, 6.0), "attempt 1 was inconclusive", entry(
        "regressed", list("ABBA" * 5)), 42.0)
    assert (attempt.verdict, attempt.launches_a, attempt.launches_b, attempt.stopped) == ("regressed", 10, 10,
                                                                                           "max_launches")
    assert attempt.to_json()["launches_per_side"] == 32 and attempt.to_json()["why"] == "attempt 1 was inconclusive"


def test_every_attempt_counts_in_the_error_bound():
    attempts = [attempt_from_entry(n, Design(16, 3.0), "", entry("inconclusive", ["A", "B"], alpha), 1.0)
                for n, alpha in ((1, 0.01), (2, 0.01), (3, 0.005))]
    assert false_alarm_bound(attempts) == pytest.approx(0.025, rel=1e-12)
    assert false_alarm_bound([]) == 0.0
    # No gate settings recorded: the gate's default alpha is counted.
    assert attempt_from_entry(1, Design(8, None), "", {"regression": {}}, 1.0).alpha == 0.01
